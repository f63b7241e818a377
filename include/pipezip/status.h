/* SPDX-License-Identifier: MIT */
/* pipezip/status.h — status codes shared by every pipezip function. */
#ifndef PIPEZIP_STATUS_H
#define PIPEZIP_STATUS_H

/* What the shared library exports: every function declared in the
 * pipezip/ headers, nothing else (it is built with hidden visibility). */
#if defined(__GNUC__) || defined(__clang__)
#define PZ_API __attribute__((visibility("default")))
#else
#define PZ_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    PZ_OK = 0,
    PZ_ERR_ARG = 1,      /* a bad argument, flag or value */
    PZ_ERR_NOMEM = 2,    /* out of memory */
    PZ_ERR_IO = 3,       /* a file could not be opened, read or written */
    PZ_ERR_FORMAT = 4,   /* a file or frame is malformed */
    PZ_ERR_STATE = 5,    /* an operation does not fit the object's state */
    PZ_ERR_UNSUPPORTED = 6,
} pz_status;

/* A static name for a status ("PZ_ERR_IO"). */
PZ_API const char *pz_status_name(pz_status s);
/* The message of the last failure on this thread: names the file, flag or
 * value that was wrong. Valid until the next failure on this thread. */
PZ_API const char *pz_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
