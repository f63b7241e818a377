/* SPDX-License-Identifier: MIT */
/* conv_direct_impl.h — direct convolution: stride 1 with "same" padding
 * (2 pad = K - 1: every 3x3 pad 1 convolution) here, any other stride and
 * padding through phase planes further down; included once per ISA by
 * conv_direct_avx2.c and conv_direct_avx512.c, which define
 *   CD_SUFFIX  the name suffix,    CD_V  floats per vector,
 *   vec, vload, vstore, vset1, vzero, vfma   (vec_isa.h),
 *   vcopy(d, s, n), vcopy_add(d, s, n, b)   short rows, by masked moves,
 *   CD_HAVE_SPLIT2, vsplit2, vjoin2   (optional) stride-2 phase rows,
 *   vsum16(v)  the 16 lanes of v[0..16/CD_V) added pairwise: lane j + lane
 *              j + 8 (j < 8), then + 4, + 2, + 1; lane 0 is the sum,
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
 * into lane i mod 16, in increasing i, over a group of samples) added
 * pairwise (8, 4, 2, 1), then added to the thread's accumulator group by
 * group (planes up to 10x10: one chain over samples and positions, cv_*
 * below). Which rule applies follows from the shape alone. So the AVX2 and
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
        for (int k = 0; k < nk; k++) dw[(size_t)o * ld + k] += vsum16(acc[o][k]);
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

/* ---- small planes: channels in the vector lanes -------------------------
 * A plane of 7x7 fills 49 of the 64 positions the tiles above compute. Here
 * positions are a list of the valid ones (pos: their index in the padded
 * grid) and a tile is rp positions x rv vectors of output channels: the
 * input is broadcast, the weights ([tap][channel]) are the vectors. Each
 * output element is the same fused chain over its taps in the same order
 * as above, so the results are the same bits. The weight gradient: a tile
 * of rt taps x rv vectors of output channels, over the positions of the dy
 * transposed to [position][channel]: every element one chain over samples
 * and positions in order (no lane sums). */
/* accumulators a tile (positions or taps x vectors), vectors of channels at most */
enum { CD_CV_ACC = CD_V == 16 ? 24 : 12, CD_CV_RVMAX = CD_V == 16 ? 4 : 2 };
#ifndef CD_CV_PLANE
#define CD_CV_PLANE 100 /* planes up to 10x10: measured faster at 7x7 and 8x8, not at 14x14 or 16x16 */
#endif

/* A tile of na accumulators x rv vectors of channels, starting at 0 or
 * (load) at d's values: over i < n, each accumulator a takes
 * broadcast(src[outer[i] + inner[a]]) times the vectors of row i of v
 * (vld floats apart), and the tile is stored back to d (rows ld apart).
 * The forward tile: i a tap (outer: the tap offsets), a a position (inner:
 * the positions), v the weights [tap][channel]. The weight-gradient tile:
 * i a position, a a tap, v the dy [position][channel]. */
CD_ALWAYS void CD_FN(cv_tile)(float *restrict d, size_t ld, int load, const float *restrict v, size_t vld,
                              const float *restrict src, const int *restrict outer, int n, const int *restrict inner,
                              const int na, const int rv) {
    vec acc[CD_CV_ACC][CD_CV_RVMAX];
#pragma GCC unroll 24
    for (int a = 0; a < na; a++)
#pragma GCC unroll 4
        for (int r = 0; r < rv; r++) acc[a][r] = load ? vload(d + (size_t)a * ld + r * CD_V) : vzero();
    for (int i = 0; i < n; i++) {
        vec w[CD_CV_RVMAX];
#pragma GCC unroll 4
        for (int r = 0; r < rv; r++) w[r] = vload(v + (size_t)i * vld + r * CD_V);
        const float *restrict si = src + outer[i];
#pragma GCC unroll 24
        for (int a = 0; a < na; a++) {
            const vec x = vset1(si[inner[a]]);
#pragma GCC unroll 4
            for (int r = 0; r < rv; r++) acc[a][r] = vfma(x, w[r], acc[a][r]);
        }
    }
#pragma GCC unroll 24
    for (int a = 0; a < na; a++)
#pragma GCC unroll 4
        for (int r = 0; r < rv; r++) vstore(d + (size_t)a * ld + r * CD_V, acc[a][r]);
}

/* vectors of channels a tile takes when `left` remain; with them
 * CD_CV_ACC / rv accumulators */
static int CD_FN(cv_rv)(int left) { return left >= CD_CV_RVMAX ? CD_CV_RVMAX : left >= 2 ? 2 : 1; }

/* cv_tile with its shape as constants */
static void CD_FN(cv_call)(float *d, size_t ld, int load, const float *v, size_t vld, const float *src,
                           const int *outer, int n, const int *inner, int rv) {
    if (rv == CD_CV_RVMAX) CD_FN(cv_tile)(d, ld, load, v, vld, src, outer, n, inner, CD_CV_ACC / CD_CV_RVMAX, CD_CV_RVMAX);
    else if (rv == 2) CD_FN(cv_tile)(d, ld, load, v, vld, src, outer, n, inner, CD_CV_ACC / 2, 2);
    else CD_FN(cv_tile)(d, ld, load, v, vld, src, outer, n, inner, CD_CV_ACC, 1);
}

/* t [Pr][cp] = the taps of src at the P positions pos (padded to a multiple
 * of CD_CV_ACC by repeating the last) times wt [nk][cp]; cp a multiple of
 * CD_V */
static void CD_FN(cv_gemm)(float *restrict t, const float *restrict src, const int *restrict pos, int P,
                           const int *restrict off, int nk, const float *restrict wt, int cp) {
    const int nv = cp / CD_V;
    for (int v0 = 0, rv; v0 < nv; v0 += rv) {
        rv = CD_FN(cv_rv)(nv - v0);
        for (int j0 = 0; j0 < P; j0 += CD_CV_ACC / rv)
            CD_FN(cv_call)(t + (size_t)j0 * cp + (size_t)v0 * CD_V, cp, 0, wt + (size_t)v0 * CD_V, cp, src, off, nk,
                           pos + j0, rv);
    }
}

