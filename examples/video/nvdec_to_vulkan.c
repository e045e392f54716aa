/*
 * nvdec_to_vulkan CLIP [--out FILE]: hardware video decode straight into Vulkan. NVDEC decodes an
 * H.264 or HEVC elementary stream (CLIP: *.h264 or *.hevc; nvdec_clip.c, FFmpeg's nv-codec-headers,
 * libnvcuvid.so.1 loaded at run time); each frame is copied device to device, one cuMemcpy2DAsync per
 * plane (vkcuda_image_cuda_copy_from_pitched), into a shared LINEAR video frame (NV12 for 8-bit
 * streams, P010 for 10-bit ones) whose colour comes from the stream (vkcuda_image_set_video_color);
 * Vulkan samples that frame through the VkSamplerYcbcrConversion the library describes
 * (vkcuda_image_get_ycbcr_conversion_info) into RGBA. NVDEC writes into its own surfaces, so the
 * one copy per plane is the whole cost of the handoff; Vulkan reads the frame where CUDA wrote it.
 *
 * Frame pacing: two shared frames in flight on one timeline semaphore. For frame n (from 1) CUDA
 * signals 2n-1 ("frame n ready") on its stream, the Vulkan submit that samples frame n waits for it
 * and signals 2n ("frame n consumed"). Frame n+2 goes into frame n's slot, and the stream reaches it
 * only after waiting for 2n: while Vulkan samples frame n, NVDEC decodes frame n+1 and CUDA copies it
 * into the other slot. (The stream waits for 2n-2 before signalling 2n-1, so values rise in order.)
 * Prints the frames decoded and the frame rate; --out writes the last frame as a PNG. Without a CUDA
 * GPU or NVDEC it prints SKIP and exits 77 (1 with VKCUDA_REQUIRE_GPU=1).
 */
#include "example.h"
#include "nvdec_clip.h"
#include "ycbcr_comp_spv.h"

#include <stb_image_write.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct player {
    example ex;
    vkcuda_image *frame[2];       /* the two shared frames in flight */
    VkImageView view[2];
    VkDescriptorSet set[2];
    VkCommandBuffer cmd[2];
    vkcuda_semaphore *timeline;   /* 2n-1: frame n ready (CUDA); 2n: frame n consumed (Vulkan) */
    VkSemaphore vk_timeline;
    VkSamplerYcbcrConversion conversion;
    VkSampler sampler;
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    VkDescriptorPool pool;
    vk_owned_buffer rgba;         /* what the shader writes: the frame as RGBA8 */
    uint32_t size[2];
} player;

static void skip(const char *why, const char *detail) {
    const char *req = getenv("VKCUDA_REQUIRE_GPU");
    printf("nvdec_to_vulkan: SKIP: %s%s\n", why, detail);
    exit(req && strcmp(req, "1") == 0 ? 1 : 77);
}

