/* nvdec_run.c: see nvdec_run.h. */
#include "nvdec_run.h"
#include "nvdec_clip.h"
#include "ycbcr_comp_spv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *program = "nvdec_run";

/* The tags scripts/lab/make-clips.sh gives the clips: matrix, transfer, primaries (H.273), bit depth. */
const nvdec_run_clip_kind nvdec_run_clip_kinds[NVDEC_RUN_CLIPS] = {
    {"h264_1080p.h264", "h264", 1, 1, 1, 8},
    {"hevc_main10_1080p.hevc", "hevc", 9, 14, 9, 10},
};
const char *const nvdec_run_mode_name[3] = {"alone", "pipeline", "verify"};

static unsigned char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    unsigned char *b = NULL;
    long n;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 && (b = malloc((size_t)n + 1)) &&
        fread(b, 1, (size_t)n, f) == (size_t)n) {
        *size = (size_t)n, b[n] = 0;
    } else {
        free(b), b = NULL;
    }
    fclose(f);
    return b;
}

int nvdec_run_clip_load(const char *dir, int kind, nvdec_run_clip *clip, char *why, size_t why_size) {
    char path[1024];
    long idx;
    unsigned long long h;
    FILE *rf;
    memset(clip, 0, sizeof *clip);
    clip->kind = &nvdec_run_clip_kinds[kind];
    snprintf(path, sizeof path, "%s/%s", dir, clip->kind->file);
    if (!(clip->data = read_file(path, &clip->bytes)))
        return snprintf(why, why_size, "cannot read %s (scripts/lab/make-clips.sh makes it; --clips DIR)", path), -1;
    snprintf(path, sizeof path, "%s/%s.fnv", dir, clip->kind->file);
    if (!(clip->ref = malloc(100000 * sizeof *clip->ref)) || !(rf = fopen(path, "r"))) {
        nvdec_run_clip_free(clip);
        return snprintf(why, why_size, "cannot read %s", path), -1;
    }
    while (clip->nref < 100000 && fscanf(rf, "%ld %llx", &idx, &h) == 2) clip->ref[clip->nref++] = h;
    fclose(rf);
    return 0;
}

void nvdec_run_clip_free(nvdec_run_clip *clip) {
    free(clip->data), free(clip->ref);
    clip->data = NULL, clip->ref = NULL;
}

int nvdec_run_init(example *ex, const char *name) {
    program = name;
    (void)ex;
    return 0;
}

int nvdec_run_open(example *ex, const char *name) {
    setvbuf(stdout, NULL, _IONBF, 0);
    example_open(ex, name, 0);
    return nvdec_run_init(ex, name);
}

nvdec_run nvdec_run_of(nvdec_run_mode mode, const uint64_t *ref, long nref) {
    nvdec_run r;
    memset(&r, 0, sizeof r);
    r.mode = mode, r.ref = ref, r.nref = nref, r.check_hashes = 1, r.short_pitch = VKCUDA_SUCCESS;
    return r;
}

double nvdec_run_fps(const nvdec_run *r, long frames) {
    return frames > 1 && r->t_end > r->t_first ? (double)(frames - 1) / (r->t_end - r->t_first) : 0;
}

