/* SPDX-License-Identifier: MIT */
/* names.h — an enum's names in one table. Every enumerated setting or
 * header field pipezip shows or reads (codec granularities, value types,
 * wrappers, optimizers, links, ...) is one table of {value, name, help}:
 * parsing, printing, "expected a, b or c" and --help choices all read it,
 * so a value cannot be added in one place and forgotten in another.
 * A table ends with an entry whose name is NULL. */
#ifndef PZ_NAMES_H
#define PZ_NAMES_H

#include <stddef.h>

typedef struct {
    int value;
    const char *name;
    const char *help; /* one line, or NULL */
} pz_name;

/* The entry named `name` (exact match), or NULL. */
const pz_name *pz_name_find(const pz_name *table, const char *name);
/* The name of `value`, or NULL when the table has none. */
const char *pz_name_of(const pz_name *table, int value);
/* How many entries. */
int pz_names_count(const pz_name *table);
/* The names joined: sep between them, last before the final one
 * ("a, b or c" with ", " and " or "; "a|b|c" with "|" and "|"). Returns buf. */
const char *pz_names_join(const pz_name *table, const char *sep, const char *last, char *buf, size_t cap);
/* The same with each entry's help (a table whose help is a form, as
 * "step:EPOCHS,GAMMA"); every entry must have one. */
const char *pz_names_join_help(const pz_name *table, const char *sep, const char *last, char *buf, size_t cap);

#endif
