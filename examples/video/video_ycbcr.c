/*
 * video_ycbcr [--vulkan-only] [--size WxH] [--out FILE]: one NV12 video frame shared by CUDA and
 * Vulkan, with no copy on the Vulkan side. CUDA writes the decoded planes into the frame's plane
 * pointers (a CUDA buffer of pitched planes stands in for NVDEC's cuvidMapVideoFrame output: one
 * cuMemcpy2DAsync per plane, device to device); Vulkan acquires the frame and samples it through a
 * VkSamplerYcbcrConversion (BT.709, narrow range) into RGB, checked pixel by pixel against a host
 * reference and written as a PNG. Why LINEAR tiling (VKCUDA_IMAGE_CREATE_LINEAR_BIT): each plane is
 * then pitched device memory at the offset and row pitch Vulkan reports, the layout NVDEC writes and
 * NVENC reads, and Vulkan's sampler reads those same bytes. Why not OPTIMAL: with CUDA the library
 * refuses optimal multi-planar images (on NVIDIA's driver CUDA reads their planes wrong once the data
 * compresses, as video does; the message says so and names the linear bit). --vulkan-only: the CPU
 * plays the decoder (a staging copy into the frame's planes). Without a CUDA GPU, or a device that
 * makes and samples linear NV12 frames (Debian 12's lavapipe has no multi-planar format), it prints
 * SKIP and exits 77 (1 with VKCUDA_REQUIRE_GPU=1).
 */
#include "example.h"
#include "ycbcr_comp_spv.h"
#include "ycbcr_reference.h"

#include <stb_image_write.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NV12 VK_FORMAT_G8_B8R8_2PLANE_420_UNORM
/* A layout transition (and the accesses around it) of a whole image: COLOR, as a non-disjoint
 * multi-planar image's barriers must name (VUID-VkImageMemoryBarrier-image-01671). */
