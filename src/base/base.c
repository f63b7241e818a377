/* SPDX-License-Identifier: MIT */
/* base.c — errors, checked allocation and I/O, tensors, RNG, timing. */
#define _GNU_SOURCE
#include "base.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

/* ------------------------------------------------------------------------- */
/* errors */

static _Thread_local char last_error[1024];

pz_status pz_fail(pz_status code, const char *fmt, ...) {
    /* format into a copy first: the arguments may be the last message itself
     * (pz_fail(..., "%s: %s", flag, pz_last_error()) adds context) */
    char msg[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(last_error, msg, sizeof msg);
    return code;
}

const char *pz_last_error(void) { return last_error; }

const char *pz_status_name(pz_status s) {
    switch (s) {
    case PZ_OK: return "PZ_OK";
    case PZ_ERR_ARG: return "PZ_ERR_ARG";
    case PZ_ERR_NOMEM: return "PZ_ERR_NOMEM";
    case PZ_ERR_IO: return "PZ_ERR_IO";
    case PZ_ERR_FORMAT: return "PZ_ERR_FORMAT";
    case PZ_ERR_STATE: return "PZ_ERR_STATE";
    case PZ_ERR_UNSUPPORTED: return "PZ_ERR_UNSUPPORTED";
    }
    return "PZ_ERR_UNKNOWN";
}

/* ------------------------------------------------------------------------- */
/* shapes */

const char *pz_shape_str(pz_shape s, char *buf, size_t cap) {
    size_t n = 0;
    if (cap) buf[0] = 0;
    for (int i = 0; i < s.rank && n < cap; i++) {
        const int w = snprintf(buf + n, cap - n, i ? "x%d" : "%d", s.d[i]);
        if (w < 0) break;
        n += (size_t)w;
    }
    return buf;
}

/* ------------------------------------------------------------------------- */
/* allocation */

float *pz_floats_try(size_t n) {
    size_t bytes = (n * sizeof(float) + 63) & ~(size_t)63;
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) return NULL;
    memset(p, 0, bytes);
    return p;
}

/* ------------------------------------------------------------------------- */
/* I/O */

/* The file (gzip or plain) whole, failing once it holds more than max
 * bytes: never more than max + 1 are decompressed. */
pz_status pz_read_file_max(const char *path, size_t max, uint8_t **data, size_t *len) {
    *data = NULL;
    *len = 0;
    const int in = !strcmp(path, "-");
    const char *name = in ? "standard input" : path;
    int fd = -1;
    if (in && (fd = dup(0)) < 0) return pz_fail(PZ_ERR_IO, "cannot read standard input: %s", strerror(errno));
    gzFile f = in ? gzdopen(fd, "rb") : gzopen(path, "rb"); /* reads plain data transparently */
    if (!f) {
        if (fd >= 0) close(fd);
        return pz_fail(PZ_ERR_IO, "cannot open '%s': %s", name, strerror(errno ? errno : ENOENT));
    }
    size_t cap = max < (1 << 20) ? max + 1 : 1 << 20, n = 0;
    uint8_t *buf = malloc(cap);
    if (!buf) { gzclose(f); return pz_fail(PZ_ERR_NOMEM, "out of memory reading '%s'", name); }
    for (;;) {
        if (n == cap) { /* n <= max here: grow, to at most one byte past the limit (which says it is exceeded) */
            const size_t nc = cap * 2 < max + 1 ? cap * 2 : max + 1;
            uint8_t *nb = realloc(buf, nc);
            if (!nb) { free(buf); gzclose(f); return pz_fail(PZ_ERR_NOMEM, "out of memory reading '%s'", name); }
            buf = nb;
            cap = nc;
        }
        int got = gzread(f, buf + n, (unsigned)(cap - n > (1u << 30) ? (1u << 30) : cap - n));
        if (got < 0) {
            int zerr;
            const char *msg = gzerror(f, &zerr);
            pz_status st = pz_fail(PZ_ERR_FORMAT, "'%s' is corrupt: %s", name, msg);
            free(buf);
            gzclose(f);
            return st;
        }
        if (got == 0) break;
        n += (size_t)got;
        if (n > max) {
            free(buf);
            gzclose(f);
            return pz_fail(PZ_ERR_FORMAT, "'%s' holds more than %zu bytes", name, max);
        }
    }
    gzclose(f);
    *data = buf;
    *len = n;
    return PZ_OK;
}

pz_status pz_read_file(const char *path, uint8_t **data, size_t *len) { return pz_read_file_max(path, (size_t)-2, data, len); }

/* The first up to n bytes of a file (gzip or plain), for checking a header
 * before reading the rest. */
pz_status pz_read_head(const char *path, uint8_t *out, size_t n, size_t *got) {
    *got = 0;
    gzFile f = gzopen(path, "rb");
    if (!f) return pz_fail(PZ_ERR_IO, "cannot open '%s': %s", path, strerror(errno ? errno : ENOENT));
    const int r = gzread(f, out, (unsigned)n);
    gzclose(f);
    if (r < 0) return pz_fail(PZ_ERR_FORMAT, "'%s' is corrupt", path);
    *got = (size_t)r;
    return PZ_OK;
}

pz_status pz_read_text(const char *path, char **text, size_t *len) {
    uint8_t *d;
    size_t n;
    PZ_TRY(pz_read_file(path, &d, &n));
    char *t = realloc(d, n + 1);
    if (!t) {
        free(d);
        return pz_fail(PZ_ERR_NOMEM, "out of memory reading '%s'", path);
    }
    t[n] = 0;
    *text = t;
    if (len) *len = n;
    return PZ_OK;
}

