#version 450
// Samples an NV12 image through a combined image sampler whose immutable sampler
// carries a VkSamplerYcbcrConversion (BT.709, narrow range): texture() returns RGB.
// One invocation per pixel, at the pixel's centre; RGBA8 into a storage buffer.
layout(local_size_x = 16, local_size_y = 16) in;
layout(binding = 0) uniform sampler2D frame;
layout(binding = 1, std430) writeonly buffer Rgba { uint rgba[]; };
layout(push_constant) uniform Size { uint width; uint height; };

void main() {
    uvec2 p = gl_GlobalInvocationID.xy;
    if (p.x >= width || p.y >= height) return;
    vec2 uv = (vec2(p) + 0.5) / vec2(width, height);
    rgba[p.y * width + p.x] = packUnorm4x8(vec4(texture(frame, uv).rgb, 1.0));
}
