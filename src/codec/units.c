/* SPDX-License-Identifier: MIT */
/* units.c — a tensor's units (units.h). */
#include "units.h"

#include <string.h>

pz_status units_of(units *u, int gran, int ndim, const int64_t *dims) {
    memset(u, 0, sizeof *u);
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= dims[i];
    u->n = n;
    u->gran = gran;
    if (gran == GRAN_TENSOR) {
        u->U = 1, u->m = n, u->plane_len = n, u->planes = 1;
    } else if (gran == GRAN_SAMPLE) {
        u->U = dims[0], u->m = dims[0] ? n / dims[0] : 0, u->plane_len = u->m, u->planes = dims[0];
    } else if (gran == GRAN_CHANNEL) {
        if (ndim < 2) return frame_error(PZ_FRAME_PARAM, "per-channel granularity needs at least 2 dimensions, the tensor has %d", ndim);
        u->channels = dims[1];
        u->U = dims[1];
        u->m = dims[1] ? n / dims[1] : 0;
        u->planes = dims[0] * dims[1];
        u->plane_len = u->planes ? n / u->planes : 0;
    } else if (gran == GRAN_TOKEN) {
        /* each vector along the last dimension: a token's features in B x T x d */
        if (ndim < 1) return frame_error(PZ_FRAME_PARAM, "per-token granularity needs at least 1 dimension");
        u->m = dims[ndim - 1];
        u->U = u->m ? n / u->m : 0;
        u->plane_len = u->m, u->planes = u->U;
    } else {
        return frame_error(PZ_FRAME_PARAM, "granularity %d is not 0 (tensor), 1 (sample), 2 (channel) or 3 (token)", gran);
    }
    return PZ_OK;
}
