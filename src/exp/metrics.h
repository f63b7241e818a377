/* metrics.h — metric records written as JSON Lines or CSV, one file per
 * stream (steps, epochs) in a run directory. Knows nothing of kernels. */
#ifndef PZ_METRICS_H
#define PZ_METRICS_H

#include "base/base.h"

typedef struct {
    const char *key;
    const char *str; /* a string field when non-NULL, else num */
    double num;
} pz_field;

#define PZ_NUM(k, v) ((pz_field){.key = (k), .num = (double)(v)})
#define PZ_STR(k, v) ((pz_field){.key = (k), .str = (v)})

typedef struct {
    FILE *f;
    int csv;
    int wrote_header;
    char path[4096];
} pz_metrics;

/* Opens DIR/STEM.jsonl or DIR/STEM.csv (format "jsonl" or "csv"). */
pz_status pz_metrics_open(pz_metrics *m, const char *dir, const char *stem, const char *format);
/* Reopen for a resumed run: keep the records of epochs 1..max_epoch (and
 * the CSV header), drop later ones (written after the last checkpoint), append. */
pz_status pz_metrics_reopen(pz_metrics *m, const char *dir, const char *stem, const char *format, int max_epoch);
/* One record; CSV takes its header from the first record. */
pz_status pz_metrics_write(pz_metrics *m, const pz_field *fields, int n);
void pz_metrics_close(pz_metrics *m);

/* A JSON object of the fields, into buf (for summary/config files). */
int pz_fields_to_json(char *buf, size_t cap, const pz_field *fields, int n);

#endif
