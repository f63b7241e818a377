/* SPDX-License-Identifier: MIT */
/* test_layers_ref.c — every kernel's forward output and gradients against
 * PyTorch (tests/ref/layers.bin, made by tests/ref/gen_ref.py). */
#include "tool/xalloc.h"
#include "../test.h"
#include "base/base.h"
#include "kernels/kernels.h"

static ref_file rf;
#define R(name) ref_get(&rf, name)

static float *zeros(size_t n) { return calloc(n ? n : 1, sizeof(float)); }

static void conv_case(const char *name, int K, int stride, int pad, int bias) {
    char k[64];
#define T(s) (snprintf(k, sizeof k, "%s.%s", name, s), R(k))
    ref_tensor *x = T("x"), *w = T("w"), *y = T("y"), *dy = T("dy"), *dx = T("dx"), *dw = T("dw");
    const int B = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], OC = w->dims[0];
    float *ws = pz_xfloats(conv2d_workspace_floats(C, H, W, OC, K, stride, pad));
    float *out = zeros(y->n), *gx = zeros(dx->n), *gw = zeros(dw->n), *gb = zeros(OC);
    const float *b = bias ? T("b")->data : NULL;
    conv2d_forward(out, ws, x->data, w->data, b, B, C, H, W, OC, K, stride, pad);
    snprintf(k, sizeof k, "%s forward", name);
    check_close(k, out, y->data, y->n, 1e-5f, 1e-4f);
    conv2d_backward(gx, gw, bias ? gb : NULL, ws, dy->data, x->data, w->data, B, C, H, W, OC, K, stride, pad);
    char lbl[80];
    snprintf(lbl, sizeof lbl, "%s dx", name);
    check_close(lbl, gx, dx->data, dx->n, 1e-5f, 1e-4f);
    snprintf(lbl, sizeof lbl, "%s dw", name);
    check_close(lbl, gw, dw->data, dw->n, 1e-5f, 1e-4f);
    if (bias) {
        snprintf(lbl, sizeof lbl, "%s db", name);
        check_close(lbl, gb, T("db")->data, OC, 1e-5f, 1e-4f);
    }
    /* backward accumulates into parameter gradients: a second call doubles them */
    conv2d_backward(NULL, gw, NULL, ws, dy->data, x->data, w->data, B, C, H, W, OC, K, stride, pad);
    for (size_t i = 0; i < dw->n; i++) gw[i] *= 0.5f;
    snprintf(lbl, sizeof lbl, "%s dw accumulates", name);
    check_close(lbl, gw, dw->data, dw->n, 1e-5f, 1e-4f);
    free(ws), free(out), free(gx), free(gw), free(gb);
#undef T
}

static void pool_case(const char *name, int max, int K, int s, int p) {
    char k[64];
#define T(sfx) (snprintf(k, sizeof k, "%s.%s", name, sfx), R(k))
    ref_tensor *x = T("x"), *y = T("y"), *dy = T("dy"), *dx = T("dx");
    const int B = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    float *out = zeros(y->n), *gx = zeros(dx->n);
    int32_t *am = calloc(y->n, sizeof(int32_t));
    if (max) {
        maxpool2d_forward(out, am, x->data, B, C, H, W, K, s, p);
        maxpool2d_backward(gx, dy->data, am, B, C, H, W, K, s, p);
    } else {
        avgpool2d_forward(out, x->data, B, C, H, W, K, s, p);
        avgpool2d_backward(gx, dy->data, B, C, H, W, K, s, p);
    }
    char lbl[80];
    snprintf(lbl, sizeof lbl, "%s forward", name);
    check_close(lbl, out, y->data, y->n, 1e-6f, 1e-5f);
    snprintf(lbl, sizeof lbl, "%s dx", name);
    check_close(lbl, gx, dx->data, dx->n, 1e-6f, 1e-5f);
    free(out), free(gx), free(am);
#undef T
}

