/*
 * The host reference of the mandelbrot kernel in image_kernels.cu: what the kernel
 * writes into pixel (x, y), computed on the CPU, so a program can check every pixel
 * CUDA drew. The kernel is compiled with -fmad=false (every float multiply and add
 * rounded on its own) and this file is plain C99 float arithmetic without
 * contraction, so the escape counts agree bit for bit.
 */
#ifndef VKCUDA_EXAMPLES_FRACTAL_H
#define VKCUDA_EXAMPLES_FRACTAL_H

#include <stdint.h>

/* The colour of an escape count, 0xAABBGGRR (R is the first byte in memory): a
 * gradient through five key colours, every 64 iterations; black inside the set. */
static inline uint32_t fractal_colour(uint32_t iter, uint32_t max_iter) {
    static const uint32_t keys[5][3] = {
        {0, 7, 100}, {32, 107, 203}, {237, 255, 255}, {255, 170, 0}, {100, 2, 0}};
    uint32_t t, k, f, n, rgb[3];
    int c;
    if (iter >= max_iter) return 0xff000000u;
    t = (iter * 5u) % 320u;
    k = t / 64u;
    f = t % 64u;
    n = (k + 1u) % 5u;
    for (c = 0; c < 3; c++) rgb[c] = (keys[k][c] * (64u - f) + keys[n][c] * f) / 64u;
    return 0xff000000u | rgb[2] << 16 | rgb[1] << 8 | rgb[0];
}

/* Escape count of c = (cr, ci) under z <- z^2 + c, at most max_iter. */
static inline uint32_t mandelbrot_iterations(float cr, float ci, uint32_t max_iter) {
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

/* Pixel (x, y) of the kernel's picture: c = (x0 + step * x, y0 - step * y). */
static inline uint32_t fractal_pixel(float x0, float y0, float step, uint32_t max_iter, uint32_t x,
                                     uint32_t y) {
    float cr = x0 + step * (float)x;
    float ci = y0 - step * (float)y;
    return fractal_colour(mandelbrot_iterations(cr, ci, max_iter), max_iter);
}

#endif /* VKCUDA_EXAMPLES_FRACTAL_H */
