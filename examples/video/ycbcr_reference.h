/*
 * The host side of video_ycbcr.c: the test frame it writes (8-bit NV12, narrow range)
 * and what Vulkan's sampler must make of it: chroma filtered linearly at the luma
 * sample (cosited or midpoint chroma), converted with BT.709 (VK_SAMPLER_YCBCR_MODEL_
 * CONVERSION_YCBCR_709, VK_SAMPLER_YCBCR_RANGE_ITU_NARROW) to RGBA8, rounded.
 */
#ifndef VKCUDA_EXAMPLES_YCBCR_REFERENCE_H
#define VKCUDA_EXAMPLES_YCBCR_REFERENCE_H

#include <math.h>
#include <stdint.h>

/* The frame: a luma ramp with a bright disc; Cb and Cr sweep across (8-bit, narrow range). */
static inline uint8_t sample(int plane, int x, int y, int w, int h) {
    double u = (double)x / w, v = (double)y / h, r = hypot(u - 0.5, v - 0.5);
    if (plane == 0) return (uint8_t)(16 + 219 * (r < 0.25 ? 0.9 : 0.15 + 0.6 * u));
    return (uint8_t)(plane == 1 ? 16 + 224 * v : 16 + 224 * (1 - u));
}

/* Chroma c (0: Cb, 1: Cr) at luma pixel (x, y), filtered linearly as the sampler does:
 * cosited chroma sits on the even luma samples, midpoint chroma between two of them. */
static inline double chroma(const uint8_t *cbcr, int cw, int ch, int c, int x, int y, int cosited) {
    double u = x / 2.0 - (cosited ? 0 : 0.25), v = y / 2.0 - (cosited ? 0 : 0.25), s = 0;
    int x0 = (int)floor(u), y0 = (int)floor(v), i, j;
    for (j = 0; j < 2; j++)
        for (i = 0; i < 2; i++) {
            int xi = x0 + i < 0 ? 0 : x0 + i >= cw ? cw - 1 : x0 + i;
            int yj = y0 + j < 0 ? 0 : y0 + j >= ch ? ch - 1 : y0 + j;
            s += (i ? u - x0 : 1 - (u - x0)) * (j ? v - y0 : 1 - (v - y0)) * cbcr[2 * (yj * cw + xi) + c];
        }
    return s;
}

/* BT.709, narrow range (Vulkan's YCBCR_709 model and ITU_NARROW range), as RGBA8. */
static inline uint32_t reference(const uint8_t *y8, const uint8_t *cbcr, int w, int h, int x, int y, int cosited) {
    double Y = (y8[y * w + x] - 16) / 219.0, cb = (chroma(cbcr, w / 2, h / 2, 0, x, y, cosited) - 128) / 224.0;
    double cr = (chroma(cbcr, w / 2, h / 2, 1, x, y, cosited) - 128) / 224.0;
    double rgb[3] = {Y + 1.5748 * cr, Y - 0.1873242729 * cb - 0.4681242729 * cr, Y + 1.8556 * cb};
    uint32_t out = 255u << 24, k;
    for (k = 0; k < 3; k++) out |= (uint32_t)floor(fmin(fmax(rgb[k], 0), 1) * 255 + 0.5) << (8 * k);
    return out;
}

#endif /* VKCUDA_EXAMPLES_YCBCR_REFERENCE_H */
