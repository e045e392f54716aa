// The CUDA kernel of the image examples: the fractal that c_examples/image_to_png.c
// draws and checks pixel by pixel. This is the reference
// source: ptx/image_kernels.ptx is its PTX, made with
//
//   scripts/gen-ptx.sh --src c_examples/image_kernels.cu
//
// (nvcc -ptx -arch=compute_75 -fmad=false); the build embeds it in image_kernels_ptx.h
// (cmake/vkcudaPtx.cmake) and the programs load it with cuModuleLoadDataEx; never edit
// the .ptx. -fmad=false keeps every float multiply and add separately rounded, so the
// host reference of the fractal (plain C99 float arithmetic, no contraction) computes
// the same iteration counts bit for bit. Surface x coordinates are in bytes, as CUDA
// wants them.

#include <stdint.h>

// ---- the fractal --------------------------------------------------------------

// The colour of an escape count: a gradient through five key colours, cycled every
// 64 iterations; points that never escape are black. Integer arithmetic only, so the
// host reference (fractal.h, fractal_colour) is exact.
__device__ __forceinline__ uint32_t fractal_colour(uint32_t iter, uint32_t max_iter) {
    const uint32_t keys[5][3] = {
        {0, 7, 100}, {32, 107, 203}, {237, 255, 255}, {255, 170, 0}, {100, 2, 0}};
    if (iter >= max_iter) return 0xff000000u;
    uint32_t t = (iter * 5u) % 320u;  // 0..319 over one cycle of 64 iterations
    uint32_t k = t / 64u, f = t % 64u;
    uint32_t n = (k + 1u) % 5u;
    uint32_t rgb[3];
    for (int c = 0; c < 3; c++) rgb[c] = (keys[k][c] * (64u - f) + keys[n][c] * f) / 64u;
    return 0xff000000u | rgb[2] << 16 | rgb[1] << 8 | rgb[0];
}

// Escape count of c = (cr, ci) under z <- z^2 + c, at most max_iter.
__device__ __forceinline__ uint32_t mandelbrot_iterations(float cr, float ci, uint32_t max_iter) {
    float zr = 0.0f, zi = 0.0f;
    uint32_t i = 0;
    while (i < max_iter) {
        float zr2 = zr * zr, zi2 = zi * zi;
        if (zr2 + zi2 > 4.0f) break;
        zi = 2.0f * zr * zi + ci;
        zr = zr2 - zi2 + cr;
        i++;
    }
    return i;
}

// Renders the Mandelbrot set into an RGBA8 surface: pixel (x, y) is
// c = (x0 + step * x, y0 - step * y).
extern "C" __global__ void mandelbrot(cudaSurfaceObject_t surface, uint32_t width, uint32_t height,
                                      float x0, float y0, float step, uint32_t max_iter) {
    uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    float cr = x0 + step * (float)x;
    float ci = y0 - step * (float)y;
    uint32_t c = fractal_colour(mandelbrot_iterations(cr, ci, max_iter), max_iter);
    uchar4 v = make_uchar4(c & 0xff, (c >> 8) & 0xff, (c >> 16) & 0xff, c >> 24);
    surf2Dwrite(v, surface, (int)(x * 4), (int)y);
}