/* dwt [nkr][cp] += over the P positions: the taps of src times g [P][cp];
 * nkr = nk rounded up to CD_CV_ACC (the extra rows take tap 0: ignored) */
static void CD_FN(cv_dw)(float *restrict dwt, const float *restrict g, const float *restrict src,
                         const int *restrict pos, int P, const int *restrict off, int nk, int cp) {
    const int nv = cp / CD_V;
    for (int v0 = 0, rv; v0 < nv; v0 += rv) {
        rv = CD_FN(cv_rv)(nv - v0);
        const int rt = CD_CV_ACC / rv;
        for (int k0 = 0; k0 < nk; k0 += rt) {
            int offt[CD_CV_ACC];
            for (int t = 0; t < rt; t++) offt[t] = off[k0 + t < nk ? k0 + t : 0];
            CD_FN(cv_call)(dwt + (size_t)k0 * cp + (size_t)v0 * CD_V, cp, 1, g + (size_t)v0 * CD_V, cp, src, pos, P,
                           offt, rv);
        }
    }
}

/* dw (nout, nk) = the dwt [nk][cp] cv_dw summed into, transposed */
static void CD_FN(cv_dw_store)(float *restrict dw, const float *restrict dwt, int cp, int nout, int nk) {
    for (int o = 0; o < nout; o++)
        for (int k = 0; k < nk; k++) dw[(size_t)o * nk + k] = dwt[(size_t)k * cp + o];
}

/* the P valid positions of an H x W plane in its padded grid (Wp wide),
 * padded to Pr by repeating the last */
static void CD_FN(cv_positions)(int *pos, int P, int Pr, int W, int Wp) {
    for (int j = 0; j < Pr; j++) {
        const int q = j < P ? j : P - 1;
        pos[j] = q / W * Wp + q % W;
    }
}

/* (P positions x cp) -> (C, P) planes, plus a bias; adds: added to the
 * planes there, img + (x + 0.0f), the bits of writing and adding after */
static void CD_FN(cv_untranspose)(float *restrict img, const float *restrict t, int cp, int C, int P,
                                  const float *bias, int adds) {
    for (int c = 0; c < C; c++) {
        const float b = bias ? bias[c] : 0.0f; /* x + 0.0f: as drop_garbage */
        float *restrict d = img + (size_t)c * P;
        if (adds)
            for (int j = 0; j < P; j++) d[j] = d[j] + (t[(size_t)j * cp + c] + b);
        else
            for (int j = 0; j < P; j++) d[j] = t[(size_t)j * cp + c] + b;
    }
}