static uint64_t fnv1a(const uint8_t *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static int skip_pipeline(nvdec_run *r, const char *why) {
    snprintf(r->skipped, sizeof r->skipped, "%s%s", why, vkcuda_last_error_message());
    return 1;
}

int nvdec_run_sampling_make(nvdec_run *r, VkFormat format) {
    VkDevice dev = r->ex->vh.device;
    VkSamplerYcbcrConversionCreateInfo cci;
    VkShaderModule module;
    int s;
    vkcuda_result got = vkcuda_image_get_ycbcr_conversion_info(r->frame[0], &cci);
    if (got == VKCUDA_ERROR_UNSUPPORTED) return skip_pipeline(r, "the device cannot sample this frame: ");
    CHECK(got);
    CHECK_VK(vkCreateSamplerYcbcrConversion(dev, &cci, NULL, &r->conversion));
    VkSamplerYcbcrConversionInfo conv = {VK_STRUCTURE_TYPE_SAMPLER_YCBCR_CONVERSION_INFO, NULL, r->conversion};
    VkSamplerAddressMode clamp = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE;
    VkSamplerCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO, .pNext = &conv, .magFilter = cci.chromaFilter,
        .minFilter = cci.chromaFilter, .addressModeU = clamp, .addressModeV = clamp, .addressModeW = clamp};
    CHECK_VK(vkCreateSampler(dev, &sci, NULL, &r->sampler));
    VkDescriptorSetLayoutBinding b[2] = {
        {0, VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 1, VK_SHADER_STAGE_COMPUTE_BIT, &r->sampler},
        {1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL}};
    VkDescriptorSetLayoutCreateInfo dli = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, NULL, 0, 2, b};
    CHECK_VK(vkCreateDescriptorSetLayout(dev, &dli, NULL, &r->dsl));
    VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof r->size};
    VkPipelineLayoutCreateInfo pli = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, NULL, 0, 1, &r->dsl, 1, &pcr};
    CHECK_VK(vkCreatePipelineLayout(dev, &pli, NULL, &r->layout));
    VkShaderModuleCreateInfo smi = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, NULL, 0, sizeof ycbcr_comp_spv, ycbcr_comp_spv};
    CHECK_VK(vkCreateShaderModule(dev, &smi, NULL, &module));
    VkComputePipelineCreateInfo cpi = {.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, .layout = r->layout,
        .stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, NULL, 0, VK_SHADER_STAGE_COMPUTE_BIT, module, "main", NULL}};
    CHECK_VK(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpi, NULL, &r->pipeline));
    vkDestroyShaderModule(dev, module, NULL);
    VkDescriptorPoolSize sizes[2] = {{VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 6}, {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2}};
    VkDescriptorPoolCreateInfo dpi = {VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, NULL, 0, 2, 2, sizes};
    CHECK_VK(vkCreateDescriptorPool(dev, &dpi, NULL, &r->pool));
    CHECK_VK(vk_owned_buffer_create(&r->ex->vk, (VkDeviceSize)r->size[0] * r->size[1] * 4, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                                    VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, &r->rgba));
    for (s = 0; s < 2; s++) {
        vkcuda_image_info fi;
        CHECK(vkcuda_image_get_info(r->frame[s], &fi));
        VkImageViewCreateInfo vci = {.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO, .pNext = &conv, .image = fi.image,
            .viewType = VK_IMAGE_VIEW_TYPE_2D, .format = format, .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
        CHECK_VK(vkCreateImageView(dev, &vci, NULL, &r->view[s]));
        VkDescriptorSetAllocateInfo dai = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, NULL, r->pool, 1, &r->dsl};
        CHECK_VK(vkAllocateDescriptorSets(dev, &dai, &r->set[s]));
        VkDescriptorImageInfo dii = {VK_NULL_HANDLE, r->view[s], VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL};
        VkDescriptorBufferInfo dbi = {r->rgba.buffer, 0, VK_WHOLE_SIZE};
        VkWriteDescriptorSet wr[2] = {
            {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, NULL, r->set[s], 0, 0, 1, VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, &dii, NULL, NULL},
            {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, NULL, r->set[s], 1, 0, 1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, NULL, &dbi, NULL}};
        vkUpdateDescriptorSets(dev, 2, wr, 0, NULL);
    }
    return 0;
}

void nvdec_run_sampling_record(nvdec_run *r, int s) {
    VkCommandBuffer cmd = r->cmd[s];
    vkcuda_handoff_info h = example_handoff(r->ex, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
    CHECK(vkcuda_image_cmd_acquire_from_cuda(r->frame[s], cmd, &h, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL));
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, r->pipeline);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, r->layout, 0, 1, &r->set[s], 0, NULL);
    vkCmdPushConstants(cmd, r->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof r->size, r->size);
    vkCmdDispatch(cmd, (r->size[0] + 15) / 16, (r->size[1] + 15) / 16, 1);
    CHECK(vkcuda_image_cmd_release_to_cuda(r->frame[s], cmd, &h, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL));
}