static void transition(VkCommandBuffer cmd, VkImage image, VkImageLayout from, VkImageLayout to,
                       VkAccessFlags src, VkAccessFlags dst, VkPipelineStageFlags dst_stage) {
    VkImageMemoryBarrier b = {VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER, NULL, src, dst, from, to, VK_QUEUE_FAMILY_IGNORED,
                              VK_QUEUE_FAMILY_IGNORED, image, {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, dst_stage, 0, 0, NULL, 0, NULL, 1, &b);
}

static void skip(const char *why, const char *detail) {
    const char *req = getenv("VKCUDA_REQUIRE_GPU");
    printf("SKIPPED: video_ycbcr: %s%s\n", why, detail);
    exit(req && strcmp(req, "1") == 0 ? 1 : 77);
}

int main(int argc, char **argv) {
    int vulkan_only = 0, w = 1920, h = 1080, a, x, y, max_diff = 0;
    const char *out = "video_ycbcr.png";
    example ex;
    for (a = 1; a < argc; a++)
        if (!strcmp(argv[a], "--vulkan-only")) vulkan_only = 1;
        else if (!strcmp(argv[a], "--size") && a + 1 < argc && sscanf(argv[++a], "%dx%d", &w, &h) == 2) continue;
        else if (!strcmp(argv[a], "--out") && a + 1 < argc) out = argv[++a];
        else return printf("usage: video_ycbcr [--vulkan-only] [--size WxH] [--out FILE]\n"), 2;
    /* 1. A context (standalone ones enable samplerYcbcrConversion where the device has it). */
    example_open(&ex, "video_ycbcr", vulkan_only ? VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT : 0);
    VkDevice dev = ex.vh.device;
    /* 2. The shared frame: NV12, LINEAR, one allocation that CUDA maps whole; each plane is pitched
     *    memory (pp[p]: CUDA pointer, row pitch, extent, aspect). Sampled by Vulkan; with --vulkan-only
     *    also a copy target. A device without linear NV12 frames refuses it: UNSUPPORTED, why. */
    vkcuda_image_create_info fci = {.flags = VKCUDA_IMAGE_CREATE_LINEAR_BIT, .format = NV12,
        .extent = {(uint32_t)w, (uint32_t)h, 1},
        .usage = VK_IMAGE_USAGE_SAMPLED_BIT | (vulkan_only ? VK_IMAGE_USAGE_TRANSFER_DST_BIT : 0)};
    vkcuda_image *shared; vkcuda_image_info fi; vkcuda_image_plane_pointer pp[2];
    vkcuda_result made = vkcuda_image_create(ex.ctx, &fci, &shared);
    if (made == VKCUDA_ERROR_UNSUPPORTED) skip("no shared linear NV12 frame on this device: ", vkcuda_last_error_message());
    CHECK(made), CHECK(vkcuda_image_get_info(shared, &fi));
    for (a = 0; a < 2; a++) CHECK(vkcuda_image_get_plane_pointer(shared, (uint32_t)a, &pp[a]));
    /* 3. Can the device sample linear NV12 through a YCbCr conversion, chroma filtered linearly? */
    VkPhysicalDeviceSamplerYcbcrConversionFeatures yf = {
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SAMPLER_YCBCR_CONVERSION_FEATURES, 0, 0};
    VkPhysicalDeviceFeatures2 f2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &yf, {0}};
    VkFormatProperties fp;
    vkGetPhysicalDeviceFeatures2(ex.vh.physical_device, &f2);
    vkGetPhysicalDeviceFormatProperties(ex.vh.physical_device, NV12, &fp);
    if (!yf.samplerYcbcrConversion ||
        !(fp.linearTilingFeatures & VK_FORMAT_FEATURE_SAMPLED_IMAGE_YCBCR_CONVERSION_LINEAR_FILTER_BIT))
        skip("the device cannot sample linear NV12 through a VkSamplerYcbcrConversion with linear chroma filtering", "");
    int cosited = (fp.linearTilingFeatures & VK_FORMAT_FEATURE_COSITED_CHROMA_SAMPLES_BIT) != 0;
    VkChromaLocation where = cosited ? VK_CHROMA_LOCATION_COSITED_EVEN : VK_CHROMA_LOCATION_MIDPOINT;

    size_t luma = (size_t)w * h, bytes = luma * 3 / 2, i;
    uint8_t *frame = malloc(bytes), *cbcr = frame + luma;
    uint32_t *expect = malloc(luma * 4);
    for (i = 0; i < bytes; i++) {
        size_t c = i < luma ? 0 : (i - luma) / 2, cx = c % (w / 2) * 2, cy = c / (w / 2) * 2;
        frame[i] = i < luma ? sample(0, (int)(i % w), (int)(i / w), w, h) : sample(1 + (i - luma) % 2, (int)cx, (int)cy, w, h);
    }
    for (y = 0; y < h; y++)
        for (x = 0; x < w; x++) expect[(size_t)y * w + x] = reference(frame, cbcr, w, h, x, y, cosited);

    /* 4. The conversion, an immutable sampler and a view of the shared frame's VkImage with it (the
     *    view's format is the frame's, NV12), and a compute pipeline that samples. */
    VkSampler sampler; VkImageView view; VkDescriptorSetLayout dsl; VkPipelineLayout layout; VkShaderModule module;
    VkPipeline pipeline; VkDescriptorPool pool; VkDescriptorSet set;
    VkSamplerYcbcrConversionCreateInfo cci = {.sType = VK_STRUCTURE_TYPE_SAMPLER_YCBCR_CONVERSION_CREATE_INFO,
        .format = NV12, .ycbcrModel = VK_SAMPLER_YCBCR_MODEL_CONVERSION_YCBCR_709,
        .ycbcrRange = VK_SAMPLER_YCBCR_RANGE_ITU_NARROW, .xChromaOffset = where, .yChromaOffset = where,
        .chromaFilter = VK_FILTER_LINEAR};
    VkSamplerYcbcrConversionInfo conv = {VK_STRUCTURE_TYPE_SAMPLER_YCBCR_CONVERSION_INFO, NULL, VK_NULL_HANDLE};
    CHECK_VK(vkCreateSamplerYcbcrConversion(dev, &cci, NULL, &conv.conversion));
    VkSamplerAddressMode clamp = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE; /* what a YCbCr sampler must use */
    VkSamplerCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO, .pNext = &conv, .magFilter = VK_FILTER_LINEAR,
        .minFilter = VK_FILTER_LINEAR, .addressModeU = clamp, .addressModeV = clamp, .addressModeW = clamp};
    CHECK_VK(vkCreateSampler(dev, &sci, NULL, &sampler));
    VkImageViewCreateInfo vci = {.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO, .pNext = &conv, .image = fi.image,
        .viewType = VK_IMAGE_VIEW_TYPE_2D, .format = NV12, .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
    CHECK_VK(vkCreateImageView(dev, &vci, NULL, &view));
    VkDescriptorSetLayoutBinding b[2] = {{0, VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 1, VK_SHADER_STAGE_COMPUTE_BIT, &sampler},
                                         {1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL}};
    VkDescriptorSetLayoutCreateInfo dli = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, NULL, 0, 2, b};
    CHECK_VK(vkCreateDescriptorSetLayout(dev, &dli, NULL, &dsl));
    VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 8};
    VkPipelineLayoutCreateInfo pli = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, NULL, 0, 1, &dsl, 1, &pcr};
    CHECK_VK(vkCreatePipelineLayout(dev, &pli, NULL, &layout));
    VkShaderModuleCreateInfo smi = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, NULL, 0, sizeof ycbcr_comp_spv, ycbcr_comp_spv};
    CHECK_VK(vkCreateShaderModule(dev, &smi, NULL, &module));
    VkComputePipelineCreateInfo cpi = {.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, .layout = layout,
        .stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, NULL, 0, VK_SHADER_STAGE_COMPUTE_BIT, module, "main",
                  NULL}};
    CHECK_VK(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpi, NULL, &pipeline));
    vkDestroyShaderModule(dev, module, NULL);
    /* A converted format may take several descriptors (combinedImageSamplerDescriptorCount): room for 3. */
    VkDescriptorPoolSize sizes[2] = {{VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 3}, {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1}};
    VkDescriptorPoolCreateInfo dpi = {VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, NULL, 0, 1, 2, sizes};
    CHECK_VK(vkCreateDescriptorPool(dev, &dpi, NULL, &pool));
    VkDescriptorSetAllocateInfo dai = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, NULL, pool, 1, &dsl};
    CHECK_VK(vkAllocateDescriptorSets(dev, &dai, &set));
    vk_owned_buffer rgba, staging = {0};
    VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    CHECK_VK(vk_owned_buffer_create(&ex.vk, luma * 4, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, host, 0, &rgba));
    VkDescriptorImageInfo dii = {VK_NULL_HANDLE, view, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL};
    VkDescriptorBufferInfo dbi = {rgba.buffer, 0, VK_WHOLE_SIZE};
    VkWriteDescriptorSet wr[2] = {
        {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, NULL, set, 0, 0, 1, VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, &dii, NULL, NULL},
        {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, NULL, set, 1, 0, 1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, NULL, &dbi, NULL}};
    vkUpdateDescriptorSets(dev, 2, wr, 0, NULL);

    /* 5. The planes written (by CUDA, or the CPU's staging copy), the frame handed to the shader. */
    VkCommandBuffer cmd = example_command_buffer(&ex);
    example_record(cmd);
    if (!vulkan_only) {
        vkcuda_buffer *decoded; vkcuda_buffer_info bi;
        vkcuda_buffer_create_info bci = {0, VKCUDA_ALLOCATOR_CUDA, bytes, 0};
        vkcuda_handoff_info to_cuda = example_handoff(&ex, 0, 0);
        vkcuda_handoff_info to_shader = example_handoff(&ex, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
        /* The new frame goes to CUDA (old layout UNDEFINED: there is nothing to keep yet). */
        example_record(ex.cmd);
        CHECK(vkcuda_image_cmd_release_to_cuda(shared, ex.cmd, &to_cuda, VK_IMAGE_LAYOUT_UNDEFINED));
        example_run(&ex, ex.cmd);
        /* The "decoded" frame in CUDA memory: luma rows, then CbCr rows; pitch = width. */
        CHECK(vkcuda_buffer_create(ex.ctx, &bci, &decoded)), CHECK(vkcuda_buffer_get_info(decoded, &bi));
        CHECK_CU(cuMemcpyHtoD(bi.cuda_pointer, frame, bytes));
        /* One cuMemcpy2DAsync per plane into pp[p].cuda_pointer at pp[p].row_pitch (never the width):
         * what a decode loop does after cuvidMapVideoFrame. */
        vkcuda_pitched_planes src = {0, 2, {{bi.cuda_pointer, (uint64_t)w}, {bi.cuda_pointer + luma, (uint64_t)w}, {0, 0}}};
        CHECK(vkcuda_image_cuda_copy_from_pitched(shared, &src, ex.stream));
        CHECK_CU(cuStreamSynchronize(ex.stream)), vkcuda_buffer_destroy(decoded);
        /* Back from CUDA straight into the shader's layout (the transition from GENERAL keeps CUDA's bytes). */
        CHECK(vkcuda_image_cmd_acquire_from_cuda(shared, cmd, &to_shader, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL));
    } else {
        /* The barriers of a non-disjoint multi-planar image name COLOR; a copy names one plane. */
        VkBufferImageCopy copy[2] = {{0, 0, 0, {pp[0].aspect, 0, 0, 1}, {0, 0, 0}, {pp[0].width, pp[0].height, 1}},
                                     {luma, 0, 0, {pp[1].aspect, 0, 0, 1}, {0, 0, 0}, {pp[1].width, pp[1].height, 1}}};
        staging = example_host_buffer(&ex, bytes);
        memcpy(staging.mapped, frame, bytes);
        transition(cmd, fi.image, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 0,
                   VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT);
        vkCmdCopyBufferToImage(cmd, staging.buffer, fi.image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 2, copy);
        transition(cmd, fi.image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL,
                   VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_SHADER_READ_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
    }
    /* 6. Sample, one invocation per pixel, and make the shader's writes visible to the host. */
    uint32_t size[2] = {(uint32_t)w, (uint32_t)h};
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, NULL);
    vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof size, size);
    vkCmdDispatch(cmd, (uint32_t)(w + 15) / 16, (uint32_t)(h + 15) / 16, 1);
    vk_cmd_barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                   VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    example_run(&ex, cmd);

    /* 7. Every pixel against the host's conversion: within 2 of 255 (a sampler may round the filtered
     *    chroma to 8 bits; half a step of Cb is 1.06 of blue), then the PNG. */
    const uint32_t *got = rgba.mapped;
    size_t worst = 0;
    for (i = 0; i < luma; i++)
        for (a = 0; a < 24; a += 8) {
            int d = abs((int)(got[i] >> a & 255) - (int)(expect[i] >> a & 255));
            if (d > max_diff) max_diff = d, worst = i;
        }
    if (!stbi_write_png(out, w, h, 4, got, w * 4)) return printf("video_ycbcr: FAIL: cannot write %s\n", out), 1;
    printf("video_ycbcr: %s shared linear %dx%d NV12 frame (row pitches %llu and %llu, CbCr at +%llu; %s chroma) "
           "sampled as BT.709 narrow-range RGB: %zu pixels, max difference %d (at %zu,%zu); wrote %s\n",
           vulkan_only ? "CPU-written" : "CUDA-written", w, h, (unsigned long long)pp[0].row_pitch,
           (unsigned long long)pp[1].row_pitch, (unsigned long long)pp[1].offset, cosited ? "cosited" : "midpoint", luma,
           max_diff, worst % w, worst / w, out);
    if (max_diff > 2) {
        for (i = 0, a = 0; i < luma && a < 4; i++) /* the first pixels that differ, as RGB */
            if (abs((int)(got[i] & 255) - (int)(expect[i] & 255)) > 2 || abs((int)(got[i] >> 8 & 255) - (int)(expect[i] >> 8 & 255)) > 2 ||
                abs((int)(got[i] >> 16 & 255) - (int)(expect[i] >> 16 & 255)) > 2)
                a++, printf("  (%zu,%zu): got %06x, expected %06x (0xBBGGRR)\n", i % w, i / w, got[i] & 0xffffff, expect[i] & 0xffffff);
        return printf("video_ycbcr: FAIL: the pixels differ from the host reference by more than 2\n"), 1;
    }
    CHECK_VK(vkDeviceWaitIdle(dev));
    vk_owned_buffer_destroy(&ex.vk, &rgba);
    if (staging.buffer) vk_owned_buffer_destroy(&ex.vk, &staging);
    vkDestroyDescriptorPool(dev, pool, NULL);
    vkDestroyPipeline(dev, pipeline, NULL);
    vkDestroyPipelineLayout(dev, layout, NULL);
    vkDestroyDescriptorSetLayout(dev, dsl, NULL);
    vkDestroyImageView(dev, view, NULL);
    vkDestroySampler(dev, sampler, NULL);
    vkDestroySamplerYcbcrConversion(dev, conv.conversion, NULL);
    vkcuda_image_destroy(shared);
    example_close(&ex);
    free(frame), free(expect);
    printf("video_ycbcr: PASS\n");
    return 0;
}