/* (C, P) planes -> (P x cp), channels past C left as they are (zero) */
static void CD_FN(cv_transpose)(float *restrict t, const float *restrict img, int cp, int C, int P) {
    for (int j = 0; j < P; j++)
        for (int c = 0; c < C; c++) t[(size_t)j * cp + c] = img[(size_t)c * P + j];
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

/* packed weights (rows of channels rounded up to 16, either layout), two
 * tap tables (ints) */
static size_t CD_FN(shared_floats)(int C, int OC, int K) {
    const int rows = CD_FN(round_up)(C > OC ? C : OC, 16), taps = (C > OC ? C : OC) * K * K;
    return (size_t)rows * taps + 2 * (size_t)taps;
}

/* the tap tables, after the packed weights */
static int *CD_FN(tables)(float *ws, int C, int OC, int K) {
    const int rows = CD_FN(round_up)(C > OC ? C : OC, 16), taps = (C > OC ? C : OC) * K * K;
    return (int *)(ws + (size_t)rows * taps);
}

/* small planes take the cv_* kernels (the same bits for the output and the
 * input gradient; the weight gradient its own fixed order) */
static int CD_FN(cv_plane)(int H, int W) { return H * W <= CD_CV_PLANE; }
#ifndef CD_CV_SPLANE
#define CD_CV_SPLANE 100 /* strided, output planes up to 10x10: 7x7 measured 1.5x faster (a 3x3 to 64 channels,
                          * forward and backward); 14x14 and 16x16 gained under 5% (and change the weight
                          * gradient's bits) */
#endif
static int CD_FN(cv_splane)(int H, int W) { return H * W <= CD_CV_SPLANE; }

/* a thread's workspace for the cv kernels: the padded input and dy planes,
 * the transposed input gradient (T), dy (G) and weight gradient (DWT), the
 * positions; `floats` is its size (base NULL: the size alone) */
typedef struct {
    float *X, *DY, *T, *G, *DWT;
    int *pos;
    size_t floats;
} CD_FN(cv_ws);

static CD_FN(cv_ws) CD_FN(cv_layout)(float *base, int C, int H, int W, int OC, int K, const CD_FN(geom) *g) {
    const size_t Pr = (size_t)CD_FN(round_up)(H * W, CD_CV_ACC), cmax = (size_t)CD_FN(round_up)(C > OC ? C : OC, CD_V);
    const size_t ocp = (size_t)CD_FN(round_up)(OC, CD_V), nkr = (size_t)CD_FN(round_up)(C * K * K, CD_CV_ACC);
    const size_t dy = (size_t)C * g->PS, t = dy + (size_t)OC * g->PS, gg = t + Pr * cmax, dwt = gg + Pr * ocp;
    const size_t pos = dwt + nkr * ocp;
    CD_FN(cv_ws) w = {.floats = pos + Pr};
    if (base)
        w.X = base, w.DY = base + dy, w.T = base + t, w.G = base + gg, w.DWT = base + dwt, w.pos = (int *)(base + pos);
    return w;
}

static size_t CD_FN(thread_floats)(int C, int H, int W, int OC, int K) {
    const CD_FN(geom) g = CD_FN(geometry)(H, W, K);
    const int rows = CD_FN(round_up)(C > OC ? C : OC, CD_RO);
    const size_t rowwise = (size_t)g.group * ((size_t)C + OC) * g.PS + (size_t)rows * g.n16 * 16;
    const size_t cv = CD_FN(cv_layout)(NULL, C, H, W, OC, K, &g).floats;
    return (rowwise > cv ? rowwise : cv) + (size_t)OC * C * K * K + 64;
}

static size_t CD_FN(ws_same)(int C, int H, int W, int OC, int K, int threads) {
    return CD_FN(shared_floats)(C, OC, K) + (size_t)threads * CD_FN(thread_floats)(C, H, W, OC, K);
}

static void CD_FN(tap_table)(int *off, int C, int K, const CD_FN(geom) *g) {
    for (int c = 0; c < C; c++)
        for (int kh = 0; kh < K; kh++)
            for (int kw = 0; kw < K; kw++) off[(c * K + kh) * K + kw] = (int)((size_t)c * g->PS) + kh * g->Wp + kw;
}

/* weights (OC, nk) in blocks of R output channels, [block][tap][R], the
 * channels past OC zero: R = CD_RO for the row tiles; R = OC rounded up to
 * CD_V, one block, is the cv tiles' [tap][channel] */
static void CD_FN(pack)(float *restrict wpk, const float *restrict weight, int OC, int nk, int R) {
    const int nob = CD_FN(round_up)(OC, R) / R;
    for (int ob = 0; ob < nob; ob++)
        for (int k = 0; k < nk; k++)
            for (int r = 0; r < R; r++) {
                const int oc = ob * R + r;
                wpk[((size_t)ob * nk + k) * R + r] = oc < OC ? weight[(size_t)oc * nk + k] : 0.0f;
            }
}

/* the input gradient's weights, flipped and transposed, wf[c][oc][kh][kw] =
 * w[oc][c][K-1-kh][K-1-kw], packed as pack() does with C output channels */
static void CD_FN(pack_flipped)(float *restrict wpk, const float *restrict weight, int C, int OC, int K, int R) {
    const int nob = CD_FN(round_up)(C, R) / R, nkt = OC * K * K;
    for (int ob = 0; ob < nob; ob++)
        for (int oc = 0; oc < OC; oc++)
            for (int kh = 0; kh < K; kh++)
                for (int kw = 0; kw < K; kw++)
                    for (int r = 0; r < R; r++) {
                        const int c = ob * R + r, k = (oc * K + kh) * K + kw;
                        wpk[((size_t)ob * nkt + k) * R + r] =
                            c < C ? weight[(((size_t)oc * C + c) * K + (K - 1 - kh)) * K + (K - 1 - kw)] : 0.0f;
                    }
}

/* one image (C, H, W) into the interiors of the padded planes */
static void CD_FN(fill)(float *restrict planes, const float *restrict img, int C, int H, int W, const CD_FN(geom) *g) {
    for (int c = 0; c < C; c++)
        for (int h = 0; h < H; h++) {
            float *restrict d = planes + (size_t)c * g->PS + (size_t)(h + g->pad) * g->Wp + g->pad;
            vcopy(d, img + ((size_t)c * H + h) * W, W);
        }
}

/* the valid positions of rows (C rows of stride ds, a grid of rows wr wide)
 * into (C, OH, OW); adds: added to what is there, as cv_untranspose */
static void CD_FN(drop_garbage)(float *restrict img, const float *restrict rows, size_t ds, const float *bias, int C,
                                int OH, int OW, int wr, int adds) {
    for (int c = 0; c < C; c++) {
        const float b = bias ? bias[c] : 0.0f; /* x + 0.0f is x (a -0.0 output becomes +0.0) */
        for (int h = 0; h < OH; h++) {
            float *restrict d = img + ((size_t)c * OH + h) * OW;
            const float *restrict r = rows + (size_t)c * ds + (size_t)h * wr;
            if (adds)
                for (int w = 0; w < OW; w++) d[w] = d[w] + (r[w] + b);
            else
                vcopy_add(d, r, OW, b);
        }
    }
}

static void CD_FN(forward_same)(float *out, float *ws, const float *inp, const float *weight, const float *bias,
                                   int B, int C, int H, int W, int OC, int K, int threads) {
    const CD_FN(geom) g = CD_FN(geometry)(H, W, K);
    const int nk = C * K * K, nob = CD_FN(round_up)(OC, CD_RO) / CD_RO;
    float *wpk = ws;
    int *off = CD_FN(tables)(ws, C, OC, K);
    float *per = ws + CD_FN(shared_floats)(C, OC, K);
    const size_t tf = CD_FN(thread_floats)(C, H, W, OC, K);
    CD_FN(tap_table)(off, C, K, &g);
    if (CD_FN(cv_plane)(H, W)) {
        const int ocp = CD_FN(round_up)(OC, CD_V), P = H * W;
        CD_FN(pack)(wpk, weight, OC, nk, ocp); /* [tap][channel] */
#pragma omp parallel num_threads(threads)
        {
            const CD_FN(cv_ws) w = CD_FN(cv_layout)(per + (size_t)omp_get_thread_num() * tf, C, H, W, OC, K, &g);
            CD_FN(cv_positions)(w.pos, P, CD_FN(round_up)(P, CD_CV_ACC), W, g.Wp);
            memset(w.X, 0, sizeof(float) * (size_t)C * g.PS);
#pragma omp for schedule(static)
            for (int b = 0; b < B; b++) {
                CD_FN(fill)(w.X, inp + (size_t)b * C * H * W, C, H, W, &g);
                CD_FN(cv_gemm)(w.T, w.X, w.pos, P, off, nk, wpk, ocp);
                CD_FN(cv_untranspose)(out + (size_t)b * OC * P, w.T, ocp, OC, P, bias, 0);
            }
        }
        return;
    }
    CD_FN(pack)(wpk, weight, OC, nk, CD_RO);
#pragma omp parallel num_threads(threads)
    {
        float *X = per + (size_t)omp_get_thread_num() * tf;
        float *D = X + (size_t)g.group * ((size_t)C + OC) * g.PS;
        memset(X, 0, sizeof(float) * (size_t)C * g.PS);
#pragma omp for schedule(static)
        for (int b = 0; b < B; b++) {
            CD_FN(fill)(X, inp + (size_t)b * C * H * W, C, H, W, &g);
            CD_FN(gemm_taps)(D, (size_t)g.n16 * 16, X, off, nk, wpk, nob, g.nvec);
            CD_FN(drop_garbage)(out + (size_t)b * OC * H * W, D, (size_t)g.n16 * 16, bias, OC, H, W, g.Wp, 0);
        }
    }
}

/* dweight_t: each thread's accumulator (OC, C K K), zeroed here, returned for
 * the caller's fixed-order reduction through *acc and *acc_stride */
static void CD_FN(backward_same)(float *dinp, float *ws, const float *dout, const float *inp, const float *weight,
                                    int B, int C, int H, int W, int OC, int K, int threads, int adds, float **acc,
                                    size_t *acc_stride) {
    const CD_FN(geom) g = CD_FN(geometry)(H, W, K);
    const int nk = C * K * K, nkt = OC * K * K, nob = CD_FN(round_up)(C, CD_RO) / CD_RO;
    const int taps = (C > OC ? C : OC) * K * K;
    float *wpk = ws;
    int *off_x = CD_FN(tables)(ws, C, OC, K);
    int *off_d = off_x + taps;
    float *per = ws + CD_FN(shared_floats)(C, OC, K);
    const size_t tf = CD_FN(thread_floats)(C, H, W, OC, K);
    CD_FN(tap_table)(off_x, C, K, &g);
    CD_FN(tap_table)(off_d, OC, K, &g);
    if (CD_FN(cv_plane)(H, W)) {
        const int ocp = CD_FN(round_up)(OC, CD_V), cp = CD_FN(round_up)(C, CD_V), P = H * W;
        const int nkr = CD_FN(round_up)(nk, CD_CV_ACC);
        if (dinp) CD_FN(pack_flipped)(wpk, weight, C, OC, K, cp); /* [tap (oc, kh, kw)][input channel] */
        const size_t dw_at = CD_FN(cv_layout)(NULL, C, H, W, OC, K, &g).floats;
        *acc = per + dw_at;
        *acc_stride = tf;
#pragma omp parallel num_threads(threads)
        {
            float *base = per + (size_t)omp_get_thread_num() * tf, *dw = base + dw_at;
            const CD_FN(cv_ws) w = CD_FN(cv_layout)(base, C, H, W, OC, K, &g);
            CD_FN(cv_positions)(w.pos, P, CD_FN(round_up)(P, CD_CV_ACC), W, g.Wp);
            memset(w.X, 0, sizeof(float) * ((size_t)C + OC) * g.PS);
            memset(w.G, 0, sizeof(float) * ((size_t)CD_FN(round_up)(P, CD_CV_ACC) * ocp + (size_t)nkr * ocp));
#pragma omp for schedule(static)
            for (int b = 0; b < B; b++) {
                CD_FN(fill)(w.X, inp + (size_t)b * C * H * W, C, H, W, &g);
                const float *dyb = dout + (size_t)b * OC * P;
                CD_FN(cv_transpose)(w.G, dyb, ocp, OC, P);
                CD_FN(cv_dw)(w.DWT, w.G, w.X, w.pos, P, off_x, nk, ocp);
                if (dinp) { /* the flipped kernel over dy's padded planes, at the input positions */
                    CD_FN(fill)(w.DY, dyb, OC, H, W, &g);
                    CD_FN(cv_gemm)(w.T, w.DY, w.pos, P, off_d, nkt, wpk, cp);
                    CD_FN(cv_untranspose)(dinp + (size_t)b * C * P, w.T, cp, C, P, NULL, adds);
                }
            }
            CD_FN(cv_dw_store)(dw, w.DWT, ocp, OC, nk);
        }
        return;
    }
    if (dinp) CD_FN(pack_flipped)(wpk, weight, C, OC, K, CD_RO);
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
                                        g.Wp, adds);
                }
        }
    }
}

