/* SPDX-License-Identifier: MIT */
/* names.c — lookups in an enum's name table (names.h). */
#include "names.h"

#include <stdio.h>
#include <string.h>

const pz_name *pz_name_find(const pz_name *t, const char *name) {
    if (!name) return NULL;
    for (; t->name; t++)
        if (!strcmp(t->name, name)) return t;
    return NULL;
}

const char *pz_name_of(const pz_name *t, int value) {
    for (; t->name; t++)
        if (t->value == value) return t->name;
    return NULL;
}

int pz_names_count(const pz_name *t) {
    int n = 0;
    while (t[n].name) n++;
    return n;
}

static const char *join(const pz_name *t, int help, const char *sep, const char *last, char *buf, size_t cap) {
    const int n = pz_names_count(t);
    size_t used = 0;
    if (cap) buf[0] = 0;
    for (int i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i == 0 ? "" : i == n - 1 ? last : sep, help ? t[i].help : t[i].name);
    return buf;
}

const char *pz_names_join(const pz_name *t, const char *sep, const char *last, char *buf, size_t cap) {
    return join(t, 0, sep, last, buf, cap);
}

const char *pz_names_join_help(const pz_name *t, const char *sep, const char *last, char *buf, size_t cap) {
    return join(t, 1, sep, last, buf, cap);
}
