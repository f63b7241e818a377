/* SPDX-License-Identifier: MIT */
/* ini.h — a small strict INI reader for sweep configurations: [section]
 * headers, `key = value` lines, whole-line comments starting with # or ;,
 * blank lines. Anything else is an error naming the file and line. Keys keep
 * their order; a key twice in one section is an error. */
#ifndef PZ_INI_H
#define PZ_INI_H

#include "base/base.h"

typedef struct {
    char section[64], key[64], value[512];
    int line;
} pz_ini_entry;

typedef struct {
    char path[1024];
    pz_ini_entry *e;
    int n, cap;
} pz_ini;

pz_status pz_ini_load(pz_ini *ini, const char *path);
/* The value of section.key, or NULL. */
const char *pz_ini_get(const pz_ini *ini, const char *section, const char *key);
void pz_ini_free(pz_ini *ini);

#endif