/* ---- stride S > 1 -------------------------------------------------------
 * The padded image split into S x S phase planes, Q[ph][pw][y][x] =
 * Xp[S y + ph][S x + pw], Wq = ceil(Wp / S) wide: output (oh, ow) reads tap
 * (kh, kw) at phase (kh % S, kw % S), position (oh + kh / S, ow + kw / S),
 * so in an output grid Wq wide every tap is again one shifted contiguous
 * run, and the forward and weight-gradient kernels are those above. The
 * input gradient, phase by phase: dQ[ph][pw][y][x] = sum over the taps (kh,
 * kw) = (S a + ph, S b + pw) of w * dy[y - a][x - b], a correlation over
 * dy padded by A = (K - 1) / S above and to the left, Wd = Wq + A wide. */
typedef struct {
    int S, pad, K, OH, OW;
    int Hq, Wq, A;   /* phase planes; the largest tap shift */
    size_t PSq;      /* floats per phase plane, guards included */
    int NI, n16, nvec; /* output grid OH x Wq */
    int group;
    int Wd, Hd;      /* the padded dy of the input gradient */
    size_t PSd;
    int n16q, nvecq; /* a phase's input-gradient grid Hq x Wd */
} CD_FN(sgeom);

static CD_FN(sgeom) CD_FN(sgeometry)(int H, int W, int K, int S, int pad) {
    CD_FN(sgeom) g;
    g.S = S, g.pad = pad, g.K = K;
    g.OH = (H + 2 * pad - K) / S + 1, g.OW = (W + 2 * pad - K) / S + 1;
    g.Hq = (H + 2 * pad + S - 1) / S, g.Wq = (W + 2 * pad + S - 1) / S;
    g.A = (K - 1) / S;
    g.PSq = (size_t)(g.Hq * g.Wq + g.A + 32 + 15) / 16 * 16;
    g.NI = g.OH * g.Wq;
    g.n16 = (g.NI + 15) / 16;
    g.nvec = g.n16 * 16 / CD_V;
    g.group = (64 + g.n16 - 1) / g.n16;
    if (g.group > 16) g.group = 16;
    g.Wd = g.Wq + g.A, g.Hd = g.Hq + g.A;
    g.PSd = (size_t)(g.Hd * g.Wd + g.A + 32 + 15) / 16 * 16;
    g.n16q = (g.Hq * g.Wd + 15) / 16;
    g.nvecq = g.n16q * 16 / CD_V;
    return g;
}

