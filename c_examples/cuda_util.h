/*
 * The examples' CUDA side: the example kernels (kernels.cu, embedded as PTX in
 * kernels_ptx.h), their launch helpers and host references of what they compute, and
 * result names. The driver API is <cuda.h>'s, called directly; the build links
 * CUDA::cuda_driver, or cuda_shim.c where no CUDA driver is installed (it says why).
 */
#ifndef VKCUDA_EXAMPLES_CUDA_UTIL_H
#define VKCUDA_EXAMPLES_CUDA_UTIL_H

#include <cuda.h>

#include <stddef.h>
#include <stdint.h>

/* "CUDA_ERROR_OUT_OF_MEMORY (2: out of memory)" for `r`, in a static buffer. */
const char *cuda_result_text(CUresult r);

/* The example kernels, loaded from kernels_ptx.h (or, when the environment
 * variable VKCUDA_EXAMPLES_PTX names a file, from that PTX file instead: the GPU
 * test runs the examples once with PTX freshly compiled from kernels.cu). */
typedef struct cuda_kernels {
    CUmodule module;
    CUfunction fill_pattern;
    CUfunction transform;
    char source[256]; /* "embedded kernels_ptx.h" or the file name */
} cuda_kernels;

/* Loads the module in the current context; on a JIT failure prints the JIT log. */
CUresult cuda_kernels_load(cuda_kernels *k);
void cuda_kernels_unload(cuda_kernels *k);

/* Launches fill_pattern / transform over `bytes` bytes at `ptr` on `stream`. */
CUresult cuda_fill_pattern(const cuda_kernels *k, CUstream stream, CUdeviceptr ptr, uint64_t bytes,
                           uint32_t seed);
CUresult cuda_transform(const cuda_kernels *k, CUstream stream, CUdeviceptr ptr, uint64_t bytes,
                        uint32_t mul, uint32_t add);

/* Host references of the kernels (see kernels.cu: word i of a byte buffer, the
 * last word partial). They must stay equal to the device code. */
static inline uint32_t pattern_word(uint64_t i, uint32_t seed) {
    uint32_t x = (uint32_t)i ^ (uint32_t)(i >> 32) * 0x9e3779b9u ^ seed;
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    x *= 0xc2b2ae35u;
    x ^= x >> 16;
    return x;
}

static inline uint32_t transform_word(uint32_t x, uint32_t mul, uint32_t add) {
    return x * mul + add;
}

/* Word i of a buffer of `bytes` bytes, little-endian, the missing bytes of a
 * partial last word read as 0. */
static inline uint32_t load_word(const void *buffer, uint64_t bytes, uint64_t i) {
    const uint8_t *b = (const uint8_t *)buffer + 4 * i;
    uint64_t n = bytes - 4 * i < 4 ? bytes - 4 * i : 4;
    uint32_t v = 0;
    uint64_t k;
    for (k = 0; k < n; k++) v |= (uint32_t)b[k] << (8 * k);
    return v;
}

/* The number of (possibly partial) words in `bytes` bytes. */
static inline uint64_t word_count(uint64_t bytes) {
    return (bytes + 3) / 4;
}

#endif /* VKCUDA_EXAMPLES_CUDA_UTIL_H */
