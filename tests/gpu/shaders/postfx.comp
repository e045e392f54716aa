// The Vulkan twin of examples/cpp/postfx.cu, for engine_postfx_test --vulkan-only
// (machines without CUDA, e.g. lavapipe): the same 3x3 box blur and tone curve, in
// the same integer arithmetic, from the scene image into the output image. Keep it
// equal to postfx.cu and to the host reference in engine_postfx_test.cpp
// (postfx_reference).
#version 450
layout(local_size_x = 16, local_size_y = 16) in;

layout(set = 0, binding = 0, rgba8ui) uniform readonly uimage2D scene;
layout(set = 0, binding = 1, rgba8ui) uniform writeonly uimage2D result;

layout(push_constant) uniform Params {
    uint frame;
    uint width;
    uint height;
} p;

uint tone(uint v) {
    return (v * 510u) / (v + 255u);
}

void main() {
    uint x = gl_GlobalInvocationID.x, y = gl_GlobalInvocationID.y;
    if (x >= p.width || y >= p.height) return;
    uvec3 sum = uvec3(0u);
    for (int j = -1; j <= 1; j++) {
        for (int i = -1; i <= 1; i++) {
            int sx = clamp(int(x) + i, 0, int(p.width) - 1);
            int sy = clamp(int(y) + j, 0, int(p.height) - 1);
            sum += imageLoad(scene, ivec2(sx, sy)).rgb;
        }
    }
    uvec3 avg = (sum + 4u) / 9u;
    imageStore(result, ivec2(int(x), int(y)), uvec4(tone(avg.r), tone(avg.g), tone(avg.b), 255u));
}
