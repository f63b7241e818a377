/* records.h — reading back what pipezip wrote: whole small files, and
 * fields of its own one-line JSON records ("key": value). */
#ifndef PZ_RECORDS_H
#define PZ_RECORDS_H

#include "base/base.h"

/* The file as a NUL-terminated string (malloc'd), or NULL if unreadable. */
char *pz_slurp(const char *path);
/* A number or a string field of one record; 0 when absent. */
int pz_json_num(const char *record, const char *key, double *v);
int pz_json_str(const char *record, const char *key, char *out, size_t cap);

#endif
