// The engine's own render pass of engine_postfx_test: a compute shader that draws
// frame `frame` into the shared scene image (R8G8B8A8_UINT, storage). Integer
// arithmetic only, so the host reference in engine_postfx_test.cpp
// (render_reference) is exact; keep the two equal. Compiled to SPIR-V at build time
// (glslangValidator), embedded as render_comp_spv.h; the committed copy in
// tests/gpu/spirv/ is used where there is no glslang.
#version 450
layout(local_size_x = 16, local_size_y = 16) in;

layout(set = 0, binding = 0, rgba8ui) uniform writeonly uimage2D scene;

layout(push_constant) uniform Params {
    uint frame;
    uint width;
    uint height;
} p;

// A triangle wave over 0..n-1 and back.
uint tri(uint t, uint n) {
    uint m = t % (2u * n);
    return m < n ? m : 2u * n - 1u - m;
}

uint hash(uint x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

void main() {
    uint x = gl_GlobalInvocationID.x, y = gl_GlobalInvocationID.y;
    uint w = p.width, h = p.height, f = p.frame;
    if (x >= w || y >= h) return;
    // Rings around a moving centre, an xor weave, a horizontal gradient, sparkles.
    int cx = int(tri(f * 3u, w)), cy = int(tri(f * 2u, h));
    int dx = int(x) - cx, dy = int(y) - cy;
    uint d2 = uint(dx * dx + dy * dy);
    uint ring = ((d2 >> 5) + f * 4u) & 63u;
    uint r = ring < 32u ? ring * 8u : (63u - ring) * 8u;
    uint g = (((x + f) ^ (y * 2u)) & 255u) >> 1;
    uint b = w > 1u ? (x * 255u) / (w - 1u) : 0u;
    if ((hash(x * 7919u + y * 104729u + (f >> 3) * 15485863u) & 1023u) == 0u) {
        r = 255u;
        g = 255u;
        b = 255u;
    }
    imageStore(scene, ivec2(int(x), int(y)), uvec4(r, g, b, 255u));
}
