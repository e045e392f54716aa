/*
 * video_ycbcr [--vulkan-only] [--size WxH] [--out FILE]: an NV12 video frame (luma + CbCr at
 * half size) goes from CUDA memory into a shared multi-planar image as a decoder hands it over
 * (pitch-linear planes, as NVDEC's cuvidMapVideoFrame gives them: one
 * vkcuda_image_cuda_copy_from_pitched call per frame), and Vulkan samples it through a
 * VkSamplerYcbcrConversion (BT.709, narrow range) into RGB, checked pixel by pixel against a
 * host reference and written as a PNG. --vulkan-only: the CPU writes the planes (lavapipe).
 * Without a CUDA GPU, or NV12 sampling, it prints SKIP and exits 77 (1 with VKCUDA_REQUIRE_GPU=1).
 */
#define VK_NO_PROTOTYPES
#include <vkcuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_driver.h"
#include "vk_loader.h"
#include "ycbcr_reference.h"
#include "ycbcr_comp_spv.h"
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

#define NV12 VK_FORMAT_G8_B8R8_2PLANE_420_UNORM
#define VIDEO_FUNCTIONS(X)                                                                         \
    X(vkCreateSamplerYcbcrConversion) X(vkDestroySamplerYcbcrConversion) X(vkCreateSampler)        \
    X(vkDestroySampler) X(vkCreateImageView) X(vkDestroyImageView) X(vkCreateDescriptorSetLayout)  \
    X(vkDestroyDescriptorSetLayout) X(vkCreatePipelineLayout) X(vkDestroyPipelineLayout)           \
    X(vkCreateShaderModule) X(vkDestroyShaderModule) X(vkCreateComputePipelines)                   \
    X(vkDestroyPipeline) X(vkCreateDescriptorPool) X(vkDestroyDescriptorPool)                      \
    X(vkAllocateDescriptorSets) X(vkUpdateDescriptorSets) X(vkCmdBindPipeline)                     \
    X(vkCmdBindDescriptorSets) X(vkCmdPushConstants) X(vkCmdDispatch) X(vkCmdCopyBufferToImage)
#define X(name) static PFN_##name name;
VIDEO_FUNCTIONS(X)
#undef X
static vk_functions vk;
#define VK(call) check_vk(call, #call)
#define LIB(call) check_lib(call, #call)

static void fail(const char *what, const char *why) { printf("video_ycbcr: FAIL: %s: %s\n", what, why), exit(1); }
static void check_vk(VkResult r, const char *call) { if (r != VK_SUCCESS) fail(call, vk_result_name(r)); }
static void check_lib(vkcuda_result r, const char *call) { if (r) fail(call, vkcuda_last_error_message()); }
static void skip(const char *why) {
    const char *req = getenv("VKCUDA_REQUIRE_GPU");
    printf("video_ycbcr: SKIP: %s\n", why);
    exit(req && strcmp(req, "1") == 0 ? 1 : 77);
}

/* Submits `cmd` on the context's queue and waits until the queue is idle. */
static void run(const vkcuda_vulkan_handles *vh, VkCommandBuffer cmd) {
    VkSubmitInfo submit = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
    VK(vk.vkEndCommandBuffer(cmd));
    VK(vk.vkQueueSubmit(vh->queue, 1, &submit, VK_NULL_HANDLE));
    VK(vk.vkQueueWaitIdle(vh->queue));
}

