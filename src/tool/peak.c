/* SPDX-License-Identifier: MIT */
/* peak.c — the machine's arithmetic peak as `pipezip bench` measures it:
 * single-precision fused multiply-adds in the widest vectors the CPU has
 * (AVX-512, else AVX2 + FMA), 12 independent chains per thread so neither
 * latency nor anything but the FMA units limits it, on 1 thread and on
 * the team. The number the training steps are a fraction of. */
#include "tool/bench.h"
#include "base/base.h"

#include <immintrin.h>
#include <omp.h>

/* twelve accumulators as named variables (an array would live on the stack) */
#define CHAINS(F) F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11)
#define FMA_LOOP(T, SET1, FMA, ADD, FIRST)                                                                             \
    const T x = SET1(0.999999f), y = SET1(1e-7f);                                                                    \
    CHAINS(DECL)                                                                                                     \
    for (long k = 0; k < iters; k++) { CHAINS(STEP) }                                                                \
    T s = ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5), ADD(a6, a7)));                                        \
    s = ADD(s, ADD(ADD(a8, a9), ADD(a10, a11)));                                                                     \
    return FIRST(s);

__attribute__((target("avx512f"))) static float fma_avx512(long iters, float seed) {
#define DECL(i) __m512 a##i = _mm512_set1_ps(seed + (float)(i));
#define STEP(i) a##i = _mm512_fmadd_ps(a##i, x, y);
    FMA_LOOP(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, _mm512_cvtss_f32)
#undef DECL
#undef STEP
}

__attribute__((target("avx2,fma"))) static float fma_avx2(long iters, float seed) {
#define DECL(i) __m256 a##i = _mm256_set1_ps(seed + (float)(i));
#define STEP(i) a##i = _mm256_fmadd_ps(a##i, x, y);
    FMA_LOOP(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, _mm256_cvtss_f32)
#undef DECL
#undef STEP
}

static volatile float sink;

bench_peak tool_fma_peak(int threads) {
    const unsigned f = pz_cpu_features();
    bench_peak p = {.isa = f & PZ_CPU_AVX512 ? "AVX-512" : f & PZ_CPU_AVX2_FMA ? "AVX2+FMA" : "none"};
    if (!(f & (PZ_CPU_AVX512 | PZ_CPU_AVX2_FMA))) return p;
    const int lanes = f & PZ_CPU_AVX512 ? 16 : 8;
    const long iters = 4000000; /* about 4 ms a thread at 200 GFLOP/s */
    for (int pass = 0; pass < 2; pass++) {
        const int team = pass ? (threads > 0 ? threads : 1) : 1;
        double t[5];
        for (int r = 0; r < 5; r++) {
            const double t0 = pz_now();
            float acc = 0.0f;
#pragma omp parallel num_threads(team) reduction(+ : acc)
            acc += lanes == 16 ? fma_avx512(iters, (float)omp_get_thread_num()) : fma_avx2(iters, (float)omp_get_thread_num());
            t[r] = pz_now() - t0;
            sink = acc;
        }
        const double gflops = (double)team * iters * 12 * lanes * 2 / pz_median(t, 5) / 1e9;
        if (pass) p.team_gflops = gflops, p.threads = team;
        else p.core_gflops = gflops;
    }
    return p;
}