static int on_format(void *user, const nvdec_format *f) {
    nvdec_run *r = user;
    example *ex = r->ex;
    int s;
    if (r->bit_depth) return r->size[0] != f->width || r->size[1] != f->height; /* one size per clip */
    r->size[0] = f->width, r->size[1] = f->height, r->bit_depth = f->bit_depth, r->color = f->color;
    if (r->mode == NVDEC_RUN_ALONE) return 0;
    VkFormat format = f->bit_depth > 8 ? VK_FORMAT_G10X6_B10X6R10X6_2PLANE_420_UNORM_3PACK16 : VK_FORMAT_G8_B8R8_2PLANE_420_UNORM;
    vkcuda_image_create_info ci = {.flags = VKCUDA_IMAGE_CREATE_LINEAR_BIT, .format = format, .extent = {f->width, f->height, 1},
        .usage = r->mode == NVDEC_RUN_PIPELINE ? VK_IMAGE_USAGE_SAMPLED_BIT : VK_IMAGE_USAGE_TRANSFER_SRC_BIT};
    for (s = 0; s < 2; s++) {
        vkcuda_result made = vkcuda_image_create(ex->ctx, &ci, &r->frame[s]);
        if (made == VKCUDA_ERROR_UNSUPPORTED && r->mode == NVDEC_RUN_PIPELINE)
            return skip_pipeline(r, "no sampled shared linear frame of this format: ");
        CHECK(made);
        CHECK(vkcuda_image_set_video_color(r->frame[s], &f->color));
    }
    CHECK(vkcuda_image_get_plane_pointer(r->frame[0], 0, &r->pp[0]));
    CHECK(vkcuda_image_get_plane_pointer(r->frame[0], 1, &r->pp[1]));
    r->frame_bytes = (VkDeviceSize)r->pp[0].width * r->pp[0].height * r->pp[0].bytes_per_texel +
                     (VkDeviceSize)r->pp[1].width * r->pp[1].height * r->pp[1].bytes_per_texel;
    if (r->mode == NVDEC_RUN_VERIFY) r->host = example_host_buffer(ex, r->frame_bytes);
    if (r->mode == NVDEC_RUN_PIPELINE && nvdec_run_sampling_make(r, format)) return 1;
    vkcuda_handoff_info to_cuda = example_handoff(ex, 0, 0);
    example_record(ex->cmd);
    for (s = 0; s < 2; s++) {
        r->cmd[s] = example_command_buffer(ex);
        CHECK(vkcuda_image_cmd_release_to_cuda(r->frame[s], ex->cmd, &to_cuda, VK_IMAGE_LAYOUT_UNDEFINED));
    }
    example_run(ex, ex->cmd);
    return 0;
}

static int on_frame(void *user, const nvdec_frame *f) {
    nvdec_run *r = user;
    example *ex = r->ex;
    uint64_t n = f->index + 1;
    int s = (int)(f->index % 2);
    if (f->index == 0) r->t_first = now_s();
    if (r->mode == NVDEC_RUN_ALONE) { /* decode + map, finished on the stream */
        CHECK_CU(cuStreamSynchronize(ex->stream));
        return 0;
    }
    vkcuda_pitched_planes planes = {0, 2, {{f->luma, f->pitch}, {f->chroma, f->pitch}, {0, 0}}};
    if (f->index == 0 && r->mode == NVDEC_RUN_VERIFY) { /* bad input: a pitch shorter than a row, refused before any copy */
        vkcuda_pitched_planes bad = planes;
        bad.planes[0].pitch = 16;
        r->short_pitch = vkcuda_image_cuda_copy_from_pitched(r->frame[s], &bad, ex->stream);
    }
    CHECK(vkcuda_image_cuda_copy_from_pitched(r->frame[s], &planes, ex->stream));
    CHECK_CU(cuStreamSynchronize(ex->stream)); /* the mapped frame goes back to NVDEC on return */
    if (n > 1) CHECK(vkcuda_semaphore_cuda_wait(r->timeline, 2 * n - 2, ex->stream));
    CHECK(vkcuda_semaphore_cuda_signal(r->timeline, 2 * n - 1, ex->stream));
    if (n > 2) CHECK(vkcuda_semaphore_host_wait(r->timeline, 2 * n - 4, 0));
    VkCommandBuffer cmd = r->cmd[s];
    example_record(cmd);
    if (r->mode == NVDEC_RUN_PIPELINE) {
        nvdec_run_sampling_record(r, s);
    } else { /* VERIFY: Vulkan reads both planes out, packed */
        vkcuda_handoff_info h = example_handoff(ex, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
        VkDeviceSize luma = (VkDeviceSize)r->pp[0].width * r->pp[0].height * r->pp[0].bytes_per_texel;
        VkBufferImageCopy copy[2] = {
            {0, 0, 0, {r->pp[0].aspect, 0, 0, 1}, {0, 0, 0}, {r->pp[0].width, r->pp[0].height, 1}},
            {luma, 0, 0, {r->pp[1].aspect, 0, 0, 1}, {0, 0, 0}, {r->pp[1].width, r->pp[1].height, 1}}};
        vkcuda_image_info fi;
        CHECK(vkcuda_image_get_info(r->frame[s], &fi));
        CHECK(vkcuda_image_cmd_acquire_from_cuda(r->frame[s], cmd, &h, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL));
        vkCmdCopyImageToBuffer(cmd, fi.image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, r->host.buffer, 2, copy);
        vk_cmd_barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                       VK_ACCESS_HOST_READ_BIT);
        CHECK(vkcuda_image_cmd_release_to_cuda(r->frame[s], cmd, &h, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL));
    }
    vkcuda_timeline_stage stage = {2 * n - 1, 2 * n};
    example_submit_stage(ex, cmd, r->vk_timeline, &stage);
    if (r->mode == NVDEC_RUN_VERIFY) { /* one host buffer: wait for this frame, then hash it */
        CHECK(vkcuda_semaphore_host_wait(r->timeline, 2 * n, 10000000000ull));
        CHECK_VK(vk_owned_buffer_invalidate(&ex->vk, &r->host));
        uint64_t h = fnv1a(r->host.mapped, (size_t)r->frame_bytes);
        if (r->check_hashes && ((long)f->index >= r->nref || h != r->ref[f->index])) {
            if (r->mismatches < 4)
                printf("  frame %u: Vulkan read %016llx, CPU reference %016llx\n", f->index, (unsigned long long)h,
                       (long)f->index < r->nref ? (unsigned long long)r->ref[f->index] : 0ull);
            r->mismatches++;
        }
    }
    return 0;
}