int main(void) {
    pz_set_threads(2);
    if (ref_load(&rf, PZ_SOURCE_DIR "/tests/ref/layers.bin")) return 1;

    conv_case("conv_s2p1", 3, 2, 1, 1);
    conv_case("conv_s1p1", 3, 1, 1, 1);
    conv_case("conv_1x1", 1, 1, 0, 0);
    conv_case("conv_1x1s2", 1, 2, 0, 0);
    conv_case("conv_5x5p2", 5, 1, 2, 1);

    { /* batch norm: train-mode forward/backward, running stats, eval mode */
        ref_tensor *x = R("bn.x");
        const int B = x->dims[0], C = x->dims[1], HW = x->dims[2] * x->dims[3];
        float *y = zeros(x->n), *dx = zeros(x->n), *dg = zeros(C), *db = zeros(C);
        float mean[8], rstd[8], rm[8], rv[8];
        memcpy(rm, R("bn.rm0")->data, sizeof(float) * C);
        memcpy(rv, R("bn.rv0")->data, sizeof(float) * C);
        batchnorm_forward(y, mean, rstd, rm, rv, x->data, R("bn.gamma")->data, R("bn.beta")->data, B, C, HW, 0.1f, 1e-5f, 1);
        check_close("bn forward", y, R("bn.y")->data, x->n, 1e-5f, 1e-4f);
        check_close("bn running mean", rm, R("bn.rm")->data, C, 1e-6f, 1e-5f);
        check_close("bn running var", rv, R("bn.rv")->data, C, 1e-6f, 1e-5f);
        batchnorm_backward(dx, dg, db, R("bn.dy")->data, x->data, mean, rstd, R("bn.gamma")->data, B, C, HW);
        check_close("bn dx", dx, R("bn.dx")->data, x->n, 1e-5f, 1e-4f);
        check_close("bn dgamma", dg, R("bn.dgamma")->data, C, 1e-5f, 1e-4f);
        check_close("bn dbeta", db, R("bn.dbeta")->data, C, 1e-5f, 1e-4f);
        float rm_before[8], rv_before[8];
        memcpy(rm_before, rm, sizeof rm), memcpy(rv_before, rv, sizeof rv);
        batchnorm_forward(y, mean, rstd, rm, rv, x->data, R("bn.gamma")->data, R("bn.beta")->data, B, C, HW, 0.1f, 1e-5f, 0);
        check_close("bn eval forward", y, R("bn.y_eval")->data, x->n, 1e-5f, 1e-4f);
        check_close("bn eval leaves running mean", rm, rm_before, C, 0, 0);
        check_close("bn eval leaves running var", rv, rv_before, C, 0, 0);
        /* fused with the ReLU after it: bit for bit the two kernels in a row,
         * training and evaluation, the gradient through the ReLU's mask */
        for (int train = 1; train >= 0; train--) {
            float *r = zeros(x->n), *f = zeros(x->n), *dz = zeros(x->n), *dxf = zeros(x->n);
            float m2[8], s2[8], rm2[8], rv2[8], dg2[8] = {0}, db2[8] = {0}, dg1[8] = {0}, db1[8] = {0};
            memcpy(rm2, rm, sizeof rm), memcpy(rv2, rv, sizeof rv);
            batchnorm_forward(y, mean, rstd, rm, rv, x->data, R("bn.gamma")->data, R("bn.beta")->data, B, C, HW, 0.1f,
                              1e-5f, train);
            relu_forward(r, y, x->n);
            batchnorm_relu_forward(f, m2, s2, rm2, rv2, x->data, R("bn.gamma")->data, R("bn.beta")->data, B, C, HW,
                                   0.1f, 1e-5f, train);
            CHECK(!memcmp(r, f, sizeof(float) * x->n), "bn+relu forward (train %d) = relu(bn) bit for bit", train);
            { /* with a residual added before the ReLU (a block's end) */
                float *res = zeros(x->n), *want = zeros(x->n), *got = zeros(x->n);
                float m3[8], s3[8], rm3[8], rv3[8], rm4[8], rv4[8];
                for (size_t i = 0; i < x->n; i++) res[i] = y[(i * 7) % x->n] - 0.25f; /* some cancel, some not */
                memcpy(rm3, rm_before, sizeof rm3), memcpy(rv3, rv_before, sizeof rv3);
                memcpy(rm4, rm_before, sizeof rm4), memcpy(rv4, rv_before, sizeof rv4);
                float *bn = zeros(x->n);
                batchnorm_forward(bn, m3, s3, rm3, rv3, x->data, R("bn.gamma")->data, R("bn.beta")->data, B, C, HW,
                                  0.1f, 1e-5f, train);
                add_relu_forward(want, bn, res, x->n);
                batchnorm_add_relu_forward(got, m3, s3, rm4, rv4, x->data, R("bn.gamma")->data, R("bn.beta")->data,
                                           res, B, C, HW, 0.1f, 1e-5f, train);
                int zeros_seen = 0;
                for (size_t i = 0; i < x->n; i++) zeros_seen += want[i] == 0.0f;
                CHECK(!memcmp(want, got, sizeof(float) * x->n) && !memcmp(rm3, rm4, sizeof rm3) &&
                          !memcmp(rv3, rv4, sizeof rv3) && zeros_seen > 0 && zeros_seen < (int)x->n,
                      "bn+add+relu forward (train %d) = relu(bn + res) bit for bit (%d zeros)", train, zeros_seen);
                free(res), free(want), free(got), free(bn);
            }
            CHECK(!memcmp(rm, rm2, sizeof(float) * C) && !memcmp(rv, rv2, sizeof(float) * C),
                  "bn+relu keeps the same running statistics");
            if (train) {
                relu_backward(dz, R("bn.dy")->data, r, x->n);
                batchnorm_backward(dx, dg1, db1, dz, x->data, mean, rstd, R("bn.gamma")->data, B, C, HW);
                batchnorm_relu_backward(dxf, dg2, db2, R("bn.dy")->data, x->data, m2, s2, R("bn.gamma")->data,
                                        R("bn.beta")->data, B, C, HW);
                CHECK(!memcmp(dx, dxf, sizeof(float) * x->n) && !memcmp(dg1, dg2, sizeof dg1) &&
                          !memcmp(db1, db2, sizeof db1),
                      "bn+relu backward = bn backward of relu backward, bit for bit");
                int zeros_seen = 0;
                for (size_t i = 0; i < x->n; i++) zeros_seen += r[i] == 0.0f;
                CHECK(zeros_seen > 0 && zeros_seen < (int)x->n, "the ReLU's mask cuts some and passes some (%d)",
                      zeros_seen);
            }
            free(r), free(f), free(dz), free(dxf);
        }
        free(y), free(dx), free(dg), free(db);
    }
    { /* relu(a + b) in one pass, bit for bit the two kernels */
        const size_t n = 1000;
        float *a = zeros(n), *b = zeros(n), *o1 = zeros(n), *o2 = zeros(n);
        for (size_t i = 0; i < n; i++) a[i] = (float)((int)(i * 37 % 101) - 50) / 7.0f, b[i] = (float)((int)(i % 13) - 6);
        a[3] = NAN;
        add_forward(o1, a, b, n);
        relu_forward(o1, o1, n);
        add_relu_forward(o2, a, b, n);
        CHECK(!memcmp(o1, o2, sizeof(float) * n), "add_relu_forward = relu(add) bit for bit (NaN passes)");
        free(a), free(b), free(o1), free(o2);
    }

    pool_case("maxpool_2s2", 1, 2, 2, 0);
    pool_case("maxpool_3s2p1", 1, 3, 2, 1);
    pool_case("avgpool_2s2", 0, 2, 2, 0);
    pool_case("avgpool_3s1p1", 0, 3, 1, 1);

    { /* global average pooling */
        ref_tensor *x = R("gap.x");
        const int B = x->dims[0], C = x->dims[1], HW = x->dims[2] * x->dims[3];
        float *y = zeros(B * C), *dx = zeros(x->n);
        global_avgpool_forward(y, x->data, B, C, HW);
        global_avgpool_backward(dx, R("gap.dy")->data, B, C, HW);
        check_close("gap forward", y, R("gap.y")->data, B * C, 1e-6f, 1e-5f);
        check_close("gap dx", dx, R("gap.dx")->data, x->n, 1e-6f, 1e-5f);
        free(y), free(dx);
    }
    { /* linear */
        ref_tensor *x = R("linear.x"), *w = R("linear.w");
        const int B = x->dims[0], C = x->dims[1], OC = w->dims[0];
        float *y = zeros(B * OC), *dx = zeros(x->n), *dw = zeros(w->n), *db = zeros(OC);
        linear_forward(y, x->data, w->data, R("linear.b")->data, B, C, OC);
        linear_backward(dx, dw, db, R("linear.dy")->data, x->data, w->data, B, C, OC);
        check_close("linear forward", y, R("linear.y")->data, B * OC, 1e-6f, 1e-5f);
        check_close("linear dx", dx, R("linear.dx")->data, x->n, 1e-6f, 1e-5f);
        check_close("linear dw", dw, R("linear.dw")->data, w->n, 1e-6f, 1e-5f);
        check_close("linear db", db, R("linear.db")->data, OC, 1e-6f, 1e-5f);
        free(y), free(dx), free(dw), free(db);
    }
    { /* softmax cross-entropy */
        ref_tensor *z = R("xent.logits"), *lab = R("xent.labels");
        const int B = z->dims[0], NC = z->dims[1];
        int32_t labels[16];
        for (int b = 0; b < B; b++) labels[b] = (int32_t)lab->data[b];
        float *dz = zeros(z->n);
        int correct = -1;
        float loss = softmax_xent_forward_backward(dz, &correct, z->data, labels, B, NC);
        check_close("xent loss", &loss, R("xent.loss")->data, 1, 1e-6f, 1e-5f);
        check_close("xent dlogits", dz, R("xent.dlogits")->data, z->n, 1e-7f, 1e-5f);
        int hits = 0;
        for (int b = 0; b < B; b++) {
            int arg = 0;
            for (int j = 1; j < NC; j++) if (z->data[b * NC + j] > z->data[b * NC + arg]) arg = j;
            hits += arg == labels[b];
        }
        CHECK(correct == hits, "correct %d, expected %d", correct, hits);
        free(dz);
    }
    { /* relu */
        ref_tensor *x = R("relu.x");
        float *y = zeros(x->n), *dx = zeros(x->n);
        relu_forward(y, x->data, x->n);
        relu_backward(dx, R("relu.dy")->data, y, x->n);
        check_close("relu forward", y, R("relu.y")->data, x->n, 0, 0);
        check_close("relu dx", dx, R("relu.dx")->data, x->n, 0, 0);
        free(y), free(dx);
    }
    ref_free(&rf);
    TEST_DONE();
}
