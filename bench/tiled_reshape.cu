// The reshape kernel of bench/batch.rs's "tiled + reshape" variant (Isaac Lab's
// TiledCamera pattern): N camera views rendered as tiles of ONE large image, copied
// out as that image, then rearranged by this kernel into an [N, H, W] tensor of 4-byte
// texels (RGBA8 or a 32-bit depth). This is the reference source: ptx/tiled_reshape.ptx
// is its PTX, made with
//
//   scripts/gen-ptx.sh --src bench/tiled_reshape.cu
//
// (nvcc -ptx -arch=compute_75); the bench embeds it with include_str!; never edit the .ptx.

#include <stdint.h>

// tiled: (rows * h) rows of `pitch` texels; camera c is the tile at column c % cols,
// row c / cols. out: n * h * w texels, camera by camera, row by row. Grid-stride loop.
extern "C" __global__ void tiled_reshape(const uint32_t *tiled, uint64_t pitch, uint32_t cols,
                                         uint32_t w, uint32_t h, uint32_t n, uint32_t *out) {
    const uint64_t total = (uint64_t)n * w * h;
    const uint64_t step = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        const uint32_t x = (uint32_t)(i % w);
        const uint64_t r = i / w;
        const uint32_t y = (uint32_t)(r % h), camera = (uint32_t)(r / h);
        const uint64_t tx = (uint64_t)(camera % cols) * w + x, ty = (uint64_t)(camera / cols) * h + y;
        out[i] = tiled[ty * pitch + tx];
    }
}
