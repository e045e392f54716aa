// The CUDA kernels of the C examples. scripts/gen-ptx.sh compiles this file to PTX
// (nvcc -ptx) into ptx/kernels.ptx, which the build embeds in kernels_ptx.h
// (cmake/vkcudaPtx.cmake); the examples load it with cuModuleLoadData and the driver
// JIT-compiles it for the GPU at hand. Edit this file, then run
// scripts/gen-ptx.sh --src c_examples/kernels.cu; never edit ptx/kernels.ptx.
//
// Every kernel takes a size in BYTES and treats the buffer as 32-bit little-endian
// words, the last one possibly partial: word i covers bytes [4i, 4i+4) clipped to the
// size, a partial word reads as if its missing high bytes were 0 and writes only
// its bytes that exist. The host references in cuda_util.h (pattern_word,
// transform_word) compute the same values. Grid-stride loops: any grid size works.

#include <stddef.h>
#include <stdint.h>

// A 32-bit mix of the word index and a seed (murmur3's finaliser), so that every
// word of every buffer and every run differs: a stale, shifted or unwritten word
// is caught.
__device__ __forceinline__ uint32_t pattern_word(uint64_t i, uint32_t seed) {
    uint32_t x = (uint32_t)i ^ (uint32_t)(i >> 32) * 0x9e3779b9u ^ seed;
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    x *= 0xc2b2ae35u;
    x ^= x >> 16;
    return x;
}

__device__ __forceinline__ uint32_t load_partial(const uint8_t *b, size_t count) {
    uint32_t v = 0;
    for (size_t k = 0; k < count; k++) v |= (uint32_t)b[k] << (8 * k);
    return v;
}

__device__ __forceinline__ void store_partial(uint8_t *b, size_t count, uint32_t v) {
    for (size_t k = 0; k < count; k++) b[k] = (uint8_t)(v >> (8 * k));
}

// p[i] = pattern_word(i, seed) for every word of the `nbytes` bytes at p.
extern "C" __global__ void fill_pattern(uint32_t *p, size_t nbytes, uint32_t seed) {
    const size_t full = nbytes / 4, tail = nbytes % 4;
    const size_t words = full + (tail != 0);
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += stride) {
        const uint32_t v = pattern_word(i, seed);
        if (i < full)
            p[i] = v;
        else
            store_partial((uint8_t *)(p + i), tail, v);
    }
}

// p[i] = p[i] * mul + add (mod 2^32) for every word of the `nbytes` bytes at p.
extern "C" __global__ void transform(uint32_t *p, size_t nbytes, uint32_t mul, uint32_t add) {
    const size_t full = nbytes / 4, tail = nbytes % 4;
    const size_t words = full + (tail != 0);
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += stride) {
        if (i < full) {
            p[i] = p[i] * mul + add;
        } else {
            uint8_t *b = (uint8_t *)(p + i);
            store_partial(b, tail, load_partial(b, tail) * mul + add);
        }
    }
}
