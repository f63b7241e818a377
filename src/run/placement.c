/* SPDX-License-Identifier: MIT */
/* placement.c — where the stages of a run live, one table entry per
 * transport. Adding a transport (after its pz_link implementation in
 * src/link) is one entry here. */
#include "run_internal.h"
#include "link/link.h"

#include <stdio.h>
#include <string.h>

/* ---- inproc: every stage a thread of this process ---- */

/* ---- mpi: rank r runs stage r; rank 0 also drives (data, metrics, files) ---- */
static pz_status mpi_processes(int *rank, int *size) { return pz_mpi_init(NULL, NULL, rank, size); }

static pz_status mpi_place(const pz_run_plan *p, int rank, int size, pz_pipe_config *pc) {
    (void)p;
    pc->local_set = 1, pc->first_local = pc->last_local = rank;
    char name[64];
    snprintf(name, sizeof name, "stage %d <-> stage %d (rank %d)", rank - 1, rank, rank - 1);
    if (rank > 0) PZ_TRY(pz_link_mpi(&pc->prev_link, rank - 1, name));
    snprintf(name, sizeof name, "stage %d <-> stage %d (rank %d)", rank, rank + 1, rank + 1);
    if (rank < size - 1) PZ_TRY(pz_link_mpi(&pc->next_link, rank + 1, name));
    return PZ_OK;
}

/* ---- zmq: a split-learning client, stage 0 here, the rest on `pipezip serve` ---- */
static pz_status zmq_check(const pz_run_plan *p) {
    if (!*run_plan_str(p, PZ_SET_CONNECT)) return pz_fail(PZ_ERR_ARG, "--link zmq needs --connect tcp://HOST:PORT");
    return PZ_OK;
}

static pz_status zmq_place(const pz_run_plan *p, int rank, int size, pz_pipe_config *pc) {
    (void)rank, (void)size;
    pc->local_set = 1, pc->first_local = pc->last_local = 0;
    pc->session = 1;
    return pz_link_zmq_connect(&pc->next_link, p->text[PZ_SET_CONNECT], p->text[PZ_SET_CLIENT_KEY], p->text[PZ_SET_SERVER_KEY], p->timeout,
                               "stage 0 <-> server");
}

static const run_link links[] = {
    {.name = "inproc"},
    {.name = "mpi", .remote = 1, .processes = mpi_processes, .place = mpi_place, .start = pz_mpi_init, .finish = pz_mpi_finalize,
     .abort = pz_mpi_abort},
    {.name = "zmq", .remote = 1, .session = 1, .check = zmq_check, .place = zmq_place},
};
#define N_LINKS (int)(sizeof links / sizeof *links)

const run_link *run_link_find(const char *name) {
    for (int i = 0; i < N_LINKS; i++)
        if (name && !strcmp(links[i].name, name)) return &links[i];
    return NULL;
}

const char *run_link_names(const char *sep, const char *last) {
    static _Thread_local char names[128];
    size_t n = 0;
    names[0] = 0;
    for (int i = 0; i < N_LINKS && n < sizeof names; i++)
        n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", i == 0 ? "" : i + 1 < N_LINKS ? sep : last, links[i].name);
    return names;
}
