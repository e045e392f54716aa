// The CUDA kernels of the GPU test tests/gpu/image_formats.c: a byte pattern written
// into every texel of a level through a surface, read back packed, and texture
// fetches. ptx/format_kernels.ptx is its PTX, made with
//
//   scripts/gen-ptx.sh --src tests/gpu/format_kernels.cu
//
// (nvcc -ptx -arch=compute_75 -fmad=false); the build embeds the PTX in
// format_kernels_ptx.h (cmake/vkcudaPtx.cmake) and the test loads it with
// cuModuleLoadDataEx. Never edit the .ptx.
//
// Surface x coordinates are in bytes, as CUDA wants them. Images are addressed
// as in Vulkan's tightly packed buffer copies: texel (x, y, z) of a level, z being
// the depth slice (3D) or the array layer (layered/cube), is texel number
// (z * height + y) * width + x.

#include <stdint.h>

#include "format_pattern.h" // pattern_byte: byte i of a level's packed texels

// How a surface is addressed.
enum { KIND_1D = 0, KIND_2D = 1, KIND_3D = 2, KIND_1D_LAYERED = 3, KIND_2D_LAYERED = 4 };

template <int B> struct texel;
template <> struct texel<1> { typedef unsigned char type; };
template <> struct texel<2> { typedef unsigned short type; };
template <> struct texel<4> { typedef unsigned int type; };
template <> struct texel<8> { typedef uint2 type; };
template <> struct texel<16> { typedef uint4 type; };

template <int B> __device__ __forceinline__ typename texel<B>::type make_texel(const uint8_t *b) {
    typename texel<B>::type v;
    memcpy(&v, b, B);
    return v;
}

template <int B>
__device__ __forceinline__ void store(cudaSurfaceObject_t s, int kind, uint32_t x, uint32_t y, uint32_t z,
                                      typename texel<B>::type v) {
    int xb = (int)(x * B);
    switch (kind) {
    case KIND_1D: surf1Dwrite(v, s, xb); break;
    case KIND_2D: surf2Dwrite(v, s, xb, (int)y); break;
    case KIND_3D: surf3Dwrite(v, s, xb, (int)y, (int)z); break;
    case KIND_1D_LAYERED: surf1DLayeredwrite(v, s, xb, (int)z); break;
    default: surf2DLayeredwrite(v, s, xb, (int)y, (int)z); break;
    }
}

template <int B>
__device__ __forceinline__ typename texel<B>::type load(cudaSurfaceObject_t s, int kind, uint32_t x, uint32_t y,
                                                        uint32_t z) {
    typedef typename texel<B>::type T;
    int xb = (int)(x * B);
    switch (kind) {
    case KIND_1D: return surf1Dread<T>(s, xb);
    case KIND_2D: return surf2Dread<T>(s, xb, (int)y);
    case KIND_3D: return surf3Dread<T>(s, xb, (int)y, (int)z);
    case KIND_1D_LAYERED: return surf1DLayeredread<T>(s, xb, (int)z);
    default: return surf2DLayeredread<T>(s, xb, (int)y, (int)z);
    }
}

// Writes the pattern of `seed` into every texel of one level (width x height x
// depth, depth being slices or layers). Grid: x, y, z over the texels.
template <int B>
__device__ void write_pattern(cudaSurfaceObject_t s, int kind, uint32_t w, uint32_t h, uint32_t d,
                              uint32_t level, uint32_t seed) {
    uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t y = blockIdx.y * blockDim.y + threadIdx.y;
    uint32_t z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x >= w || y >= h || z >= d) return;
    uint64_t t = ((uint64_t)z * h + y) * w + x;
    uint8_t b[B];
    for (int k = 0; k < B; k++) b[k] = (uint8_t)pattern_byte(level, t * B + k, seed);
    store<B>(s, kind, x, y, z, make_texel<B>(b));
}

// Copies every texel of one level into `out`, packed.
template <int B>
__device__ void read_texels(cudaSurfaceObject_t s, int kind, uint32_t w, uint32_t h, uint32_t d, uint8_t *out) {
    uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t y = blockIdx.y * blockDim.y + threadIdx.y;
    uint32_t z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x >= w || y >= h || z >= d) return;
    uint64_t t = ((uint64_t)z * h + y) * w + x;
    typename texel<B>::type v = load<B>(s, kind, x, y, z);
    memcpy(out + t * B, &v, B);
}

#define FORMAT_KERNELS(B)                                                                          \
    extern "C" __global__ void write_pattern_##B(cudaSurfaceObject_t s, int kind, uint32_t w,      \
                                                 uint32_t h, uint32_t d, uint32_t level,           \
                                                 uint32_t seed) {                                  \
        write_pattern<B>(s, kind, w, h, d, level, seed);                                           \
    }                                                                                              \
    extern "C" __global__ void read_texels_##B(cudaSurfaceObject_t s, int kind, uint32_t w,        \
                                               uint32_t h, uint32_t d, uint8_t *out) {             \
        read_texels<B>(s, kind, w, h, d, out);                                                     \
    }
FORMAT_KERNELS(1)
FORMAT_KERNELS(2)
FORMAT_KERNELS(4)
FORMAT_KERNELS(8)
FORMAT_KERNELS(16)

// Texture fetches of one level of a 2D texture (normalized coordinates, texel
// centres): out[y * w + x] = the texel, as float4 (normalized-float or float
// formats, unused channels as CUDA fills them) or uint4 (element reads of
// integer formats). `lod` >= 0 uses tex2DLod (a mipmapped texture), < 0 tex2D.
template <typename T>
__device__ void fetch(cudaTextureObject_t tex, uint32_t w, uint32_t h, float lod, T *out) {
    uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    float u = ((float)x + 0.5f) / (float)w, v = ((float)y + 0.5f) / (float)h;
    out[(uint64_t)y * w + x] = lod >= 0.0f ? tex2DLod<T>(tex, u, v, lod) : tex2D<T>(tex, u, v);
}
extern "C" __global__ void fetch_float4(cudaTextureObject_t tex, uint32_t w, uint32_t h, float lod,
                                        float4 *out) {
    fetch(tex, w, h, lod, out);
}
extern "C" __global__ void fetch_uint4(cudaTextureObject_t tex, uint32_t w, uint32_t h, float lod,
                                       uint4 *out) {
    fetch(tex, w, h, lod, out);
}
