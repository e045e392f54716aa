// The CUDA kernel of c_examples/batch_cameras.c: per camera of a batch of N rendered
// views, the sums of red, green and blue over its colour image and a histogram of its
// depth image. This is the reference source: ptx/batch_kernels.ptx is its PTX, made with
//
//   scripts/gen-ptx.sh --src c_examples/batch_kernels.cu
//
// (nvcc -ptx -arch=compute_75); the build embeds it in batch_kernels_ptx.h
// (cmake/vkcudaPtx.cmake); never edit the .ptx. Integer sums and a depth bin made by a
// multiplication by a power of two (exact in float), so the host reference in
// batch_cameras.c (camera_stats_host) gets the same figures bit for bit.

#include <stdint.h>

#define DEPTH_BINS 8
#define STATS (3 + DEPTH_BINS)

// One block a camera (blockIdx.x). The batch is read as the tensors the library
// describes: colour [N, H, W, 4] uint8 and depth [N, H, W] float32, element i at
// i * stride, row y at y * pitch (vkcuda_batch_info). out[camera * STATS + k]: k 0..2
// the R, G, B sums, 3 + b the pixels whose depth d has min(floor(d * 8), 7) == b.
extern "C" __global__ void camera_stats(const uint8_t *colour, uint64_t colour_stride,
                                        uint64_t colour_pitch, const uint8_t *depth,
                                        uint64_t depth_stride, uint64_t depth_pitch,
                                        uint32_t width, uint32_t height,
                                        unsigned long long *out) {
    __shared__ unsigned long long sums[STATS];
    const uint64_t camera = blockIdx.x;
    unsigned long long rgb[3] = {0, 0, 0};
    for (uint32_t k = threadIdx.x; k < STATS; k += blockDim.x) sums[k] = 0;
    __syncthreads();
    for (uint32_t p = threadIdx.x; p < width * height; p += blockDim.x) {
        const uint32_t x = p % width, y = p / width;
        const uint8_t *texel = colour + camera * colour_stride + y * colour_pitch + x * 4ull;
        const float d = *(const float *)(depth + camera * depth_stride + y * depth_pitch + x * 4ull);
        const float scaled = d * (float)DEPTH_BINS;
        const uint32_t bin = scaled >= (float)(DEPTH_BINS - 1) ? DEPTH_BINS - 1 : (uint32_t)scaled;
        for (int c = 0; c < 3; c++) rgb[c] += texel[c];
        atomicAdd(&sums[3 + bin], 1ull);
    }
    for (int c = 0; c < 3; c++) atomicAdd(&sums[c], rgb[c]);
    __syncthreads();
    for (uint32_t k = threadIdx.x; k < STATS; k += blockDim.x) out[camera * STATS + k] = sums[k];
}
