/* The engine's renderer of batch_cameras.c; see scene.h. */
#include "scene.h"

#include "batch_cameras_frag_spv.h"
#include "batch_cameras_vert_spv.h"
#include "example.h"

#include <math.h>

const uint8_t scene_face_rgb[6][3] = {{255, 0, 0}, {0, 255, 255}, {0, 255, 0},
                                      {255, 0, 255}, {0, 0, 255}, {255, 255, 0}};

void scene_camera_eye(uint32_t i, uint32_t count, uint32_t f, float e[3]) {
    float azimuth = 6.2831853f * (float)i / (float)count + 0.1f * (float)f;
    float elevation = 0.5f * ((float)(i % 3) - 1);
    float d = 3.0f + 0.5f * (float)(i % 4);
    e[0] = d * cosf(elevation) * cosf(azimuth);
    e[1] = d * sinf(elevation);
    e[2] = d * cosf(elevation) * sinf(azimuth);
}

/* The view-projection (column-major): looking at the origin, y up, 45 degrees, Vulkan's clip space (y down). */
static void view_projection(const float e[3], float m[16]) {
    float d = sqrtf(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]), s = 1.0f / tanf(0.39269908f);
    const float n = SCENE_NEAR, far = SCENE_FAR, a = far / (n - far), b = n * far / (n - far);
    float f[3], r[3], u[3], rn;
    int k;
    for (k = 0; k < 3; k++) f[k] = -e[k] / d;
    rn = sqrtf(f[0] * f[0] + f[2] * f[2]); /* right = forward x up */
    r[0] = -f[2] / rn, r[1] = 0, r[2] = f[0] / rn;
    u[0] = -r[2] * f[1], u[1] = r[2] * f[0] - r[0] * f[2], u[2] = r[0] * f[1];
    for (k = 0; k < 3; k++) /* column k: x, y, depth and w of axis k */
        m[4 * k] = s * r[k], m[4 * k + 1] = -s * u[k], m[4 * k + 2] = -a * f[k], m[4 * k + 3] = f[k];
    m[12] = -s * (r[0] * e[0] + r[2] * e[2]), m[13] = s * (u[0] * e[0] + u[1] * e[1] + u[2] * e[2]);
    m[14] = -a * d + b, m[15] = d; /* depth 0 at SCENE_NEAR, 1 at SCENE_FAR */
}

