#version 450
// vkcuda's present ring of shared video frames: samples the frame through the
// combined image sampler whose immutable sampler carries the frame's
// VkSamplerYcbcrConversion (texture() returns RGB) and stores RGB into the
// ring's RGB image, one invocation per pixel at its centre. Built twice:
// -DOUT=rgba8 (8-bit frames) and -DOUT=rgba16f (10- to 16-bit frames).
//   glslangValidator -V --target-env vulkan1.1 -DOUT=rgba8 -o ycbcr_rgba8.spv ycbcr.comp
layout(local_size_x = 16, local_size_y = 16) in;
layout(binding = 0) uniform sampler2D frame;
layout(binding = 1, OUT) writeonly uniform image2D rgb;
layout(push_constant) uniform Size { uint width; uint height; };

void main() {
    uvec2 p = gl_GlobalInvocationID.xy;
    if (p.x >= width || p.y >= height) return;
    vec2 uv = (vec2(p) + 0.5) / vec2(width, height);
    imageStore(rgb, ivec2(p), vec4(texture(frame, uv).rgb, 1.0));
}
