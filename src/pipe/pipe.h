/* pipe.h — a model cut into stages joined by links, each boundary carrying
 * encoded frames: activations forward, gradients backward. One thread per
 * stage over in-process links (the default); every stage owns its layers,
 * its optimizer and its codecs' state and talks to its neighbours only
 * through its links. Knows nothing of how a codec or a link works inside. */
#ifndef PZ_PIPE_H
#define PZ_PIPE_H

#include "nn/nn.h"

#define PZ_MAX_STAGES 16

typedef struct {
    const char *model;      /* preset */
    pz_shape in;
    int n_classes, batch_max;
    uint64_t seed;
    int n_stages;
    int cuts[PZ_MAX_STAGES]; /* stage s ends after top-level layer cuts[s] (s < n_stages - 1) */
    const char *fwd, *bwd;  /* codec specs for activations and gradients at every boundary */
    pz_optim_kind optimizer;
    float momentum, weight_decay;
    int nesterov;
    double timeout_s;       /* a neighbour silent this long is dead (default 60) */
} pz_pipe_config;

typedef struct {
    uint64_t fwd_bytes, bwd_bytes;  /* training: headers + frames forward, frames backward */
    uint64_t eval_bytes;            /* evaluation: headers + frames forward */
    uint64_t link_fwd_bytes, link_bwd_bytes; /* everything the link moved: = the above summed */
    uint64_t elements;              /* activation elements sent forward in training (fp32 = 4 bytes each) */
} pz_boundary_stats;

typedef struct pz_pipe pz_pipe;

/* Cut points for `model`: from a list ("3,4,5" or "layer1.0,layer2.0" —
 * top-level indices or names as `pipezip models` prints them; a group name
 * like "layer1" means its last block), or, with cuts NULL, `stages` stages
 * balanced by forward FLOPs. Fills cfg->cuts and cfg->n_stages. */
pz_status pz_pipe_resolve_cuts(const pz_model *model, const char *cuts, int stages, pz_pipe_config *cfg);

pz_status pz_pipe_create(pz_pipe **p, const pz_pipe_config *cfg);
/* One training step of a batch through every stage; *loss and *correct from
 * the last stage. Errors name the stage and the reason. */
pz_status pz_pipe_train_step(pz_pipe *p, const float *x, const int32_t *y, const uint32_t *ids, int B, float lr,
                             float *loss, int *correct);
/* Eval-mode forward of N examples in batches, through compressed boundaries
 * (compress = 1: the forward codec without its state) or plain fp32 ones;
 * mean loss and accuracy. Evaluation traffic is counted at the links too. */
pz_status pz_pipe_evaluate(pz_pipe *p, const float *x, const int32_t *y, int64_t N, int compress, double *loss,
                           double *accuracy);
pz_boundary_stats pz_pipe_boundary_stats(const pz_pipe *p, int boundary);
void pz_pipe_free(pz_pipe *p);

#endif
