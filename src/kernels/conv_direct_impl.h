/* conv_direct_impl.h — direct convolution for stride 1 with "same" padding
 * (2 pad = K - 1: every 3x3 pad 1 convolution), included once per ISA by
 * conv_direct_avx2.c and conv_direct_avx512.c, which define
 *   CD_SUFFIX  the name suffix,    CD_V  floats per vector,
 *   vec, vload, vstore, vset1, vzero, vfma   (intrinsics),
 *   CD_RO, CD_RI      forward tile: output channels x vectors of positions,
 *   CD_WO, CD_WK      weight-gradient tile: output channels x kernel taps.
 *
 * The idea: copy each image into planes with a zero border of `pad`, Wp = W
 * + 2 pad wide. Then an output position i = oh * Wp + ow (ow < Wp; the last
 * 2 pad columns of each row are garbage and dropped) reads tap (c, kh, kw)
 * at plane c, index i + kh * Wp + kw: every tap is one contiguous,
 * shifted run of the plane. The convolution becomes a GEMM whose B rows are
 * those runs, read in place: no im2col, no packing of the image.
 *   forward      out_p (OC, NI)  = W (OC, C K K) . taps(X)
 *   input grad   dx_p  (C, NI)   = the same kernel over the padded dy with
 *                                  the flipped, transposed weights
 *   weight grad  dW (OC, C K K) += dyv (OC, NI) . taps(X)^T, where dyv is the
 *                                  padded dy seen at offset pad * Wp + pad
 *                                  (zero at every garbage position)
 *
 * Arithmetic, identical in every ISA build: each output or input-gradient
 * element is one fused multiply-add chain over its taps in (c, kh, kw)
 * order from 0; each weight-gradient element is 16 lane sums (position i
 * into lane i mod 16, in increasing i) added pairwise (8, 4, 2, 1), then
 * added to the thread's accumulator sample by sample. So the AVX2 and
 * AVX-512 builds give the same bits, and a thread count always the same. */
#include <omp.h>
#include <stdint.h>
#include <string.h>

#define CD_CAT2(a, b) a##_##b
#define CD_CAT(a, b) CD_CAT2(a, b)
#define CD_FN(name) CD_CAT(name, CD_SUFFIX)

#define CD_ALWAYS static inline __attribute__((always_inline))

/* forward tile: CD_RO output rows x ri vectors of positions, taps 0..nk-1 */
CD_ALWAYS void CD_FN(tile_fwd)(float *restrict d, size_t ds, const float *restrict s, const int *restrict off, int nk,
                               const float *restrict w, const int ri) {
    vec acc[CD_RO][CD_RI];
#pragma GCC unroll 8
    for (int o = 0; o < CD_RO; o++)
#pragma GCC unroll 8
        for (int r = 0; r < ri; r++) acc[o][r] = vzero();
    for (int k = 0; k < nk; k++) {
        const float *sk = s + off[k];
        vec x[CD_RI];
#pragma GCC unroll 8
        for (int r = 0; r < ri; r++) x[r] = vload(sk + r * CD_V);
        const float *wk = w + (size_t)k * CD_RO;
#pragma GCC unroll 8
        for (int o = 0; o < CD_RO; o++) {
            const vec wb = vset1(wk[o]);
#pragma GCC unroll 8
            for (int r = 0; r < ri; r++) acc[o][r] = vfma(wb, x[r], acc[o][r]);
        }
    }
#pragma GCC unroll 8
    for (int o = 0; o < CD_RO; o++)
#pragma GCC unroll 8
        for (int r = 0; r < ri; r++) vstore(d + (size_t)o * ds + r * CD_V, acc[o][r]);
}

/* dst (nob * CD_RO rows of stride ds, nvec vectors) = packed weights wpk
 * ([ob][k][CD_RO]) times the taps of src */
static void CD_FN(gemm_taps)(float *restrict dst, size_t ds, const float *restrict src, const int *restrict off, int nk,
                             const float *restrict wpk, int nob, int nvec) {
    for (int v0 = 0; v0 < nvec; v0 += CD_RI) {
        const int ri = nvec - v0 < CD_RI ? nvec - v0 : CD_RI;
        const float *s = src + (size_t)v0 * CD_V;
        for (int ob = 0; ob < nob; ob++) {
            float *d = dst + (size_t)ob * CD_RO * ds + (size_t)v0 * CD_V;
            const float *w = wpk + (size_t)ob * nk * CD_RO;
            switch (ri) {
#define CD_CASE(n)                                                                                                     \
    case n: CD_FN(tile_fwd)(d, ds, s, off, nk, w, (n) <= CD_RI ? (n) : CD_RI); break;
                CD_CASE(1) CD_CASE(2) CD_CASE(3) CD_CASE(4) CD_CASE(5) CD_CASE(6) CD_CASE(7) CD_CASE(8)
#undef CD_CASE
            }
        }
    }
}