/* Small output planes (cv_splane) take the cv kernels here too: the output
 * positions (the valid ones of the OH x Wq grid) and, for the input
 * gradient, each phase's positions (the valid ones of its Hq x Wd grid) are
 * lists, the channels the vector lanes. A thread's workspace then: the
 * phase planes (Q), the padded dy (DP), the transposed output or input
 * gradient (T), dy (G) and weight gradient (DWT), the output positions, and
 * for every phase in turn its positions in DP's grid (posq, each phase's
 * list padded to CD_CV_ACC) and in the input plane (hwq) */
typedef struct {
    float *Q, *DP, *T, *G, *DWT, *D;
    int *pos, *posq, *hwq;
    size_t floats;
} CD_FN(scv_ws);

static CD_FN(scv_ws) CD_FN(scv_layout)(float *base, int C, int H, int W, int OC, int K, const CD_FN(sgeom) *g) {
    const size_t P = (size_t)g->OH * g->OW, Pr = (size_t)CD_FN(round_up)((int)P, CD_CV_ACC);
    const size_t Pq = (size_t)CD_FN(round_up)(g->Hq * g->Wq, CD_CV_ACC), Pm = Pr > Pq ? Pr : Pq;
    const size_t cmax = (size_t)CD_FN(round_up)(C > OC ? C : OC, CD_V), ocp = (size_t)CD_FN(round_up)(OC, CD_V);
    const size_t nkr = (size_t)CD_FN(round_up)(C * K * K, CD_CV_ACC);
    const size_t dp = (size_t)C * g->S * g->S * g->PSq, t = dp + (size_t)OC * g->PSd, gg = t + Pm * cmax;
    const size_t dwt = gg + Pr * ocp, pos = dwt + nkr * ocp, posq = pos + Pr;
    const size_t hwq = posq + (size_t)H * W + (size_t)g->S * g->S * CD_CV_ACC;
    const size_t d = hwq + (size_t)H * W; /* the row tiles' input gradient grid, when they take it */
    CD_FN(scv_ws) w = {.floats = d + (size_t)CD_FN(round_up)(C, CD_RO) * g->n16q * 16};
    if (base)
        w.Q = base, w.DP = base + dp, w.T = base + t, w.G = base + gg, w.DWT = base + dwt, w.pos = (int *)(base + pos),
        w.posq = (int *)(base + posq), w.hwq = (int *)(base + hwq), w.D = base + d;
    return w;
}

static size_t CD_FN(sthread_floats)(int C, int H, int W, int OC, int K, int S, int pad) {
    const CD_FN(sgeom) g = CD_FN(sgeometry)(H, W, K, S, pad);
    const int rows = CD_FN(round_up)(C > OC ? C : OC, CD_RO);
    const size_t grid = (size_t)(g.n16 > g.n16q ? g.n16 : g.n16q) * 16;
    const size_t rowwise = (size_t)g.group * ((size_t)C * S * S * g.PSq + (size_t)OC * g.n16 * 16) +
                           (size_t)OC * g.PSd + (size_t)rows * grid;
    const size_t cv = CD_FN(cv_splane)(g.OH, g.OW) ? CD_FN(scv_layout)(NULL, C, H, W, OC, K, &g).floats : 0;
    return (rowwise > cv ? rowwise : cv) + (size_t)OC * C * K * K + 64;
}

/* phase (ph, pw)'s input positions, their rows y0.. (ny of them) and
 * columns x0.. (nx) of the phase grid: input (S y + ph - pad, S x + pw - pad) */
static void CD_FN(phase_span)(int n, int ph, int pad, int S, int *first, int *count) {
    const int h0 = ((ph - pad) % S + S) % S; /* the first input row of the phase */
    *first = (h0 + pad) / S;
    *count = h0 < n ? (n - 1 - h0) / S + 1 : 0;
}

static size_t CD_FN(ws_strided)(int C, int H, int W, int OC, int K, int S, int pad, int threads) {
    return CD_FN(shared_floats)(C, OC, K) + (size_t)threads * CD_FN(sthread_floats)(C, H, W, OC, K, S, pad);
}

/* tap (c, kh, kw) of the phase planes */
static void CD_FN(stap_table)(int *off, int C, const CD_FN(sgeom) *g) {
    const int K = g->K, S = g->S;
    for (int c = 0; c < C; c++)
        for (int kh = 0; kh < K; kh++)
            for (int kw = 0; kw < K; kw++)
                off[(c * K + kh) * K + kw] =
                    (int)(((size_t)c * S * S + (size_t)(kh % S) * S + kw % S) * g->PSq) + (kh / S) * g->Wq + kw / S;
}

/* one image (C, H, W) into its phase planes (their padding stays zero);
 * phases no tap reads (kh % S >= K: K < S) are left out */
static void CD_FN(fill_phases)(float *restrict q, const float *restrict img, int C, int H, int W,
                               const CD_FN(sgeom) *g) {
    const int S = g->S, p = g->pad;
    for (int c = 0; c < C; c++)
        for (int h = 0; h < H; h++) {
            const int y = (h + p) / S, ph = (h + p) % S;
            if (ph >= g->K) continue;
            const float *restrict s = img + ((size_t)c * H + h) * W;
#ifdef CD_HAVE_SPLIT2
            if (S == 2 && g->K >= 2) { /* even columns to phase p % 2, odd ones to the other */
                float *restrict row = q + ((size_t)c * S + ph) * S * g->PSq + (size_t)y * g->Wq;
                vsplit2(row + (size_t)(p % 2) * g->PSq + p / 2, row + (size_t)((p + 1) % 2) * g->PSq + (p + 1) / 2, s, W);
                continue;
            }
#endif
            for (int pw = 0; pw < S && pw < g->K; pw++) {
                float *restrict row = q + (((size_t)c * S + ph) * S + pw) * g->PSq + (size_t)y * g->Wq;
                int x0, nx;
                CD_FN(phase_span)(W, pw, p, S, &x0, &nx);
                for (int x = x0; x < x0 + nx; x++) row[x] = s[S * x + pw - p];
            }
        }
}

