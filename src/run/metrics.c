/* SPDX-License-Identifier: MIT */
/* metrics.c — JSONL/CSV metric streams. Numbers are written in the shortest
 * form that round-trips a float; whole numbers as integers; null where a
 * value does not exist. */
#include "metrics.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

pz_status pz_metrics_open(pz_metrics *m, const char *dir, const char *stem, int csv) {
    const char *format = csv ? "csv" : "jsonl";
    memset(m, 0, sizeof *m);
    m->csv = csv;
    snprintf(m->path, sizeof m->path, "%s/%s.%s", dir, stem, format);
    m->f = fopen(m->path, "w");
    if (!m->f) return pz_fail(PZ_ERR_IO, "cannot create '%s': %s", m->path, strerror(errno));
    return PZ_OK;
}

/* NaN and infinities as null (a value that does not exist); whole numbers
 * as integers; everything else in the fewest significant digits that read
 * back as the same float32 (0.1, not 0.100000001: the values are floats, or
 * doubles reported at float precision) */
int pz_fmt_num(char *buf, size_t cap, double v) {
    if (!isfinite(v)) return snprintf(buf, cap, "null");
    if (v == floor(v) && fabs(v) < 1e15) return snprintf(buf, cap, "%.0f", v);
    const float want = (float)v;
    char tmp[40];
    for (int digits = 1; digits < 9; digits++) {
        snprintf(tmp, sizeof tmp, "%.*g", digits, v);
        if (strtof(tmp, NULL) == want) return snprintf(buf, cap, "%s", tmp);
    }
    return snprintf(buf, cap, "%.9g", v);
}

static size_t put_json_string(char *buf, size_t cap, const char *s) {
    size_t n = 0;
#define PUT(c) do { if (n + 1 < cap) buf[n] = (c); n++; } while (0)
    PUT('"');
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') { PUT('\\'); PUT((char)c); }
        else if (c == '\n') { PUT('\\'); PUT('n'); }
        else if (c < 0x20) {
            char e[8];
            snprintf(e, sizeof e, "\\u%04x", c);
            for (char *p = e; *p; p++) PUT(*p);
        } else PUT((char)c);
    }
    PUT('"');
#undef PUT
    if (cap) buf[n < cap ? n : cap - 1] = '\0';
    return n;
}

int pz_fields_to_json(char *buf, size_t cap, const pz_field *f, int n) {
    size_t used = 0;
#define ROOM (used < cap ? cap - used : 0)
#define BUFP (used < cap ? buf + used : NULL)
    used += (size_t)snprintf(BUFP, ROOM, "{");
    for (int i = 0; i < n; i++) {
        if (i) used += (size_t)snprintf(BUFP, ROOM, ", ");
        used += put_json_string(BUFP, ROOM, f[i].key);
        used += (size_t)snprintf(BUFP, ROOM, ": ");
        if (f[i].str) used += put_json_string(BUFP, ROOM, f[i].str);
        else used += (size_t)pz_fmt_num(BUFP, ROOM, f[i].num);
    }
    used += (size_t)snprintf(BUFP, ROOM, "}");
#undef ROOM
#undef BUFP
    return (int)used;
}

int pz_csv_field(FILE *f, const char *s) {
    if (!strpbrk(s, ",\"\n\r")) return fputs(s, f) < 0 ? -1 : 0;
    int bad = fputc('"', f) == EOF;
    for (; *s; s++) {
        if (*s == '"') bad |= fputc('"', f) == EOF;
        bad |= fputc(*s, f) == EOF;
    }
    bad |= fputc('"', f) == EOF;
    return bad ? -1 : 0;
}

