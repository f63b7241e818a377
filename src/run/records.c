/* SPDX-License-Identifier: MIT */
/* records.c — see records.h. */
#include "records.h"

#include <cjson/cJSON.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *pz_slurp(const char *path) {
    char *t;
    if (access(path, F_OK) != 0 || pz_read_text(path, &t, NULL)) return NULL;
    return t;
}

/* the record's top-level value of key (a real JSON parser: any spacing,
 * order or escaping; NULL when absent); *root is freed by the caller */
static const cJSON *field(const char *text, const char *key, cJSON **root) {
    *root = text ? cJSON_Parse(text) : NULL;
    return *root && cJSON_IsObject(*root) ? cJSON_GetObjectItemCaseSensitive(*root, key) : NULL;
}

int pz_json_num(const char *text, const char *key, double *v) {
    cJSON *root;
    const cJSON *f = field(text, key, &root);
    const int ok = f && cJSON_IsNumber(f); /* null: no value, *v is left as it was */
    if (ok) *v = f->valuedouble;
    cJSON_Delete(root);
    return ok;
}

int pz_json_str(const char *text, const char *key, char *out, size_t cap) {
    cJSON *root;
    const cJSON *f = field(text, key, &root);
    const int ok = f && cJSON_IsString(f) && f->valuestring;
    if (ok && cap) snprintf(out, cap, "%s", f->valuestring);
    cJSON_Delete(root);
    return ok;
}
