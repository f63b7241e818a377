/* SPDX-License-Identifier: MIT */
/* optim.c — SGD (momentum, Nesterov, L2 weight decay), AdamW and NAdamW
 * (Nesterov momentum with a decaying momentum, Dozat 2016; with a beta1 of
 * 0.99 it is the correction the asynchronous pipeline of arXiv 2505.01099
 * uses for its stale gradients), with the update rules of torch.optim so a
 * run can be checked against PyTorch, and the learning-rate schedules. */
#include "nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void pz_optim_free(pz_optim *o);

const pz_name pz_optimizers[] = {
    {PZ_OPT_SGD, "sgd", "SGD with momentum (Nesterov optional), L2 weight decay"},
    {PZ_OPT_ADAMW, "adamw", "AdamW: decoupled weight decay"},
    {PZ_OPT_NADAMW, "nadamw", "NAdam with decoupled weight decay, beta1 = --momentum (0.99: arXiv 2505.01099's correction "
                              "for --pipe-schedule async's stale gradients)"},
    {0, NULL, NULL},
};

pz_status pz_optim_init(pz_optim *o, pz_optim_kind kind, int64_t n) {
    /* keep the hyperparameters the caller already set; fill defaults for zeros */
    o->kind = kind;
    o->n = n;
    o->t = 0;
    const int adam = kind == PZ_OPT_ADAMW || kind == PZ_OPT_NADAMW;
    if (adam) {
        if (o->beta1 == 0.0f) o->beta1 = kind == PZ_OPT_NADAMW && o->momentum > 0.0f ? o->momentum : 0.9f;
        if (o->beta2 == 0.0f) o->beta2 = 0.999f;
        if (o->eps == 0.0f) o->eps = 1e-8f;
        if (o->momentum_decay == 0.0f) o->momentum_decay = 0.004f;
    }
    o->mu_product = 1.0, o->mu_t = 0;
    o->m = pz_floats_try((size_t)n);
    o->v = adam ? pz_floats_try((size_t)n) : NULL;
    if (!o->m || (adam && !o->v)) {
        pz_optim_free(o);
        return pz_fail(PZ_ERR_NOMEM, "out of memory for the optimizer's state (%lld parameters)", (long long)n);
    }
    return PZ_OK;
}

void pz_optim_free(pz_optim *o) {
    free(o->m);
    free(o->v);
    o->m = o->v = NULL;
}

/* SGD on element i, with weight decay wd (torch.optim.SGD's arithmetic) */
static inline void sgd_one(float *restrict p, float *restrict buf, const float *restrict g, int64_t i, float wd, float mu,
                           int first, int nesterov, float lr) {
    float d = g[i] + wd * p[i];
    if (mu != 0.0f) {
        /* torch: the buffer starts as the first gradient */
        buf[i] = first ? d : mu * buf[i] + d;
        d = nesterov ? d + mu * buf[i] : buf[i];
    }
    p[i] -= lr * d;
}

/* AdamW on element i, its decoupled decay (Loshchilov & Hutter) a factor f
 * of the parameter: torch.optim.AdamW's arithmetic */
static inline void adamw_one(float *restrict p, float *restrict m, float *restrict v, const float *restrict g, int64_t i,
                             float f, float b1, float b2, float step, float sq_bc2, float eps) {
    const float pi = p[i] * f;
    const float mi = b1 * m[i] + (1.0f - b1) * g[i];
    const float vi = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
    m[i] = mi, v[i] = vi;
    p[i] = pi - step * mi / (sqrtf(vi) / sq_bc2 + eps);
}

/* NAdam on element i (torch.optim.NAdam's arithmetic), its decoupled decay
 * a factor f of the parameter first */
static inline void nadamw_one(float *restrict p, float *restrict m, float *restrict v, const float *restrict g, int64_t i,
                              float f, float b1, float b2, float bc2, float eps, float c_g, float c_m) {
    const float pi = p[i] * f;
    const float mi = b1 * m[i] + (1.0f - b1) * g[i];
    const float vi = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
    m[i] = mi, v[i] = vi;
    const float denom = sqrtf(vi / bc2) + eps;
    p[i] = pi - c_g * g[i] / denom - c_m * mi / denom;
}

static double nadam_mu(const pz_optim *o, int64_t t) {
    return (double)o->beta1 * (1.0 - 0.5 * pow(0.96, (double)t * o->momentum_decay));
}