/* rows (C, OH, OW) into a grid rows wr wide, at (r0, c0) (the rest stays zero) */
static void CD_FN(fill_grid)(float *restrict d, size_t ds, const float *restrict img, int C, int OH, int OW, int wr,
                             int r0, int c0) {
    for (int c = 0; c < C; c++)
        for (int h = 0; h < OH; h++) {
            float *restrict row = d + (size_t)c * ds + (size_t)(h + r0) * wr + c0;
            vcopy(row, img + ((size_t)c * OH + h) * OW, OW);
        }
}

static void CD_FN(forward_strided)(float *out, float *ws, const float *inp, const float *weight,
                                           const float *bias, int B, int C, int H, int W, int OC, int K, int S,
                                           int pad, int threads) {
    const CD_FN(sgeom) g = CD_FN(sgeometry)(H, W, K, S, pad);
    const int nk = C * K * K, nob = CD_FN(round_up)(OC, CD_RO) / CD_RO;
    float *wpk = ws;
    int *off = CD_FN(tables)(ws, C, OC, K);
    float *per = ws + CD_FN(shared_floats)(C, OC, K);
    const size_t tf = CD_FN(sthread_floats)(C, H, W, OC, K, S, pad);
    const size_t QS = (size_t)C * S * S * g.PSq, ds = (size_t)g.n16 * 16;
    CD_FN(stap_table)(off, C, &g);
    if (CD_FN(cv_splane)(g.OH, g.OW)) { /* the output positions a list, the channels the lanes */
        const int ocp = CD_FN(round_up)(OC, CD_V), P = g.OH * g.OW;
        CD_FN(pack)(wpk, weight, OC, nk, ocp); /* [tap][channel] */
#pragma omp parallel num_threads(threads)
        {
            const CD_FN(scv_ws) w = CD_FN(scv_layout)(per + (size_t)omp_get_thread_num() * tf, C, H, W, OC, K, &g);
            CD_FN(cv_positions)(w.pos, P, CD_FN(round_up)(P, CD_CV_ACC), g.OW, g.Wq);
            memset(w.Q, 0, sizeof(float) * QS);
#pragma omp for schedule(static)
            for (int b = 0; b < B; b++) {
                CD_FN(fill_phases)(w.Q, inp + (size_t)b * C * H * W, C, H, W, &g);
                CD_FN(cv_gemm)(w.T, w.Q, w.pos, P, off, nk, wpk, ocp);
                CD_FN(cv_untranspose)(out + (size_t)b * OC * P, w.T, ocp, OC, P, bias, 0);
            }
        }
        return;
    }
    CD_FN(pack)(wpk, weight, OC, nk, CD_RO);
#pragma omp parallel num_threads(threads)
    {
        float *Q = per + (size_t)omp_get_thread_num() * tf;
        float *D = Q + (size_t)g.group * (QS + (size_t)OC * ds) + (size_t)OC * g.PSd;
        memset(Q, 0, sizeof(float) * QS);
#pragma omp for schedule(static)
        for (int b = 0; b < B; b++) {
            CD_FN(fill_phases)(Q, inp + (size_t)b * C * H * W, C, H, W, &g);
            CD_FN(gemm_taps)(D, ds, Q, off, nk, wpk, nob, g.nvec);
            CD_FN(drop_garbage)(out + (size_t)b * OC * g.OH * g.OW, D, ds, bias, OC, g.OH, g.OW, g.Wq, 0);
        }
    }
}

/* one sample's input gradient dx (C, H, W) by the row tiles, phase by
 * phase, from its padded dy DP: each phase's grid (Hq x Wd) into D, its
 * valid positions into dx; wpk [block][tap][CD_RO] per phase */
static void CD_FN(sdx_rows)(float *restrict dx, float *D, const float *DP, const CD_FN(sgeom) *g, int C, int H, int W,
                            const int *off_d, const int *ph_tap0, const int *ph_w0, const float *wpk) {
    const int S = g->S, pad = g->pad, nob = CD_FN(round_up)(C, CD_RO) / CD_RO;
    const size_t dq = (size_t)g->n16q * 16;
    for (int ph = 0; ph < S; ph++)
        for (int pw = 0; pw < S; pw++) {
            const int P = ph * S + pw, nt_p = ph_tap0[P + 1] - ph_tap0[P];
            if (nt_p) CD_FN(gemm_taps)(D, dq, DP, off_d + ph_tap0[P], nt_p, wpk + ph_w0[P], nob, g->nvecq);
            /* input positions of this phase: rows S y + ph - pad, columns S x + pw - pad */
            int y0, ny, x0, nx;
            CD_FN(phase_span)(H, ph, pad, S, &y0, &ny);
            CD_FN(phase_span)(W, pw, pad, S, &x0, &nx);
            const int w0 = S * x0 + pw - pad; /* the first column, < S */
            for (int c = 0; c < C; c++)
                for (int y = y0; y < y0 + ny; y++) {
                    const float *restrict s = D + (size_t)c * dq + (size_t)y * g->Wd;
                    float *restrict d = dx + ((size_t)c * H + S * y + ph - pad) * W;
#ifdef CD_HAVE_SPLIT2
                    if (nt_p && S == 2)
                        vjoin2(d, s + x0, W, w0);
                    else
#endif
                    if (nt_p)
                        for (int w = w0, x = x0; w < W; w += S, x++) d[w] = s[x];
                    else
                        for (int w = w0; w < W; w += S) d[w] = 0.0f;
                }
        }
}

/* backward_strided's cv kernels (small output planes): the weight gradient
 * one chain a (tap, channel) over the thread's samples and positions, the
 * input gradient phase by phase over its positions; off_x, off_d, ph_tap0,
 * ph_w0 and wpk as backward_strided made them: [tap][channel] per phase
 * for the cv input gradient (cv_dx), else the row tiles' */