/* The sequence is known: make the two shared frames in its format and colour, and the sampling pass. */
static int on_format(void *user, const nvdec_format *f) {
    player *p = user;
    example *ex = &p->ex;
    VkDevice dev = ex->vh.device;
    int s;
    if (p->frame[0]) return 1; /* one size per clip in this example */
    vkcuda_image_create_info ci = {.flags = VKCUDA_IMAGE_CREATE_LINEAR_BIT,
        .format = f->bit_depth > 8 ? VK_FORMAT_G10X6_B10X6R10X6_2PLANE_420_UNORM_3PACK16 : VK_FORMAT_G8_B8R8_2PLANE_420_UNORM,
        .extent = {f->width, f->height, 1}, .usage = VK_IMAGE_USAGE_SAMPLED_BIT};
    VkSamplerYcbcrConversionCreateInfo cci;
    for (s = 0; s < 2; s++) {
        vkcuda_result made = vkcuda_image_create(ex->ctx, &ci, &p->frame[s]);
        if (made == VKCUDA_ERROR_UNSUPPORTED) skip("no shared linear frame of this format here: ", vkcuda_last_error_message());
        CHECK(made);
        CHECK(vkcuda_image_set_video_color(p->frame[s], &f->color)); /* the stream's matrix, range, siting */
    }
    /* The library turns the frame's format and colour into the conversion; the engine creates it. */
    vkcuda_result sampled = vkcuda_image_get_ycbcr_conversion_info(p->frame[0], &cci);
    if (sampled == VKCUDA_ERROR_UNSUPPORTED) skip("the device cannot sample this frame: ", vkcuda_last_error_message());
    CHECK(sampled);
    CHECK_VK(vkCreateSamplerYcbcrConversion(dev, &cci, NULL, &p->conversion));
    VkSamplerYcbcrConversionInfo conv = {VK_STRUCTURE_TYPE_SAMPLER_YCBCR_CONVERSION_INFO, NULL, p->conversion};
    VkSamplerAddressMode clamp = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE; /* what a YCbCr sampler must use */
    VkSamplerCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO, .pNext = &conv,
        .magFilter = cci.chromaFilter, .minFilter = cci.chromaFilter, .addressModeU = clamp, .addressModeV = clamp,
        .addressModeW = clamp};
    CHECK_VK(vkCreateSampler(dev, &sci, NULL, &p->sampler));
    VkDescriptorSetLayoutBinding b[2] = {
        {0, VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 1, VK_SHADER_STAGE_COMPUTE_BIT, &p->sampler},
        {1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL}};
    VkDescriptorSetLayoutCreateInfo dli = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, NULL, 0, 2, b};
    CHECK_VK(vkCreateDescriptorSetLayout(dev, &dli, NULL, &p->dsl));
    VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof p->size};
    VkPipelineLayoutCreateInfo pli = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, NULL, 0, 1, &p->dsl, 1, &pcr};
    CHECK_VK(vkCreatePipelineLayout(dev, &pli, NULL, &p->layout));
    VkShaderModule module;
    VkShaderModuleCreateInfo smi = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, NULL, 0, sizeof ycbcr_comp_spv, ycbcr_comp_spv};
    CHECK_VK(vkCreateShaderModule(dev, &smi, NULL, &module));
    VkComputePipelineCreateInfo cpi = {.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, .layout = p->layout,
        .stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, NULL, 0, VK_SHADER_STAGE_COMPUTE_BIT, module, "main", NULL}};
    CHECK_VK(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpi, NULL, &p->pipeline));
    vkDestroyShaderModule(dev, module, NULL);
    /* A converted format may take several descriptors (combinedImageSamplerDescriptorCount): room for 3 each. */
    VkDescriptorPoolSize sizes[2] = {{VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 6}, {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2}};
    VkDescriptorPoolCreateInfo dpi = {VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, NULL, 0, 2, 2, sizes};
    CHECK_VK(vkCreateDescriptorPool(dev, &dpi, NULL, &p->pool));
    p->size[0] = f->width, p->size[1] = f->height;
    CHECK_VK(vk_owned_buffer_create(&ex->vk, (VkDeviceSize)f->width * f->height * 4, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                                    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0, &p->rgba));
    vkcuda_handoff_info to_cuda = example_handoff(ex, 0, 0);
    example_record(ex->cmd);
    for (s = 0; s < 2; s++) {
        vkcuda_image_info fi;
        CHECK(vkcuda_image_get_info(p->frame[s], &fi));
        VkImageViewCreateInfo vci = {.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO, .pNext = &conv, .image = fi.image,
            .viewType = VK_IMAGE_VIEW_TYPE_2D, .format = ci.format, .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
        CHECK_VK(vkCreateImageView(dev, &vci, NULL, &p->view[s]));
        VkDescriptorSetAllocateInfo dai = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, NULL, p->pool, 1, &p->dsl};
        CHECK_VK(vkAllocateDescriptorSets(dev, &dai, &p->set[s]));
        VkDescriptorImageInfo dii = {VK_NULL_HANDLE, p->view[s], VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL};
        VkDescriptorBufferInfo dbi = {p->rgba.buffer, 0, VK_WHOLE_SIZE};
        VkWriteDescriptorSet wr[2] = {
            {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, NULL, p->set[s], 0, 0, 1, VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, &dii, NULL, NULL},
            {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, NULL, p->set[s], 1, 0, 1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, NULL, &dbi, NULL}};
        vkUpdateDescriptorSets(dev, 2, wr, 0, NULL);
        p->cmd[s] = example_command_buffer(ex);
        /* Both frames start on CUDA's side (nothing to keep yet: UNDEFINED). */
        CHECK(vkcuda_image_cmd_release_to_cuda(p->frame[s], ex->cmd, &to_cuda, VK_IMAGE_LAYOUT_UNDEFINED));
    }
    example_run(ex, ex->cmd);
    printf("nvdec_to_vulkan: %ux%u, %u-bit -> shared linear %s frames x2; colour: matrix %u, transfer %u, primaries %u, %s range\n",
           f->width, f->height, f->bit_depth, f->bit_depth > 8 ? "P010" : "NV12", f->color.matrix_coefficients,
           f->color.transfer_characteristics, f->color.colour_primaries, f->color.full_range ? "full" : "narrow");
    return 0;
}

