/*
 * scene.h: the engine's renderer of batch_cameras.c, standing in for yours: one scene (a
 * cube of side 1 at the origin, each face a colour of its own; shaders/batch_cameras.vert
 * and .frag) drawn by a graphics pipeline into a colour (R8G8B8A8_UNORM) and a depth
 * (D32_SFLOAT) attachment, cleared to black and depth 1, seen by cameras placed around it.
 */
#ifndef VKCUDA_EXAMPLES_SCENE_H
#define VKCUDA_EXAMPLES_SCENE_H

#include <vulkan/vulkan.h>

#include <stdint.h>

#define SCENE_NEAR 1.0f
#define SCENE_FAR 8.0f

/* The faces' colours as bytes: +x red, -x cyan, +y green, -y magenta, +z blue, -z yellow. */
extern const uint8_t scene_face_rgb[6][3];

typedef struct scene {
    VkDevice device;
    uint32_t width, height;
    VkRenderPass pass; /* colour, depth: clear, store; final layouts *_ATTACHMENT_OPTIMAL */
    VkPipelineLayout layout;
    VkShaderModule shaders[2];
    VkPipeline pipeline;
} scene;

void scene_create(scene *s, VkDevice device, uint32_t width, uint32_t height);
void scene_destroy(scene *s);
/* Where camera i of `count` is in frame `frame`: around the cube at three heights and
 * four distances, turning a little each frame. It looks at the origin. */
void scene_camera_eye(uint32_t i, uint32_t count, uint32_t frame, float eye[3]);
/* Records one render pass into `framebuffer` (a colour and a depth view of
 * width x height): the cube seen from `eye`. */
void scene_cmd_draw(const scene *s, VkCommandBuffer cmd, VkFramebuffer framebuffer, const float eye[3]);

#endif /* VKCUDA_EXAMPLES_SCENE_H */