static void nadamw_step(pz_optim *o, float *p, const float *g, float lr) {
    const int64_t n = o->n, t = o->t;
    if (o->mu_t != t - 1) /* a loaded checkpoint: the product so far from the step count */
        for (o->mu_product = 1.0, o->mu_t = 0; o->mu_t < t - 1; o->mu_t++) o->mu_product *= nadam_mu(o, o->mu_t + 1);
    const double mu = nadam_mu(o, t), mu_next = nadam_mu(o, t + 1);
    o->mu_product *= mu, o->mu_t = t;
    const float c_g = (float)(lr * (1.0 - mu) / (1.0 - o->mu_product));
    const float c_m = (float)(lr * mu_next / (1.0 - o->mu_product * mu_next));
    const float b1 = o->beta1, b2 = o->beta2, eps = o->eps, bc2 = 1.0f - powf(b2, (float)t);
    const float keep = 1.0f - lr * o->weight_decay;
    const uint8_t *dec = o->decay;
    float *restrict m = o->m, *restrict v = o->v;
    if (dec) {
#pragma omp parallel for simd schedule(static) num_threads(pz_get_threads()) if (n > 262144)
        for (int64_t i = 0; i < n; i++) nadamw_one(p, m, v, g, i, dec[i] ? keep : 1.0f, b1, b2, bc2, eps, c_g, c_m);
    } else {
#pragma omp parallel for simd schedule(static) num_threads(pz_get_threads()) if (n > 262144)
        for (int64_t i = 0; i < n; i++) nadamw_one(p, m, v, g, i, keep, b1, b2, bc2, eps, c_g, c_m);
    }
}

void pz_optim_step(pz_optim *o, float *p, const float *g, float lr) {
    const int64_t n = o->n;
    o->t++;
    if (o->kind == PZ_OPT_NADAMW) {
        nadamw_step(o, p, g, lr);
    } else if (o->kind == PZ_OPT_SGD) {
        const float mu = o->momentum, wd = o->weight_decay;
        float *buf = o->m;
        const int first = o->t == 1;
        const uint8_t *dec = o->decay;
        const int nesterov = o->nesterov;
        /* as AdamW's below: the mask in a loop of its own */
        if (dec) {
#pragma omp parallel for simd schedule(static) num_threads(pz_get_threads()) if (n > 262144)
            for (int64_t i = 0; i < n; i++) sgd_one(p, buf, g, i, dec[i] ? wd : 0.0f, mu, first, nesterov, lr);
        } else {
#pragma omp parallel for simd schedule(static) num_threads(pz_get_threads()) if (n > 262144)
            for (int64_t i = 0; i < n; i++) sgd_one(p, buf, g, i, wd, mu, first, nesterov, lr);
        }
    } else {
        const float b1 = o->beta1, b2 = o->beta2, eps = o->eps;
        const float bc1 = 1.0f - powf(b1, (float)o->t), bc2 = 1.0f - powf(b2, (float)o->t);
        const float step = lr / bc1, sq_bc2 = sqrtf(bc2);
        const uint8_t *dec = o->decay;
        const float keep = 1.0f - lr * o->weight_decay;
        float *restrict m = o->m, *restrict v = o->v;
        /* one pass, vectorised (the decay a select, not a branch; sqrt
         * without errno: -fno-math-errno), elements over the threads: the
         * same arithmetic per element as one at a time, so the same bits.
         * The mask is read only where there is one, in a loop of its own:
         * `!dec || dec[i]` in one loop reads dec[i] conditionally, which
         * kept GCC from vectorising it (measured: 4.85M parameters, one
         * thread, 14.4 ms scalar) */
        if (dec) {
#pragma omp parallel for simd schedule(static) num_threads(pz_get_threads()) if (n > 262144)
            for (int64_t i = 0; i < n; i++)
                adamw_one(p, m, v, g, i, dec[i] ? keep : 1.0f, b1, b2, step, sq_bc2, eps);
        } else {
#pragma omp parallel for simd schedule(static) num_threads(pz_get_threads()) if (n > 262144)
            for (int64_t i = 0; i < n; i++) adamw_one(p, m, v, g, i, keep, b1, b2, step, sq_bc2, eps);
        }
    }
}

/* ------------------------------------------------------------------------- */
/* schedules */

