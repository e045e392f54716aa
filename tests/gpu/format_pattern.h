/*
 * format_pattern.h: byte i of a level's packed texels in the format tests, one
 * definition for the kernels that write it (format_kernels.cu) and the host that
 * checks it (image_formats.c).
 */
#ifndef VKCUDA_FORMAT_PATTERN_H
#define VKCUDA_FORMAT_PATTERN_H

#include <stdint.h>

#ifdef __CUDACC__
#define FORMAT_PATTERN_FN __device__ __forceinline__
#else
#define FORMAT_PATTERN_FN static inline
#endif

FORMAT_PATTERN_FN uint32_t pattern_byte(uint32_t level, uint64_t i, uint32_t seed) {
    uint32_t x = (uint32_t)i * 0x9e3779b1u ^ (uint32_t)(i >> 32) ^ (level + 1u) * 0x85ebca77u ^ seed;
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x & 0xffu;
}

#endif /* VKCUDA_FORMAT_PATTERN_H */
