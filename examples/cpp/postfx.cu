// The CUDA post-processing pass of engine_postfx: a 3x3 box blur (edges clamped)
// and a tone curve, v' = v * 510 / (v + 255), from the scene image the engine's
// Vulkan compute pass rendered into a second shared image, both R8G8B8A8_UINT and
// read and written through surface objects. Integer arithmetic only, so the host
// reference (engine_postfx.cpp, postfx_pixel) and the Vulkan twin
// (shaders/postfx.comp) agree with it exactly.
//
// ptx/postfx.ptx is its PTX, made with
//
//   scripts/gen-ptx.sh --src examples/cpp/postfx.cu
//
// (nvcc -ptx -arch=compute_75; never edit the .ptx); the build embeds it in
// postfx_ptx.h (cmake/vkcudaPtx.cmake). Surface x coordinates are in bytes.

#include <stdint.h>

__device__ __forceinline__ uint32_t tone(uint32_t v) {
    return (v * 510u) / (v + 255u);
}

extern "C" __global__ void postfx(cudaSurfaceObject_t scene, cudaSurfaceObject_t result, uint32_t width,
                                  uint32_t height) {
    uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    uint32_t r = 0, g = 0, b = 0;
    for (int j = -1; j <= 1; j++) {
        for (int i = -1; i <= 1; i++) {
            int sx = min(max((int)x + i, 0), (int)width - 1);
            int sy = min(max((int)y + j, 0), (int)height - 1);
            uchar4 v = surf2Dread<uchar4>(scene, sx * 4, sy);
            r += v.x;
            g += v.y;
            b += v.z;
        }
    }
    uchar4 out = make_uchar4((unsigned char)tone((r + 4u) / 9u), (unsigned char)tone((g + 4u) / 9u),
                             (unsigned char)tone((b + 4u) / 9u), 255);
    surf2Dwrite(out, result, (int)(x * 4), (int)y);
}