/* A decoded frame (pitched, in NVDEC's surface): into slot n % 2, then Vulkan samples it. */
static int on_frame(void *user, const nvdec_frame *f) {
    player *p = user;
    example *ex = &p->ex;
    uint64_t n = f->index + 1;
    int s = (int)(f->index % 2);
    /* CUDA: the copy (the stream already waited for 2n-4, "frame n-2 consumed": the slot is free). */
    vkcuda_pitched_planes planes = {0, 2, {{f->luma, f->pitch}, {f->chroma, f->pitch}, {0, 0}}};
    CHECK(vkcuda_image_cuda_copy_from_pitched(p->frame[s], &planes, ex->stream));
    CHECK_CU(cuStreamSynchronize(ex->stream)); /* NVDEC unmaps the surface when we return */
    if (n > 1) CHECK(vkcuda_semaphore_cuda_wait(p->timeline, 2 * n - 2, ex->stream));
    CHECK(vkcuda_semaphore_cuda_signal(p->timeline, 2 * n - 1, ex->stream)); /* frame n ready */
    /* Vulkan: cmd[s] was last submitted for frame n-2, consumed (2n-4) before the copy above ran. */
    if (n > 2) CHECK(vkcuda_semaphore_host_wait(p->timeline, 2 * n - 4, 0));
    vkcuda_handoff_info shader = example_handoff(ex, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
    example_record(p->cmd[s]);
    CHECK(vkcuda_image_cmd_acquire_from_cuda(p->frame[s], p->cmd[s], &shader, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL));
    vkCmdBindPipeline(p->cmd[s], VK_PIPELINE_BIND_POINT_COMPUTE, p->pipeline);
    vkCmdBindDescriptorSets(p->cmd[s], VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &p->set[s], 0, NULL);
    vkCmdPushConstants(p->cmd[s], p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof p->size, p->size);
    vkCmdDispatch(p->cmd[s], (p->size[0] + 15) / 16, (p->size[1] + 15) / 16, 1);
    vk_cmd_barrier(p->cmd[s], VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                   VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    CHECK(vkcuda_image_cmd_release_to_cuda(p->frame[s], p->cmd[s], &shader, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL));
    vkcuda_timeline_stage stage = {2 * n - 1, 2 * n}; /* wait "ready", signal "consumed" */
    example_submit_stage(ex, p->cmd[s], p->vk_timeline, &stage);
    return 0;
}

int main(int argc, char **argv) {
    const char *clip_path = NULL, *out = NULL;
    player p;
    nvdec *dec;
    char why[512];
    int a;
    for (a = 1; a < argc; a++)
        if (!strcmp(argv[a], "--out") && a + 1 < argc) out = argv[++a];
        else if (argv[a][0] != '-' && !clip_path) clip_path = argv[a];
        else return printf("usage: nvdec_to_vulkan CLIP.h264|CLIP.hevc [--out FILE.png]\n"), 2;
    if (!clip_path) return printf("usage: nvdec_to_vulkan CLIP.h264|CLIP.hevc [--out FILE.png]\n"), 2;
    const char *dot = strrchr(clip_path, '.');
    const char *codec = dot && (!strcmp(dot, ".hevc") || !strcmp(dot, ".h265")) ? "hevc" : "h264";
    memset(&p, 0, sizeof p);
    /* 1. A context (Vulkan + CUDA, its CUDA context current: NVDEC decodes in it). */
    example_open(&p.ex, "nvdec_to_vulkan", 0);
    VkDevice dev = p.ex.vh.device;
    /* 2. The clip, whole in memory (a player would hand over packets from its demuxer). */
    FILE *file = fopen(clip_path, "rb");
    if (!file) return printf("nvdec_to_vulkan: FAIL: cannot open %s\n", clip_path), 1;
    fseek(file, 0, SEEK_END);
    long bytes = ftell(file);
    unsigned char *clip = malloc(bytes > 0 ? (size_t)bytes : 1);
    fseek(file, 0, SEEK_SET);
    if (bytes <= 0 || fread(clip, 1, (size_t)bytes, file) != (size_t)bytes)
        return printf("nvdec_to_vulkan: FAIL: cannot read %s\n", clip_path), 1;
    fclose(file);
    /* 3. The timeline both sides pace the frames with, and the decoder. */
    vkcuda_semaphore_create_info sci = {0};
    CHECK(vkcuda_semaphore_create(p.ex.ctx, &sci, &p.timeline));
    CHECK(vkcuda_semaphore_get_vk_semaphore(p.timeline, &p.vk_timeline));
    nvdec_callbacks cb = {&p, on_format, on_frame, NULL};
    if (nvdec_open(&dec, codec, p.ex.stream, &cb, why, sizeof why) != 0) skip("no NVDEC: ", why);
    /* 4. Decode: every frame through the shared frames into Vulkan's sampler. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long frames = nvdec_decode(dec, clip, (size_t)bytes);
    if (frames < 0) return printf("nvdec_to_vulkan: FAIL: %s: %s\n", clip_path, nvdec_error(dec)), 1;
    CHECK(vkcuda_semaphore_host_wait(p.timeline, 2 * (uint64_t)frames, 10000000000ull)); /* the last one consumed */
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("nvdec_to_vulkan: %s (%s, %ld bytes): %ld frames decoded and sampled by Vulkan in %.3f s = %.1f fps\n",
           clip_path, codec, bytes, frames, seconds, (double)frames / seconds);
    if (frames == 0) return printf("nvdec_to_vulkan: FAIL: no frame decoded\n"), 1;
    if (out && !stbi_write_png(out, (int)p.size[0], (int)p.size[1], 4, p.rgba.mapped, (int)p.size[0] * 4))
        return printf("nvdec_to_vulkan: FAIL: cannot write %s\n", out), 1;
    if (out) printf("nvdec_to_vulkan: the last frame as Vulkan sampled it: %s\n", out);
    /* 5. Everything back, in reverse. */
    nvdec_close(dec);
    CHECK_VK(vkDeviceWaitIdle(dev));
    for (a = 0; a < 2; a++) vkDestroyImageView(dev, p.view[a], NULL), vkcuda_image_destroy(p.frame[a]);
    vk_owned_buffer_destroy(&p.ex.vk, &p.rgba);
    vkDestroyDescriptorPool(dev, p.pool, NULL);
    vkDestroyPipeline(dev, p.pipeline, NULL);
    vkDestroyPipelineLayout(dev, p.layout, NULL);
    vkDestroyDescriptorSetLayout(dev, p.dsl, NULL);
    vkDestroySampler(dev, p.sampler, NULL);
    vkDestroySamplerYcbcrConversion(dev, p.conversion, NULL);
    vkcuda_semaphore_destroy(p.timeline);
    example_close(&p.ex);
    free(clip);
    printf("nvdec_to_vulkan: PASS\n");
    return 0;
}
