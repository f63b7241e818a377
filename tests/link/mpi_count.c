/* SPDX-License-Identifier: MIT */
/* mpi_count.c — counts what pipezip hands to MPI, independently of
 * pipezip's own counters: an LD_PRELOAD library interposing MPI_Send and
 * MPI_Isend (the PMPI profiling interface) that sums, per tag, the bytes of every message
 * and writes them at MPI_Finalize to $PZ_MPI_COUNT.<rank>. The test then
 * checks the run's reported bytes against these sums. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { TAGS = 64 };
static unsigned long long bytes[TAGS], messages[TAGS];

static void count(int n, MPI_Datatype type, int tag) {
    int size = 0;
    MPI_Type_size(type, &size);
    if (tag >= 0 && tag < TAGS) bytes[tag] += (unsigned long long)n * (unsigned long long)size, messages[tag]++;
}

int MPI_Send(const void *buf, int n, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    count(n, type, tag);
    return PMPI_Send(buf, n, type, dest, tag, comm);
}

int MPI_Isend(const void *buf, int n, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req) {
    count(n, type, tag);
    return PMPI_Isend(buf, n, type, dest, tag, comm, req);
}

int MPI_Finalize(void) {
    const char *stem = getenv("PZ_MPI_COUNT");
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (stem) {
        char path[4096];
        snprintf(path, sizeof path, "%s.%d", stem, rank);
        FILE *f = fopen(path, "w");
        if (f) {
            for (int t = 0; t < TAGS; t++)
                if (messages[t]) fprintf(f, "%d %llu %llu\n", t, bytes[t], messages[t]);
            fclose(f);
        }
    }
    return PMPI_Finalize();
}