const pz_name pz_schedules[] = {
    {PZ_SCHED_CONSTANT, "constant", "constant"},
    {PZ_SCHED_COSINE, "cosine", "cosine"},
    {PZ_SCHED_LINEAR, "linear", "linear"},
    {PZ_SCHED_STEP, "step", "step:EPOCHS,GAMMA"},
    {PZ_SCHED_ONECYCLE, "onecycle", "onecycle[:PCT]"},
    {0, NULL, NULL},
};

pz_status pz_schedule_parse(pz_schedule *s, const char *spec) {
    char name[32], forms[160];
    const char *colon = strchr(spec, ':');
    snprintf(name, sizeof name, "%.*s", colon ? (int)(colon - spec) : (int)strlen(spec), spec);
    const pz_name *kind = pz_name_find(pz_schedules, name);
    const char *arg = colon ? colon + 1 : NULL;
    if (!kind || (arg && kind->value != PZ_SCHED_STEP && kind->value != PZ_SCHED_ONECYCLE) || (!arg && kind->value == PZ_SCHED_STEP))
        return pz_fail(PZ_ERR_ARG, "unknown schedule '%s' (expected %s)", spec, pz_names_join_help(pz_schedules, ", ", " or ", forms, sizeof forms));
    s->kind = (pz_sched_kind)kind->value;
    char *end;
    if (s->kind == PZ_SCHED_STEP) {
        s->step_epochs = strtof(arg, &end);
        if (end == arg || *end != ',' || !(s->step_epochs > 0.0f))
            return pz_fail(PZ_ERR_ARG, "schedule '%s': expected step:EPOCHS,GAMMA with EPOCHS > 0, e.g. step:3,0.1", spec);
        const char *g = end + 1;
        s->step_gamma = strtof(g, &end);
        if (end == g || *end || !(s->step_gamma > 0.0f))
            return pz_fail(PZ_ERR_ARG, "schedule '%s': expected step:EPOCHS,GAMMA with GAMMA > 0, e.g. step:3,0.1", spec);
    } else if (s->kind == PZ_SCHED_ONECYCLE) {
        s->pct_start = 0.3f;
        if (arg) {
            s->pct_start = strtof(arg, &end);
            if (end == arg || *end || !(s->pct_start > 0.0f && s->pct_start < 1.0f))
                return pz_fail(PZ_ERR_ARG, "schedule '%s': onecycle:PCT needs 0 < PCT < 1, e.g. onecycle:0.3", spec);
        }
    }
    return PZ_OK;
}

float pz_schedule_lr(const pz_schedule *s, int64_t step) {
    const double base = s->base_lr;
    const double T = s->total_steps > 0 ? (double)s->total_steps : 1.0;
    double lr = base;
    switch (s->kind) {
    case PZ_SCHED_CONSTANT:
        break;
    case PZ_SCHED_STEP: {
        const double epoch = (double)step / (double)(s->steps_per_epoch > 0 ? s->steps_per_epoch : 1);
        lr = base * pow(s->step_gamma, floor(epoch / s->step_epochs));
        break;
    }
    case PZ_SCHED_COSINE:
    case PZ_SCHED_LINEAR: {
        /* anneal from base at the first step after the warm-up to 0 after
         * the last: half a cosine, or a straight line */
        const double w = (double)s->warmup_steps;
        const double t = T > w ? ((double)step - w) / (T - w) : 1.0, tc = t < 0 ? 0 : t > 1 ? 1 : t;
        lr = s->kind == PZ_SCHED_COSINE ? 0.5 * base * (1.0 + cos(M_PI * tc)) : base * (1.0 - tc);
        break;
    }
    case PZ_SCHED_ONECYCLE: {
        /* torch.optim.lr_scheduler.OneCycleLR, cosine anneal: base/25 -> base
         * over pct_start of the steps, then down to base/25/1e4 */
        const double up = fmax(1.0, s->pct_start * T - 1.0);
        const double lo = base / 25.0, end = lo / 1e4;
        if (step <= up) lr = lo + (base - lo) * 0.5 * (1.0 - cos(M_PI * step / up));
        else {
            const double t = fmin(1.0, (step - up) / fmax(1.0, T - 1.0 - up));
            lr = end + (base - end) * 0.5 * (1.0 + cos(M_PI * t));
        }
        return (float)lr;
    }
    }
    if (s->warmup_steps > 0 && step < s->warmup_steps) lr *= (double)(step + 1) / (double)s->warmup_steps;
    return (float)lr;
}