int main(int argc, char **argv) {
    int vulkan_only = 0, w = 1920, h = 1080, a, x, y, max_diff = 0;
    const char *out = "video_ycbcr.png";
    char why[256];
    for (a = 1; a < argc; a++)
        if (!strcmp(argv[a], "--vulkan-only")) vulkan_only = 1;
        else if (!strcmp(argv[a], "--size") && a + 1 < argc && sscanf(argv[++a], "%dx%d", &w, &h) == 2) continue;
        else if (!strcmp(argv[a], "--out") && a + 1 < argc) out = argv[++a];
        else fail("usage", "video_ycbcr [--vulkan-only] [--size WxH] [--out FILE]");
    /* 1. A context: standalone ones enable samplerYcbcrConversion where the device has it. */
    vkcuda_standalone_create_info si = {vulkan_only ? VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT : 0, 0};
    vkcuda_context *ctx;
    vkcuda_vulkan_handles vh;
    if (vkcuda_context_create_standalone(&si, &ctx) != VKCUDA_SUCCESS) skip(vkcuda_last_error_message());
    LIB(vkcuda_context_get_vulkan_handles(ctx, &vh));
    VkDevice dev = vh.device;
    if (vk_load(&vk, vh.get_instance_proc_addr, vh.instance, vh.physical_device, dev, why, sizeof why))
        fail("vk_load", why);
#define X(name) if (!(name = (PFN_##name)vk.vkGetDeviceProcAddr(dev, #name))) fail("vkGetDeviceProcAddr", #name);
    VIDEO_FUNCTIONS(X)
#undef X
    /* 2. Can the device sample NV12 through a YCbCr conversion, chroma filtered linearly? */
    VkPhysicalDeviceSamplerYcbcrConversionFeatures yf = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SAMPLER_YCBCR_CONVERSION_FEATURES, 0, 0};
    VkPhysicalDeviceFeatures2 f2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &yf, {0}};
    VkFormatProperties fp;
    ((PFN_vkGetPhysicalDeviceFeatures2)vh.get_instance_proc_addr(vh.instance, "vkGetPhysicalDeviceFeatures2"))(
        vh.physical_device, &f2);
    ((PFN_vkGetPhysicalDeviceFormatProperties)vh.get_instance_proc_addr(vh.instance, "vkGetPhysicalDeviceFormatProperties"))(
        vh.physical_device, NV12, &fp);
    if (!yf.samplerYcbcrConversion ||
        !(fp.optimalTilingFeatures & VK_FORMAT_FEATURE_SAMPLED_IMAGE_YCBCR_CONVERSION_LINEAR_FILTER_BIT))
        skip("the device cannot sample NV12 through a VkSamplerYcbcrConversion with linear chroma filtering");
    int cosited = (fp.optimalTilingFeatures & VK_FORMAT_FEATURE_COSITED_CHROMA_SAMPLES_BIT) != 0;
    VkChromaLocation where = cosited ? VK_CHROMA_LOCATION_COSITED_EVEN : VK_CHROMA_LOCATION_MIDPOINT;

    /* 3. The shared NV12 image: two planes, each with its own exportable memory and CUDA array. */
    vkcuda_image_create_info ii = {.format = NV12, .extent = {(uint32_t)w, (uint32_t)h, 1},
                                   .usage = VK_IMAGE_USAGE_TRANSFER_DST_BIT | VK_IMAGE_USAGE_SAMPLED_BIT};
    vkcuda_image *image;
    vkcuda_image_info info;
    LIB(vkcuda_image_create(ctx, &ii, &image));
    LIB(vkcuda_image_get_info(image, &info));
    size_t luma = (size_t)w * h, bytes = luma * 3 / 2, i;
    uint8_t *frame = malloc(bytes), *cbcr = frame + luma;
    uint32_t *expect = malloc(luma * 4);
    for (i = 0; i < bytes; i++) {
        size_t c = i < luma ? 0 : (i - luma) / 2, cx = c % (w / 2) * 2, cy = c / (w / 2) * 2;
        frame[i] = i < luma ? sample(0, (int)(i % w), (int)(i / w), w, h) : sample(1 + (i - luma) % 2, (int)cx, (int)cy, w, h);
    }
    for (y = 0; y < h; y++)
        for (x = 0; x < w; x++) expect[(size_t)y * w + x] = reference(frame, cbcr, w, h, x, y, cosited);

    /* 4. The conversion, an immutable sampler and view with it, and a compute pipeline that samples. */
    VkSampler sampler; VkImageView view; VkDescriptorSetLayout dsl; VkPipelineLayout layout; VkShaderModule module;
    VkPipeline pipeline; VkDescriptorPool pool; VkDescriptorSet set;
    VkSamplerYcbcrConversionCreateInfo cci = {.sType = VK_STRUCTURE_TYPE_SAMPLER_YCBCR_CONVERSION_CREATE_INFO,
        .format = NV12, .ycbcrModel = VK_SAMPLER_YCBCR_MODEL_CONVERSION_YCBCR_709,
        .ycbcrRange = VK_SAMPLER_YCBCR_RANGE_ITU_NARROW, .xChromaOffset = where, .yChromaOffset = where,
        .chromaFilter = VK_FILTER_LINEAR};
    VkSamplerYcbcrConversionInfo conv = {VK_STRUCTURE_TYPE_SAMPLER_YCBCR_CONVERSION_INFO, NULL, VK_NULL_HANDLE};
    VK(vkCreateSamplerYcbcrConversion(dev, &cci, NULL, &conv.conversion));
    VkSamplerAddressMode clamp = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE; /* what a YCbCr sampler must use */
    VkSamplerCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO, .pNext = &conv, .magFilter = VK_FILTER_LINEAR,
        .minFilter = VK_FILTER_LINEAR, .addressModeU = clamp, .addressModeV = clamp, .addressModeW = clamp};
    VK(vkCreateSampler(dev, &sci, NULL, &sampler));
    VkImageViewCreateInfo vci = {.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO, .pNext = &conv, .image = info.image,
        .viewType = VK_IMAGE_VIEW_TYPE_2D, .format = NV12, .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
    VK(vkCreateImageView(dev, &vci, NULL, &view));
    VkDescriptorSetLayoutBinding b[2] = {{0, VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 1, VK_SHADER_STAGE_COMPUTE_BIT, &sampler},
                                         {1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL}};
    VkDescriptorSetLayoutCreateInfo dli = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, NULL, 0, 2, b};
    VK(vkCreateDescriptorSetLayout(dev, &dli, NULL, &dsl));
    VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 8};
    VkPipelineLayoutCreateInfo pli = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, NULL, 0, 1, &dsl, 1, &pcr};
    VK(vkCreatePipelineLayout(dev, &pli, NULL, &layout));
    VkShaderModuleCreateInfo smi = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, NULL, 0, sizeof ycbcr_comp_spv, ycbcr_comp_spv};
    VK(vkCreateShaderModule(dev, &smi, NULL, &module));
    VkComputePipelineCreateInfo cpi = {.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, .layout = layout,
        .stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, NULL, 0, VK_SHADER_STAGE_COMPUTE_BIT, module, "main",
                  NULL}};
    VK(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpi, NULL, &pipeline));
    vkDestroyShaderModule(dev, module, NULL);
    /* A converted format may take several descriptors (combinedImageSamplerDescriptorCount): room for 3. */
    VkDescriptorPoolSize sizes[2] = {{VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 3}, {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1}};
    VkDescriptorPoolCreateInfo dpi = {VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, NULL, 0, 1, 2, sizes};
    VK(vkCreateDescriptorPool(dev, &dpi, NULL, &pool));
    VkDescriptorSetAllocateInfo dai = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, NULL, pool, 1, &dsl};
    VK(vkAllocateDescriptorSets(dev, &dai, &set));
    vk_owned_buffer rgba, staging = {0};
    VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    VK(vk_owned_buffer_create(&vk, luma * 4, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, host, 0, &rgba));
    VkDescriptorImageInfo dii = {VK_NULL_HANDLE, view, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL};
    VkDescriptorBufferInfo dbi = {rgba.buffer, 0, VK_WHOLE_SIZE};
    VkWriteDescriptorSet wr[2] = {
        {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, NULL, set, 0, 0, 1, VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, &dii, NULL, NULL},
        {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, NULL, set, 1, 0, 1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, NULL, &dbi, NULL}};
    vkUpdateDescriptorSets(dev, 2, wr, 0, NULL);

    /* 5. The frame into the image: CUDA memory -> both planes in one call, or the CPU's copy. */
    VkCommandPoolCreateInfo cpci = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, NULL, 0, vh.queue_family_index};
    VkCommandPool cpool;
    VkCommandBuffer cmd[2];
    VK(vk.vkCreateCommandPool(dev, &cpci, NULL, &cpool));
    VkCommandBufferAllocateInfo cai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, NULL, cpool, 0, 2};
    VkCommandBufferBeginInfo cbi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, NULL, 0, NULL};
    VK(vk.vkAllocateCommandBuffers(dev, &cai, cmd));
    VK(vk.vkBeginCommandBuffer(cmd[1], &cbi));
    if (!vulkan_only) {
        cuda_driver cu;
        vkcuda_cuda_info ci;
        vkcuda_buffer *decoded;
        vkcuda_buffer_info bi;
        vkcuda_buffer_create_info bci = {0, VKCUDA_ALLOCATOR_CUDA, bytes, 0};
        vkcuda_handoff_info to_cuda = {0, vh.queue_family_index, 0, 0}, to_shader = to_cuda;
        /* The new image goes to CUDA (old layout UNDEFINED: there is nothing to keep yet). */
        VK(vk.vkBeginCommandBuffer(cmd[0], &cbi));
        LIB(vkcuda_image_cmd_release_to_cuda(image, cmd[0], &to_cuda, VK_IMAGE_LAYOUT_UNDEFINED));
        run(&vh, cmd[0]);
        /* The "decoded" frame in CUDA memory: luma rows, then CbCr rows; pitch = width. */
        if (cuda_driver_load(&cu, why, sizeof why)) fail("cuda_driver_load", why);
        LIB(vkcuda_context_get_cuda_info(ctx, &ci));
        LIB(vkcuda_buffer_create(ctx, &bci, &decoded));
        LIB(vkcuda_buffer_get_info(decoded, &bi));
        cu.cuCtxPushCurrent(ci.cuda_context);
        if (cu.cuMemcpyHtoD(bi.cuda_pointer, frame, bytes) != CUDA_SUCCESS) fail("cuMemcpyHtoD", "");
        vkcuda_pitched_planes pp = {0, 2, {{bi.cuda_pointer, (uint64_t)w}, {bi.cuda_pointer + luma, (uint64_t)w}, {0, 0}}};
        LIB(vkcuda_image_cuda_copy_from_pitched(image, &pp, NULL)); /* one call per frame: both planes */
        if (cu.cuCtxSynchronize() != CUDA_SUCCESS) fail("cuCtxSynchronize", "");
        cu.cuCtxPopCurrent(NULL);
        vkcuda_buffer_destroy(decoded);
        cuda_driver_unload(&cu);
        /* Back from CUDA, ready for the shader (the transition from GENERAL keeps CUDA's texels). */
        to_shader.stage_mask = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, to_shader.access_mask = VK_ACCESS_SHADER_READ_BIT;
        LIB(vkcuda_image_cmd_acquire_from_cuda(image, cmd[1], &to_shader, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL));
    } else {
        VkImageMemoryBarrier ib = {VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER, NULL, 0, VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_QUEUE_FAMILY_IGNORED, VK_QUEUE_FAMILY_IGNORED,
            info.image, {VK_IMAGE_ASPECT_PLANE_0_BIT | VK_IMAGE_ASPECT_PLANE_1_BIT, 0, 1, 0, 1}};
        VkBufferImageCopy copy[2] = {{0, 0, 0, {VK_IMAGE_ASPECT_PLANE_0_BIT, 0, 0, 1}, {0, 0, 0}, {(uint32_t)w, (uint32_t)h, 1}},
            {luma, 0, 0, {VK_IMAGE_ASPECT_PLANE_1_BIT, 0, 0, 1}, {0, 0, 0}, {(uint32_t)w / 2, (uint32_t)h / 2, 1}}};
        VK(vk_owned_buffer_create(&vk, bytes, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, host, 0, &staging));
        memcpy(staging.mapped, frame, bytes);
        vk.vkCmdPipelineBarrier(cmd[1], VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, NULL, 0, NULL,
                                1, &ib);
        vkCmdCopyBufferToImage(cmd[1], staging.buffer, info.image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 2, copy);
        ib.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT, ib.dstAccessMask = VK_ACCESS_SHADER_READ_BIT;
        ib.oldLayout = ib.newLayout, ib.newLayout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL;
        vk.vkCmdPipelineBarrier(cmd[1], VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 0, NULL, 0,
                                NULL, 1, &ib);
    }
    /* 6. Sample, one invocation per pixel, and make the shader's writes visible to the host. */
    uint32_t size[2] = {(uint32_t)w, (uint32_t)h};
    vkCmdBindPipeline(cmd[1], VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    vkCmdBindDescriptorSets(cmd[1], VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, NULL);
    vkCmdPushConstants(cmd[1], layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof size, size);
    vkCmdDispatch(cmd[1], (uint32_t)(w + 15) / 16, (uint32_t)(h + 15) / 16, 1);
    vk_cmd_barrier(&vk, cmd[1], VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                   VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    run(&vh, cmd[1]);

    /* 7. Every pixel against the host's conversion: within 2 of 255 (a sampler may round the filtered
     *    chroma to 8 bits; half a step of Cb is 1.06 of blue), PNG. */
    const uint32_t *got = rgba.mapped;
    size_t worst = 0;
    for (i = 0; i < luma; i++)
        for (a = 0; a < 24; a += 8) {
            int d = abs((int)(got[i] >> a & 255) - (int)(expect[i] >> a & 255));
            if (d > max_diff) max_diff = d, worst = i;
        }
    if (!stbi_write_png(out, w, h, 4, got, w * 4)) fail("stbi_write_png", out);
    printf("video_ycbcr: %s %dx%d NV12 (%s chroma) sampled as BT.709 narrow-range RGB: %zu pixels, "
           "max difference %d (at %zu,%zu); wrote %s\n", vulkan_only ? "CPU-written" : "CUDA-written", w, h,
           cosited ? "cosited" : "midpoint", luma, max_diff, worst % w, worst / w, out);
    if (max_diff > 2) fail("the pixels differ from the host reference", "by more than 2");
    printf("video_ycbcr: PASS\n");
    vk.vkDestroyCommandPool(dev, cpool, NULL);
    vk_owned_buffer_destroy(&vk, &rgba);
    if (staging.buffer) vk_owned_buffer_destroy(&vk, &staging);
    vkDestroyDescriptorPool(dev, pool, NULL);
    vkDestroyPipeline(dev, pipeline, NULL);
    vkDestroyPipelineLayout(dev, layout, NULL);
    vkDestroyDescriptorSetLayout(dev, dsl, NULL);
    vkDestroyImageView(dev, view, NULL);
    vkDestroySampler(dev, sampler, NULL);
    vkDestroySamplerYcbcrConversion(dev, conv.conversion, NULL);
    vkcuda_image_destroy(image);
    vkcuda_context_destroy(ctx);
    free(frame), free(expect);
    return 0;
}