/* weight-gradient tile: CD_WO rows of g x CD_WK taps, over nb samples (g
 * and s advance by gb and sb floats a sample) of n16 groups of 16 positions;
 * lane sums reduced pairwise and added to dw[o * ld + k] */
static void CD_FN(tile_dw)(float *restrict dw, int ld, const float *const *restrict g, size_t gb, int no,
                           const float *restrict s, size_t sb, const int *restrict offk, int nk, int nb, int n16) {
    enum { NV = 16 / CD_V };
    vec acc[CD_WO][CD_WK][NV];
#pragma GCC unroll 8
    for (int o = 0; o < CD_WO; o++)
#pragma GCC unroll 8
        for (int k = 0; k < CD_WK; k++)
#pragma GCC unroll 2
            for (int u = 0; u < NV; u++) acc[o][k][u] = vzero();
    for (int b = 0; b < nb; b++) {
        const float *gs[CD_WO], *ss[CD_WK];
        for (int o = 0; o < CD_WO; o++) gs[o] = g[o] + (size_t)b * gb;
        for (int k = 0; k < CD_WK; k++) ss[k] = s + (size_t)b * sb + offk[k];
        for (int i = 0; i < n16 * 16; i += 16) {
#pragma GCC unroll 2
            for (int u = 0; u < NV; u++) {
                vec gv[CD_WO];
#pragma GCC unroll 8
                for (int o = 0; o < CD_WO; o++) gv[o] = vload(gs[o] + i + u * CD_V);
#pragma GCC unroll 8
                for (int k = 0; k < CD_WK; k++) {
                    const vec sv = vload(ss[k] + i + u * CD_V);
#pragma GCC unroll 8
                    for (int o = 0; o < CD_WO; o++) acc[o][k][u] = vfma(gv[o], sv, acc[o][k][u]);
                }
            }
        }
    }
    for (int o = 0; o < no; o++)
        for (int k = 0; k < nk; k++) {
            float lane[16];
            for (int u = 0; u < NV; u++) vstore(lane + u * CD_V, acc[o][k][u]);
            for (int step = 8; step; step >>= 1)
                for (int j = 0; j < step; j++) lane[j] += lane[j + step];
            dw[(size_t)o * ld + k] += lane[0];
        }
}

/* dw (nout, nk) += the sum over nb samples and their positions of g rows
 * (stride gs) times the taps; a sample is gb floats of g, sb of src */
static void CD_FN(dw_taps)(float *restrict dw, const float *restrict g, size_t gs, size_t gb, int nout,
                           const float *restrict src, size_t sb, const int *restrict off, int nk, int nb, int n16) {
    for (int o0 = 0; o0 < nout; o0 += CD_WO) {
        const int no = nout - o0 < CD_WO ? nout - o0 : CD_WO;
        const float *rows[CD_WO];
        /* rows past the end repeat the first; their sums are not stored */
        for (int o = 0; o < CD_WO; o++) rows[o] = g + (size_t)(o0 + (o < no ? o : 0)) * gs;
        for (int k0 = 0; k0 < nk; k0 += CD_WK) {
            const int nkk = nk - k0 < CD_WK ? nk - k0 : CD_WK;
            int offk[CD_WK];
            for (int k = 0; k < CD_WK; k++) offk[k] = off[k0 + (k < nkk ? k : 0)];
            CD_FN(tile_dw)(dw + (size_t)o0 * nk + k0, nk, rows, gb, no, src, sb, offk, nkk, nb, n16);
        }
    }
}

/* the geometry every routine derives from (C, H, W, K) */
typedef struct {
    int pad, Hp, Wp;
    int NI;        /* H * Wp, positions of the output grid (garbage included) */
    int n16;       /* NI rounded up to groups of 16 */
    int nvec;      /* n16 * 16 / CD_V */
    int group;     /* samples whose weight-gradient sums are reduced together */
    size_t PS;     /* floats per padded plane, guards included */
} CD_FN(geom);