void pz_escape_text(char *out, size_t cap, const char *in) {
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p && n + 5 < cap; p++) {
        if (*p >= 0x20 && *p < 0x7f && *p != '\\') out[n++] = (char)*p;
        else n += (size_t)snprintf(out + n, cap - n, "\\x%02x", *p);
    }
    if (cap) out[n < cap ? n : cap - 1] = 0;
}

static pz_status write_fd(int fd, const char *name, const void *data, size_t len) {
    const uint8_t *p = data;
    while (len > 0) {
        const ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return pz_fail(PZ_ERR_IO, "cannot write '%s': %s", name, strerror(errno));
        p += w, len -= (size_t)w;
    }
    return PZ_OK;
}

static pz_status write_file(const char *path, const void *data, size_t len, int mode, int replace) {
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof tmp)
        return pz_fail(PZ_ERR_ARG, "path too long: '%s'", path);
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
    if (fd < 0) return pz_fail(PZ_ERR_IO, "cannot create '%s': %s", tmp, strerror(errno));
    if (mode == 0600 && fchmod(fd, 0600) != 0) { /* whatever the umask */
        pz_status st = pz_fail(PZ_ERR_IO, "cannot make '%s' private: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        return st;
    }
    pz_status wst = write_fd(fd, tmp, data, len);
    if (wst) {
        close(fd);
        unlink(tmp);
        return wst;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        pz_status st = pz_fail(PZ_ERR_IO, "cannot flush '%s': %s", tmp, strerror(errno));
        unlink(tmp);
        return st;
    }
    /* link() never replaces what is there: the no-overwrite case is atomic too */
    if (replace ? rename(tmp, path) != 0 : link(tmp, path) != 0) {
        pz_status st = errno == EEXIST ? pz_fail(PZ_ERR_ARG, "'%s' exists: not overwriting it", path)
                                       : pz_fail(PZ_ERR_IO, "cannot %s '%s' to '%s': %s", replace ? "rename" : "link", tmp, path,
                                                 strerror(errno));
        unlink(tmp);
        return st;
    }
    if (!replace) unlink(tmp);
    return PZ_OK;
}

pz_status pz_write_file_atomic(const char *path, const void *data, size_t len) { return write_file(path, data, len, 0644, 1); }

pz_status pz_write_output(const char *path, const void *data, size_t len) {
    if (!strcmp(path, "-")) return write_fd(1, "standard output", data, len);
    /* a symbolic link: write its target (atomically when that is a file) */
    char *real = NULL;
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
        real = realpath(path, NULL);
        if (!real && errno == ENOENT) { /* a link to a file not yet there: create its target */
            char target[4096];
            const ssize_t n = readlink(path, target, sizeof target - 1);
            if (n > 0) {
                target[n] = 0;
                const char *slash = strrchr(path, '/');
                const size_t dl = target[0] == '/' || !slash ? 0 : (size_t)(slash - path + 1);
                if ((real = malloc(dl + (size_t)n + 1))) memcpy(real, path, dl), memcpy(real + dl, target, (size_t)n + 1);
            }
        }
        if (!real) return pz_fail(PZ_ERR_IO, "'%s' is a symbolic link to nowhere writable: %s", path, strerror(errno));
        path = real;
    }
    pz_status rc;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode)) {
            rc = pz_fail(PZ_ERR_ARG, "'%s' is a directory", path);
        } else { /* a FIFO, a device, a socket: written through, never replaced */
            const int fd = open(path, O_WRONLY | O_NOCTTY);
            if (fd < 0) rc = pz_fail(PZ_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
            else {
                rc = write_fd(fd, path, data, len);
                if (close(fd) != 0 && !rc) rc = pz_fail(PZ_ERR_IO, "cannot close '%s': %s", path, strerror(errno));
            }
        }
    } else {
        rc = pz_write_file_atomic(path, data, len);
    }
    free(real);
    return rc;
}

pz_status pz_write_file_private(const char *path, const void *data, size_t len, int replace) {
    return write_file(path, data, len, 0600, replace);
}

pz_status pz_mkdir_p(const char *path) {
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) return pz_fail(PZ_ERR_ARG, "bad directory path '%s'", path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return pz_fail(PZ_ERR_IO, "cannot create directory '%s': %s", buf, strerror(errno));
            buf[i] = c;
        }
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return pz_fail(PZ_ERR_IO, "'%s' exists and is not a directory", path);
    return PZ_OK;
}

/* ------------------------------------------------------------------------- */
/* tensors */

int64_t pz_tensor_numel(const pz_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

/* ------------------------------------------------------------------------- */
/* RNG: xoshiro256** (Blackman & Vigna), seeded by splitmix64 */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void pz_rng_seed(pz_rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

pz_rng pz_rng_split(const pz_rng *parent, uint64_t stream) {
    /* mix the parent's state with the stream id; the parent is not advanced,
     * so splitting is a pure function of (parent, stream). */
    uint64_t x = parent->s[0] ^ (parent->s[1] * 0x9E3779B97F4A7C15ull) ^ (stream * 0xD1B54A32D192ED03ull);
    pz_rng r;
    for (int i = 0; i < 4; i++) r.s[i] = splitmix64(&x) ^ parent->s[(i + 2) & 3];
    if ((r.s[0] | r.s[1] | r.s[2] | r.s[3]) == 0) r.s[0] = 1;
    return r;
}

float pz_rng_uniform(pz_rng *r) { return (float)(pz_rng_u64(r) >> 40) * (1.0f / 16777216.0f); }

float pz_rng_normal(pz_rng *r) {
    /* Box-Muller; u1 in (0, 1] so log is finite */
    double u1 = ((double)(pz_rng_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    double u2 = (double)(pz_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
}

/* ------------------------------------------------------------------------- */
/* timing */

double pz_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double pz_median(double *v, int n) {
    if (n <= 0) return 0.0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