static void CD_FN(backward_strided_cv)(float *dinp, float *per, size_t tf, const float *dout, const float *inp, int B,
                                       int C, int H, int W, int OC, int K, int threads, const CD_FN(sgeom) *g,
                                       const int *off_x, const int *off_d, const int *ph_tap0, const int *ph_w0,
                                       const float *wpk, int cv_dx, float **acc, size_t *acc_stride) {
    const int S = g->S, P = g->OH * g->OW, nk = C * K * K;
    const int ocp = CD_FN(round_up)(OC, CD_V), cp = CD_FN(round_up)(C, CD_V), Pr = CD_FN(round_up)(P, CD_CV_ACC);
    const int nkr = CD_FN(round_up)(nk, CD_CV_ACC);
    const size_t dw_at = CD_FN(scv_layout)(NULL, C, H, W, OC, K, g).floats;
    *acc = per + dw_at;
    *acc_stride = tf;
#pragma omp parallel num_threads(threads)
    {
        float *base = per + (size_t)omp_get_thread_num() * tf, *dw = base + dw_at;
        const CD_FN(scv_ws) w = CD_FN(scv_layout)(base, C, H, W, OC, K, g);
        CD_FN(cv_positions)(w.pos, P, Pr, g->OW, g->Wq);
        /* each phase's positions: in DP's grid (padded to CD_CV_ACC by
         * repeating the last), in the input plane */
        int q0[65], nq[65];
        for (int ph = 0, at = 0, hw = 0; ph < S; ph++)
            for (int pw = 0; pw < S; pw++) {
                int y0, ny, x0, nx;
                CD_FN(phase_span)(H, ph, g->pad, S, &y0, &ny);
                CD_FN(phase_span)(W, pw, g->pad, S, &x0, &nx);
                const int Pp = ny * nx, Ppr = CD_FN(round_up)(Pp, CD_CV_ACC);
                q0[ph * S + pw] = at, nq[ph * S + pw] = Pp;
                for (int j = 0; j < Ppr && Pp; j++) {
                    const int q = j < Pp ? j : Pp - 1, y = y0 + q / nx, x = x0 + q % nx;
                    w.posq[at + j] = y * g->Wd + x;
                    if (j < Pp) w.hwq[hw + j] = (S * y + ph - g->pad) * W + S * x + pw - g->pad;
                }
                at += Ppr, hw += Pp;
            }
        memset(w.Q, 0, sizeof(float) * ((size_t)C * S * S * g->PSq + (size_t)OC * g->PSd));
        memset(w.G, 0, sizeof(float) * ((size_t)Pr * ocp + (size_t)nkr * ocp));
#pragma omp for schedule(static)
        for (int b = 0; b < B; b++) {
            const float *dyb = dout + (size_t)b * OC * P;
            CD_FN(fill_phases)(w.Q, inp + (size_t)b * C * H * W, C, H, W, g);
            CD_FN(cv_transpose)(w.G, dyb, ocp, OC, P);
            CD_FN(cv_dw)(w.DWT, w.G, w.Q, w.pos, P, off_x, nk, ocp);
            if (!dinp) continue;
            float *dx = dinp + (size_t)b * C * H * W;
            CD_FN(fill_grid)(w.DP, g->PSd, dyb, OC, g->OH, g->OW, g->Wd, g->A, g->A);
            if (!cv_dx) {
                CD_FN(sdx_rows)(dx, w.D, w.DP, g, C, H, W, off_d, ph_tap0, ph_w0, wpk);
                continue;
            }
            for (int ph = 0, hw = 0; ph < S * S; hw += nq[ph], ph++) {
                const int Pp = nq[ph], nt_p = ph_tap0[ph + 1] - ph_tap0[ph];
                const int *hwq = w.hwq + hw;
                if (!nt_p) { /* no tap lands here: zero */
                    for (int c = 0; c < C; c++)
                        for (int j = 0; j < Pp; j++) dx[(size_t)c * H * W + hwq[j]] = 0.0f;
                    continue;
                }
                if (!Pp) continue;
                CD_FN(cv_gemm)(w.T, w.DP, w.posq + q0[ph], Pp, off_d + ph_tap0[ph], nt_p, wpk + ph_w0[ph], cp);
                for (int c = 0; c < C; c++)
                    for (int j = 0; j < Pp; j++) dx[(size_t)c * H * W + hwq[j]] = w.T[(size_t)j * cp + c];
            }
        }
        CD_FN(cv_dw_store)(dw, w.DWT, ocp, OC, nk);
    }
}