pz_status pz_metrics_write(pz_metrics *m, const pz_field *f, int n) {
    if (!m->f) return PZ_OK;
    int bad = 0;
    if (m->csv) {
        if (!m->wrote_header) {
            for (int i = 0; i < n; i++) bad |= (i && fputc(',', m->f) == EOF) || pz_csv_field(m->f, f[i].key);
            bad |= fputc('\n', m->f) == EOF;
            m->wrote_header = 1;
        }
        for (int i = 0; i < n; i++) {
            char num[64];
            if (f[i].str) bad |= (i && fputc(',', m->f) == EOF) || pz_csv_field(m->f, f[i].str);
            else {
                pz_fmt_num(num, sizeof num, f[i].num);
                bad |= fprintf(m->f, "%s%s", i ? "," : "", strcmp(num, "null") ? num : "") < 0;
            }
        }
        bad |= fputc('\n', m->f) == EOF;
    } else {
        char line[8192];
        pz_fields_to_json(line, sizeof line, f, n);
        bad |= fprintf(m->f, "%s\n", line) < 0;
    }
    bad |= fflush(m->f) != 0;
    if (bad) return pz_fail(PZ_ERR_IO, "cannot write '%s': %s", m->path, strerror(errno));
    return PZ_OK;
}

void pz_metrics_close(pz_metrics *m) {
    if (m->f) fclose(m->f);
    m->f = NULL;
}

/* the epoch of a record: its first field ({"epoch":N,... or N,...) */
static long record_epoch(const char *line, int csv) {
    const char *p = line;
    if (!csv) {
        p = strstr(line, "\"epoch\":");
        if (!p) return -1;
        p += 8;
    }
    char *end;
    const long v = strtol(p, &end, 10);
    return end == p ? -1 : v;
}

/* a record's step: its "step" field (JSON) or column `col` (CSV); -1: none */
static long long record_step(const char *line, int csv, int col) {
    const char *p = line;
    if (!csv) {
        p = strstr(line, "\"step\":");
        if (!p) return -1;
        p += 7;
    } else {
        if (col < 0) return -1;
        for (int c = 0; c < col; c++) {
            p = strchr(p, ',');
            if (!p) return -1;
            p++;
        }
    }
    char *end;
    const long long v = strtoll(p, &end, 10);
    return end == p ? -1 : v;
}

/* the column of "step" in a CSV header line, or -1 */
static int step_column(const char *line, size_t n) {
    int col = 0;
    for (size_t i = 0; i < n; col++) {
        size_t j = i;
        while (j < n && line[j] != ',') j++;
        if (j - i == 4 && !strncmp(line + i, "step", 4)) return col;
        i = j + 1;
    }
    return -1;
}

pz_status pz_metrics_reopen(pz_metrics *m, const char *dir, const char *stem, int csv, int max_epoch, long long max_step) {
    memset(m, 0, sizeof *m);
    m->csv = csv;
    snprintf(m->path, sizeof m->path, "%s/%s.%s", dir, stem, m->csv ? "csv" : "jsonl");
    uint8_t *data = NULL;
    size_t len = 0;
    if (access(m->path, F_OK) == 0) PZ_TRY(pz_read_file(m->path, &data, &len));
    /* keep the header and the records of finished epochs, and (a mid-epoch
     * checkpoint) the next epoch's step records up to its step; drop the rest */
    char *kept = malloc(len + 1);
    if (!kept) {
        free(data);
        return pz_fail(PZ_ERR_NOMEM, "out of memory reading '%s'", m->path);
    }
    size_t k = 0;
    int first = 1, col = -1;
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && data[j] != '\n') j++;
        char line[256];
        const size_t n = j - i < sizeof line - 1 ? j - i : sizeof line - 1;
        memcpy(line, data + i, n);
        line[n] = 0;
        if (m->csv && first) col = step_column(line, n);
        const long e = record_epoch(line, m->csv);
        const long long st = max_step >= 0 && e == max_epoch + 1 ? record_step(line, m->csv, col) : -1;
        const int keep = (m->csv && first) || (e >= 1 && e <= max_epoch) || (st >= 0 && st <= max_step);
        if (m->csv && first) m->wrote_header = j > i;
        first = 0;
        if (keep && j < len) memcpy(kept + k, data + i, j - i + 1), k += j - i + 1;
        i = j + 1;
    }
    free(data);
    pz_status st = pz_write_file_atomic(m->path, kept, k);
    free(kept);
    if (st) return st;
    m->f = fopen(m->path, "a");
    if (!m->f) return pz_fail(PZ_ERR_IO, "cannot append to '%s': %s", m->path, strerror(errno));
    return PZ_OK;
}