static CD_FN(geom) CD_FN(geometry)(int H, int W, int K) {
    CD_FN(geom) g;
    g.pad = (K - 1) / 2;
    g.Hp = H + 2 * g.pad, g.Wp = W + 2 * g.pad;
    g.NI = H * g.Wp;
    g.n16 = (g.NI + 15) / 16;
    g.nvec = g.n16 * 16 / CD_V;
    /* at least 64 groups of 16 positions between reductions (small planes) */
    g.group = (64 + g.n16 - 1) / g.n16;
    if (g.group > 16) g.group = 16;
    /* reads reach 2 pad + 15 past the padded grid (forward) and pad * Wp +
     * pad + 15 past a plane's start + NI (the shifted dy view): a zero tail */
    g.PS = (size_t)(g.Hp * g.Wp + 2 * g.pad + 32 + 15) / 16 * 16;
    return g;
}

static int CD_FN(round_up)(int n, int m) { return (n + m - 1) / m * m; }

static size_t CD_FN(shared_floats)(int C, int OC, int K) {
    const int rows = CD_FN(round_up)(C > OC ? C : OC, CD_RO), taps = (C > OC ? C : OC) * K * K;
    return (size_t)rows * taps + 2 * (size_t)taps; /* packed weights, two tap tables (ints) */
}

static size_t CD_FN(thread_floats)(int C, int H, int W, int OC, int K) {
    const CD_FN(geom) g = CD_FN(geometry)(H, W, K);
    const int rows = CD_FN(round_up)(C > OC ? C : OC, CD_RO);
    return (size_t)g.group * ((size_t)C + OC) * g.PS + (size_t)rows * g.n16 * 16 + (size_t)OC * C * K * K + 64;
}

size_t CD_FN(pz_conv_direct_ws)(int C, int H, int W, int OC, int K, int threads) {
    return CD_FN(shared_floats)(C, OC, K) + (size_t)threads * CD_FN(thread_floats)(C, H, W, OC, K);
}

static void CD_FN(tap_table)(int *off, int C, int K, const CD_FN(geom) *g) {
    for (int c = 0; c < C; c++)
        for (int kh = 0; kh < K; kh++)
            for (int kw = 0; kw < K; kw++) off[(c * K + kh) * K + kw] = (int)((size_t)c * g->PS) + kh * g->Wp + kw;
}

/* one image (C, H, W) into the interiors of the padded planes */
static void CD_FN(fill)(float *restrict planes, const float *restrict img, int C, int H, int W, const CD_FN(geom) *g) {
    for (int c = 0; c < C; c++)
        for (int h = 0; h < H; h++)
            memcpy(planes + (size_t)c * g->PS + (size_t)(h + g->pad) * g->Wp + g->pad, img + ((size_t)c * H + h) * W,
                   sizeof(float) * (size_t)W);
}

/* the valid positions of rows (C, NI-grid of stride ds) into (C, H, W) */
static void CD_FN(drop_garbage)(float *restrict img, const float *restrict rows, size_t ds, const float *bias, int C,
                                int H, int W, const CD_FN(geom) *g) {
    for (int c = 0; c < C; c++) {
        const float b = bias ? bias[c] : 0.0f;
        for (int h = 0; h < H; h++) {
            const float *s = rows + (size_t)c * ds + (size_t)h * g->Wp;
            float *d = img + ((size_t)c * H + h) * W;
            if (bias)
                for (int w = 0; w < W; w++) d[w] = s[w] + b;
            else
                memcpy(d, s, sizeof(float) * (size_t)W);
        }
    }
}

void CD_FN(pz_conv_direct_forward)(float *out, float *ws, const float *inp, const float *weight, const float *bias,
                                   int B, int C, int H, int W, int OC, int K, int threads) {
    const CD_FN(geom) g = CD_FN(geometry)(H, W, K);
    const int nk = C * K * K, nob = CD_FN(round_up)(OC, CD_RO) / CD_RO;
    float *wpk = ws;
    int *off = (int *)(ws + (size_t)CD_FN(round_up)(C > OC ? C : OC, CD_RO) * (C > OC ? C : OC) * K * K);
    float *per = ws + CD_FN(shared_floats)(C, OC, K);
    const size_t tf = CD_FN(thread_floats)(C, H, W, OC, K);
    for (int ob = 0; ob < nob; ob++)
        for (int k = 0; k < nk; k++)
            for (int r = 0; r < CD_RO; r++) {
                const int oc = ob * CD_RO + r;
                wpk[((size_t)ob * nk + k) * CD_RO + r] = oc < OC ? weight[(size_t)oc * nk + k] : 0.0f;
            }
    CD_FN(tap_table)(off, C, K, &g);
#pragma omp parallel num_threads(threads)
    {
        float *X = per + (size_t)omp_get_thread_num() * tf;
        float *D = X + (size_t)g.group * ((size_t)C + OC) * g.PS;
        memset(X, 0, sizeof(float) * (size_t)C * g.PS);
#pragma omp for schedule(static)
        for (int b = 0; b < B; b++) {
            CD_FN(fill)(X, inp + (size_t)b * C * H * W, C, H, W, &g);
            CD_FN(gemm_taps)(D, (size_t)g.n16 * 16, X, off, nk, wpk, nob, g.nvec);
            CD_FN(drop_garbage)(out + (size_t)b * OC * H * W, D, (size_t)g.n16 * 16, bias, OC, H, W, &g);
        }
    }
}