static void CD_FN(backward_strided)(float *dinp, float *ws, const float *dout, const float *inp,
                                            const float *weight, int B, int C, int H, int W, int OC, int K, int S,
                                            int pad, int threads, float **acc, size_t *acc_stride) {
    const CD_FN(sgeom) g = CD_FN(sgeometry)(H, W, K, S, pad);
    const int cv = CD_FN(cv_splane)(g.OH, g.OW), cp = CD_FN(round_up)(C, CD_V);
    /* the input gradient by the cv tiles too when they get two vectors of
     * input channels or more (one vector: a broadcast a multiply-add, bound
     * by the loads; 16x28x28 to 32, stride 2, measured 30% slower); either
     * way the same bits */
    const int cv_dx = cv && cp >= 2 * CD_V;
    /* the input gradient's weights per phase: [block][tap][CD_RO] for the
     * row tiles, [tap][channel] (one block of cp) for the cv tiles */
    const int R = cv_dx ? cp : CD_RO, nob = cv_dx ? 1 : CD_FN(round_up)(C, CD_RO) / CD_RO;
    const int nk = C * K * K;
    const int taps = (C > OC ? C : OC) * K * K;
    float *wpk = ws;
    int *off_x = CD_FN(tables)(ws, C, OC, K);
    int *off_d = off_x + taps;
    float *per = ws + CD_FN(shared_floats)(C, OC, K);
    const size_t tf = CD_FN(sthread_floats)(C, H, W, OC, K, S, pad);
    const size_t QS = (size_t)C * S * S * g.PSq, ds = (size_t)g.n16 * 16, dq = (size_t)g.n16q * 16;
    const size_t GS = (size_t)OC * ds; /* a sample's dy in the output grid */
    /* per phase (ph, pw): its taps (oc, a, b), packed weights and offsets,
     * phases one after another; at most S*S <= 64 phases (S <= 8) */
    int ph_tap0[65], ph_w0[65];
    int t = 0, wo = 0;
    for (int ph = 0; ph < S; ph++)
        for (int pw = 0; pw < S; pw++) {
            const int P = ph * S + pw;
            ph_tap0[P] = t, ph_w0[P] = wo;
            const int t0 = t;
            for (int oc = 0; oc < OC; oc++)
                for (int kh = ph; kh < K; kh += S)
                    for (int kw = pw; kw < K; kw += S)
                        off_d[t++] = (int)((size_t)oc * g.PSd) + (g.A - kh / S) * g.Wd + (g.A - kw / S);
            if (dinp)
                for (int ob = 0; ob < nob; ob++) {
                    int k = 0;
                    for (int oc = 0; oc < OC; oc++)
                        for (int kh = ph; kh < K; kh += S)
                            for (int kw = pw; kw < K; kw += S, k++)
                                for (int r = 0; r < R; r++) {
                                    const int c = ob * R + r;
                                    wpk[wo + ((size_t)ob * (t - t0) + k) * R + r] =
                                        c < C ? weight[(((size_t)oc * C + c) * K + kh) * K + kw] : 0.0f;
                                }
                }
            wo += nob * R * (t - t0);
        }
    ph_tap0[S * S] = t;
    CD_FN(stap_table)(off_x, C, &g);
    if (cv) {
        CD_FN(backward_strided_cv)(dinp, per, tf, dout, inp, B, C, H, W, OC, K, threads, &g, off_x, off_d, ph_tap0,
                                   ph_w0, wpk, cv_dx, acc, acc_stride);
        return;
    }
    const size_t dw_at = (size_t)g.group * (QS + GS) + (size_t)OC * g.PSd +
                         (size_t)CD_FN(round_up)(C > OC ? C : OC, CD_RO) * (ds > dq ? ds : dq);
    *acc = per + dw_at;
    *acc_stride = tf;
#pragma omp parallel num_threads(threads)
    {
        const int th = omp_get_thread_num(), nt = omp_get_num_threads();
        float *Q = per + (size_t)th * tf;              /* group samples' phase planes */
        float *G = Q + (size_t)g.group * QS;            /* their dy in the output grid */
        float *DP = G + (size_t)g.group * GS;           /* one sample's padded dy */
        float *D = DP + (size_t)OC * g.PSd;
        float *dw = per + (size_t)th * tf + dw_at;
        memset(Q, 0, sizeof(float) * ((size_t)g.group * (QS + GS) + (size_t)OC * g.PSd));
        memset(dw, 0, sizeof(float) * (size_t)OC * nk);
        const int lo = (int)((int64_t)B * th / nt), hi = (int)((int64_t)B * (th + 1) / nt);
        for (int b0 = lo; b0 < hi; b0 += g.group) {
            const int nb = hi - b0 < g.group ? hi - b0 : g.group;
            for (int j = 0; j < nb; j++) {
                CD_FN(fill_phases)(Q + j * QS, inp + (size_t)(b0 + j) * C * H * W, C, H, W, &g);
                CD_FN(fill_grid)(G + j * GS, ds, dout + (size_t)(b0 + j) * OC * g.OH * g.OW, OC, g.OH, g.OW, g.Wq, 0,
                                 0);
            }
            CD_FN(dw_taps)(dw, G, ds, GS, OC, Q, QS, off_x, nk, nb, g.n16);
            if (!dinp) continue;
            for (int j = 0; j < nb; j++) {
                float *dx = dinp + (size_t)(b0 + j) * C * H * W;
                CD_FN(fill_grid)(DP, g.PSd, dout + (size_t)(b0 + j) * OC * g.OH * g.OW, OC, g.OH, g.OW, g.Wd, g.A,
                                 g.A);
                CD_FN(sdx_rows)(dx, D, DP, &g, C, H, W, off_d, ph_tap0, ph_w0, wpk);
            }
        }
    }
}

/* ---- the entry points: stride 1 with same padding, or phase planes ------- */
static int CD_FN(same)(int K, int S, int pad) { return S == 1 && 2 * pad == K - 1; }

size_t CD_FN(pz_conv_direct_ws)(int C, int H, int W, int OC, int K, int S, int pad, int threads) {
    return CD_FN(same)(K, S, pad) ? CD_FN(ws_same)(C, H, W, OC, K, threads)
                                  : CD_FN(ws_strided)(C, H, W, OC, K, S, pad, threads);
}

void CD_FN(pz_conv_direct_forward)(float *out, float *ws, const float *inp, const float *weight, const float *bias,
                                   int B, int C, int H, int W, int OC, int K, int S, int pad, int threads) {
    if (CD_FN(same)(K, S, pad)) CD_FN(forward_same)(out, ws, inp, weight, bias, B, C, H, W, OC, K, threads);
    else CD_FN(forward_strided)(out, ws, inp, weight, bias, B, C, H, W, OC, K, S, pad, threads);
}

void CD_FN(pz_conv_direct_backward)(float *dinp, float *ws, const float *dout, const float *inp, const float *weight,
                                    int B, int C, int H, int W, int OC, int K, int S, int pad, int threads, int adds,
                                    float **acc, size_t *acc_stride) {
    if (CD_FN(same)(K, S, pad))
        CD_FN(backward_same)(dinp, ws, dout, inp, weight, B, C, H, W, OC, K, threads, adds, acc, acc_stride);
    else CD_FN(backward_strided)(dinp, ws, dout, inp, weight, B, C, H, W, OC, K, S, pad, threads, acc, acc_stride);
}
