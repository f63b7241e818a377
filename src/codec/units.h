/* SPDX-License-Identifier: MIT */
/* units.h — how a tensor splits into the units that get their own scale
 * (quantization) or their own k (sparsifiers): FORMAT.md's granularity. */
#ifndef PZ_CODEC_UNITS_H
#define PZ_CODEC_UNITS_H

#include "frame.h"

/* `planes` contiguous runs of plane_len elements, plane p belonging to unit
 * unit_of_plane(p). */
typedef struct {
    int64_t n, U, m;        /* elements, units, elements per unit */
    int64_t plane_len, planes;
    int64_t channels;       /* channel granularity: d[1] */
    int gran;
} units;

/* PZ_ERR_FORMAT (PZ_FRAME_PARAM) for a granularity the shape cannot have */
pz_status units_of(units *u, int gran, int ndim, const int64_t *dims);
static inline int64_t unit_of_plane(const units *u, int64_t p) {
    return u->gran == GRAN_CHANNEL ? p % u->channels : (u->gran == GRAN_SAMPLE || u->gran == GRAN_TOKEN ? p : 0);
}

#endif