/* dweight_t: each thread's accumulator (OC, C K K), zeroed here, returned for
 * the caller's fixed-order reduction through *acc and *acc_stride */
void CD_FN(pz_conv_direct_backward)(float *dinp, float *ws, const float *dout, const float *inp, const float *weight,
                                    int B, int C, int H, int W, int OC, int K, int threads, float **acc,
                                    size_t *acc_stride) {
    const CD_FN(geom) g = CD_FN(geometry)(H, W, K);
    const int nk = C * K * K, nkt = OC * K * K, nob = CD_FN(round_up)(C, CD_RO) / CD_RO;
    const int taps = (C > OC ? C : OC) * K * K;
    float *wpk = ws;
    int *off_x = (int *)(ws + (size_t)CD_FN(round_up)(C > OC ? C : OC, CD_RO) * taps);
    int *off_d = off_x + taps;
    float *per = ws + CD_FN(shared_floats)(C, OC, K);
    const size_t tf = CD_FN(thread_floats)(C, H, W, OC, K);
    /* flipped, transposed weights: wf[c][oc][kh][kw] = w[oc][c][K-1-kh][K-1-kw] */
    if (dinp)
        for (int ob = 0; ob < nob; ob++)
            for (int oc = 0; oc < OC; oc++)
                for (int kh = 0; kh < K; kh++)
                    for (int kw = 0; kw < K; kw++)
                        for (int r = 0; r < CD_RO; r++) {
                            const int c = ob * CD_RO + r, k = (oc * K + kh) * K + kw;
                            wpk[((size_t)ob * nkt + k) * CD_RO + r] =
                                c < C ? weight[(((size_t)oc * C + c) * K + (K - 1 - kh)) * K + (K - 1 - kw)] : 0.0f;
                        }
    CD_FN(tap_table)(off_x, C, K, &g);
    CD_FN(tap_table)(off_d, OC, K, &g);
    const size_t XS = (size_t)C * g.PS, DS = (size_t)OC * g.PS; /* a sample's planes */
    const size_t dw_at = (size_t)g.group * (XS + DS) + (size_t)CD_FN(round_up)(C > OC ? C : OC, CD_RO) * g.n16 * 16;
    *acc = per + dw_at;
    *acc_stride = tf;
#pragma omp parallel num_threads(threads)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        float *X = per + (size_t)t * tf;   /* group samples' input planes */
        float *DY = X + (size_t)g.group * XS; /* their output-gradient planes */
        float *D = DY + (size_t)g.group * DS;
        float *dw = per + (size_t)t * tf + dw_at;
        memset(X, 0, sizeof(float) * (size_t)g.group * (XS + DS));
        memset(dw, 0, sizeof(float) * (size_t)OC * nk);
        const size_t view = (size_t)g.pad * g.Wp + g.pad;
        /* this thread's samples, in groups */
        const int lo = (int)((int64_t)B * t / nt), hi = (int)((int64_t)B * (t + 1) / nt);
        for (int b0 = lo; b0 < hi; b0 += g.group) {
            const int nb = hi - b0 < g.group ? hi - b0 : g.group;
            for (int j = 0; j < nb; j++) {
                CD_FN(fill)(X + j * XS, inp + (size_t)(b0 + j) * C * H * W, C, H, W, &g);
                CD_FN(fill)(DY + j * DS, dout + (size_t)(b0 + j) * OC * H * W, OC, H, W, &g);
            }
            CD_FN(dw_taps)(dw, DY + view, g.PS, DS, OC, X, XS, off_x, nk, nb, g.n16);
            if (dinp)
                for (int j = 0; j < nb; j++) {
                    CD_FN(gemm_taps)(D, (size_t)g.n16 * 16, DY + j * DS, off_d, nkt, wpk, nob, g.nvec);
                    CD_FN(drop_garbage)(dinp + (size_t)(b0 + j) * C * H * W, D, (size_t)g.n16 * 16, NULL, C, H, W,
                                        &g);
                }
        }
    }
}