void scene_create(scene *s, VkDevice dev, uint32_t width, uint32_t height) {
    VkAttachmentDescription att[2] = {
        {0, VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_1_BIT, VK_ATTACHMENT_LOAD_OP_CLEAR, VK_ATTACHMENT_STORE_OP_STORE,
         0, 0, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL},
        {0, VK_FORMAT_D32_SFLOAT, VK_SAMPLE_COUNT_1_BIT, VK_ATTACHMENT_LOAD_OP_CLEAR, VK_ATTACHMENT_STORE_OP_STORE, 0,
         0, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL}};
    VkAttachmentReference ref[2] = {{0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL},
                                    {1, VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL}};
    VkSubpassDescription sub = {0, VK_PIPELINE_BIND_POINT_GRAPHICS, 0, NULL, 1, ref, NULL, ref + 1, 0, NULL};
    VkSubpassDependency dep = {VK_SUBPASS_EXTERNAL, 0, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                               VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT |
                                   VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT,
                               VK_ACCESS_MEMORY_WRITE_BIT,
                               VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT | VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT, 0};
    VkRenderPassCreateInfo rpi = {VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO, NULL, 0, 2, att, 1, &sub, 1, &dep};
    VkPushConstantRange push = {VK_SHADER_STAGE_VERTEX_BIT, 0, 64}; /* the view-projection matrix */
    VkPipelineLayoutCreateInfo pli = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, NULL, 0, 0, NULL, 1, &push};
    VkShaderModuleCreateInfo smi[2] = {
        {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, NULL, 0, sizeof batch_cameras_vert_spv, batch_cameras_vert_spv},
        {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, NULL, 0, sizeof batch_cameras_frag_spv, batch_cameras_frag_spv}};
    VkPipelineShaderStageCreateInfo stages[2] = {
        {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, NULL, 0, VK_SHADER_STAGE_VERTEX_BIT, 0, "main", NULL},
        {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, NULL, 0, VK_SHADER_STAGE_FRAGMENT_BIT, 0, "main", NULL}};
    VkPipelineVertexInputStateCreateInfo vin = {.sType = VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO};
    VkPipelineInputAssemblyStateCreateInfo ia = {VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO, NULL, 0,
                                                 VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST, VK_FALSE};
    VkViewport viewport = {0, 0, (float)width, (float)height, 0, 1};
    VkRect2D scissor = {{0, 0}, {width, height}};
    VkPipelineViewportStateCreateInfo vp = {VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO, NULL, 0, 1,
                                            &viewport, 1, &scissor};
    VkPipelineRasterizationStateCreateInfo rs = {.sType = VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO};
    VkPipelineMultisampleStateCreateInfo ms = {.sType = VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO};
    VkPipelineDepthStencilStateCreateInfo ds = {.sType = VK_STRUCTURE_TYPE_PIPELINE_DEPTH_STENCIL_STATE_CREATE_INFO};
    VkPipelineColorBlendAttachmentState blend = {.colorWriteMask = 0xf};
    VkPipelineColorBlendStateCreateInfo cb = {.sType = VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO};
    VkGraphicsPipelineCreateInfo gpi = {.sType = VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO};
    int k;
    rs.polygonMode = VK_POLYGON_MODE_FILL, rs.cullMode = VK_CULL_MODE_NONE, rs.lineWidth = 1.0f;
    ms.rasterizationSamples = VK_SAMPLE_COUNT_1_BIT;
    ds.depthTestEnable = VK_TRUE, ds.depthWriteEnable = VK_TRUE, ds.depthCompareOp = VK_COMPARE_OP_LESS;
    cb.attachmentCount = 1, cb.pAttachments = &blend;
    CHECK_VK(vkCreateRenderPass(dev, &rpi, NULL, &s->pass));
    CHECK_VK(vkCreatePipelineLayout(dev, &pli, NULL, &s->layout));
    for (k = 0; k < 2; k++) {
        CHECK_VK(vkCreateShaderModule(dev, &smi[k], NULL, &s->shaders[k]));
        stages[k].module = s->shaders[k];
    }
    gpi.stageCount = 2, gpi.pStages = stages, gpi.pVertexInputState = &vin, gpi.pInputAssemblyState = &ia;
    gpi.pViewportState = &vp, gpi.pRasterizationState = &rs, gpi.pMultisampleState = &ms;
    gpi.pDepthStencilState = &ds, gpi.pColorBlendState = &cb, gpi.layout = s->layout, gpi.renderPass = s->pass;
    CHECK_VK(vkCreateGraphicsPipelines(dev, VK_NULL_HANDLE, 1, &gpi, NULL, &s->pipeline));
    s->device = dev, s->width = width, s->height = height;
}

void scene_destroy(scene *s) {
    vkDestroyPipeline(s->device, s->pipeline, NULL);
    vkDestroyShaderModule(s->device, s->shaders[0], NULL);
    vkDestroyShaderModule(s->device, s->shaders[1], NULL);
    vkDestroyPipelineLayout(s->device, s->layout, NULL);
    vkDestroyRenderPass(s->device, s->pass, NULL);
}

void scene_cmd_draw(const scene *s, VkCommandBuffer cmd, VkFramebuffer framebuffer, const float eye[3]) {
    VkClearValue clear[2] = {{.color = {{0, 0, 0, 1}}}, {.depthStencil = {1.0f, 0}}};
    VkRenderPassBeginInfo rb = {VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO, NULL, VK_NULL_HANDLE, VK_NULL_HANDLE,
                                {{0, 0}, {0, 0}}, 2, clear};
    float m[16];
    view_projection(eye, m);
    rb.renderPass = s->pass, rb.framebuffer = framebuffer;
    rb.renderArea.extent.width = s->width, rb.renderArea.extent.height = s->height;
    vkCmdBeginRenderPass(cmd, &rb, VK_SUBPASS_CONTENTS_INLINE);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, s->pipeline);
    vkCmdPushConstants(cmd, s->layout, VK_SHADER_STAGE_VERTEX_BIT, 0, sizeof m, m);
    vkCmdDraw(cmd, 36, 1, 0, 0);
    vkCmdEndRenderPass(cmd);
}