long nvdec_run_decode(example *ex, nvdec_run *r, const char *codec, const void *clip, size_t bytes, char *error,
                      size_t error_size) {
    vkcuda_semaphore_create_info sci = {0};
    nvdec_callbacks cb = {r, on_format, on_frame, NULL};
    nvdec *d;
    char why[512];
    r->ex = ex;
    if (nvdec_open(&d, codec, ex->stream, &cb, why, sizeof why) != 0) {
        char line[600];
        snprintf(line, sizeof line, "no NVDEC: %s", why);
        exit(rig_skip(program, line));
    }
    CHECK(vkcuda_semaphore_create(ex->ctx, &sci, &r->timeline));
    CHECK(vkcuda_semaphore_get_vk_semaphore(r->timeline, &r->vk_timeline));
    long frames = nvdec_decode(d, clip, bytes);
    if (frames > 0 && r->mode != NVDEC_RUN_ALONE)
        CHECK(vkcuda_semaphore_host_wait(r->timeline, 2 * (uint64_t)frames, 10000000000ull));
    r->t_end = now_s();
    snprintf(error, error_size, "%s", frames < 0 ? nvdec_error(d) : "");
    nvdec_close(d);
    nvdec_run_release(r);
    return frames;
}

void nvdec_run_release(nvdec_run *r) {
    example *ex = r->ex;
    VkDevice dev = ex->vh.device;
    int s;
    CHECK_CU(cuStreamSynchronize(ex->stream));
    CHECK_VK(vkDeviceWaitIdle(dev));
    for (s = 0; s < 2; s++) {
        if (r->view[s]) vkDestroyImageView(dev, r->view[s], NULL);
        if (r->cmd[s]) vkFreeCommandBuffers(dev, ex->pool, 1, &r->cmd[s]);
        vkcuda_image_destroy(r->frame[s]);
    }
    if (r->host.buffer) vk_owned_buffer_destroy(&ex->vk, &r->host);
    if (r->rgba.buffer) vk_owned_buffer_destroy(&ex->vk, &r->rgba);
    if (r->pool) vkDestroyDescriptorPool(dev, r->pool, NULL);
    if (r->pipeline) vkDestroyPipeline(dev, r->pipeline, NULL);
    if (r->layout) vkDestroyPipelineLayout(dev, r->layout, NULL);
    if (r->dsl) vkDestroyDescriptorSetLayout(dev, r->dsl, NULL);
    if (r->sampler) vkDestroySampler(dev, r->sampler, NULL);
    if (r->conversion) vkDestroySamplerYcbcrConversion(dev, r->conversion, NULL);
    vkcuda_semaphore_destroy(r->timeline);
    memset(r->frame, 0, sizeof r->frame), memset(r->cmd, 0, sizeof r->cmd), memset(r->view, 0, sizeof r->view);
    memset(&r->host, 0, sizeof r->host), memset(&r->rgba, 0, sizeof r->rgba);
    r->pool = VK_NULL_HANDLE, r->pipeline = VK_NULL_HANDLE, r->layout = VK_NULL_HANDLE, r->dsl = VK_NULL_HANDLE;
    r->sampler = VK_NULL_HANDLE, r->conversion = VK_NULL_HANDLE, r->timeline = NULL;
}
