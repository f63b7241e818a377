/* SPDX-License-Identifier: MIT */
/* ini.c — the strict INI reader (see ini.h). */
#include "tool/ini.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}

pz_status pz_ini_load(pz_ini *ini, const char *path) {
    memset(ini, 0, sizeof *ini);
    snprintf(ini->path, sizeof ini->path, "%s", path);
    char *text;
    PZ_TRY(pz_read_text(path, &text, NULL));
    char section[64] = "";
    int line = 0;
    pz_status st = PZ_OK;
    for (char *p = text, *next; p && *p && !st; p = next) {
        next = strchr(p, '\n');
        if (next) *next++ = 0;
        line++;
        char *s = trim(p);
        if (!*s || *s == '#' || *s == ';') continue;
        /* an inline comment: '#' or ';' after whitespace ends the line (values never hold them so) */
        for (char *c = s + 1; *c; c++)
            if ((*c == '#' || *c == ';') && isspace((unsigned char)c[-1])) {
                *c = 0;
                s = trim(s);
                break;
            }
        if (*s == '[') {
            char *close = strchr(s, ']');
            if (!close || *trim(close + 1)) {
                st = pz_fail(PZ_ERR_ARG, "%s:%d: a section header is [name]", path, line);
                break;
            }
            *close = 0;
            char *name = trim(s + 1);
            if (!*name || strlen(name) >= sizeof section) {
                st = pz_fail(PZ_ERR_ARG, "%s:%d: bad section name", path, line);
                break;
            }
            snprintf(section, sizeof section, "%s", name);
            continue;
        }
        char *eq = strchr(s, '=');
        if (!eq) {
            st = pz_fail(PZ_ERR_ARG, "%s:%d: expected 'key = value', got '%.60s'", path, line, s);
            break;
        }
        *eq = 0;
        char *key = trim(s), *value = trim(eq + 1);
        if (!*section) st = pz_fail(PZ_ERR_ARG, "%s:%d: '%s' before any [section]", path, line, key);
        else if (!*key || strlen(key) >= 64) st = pz_fail(PZ_ERR_ARG, "%s:%d: bad key", path, line);
        else if (strlen(value) >= 512) st = pz_fail(PZ_ERR_ARG, "%s:%d: value of '%s' is too long", path, line, key);
        else if (pz_ini_get(ini, section, key)) st = pz_fail(PZ_ERR_ARG, "%s:%d: '%s' is set twice in [%s]", path, line, key, section);
        if (st) break;
        if (ini->n == ini->cap) {
            const int cap = ini->cap ? 2 * ini->cap : 32;
            pz_ini_entry *grown = realloc(ini->e, sizeof *ini->e * (size_t)cap);
            if (!grown) {
                st = pz_fail(PZ_ERR_NOMEM, "%s: out of memory at line %d", path, line);
                break;
            }
            ini->e = grown, ini->cap = cap;
        }
        pz_ini_entry *e = &ini->e[ini->n++];
        snprintf(e->section, sizeof e->section, "%s", section);
        snprintf(e->key, sizeof e->key, "%s", key);
        snprintf(e->value, sizeof e->value, "%s", value);
        e->line = line;
    }
    free(text);
    if (st) pz_ini_free(ini);
    return st;
}

const char *pz_ini_get(const pz_ini *ini, const char *section, const char *key) {
    for (int i = 0; i < ini->n; i++)
        if (!strcmp(ini->e[i].section, section) && !strcmp(ini->e[i].key, key)) return ini->e[i].value;
    return NULL;
}

void pz_ini_free(pz_ini *ini) {
    free(ini->e);
    memset(ini, 0, sizeof *ini);
}
