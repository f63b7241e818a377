/* SPDX-License-Identifier: MIT */
/* wire.h — little-endian fields in byte buffers: what every pipezip byte
 * format (frames, control messages, checkpoints) uses, whatever the host's
 * byte order. Scalars byte by byte; arrays copied whole on a little-endian
 * host. */
#ifndef PZ_WIRE_H
#define PZ_WIRE_H

#include <stdint.h>
#include <string.h>

static inline void pz_put_u32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static inline void pz_put_u64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static inline uint32_t pz_get_u32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static inline uint64_t pz_get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}
static inline void pz_put_i32(uint8_t *p, int32_t v) { pz_put_u32(p, (uint32_t)v); }
static inline int32_t pz_get_i32(const uint8_t *p) { return (int32_t)pz_get_u32(p); }
static inline void pz_put_i64(uint8_t *p, int64_t v) { pz_put_u64(p, (uint64_t)v); }
static inline int64_t pz_get_i64(const uint8_t *p) { return (int64_t)pz_get_u64(p); }
static inline void pz_put_f32(uint8_t *p, float v) { uint32_t u; memcpy(&u, &v, 4); pz_put_u32(p, u); }
static inline float pz_get_f32(const uint8_t *p) { const uint32_t u = pz_get_u32(p); float v; memcpy(&v, &u, 4); return v; }
static inline void pz_put_f64(uint8_t *p, double v) { uint64_t u; memcpy(&u, &v, 8); pz_put_u64(p, u); }
static inline double pz_get_f64(const uint8_t *p) { const uint64_t u = pz_get_u64(p); double v; memcpy(&v, &u, 8); return v; }

/* n 4-byte words (u32, i32 or f32) from src to the wire, and back */
static inline void pz_put_words(uint8_t *dst, const void *src, size_t n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n) memcpy(dst, src, 4 * n);
#else
    const uint8_t *s = src;
    for (size_t i = 0; i < n; i++) { uint32_t u; memcpy(&u, s + 4 * i, 4); pz_put_u32(dst + 4 * i, u); }
#endif
}
static inline void pz_get_words(void *dst, const uint8_t *src, size_t n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n) memcpy(dst, src, 4 * n);
#else
    uint8_t *d = dst;
    for (size_t i = 0; i < n; i++) { const uint32_t u = pz_get_u32(src + 4 * i); memcpy(d + 4 * i, &u, 4); }
#endif
}

#endif
