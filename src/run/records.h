/* SPDX-License-Identifier: MIT */
/* records.h — reading back what pipezip wrote: whole small files, and the
 * top-level fields of a JSON record, through cJSON (so a record reformatted
 * by hand or by another tool reads the same). */
#ifndef PZ_RECORDS_H
#define PZ_RECORDS_H

#include "base/base.h"

/* The file as a NUL-terminated string (malloc'd), or NULL if unreadable. */
char *pz_slurp(const char *path);
/* A number or a string field of one record (its first JSON value); 0 when
 * absent, null or of another type (*v and out are then left as they were). */
int pz_json_num(const char *record, const char *key, double *v);
int pz_json_str(const char *record, const char *key, char *out, size_t cap);

#endif
