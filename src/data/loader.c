/* SPDX-License-Identifier: MIT */
/* loader.c — shuffled, augmented batches with stable sample ids. */
#include "data.h"

#include <stdlib.h>
#include <string.h>

pz_augment pz_data_augment(const pz_data_spec *d, int pad, int flip) {
    return (pz_augment){.pad = pad >= 0 ? pad : d->pad, .flip = flip >= 0 ? flip : d->flip};
}

pz_status pz_loader_init(pz_loader *l, const pz_dataset *d, int batch, int shuffle, pz_augment aug, uint64_t seed) {
    memset(l, 0, sizeof *l);
    l->d = d;
    l->batch = batch;
    l->shuffle = shuffle;
    l->aug = aug;
    pz_rng_seed(&l->rng, seed);
    l->order = calloc((size_t)d->n ? (size_t)d->n : 1, sizeof(uint32_t));
    l->x = pz_floats_try((size_t)batch * d->c * d->h * d->w);
    l->y = calloc((size_t)batch * pz_dataset_targets(d), sizeof(int32_t));
    l->ids = calloc((size_t)batch, sizeof(uint32_t));
    if (!l->order || !l->x || !l->y || !l->ids) {
        pz_loader_free(l);
        return pz_fail(PZ_ERR_NOMEM, "out of memory for batches of %d", batch);
    }
    pz_loader_start_epoch(l, 0);
    return PZ_OK;
}

void pz_loader_start_epoch(pz_loader *l, int epoch) {
    l->epoch = epoch;
    l->pos = 0;
    for (int64_t i = 0; i < l->d->n; i++) l->order[i] = (uint32_t)i;
    if (!l->shuffle) return;
    pz_rng r = pz_rng_split(&l->rng, 0x51u << 24 | (uint64_t)epoch);
    for (int64_t i = l->d->n - 1; i > 0; i--) { /* Fisher-Yates */
        const uint32_t j = pz_rng_below(&r, (uint32_t)(i + 1));
        const uint32_t t = l->order[i];
        l->order[i] = l->order[j];
        l->order[j] = t;
    }
}

int64_t pz_loader_batches(const pz_loader *l) { return (l->d->n + l->batch - 1) / l->batch; }

/* Random crop: the image shifted by (dy, dx) in [-pad, pad], exposed border
 * filled with the normalised value of a black pixel (as torchvision pads the
 * raw image with zeros before normalising); then optionally mirrored. */
static void augment(float *dst, const float *src, const pz_dataset *d, pz_augment aug, pz_rng *r) {
    const int C = d->c, H = d->h, W = d->w;
    int dy = 0, dx = 0, flip = 0;
    if (aug.pad > 0) {
        dy = (int)pz_rng_below(r, 2 * aug.pad + 1) - aug.pad;
        dx = (int)pz_rng_below(r, 2 * aug.pad + 1) - aug.pad;
    }
    if (aug.flip) flip = (int)(pz_rng_u64(r) >> 63);
    for (int c = 0; c < C; c++) {
        const float fill = d->std[c] > 0 ? -d->mean[c] / d->std[c] : 0.0f;
        const float *sp = src + (size_t)c * H * W;
        float *dp = dst + (size_t)c * H * W;
        for (int y = 0; y < H; y++) {
            const int sy = y + dy;
            for (int x = 0; x < W; x++) {
                const int sx = (flip ? W - 1 - x : x) + dx;
                dp[y * W + x] = (sy >= 0 && sy < H && sx >= 0 && sx < W) ? sp[sy * W + sx] : fill;
            }
        }
    }
}

int pz_loader_next(pz_loader *l) {
    const pz_dataset *d = l->d;
    const int64_t left = d->n - l->pos;
    if (left <= 0) return 0;
    const int B = (int)(left < l->batch ? left : l->batch);
    const size_t per = (size_t)d->c * d->h * d->w, ty = (size_t)pz_dataset_targets(d);
    const int do_aug = !d->tokens && (l->aug.pad > 0 || l->aug.flip);
    for (int b = 0; b < B; b++) {
        const uint32_t id = l->order[l->pos + b];
        l->ids[b] = (uint32_t)(d->id_base + id);
        if (ty == 1) l->y[b] = d->y[id];
        else memcpy(l->y + b * ty, d->y + id * ty, sizeof(int32_t) * ty);
        if (do_aug) {
            pz_rng r = pz_rng_split(&l->rng, (uint64_t)(l->epoch + 1) << 32 | id);
            augment(l->x + b * per, d->x + id * per, d, l->aug, &r);
        } else {
            memcpy(l->x + b * per, d->x + id * per, sizeof(float) * per);
        }
    }
    l->pos += B;
    return B;
}

void pz_loader_skip(pz_loader *l, int64_t n) {
    const int64_t to = l->pos + n * l->batch;
    l->pos = to < l->d->n ? to : l->d->n;
}

void pz_loader_free(pz_loader *l) {
    free(l->order);
    free(l->x);
    free(l->y);
    free(l->ids);
    memset(l, 0, sizeof *l);
}
