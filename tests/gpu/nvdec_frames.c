/*
 * nvdec_frames [--clips DIR] [--rounds N]: NVDEC into shared linear video frames, tested exhaustively
 * (issue 28, item 3). Clips and references: scripts/make-clips.sh (DIR, default .dev/gpu/clips):
 *   h264_1080p.h264 (300 frames, B-frames -> NV12), hevc_main10_1080p.hevc (60 frames -> P010),
 *   each with CLIP.fnv: FNV-1a 64 of every frame of Debian ffmpeg's CPU decode (packed planes).
 * Per clip:
 *   verify     the colour NVDEC reads from the VUI (CUVIDEOFORMAT) is the clip's tags (BT.709 for
 *              H.264, BT.2020 for HEVC: scripts/make-clips.sh); every decoded frame copied (vkcuda_image_cuda_copy_from_pitched, one cuMemcpy2DAsync
 *              per plane) into a shared LINEAR frame, read back by Vulkan (vkCmdCopyImageToBuffer per
 *              plane aspect into a host buffer), hashed and compared with the CPU reference: 0
 *              mismatching frames and the reference's frame count required
 *   alone      NVDEC alone: decode + map (+ stream sync), no Vulkan: frames/s
 *   pipeline   decode -> shared frame (two in flight, paced on one timeline, as
 *              examples/video/nvdec_to_vulkan.c) -> Vulkan samples it through the frame's YCbCr
 *              conversion: frames/s, and its ratio to `alone` (the issue asks >= 0.95; reported,
 *              the best of --rounds runs each (default 2), alternated; a ratio below 0.95 is a
 *              FAIL; --rounds 0 leaves the timing out, as under compute-sanitizer)
 * Bad input: 4 KiB of random bytes, the H.264 clip cut to a third, each clip given to the other
 * codec's parser, a pitch too small for the frame: a clear error (or, cut, fewer frames) and no leak:
 * vkcuda_live_objects_get all 0 after the context is gone. Prints "nvdec_frames: PASS"; without a
 * CUDA GPU or NVDEC, "SKIPPED: nvdec_frames: why" and exit 77 (1 with VKCUDA_REQUIRE_GPU=1).
 */
#define RIG_EXAMPLE_CHECKS /* the first failure ends it, as in the examples */
#include "rig.h"
#include "nvdec_clip.h"
#include "ycbcr_comp_spv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum mode { ALONE, PIPELINE, VERIFY };
static const char *mode_name[] = {"alone", "pipeline", "verify"};

typedef struct run {
    example *ex;
    enum mode mode;
    int check_hashes;                 /* VERIFY: compare with ref (not for a cut clip) */
    const uint64_t *ref;
    long nref, mismatches;
    uint32_t size[2], bit_depth;
    vkcuda_video_color color;         /* what NVDEC read from the stream's VUI */
    vkcuda_image *frame[2];
    vkcuda_image_plane_pointer pp[2];
    VkCommandBuffer cmd[2];
    vkcuda_semaphore *timeline;
    VkSemaphore vk_timeline;
    vk_owned_buffer host;             /* VERIFY: the packed planes as Vulkan read them */
    VkDeviceSize frame_bytes;
    /* PIPELINE: the sampling pass */
    VkSamplerYcbcrConversion conversion;
    VkSampler sampler;
    VkImageView view[2];
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    VkDescriptorPool pool;
    VkDescriptorSet set[2];
    vk_owned_buffer rgba;
    char skipped[512];                /* PIPELINE: why the device cannot sample this frame */
} run;

static int failures;
#define EXPECT(cond, ...) do { if (!(cond)) { printf("  FAIL: " __VA_ARGS__); printf("\n"); failures++; } } while (0)

static uint64_t fnv1a(const uint8_t *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static int skip_pipeline(run *r, const char *why) {
    snprintf(r->skipped, sizeof r->skipped, "%s%s", why, vkcuda_last_error_message());
    return 1;
}

/* The sampling pass of nvdec_to_vulkan.c over both slots. 0, or 1 with r->skipped set. */
static int make_sampling(run *r, VkFormat format) {
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

static int on_format(void *user, const nvdec_format *f) {
    run *r = user;
    example *ex = r->ex;
    int s;
    if (r->bit_depth) return r->size[0] != f->width || r->size[1] != f->height; /* one size per clip */
    r->size[0] = f->width, r->size[1] = f->height, r->bit_depth = f->bit_depth, r->color = f->color;
    if (r->mode == ALONE) return 0;
    VkFormat format = f->bit_depth > 8 ? VK_FORMAT_G10X6_B10X6R10X6_2PLANE_420_UNORM_3PACK16 : VK_FORMAT_G8_B8R8_2PLANE_420_UNORM;
    vkcuda_image_create_info ci = {.flags = VKCUDA_IMAGE_CREATE_LINEAR_BIT, .format = format, .extent = {f->width, f->height, 1},
        .usage = r->mode == PIPELINE ? VK_IMAGE_USAGE_SAMPLED_BIT : VK_IMAGE_USAGE_TRANSFER_SRC_BIT};
    for (s = 0; s < 2; s++) {
        vkcuda_result made = vkcuda_image_create(ex->ctx, &ci, &r->frame[s]);
        if (made == VKCUDA_ERROR_UNSUPPORTED && r->mode == PIPELINE)
            return skip_pipeline(r, "no sampled shared linear frame of this format: ");
        CHECK(made);
        CHECK(vkcuda_image_set_video_color(r->frame[s], &f->color));
    }
    CHECK(vkcuda_image_get_plane_pointer(r->frame[0], 0, &r->pp[0]));
    CHECK(vkcuda_image_get_plane_pointer(r->frame[0], 1, &r->pp[1]));
    r->frame_bytes = (VkDeviceSize)r->pp[0].width * r->pp[0].height * r->pp[0].bytes_per_texel +
                     (VkDeviceSize)r->pp[1].width * r->pp[1].height * r->pp[1].bytes_per_texel;
    if (r->mode == VERIFY) r->host = example_host_buffer(ex, r->frame_bytes);
    if (r->mode == PIPELINE && make_sampling(r, format)) return 1;
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
    run *r = user;
    example *ex = r->ex;
    uint64_t n = f->index + 1;
    int s = (int)(f->index % 2);
    if (r->mode == ALONE) { /* decode + map, finished on the stream */
        CHECK_CU(cuStreamSynchronize(ex->stream));
        return 0;
    }
    vkcuda_pitched_planes planes = {0, 2, {{f->luma, f->pitch}, {f->chroma, f->pitch}, {0, 0}}};
    if (f->index == 0 && r->mode == VERIFY) { /* bad input: a pitch shorter than a row is refused before any copy */
        vkcuda_pitched_planes bad = planes;
        bad.planes[0].pitch = 16;
        EXPECT(vkcuda_image_cuda_copy_from_pitched(r->frame[s], &bad, ex->stream) == VKCUDA_ERROR_INVALID_ARGUMENT,
               "a 16-byte pitch for a %u-texel row was not refused", r->pp[0].width);
    }
    CHECK(vkcuda_image_cuda_copy_from_pitched(r->frame[s], &planes, ex->stream));
    CHECK_CU(cuStreamSynchronize(ex->stream));
    if (n > 1) CHECK(vkcuda_semaphore_cuda_wait(r->timeline, 2 * n - 2, ex->stream));
    CHECK(vkcuda_semaphore_cuda_signal(r->timeline, 2 * n - 1, ex->stream));
    if (n > 2) CHECK(vkcuda_semaphore_host_wait(r->timeline, 2 * n - 4, 0));
    VkCommandBuffer cmd = r->cmd[s];
    example_record(cmd);
    if (r->mode == PIPELINE) {
        vkcuda_handoff_info h = example_handoff(ex, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
        CHECK(vkcuda_image_cmd_acquire_from_cuda(r->frame[s], cmd, &h, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL));
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, r->pipeline);
        vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, r->layout, 0, 1, &r->set[s], 0, NULL);
        vkCmdPushConstants(cmd, r->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof r->size, r->size);
        vkCmdDispatch(cmd, (r->size[0] + 15) / 16, (r->size[1] + 15) / 16, 1);
        CHECK(vkcuda_image_cmd_release_to_cuda(r->frame[s], cmd, &h, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL));
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
    if (r->mode == VERIFY) { /* one host buffer: wait for this frame, then hash it */
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

/* One decode of `clip` as `codec` in `mode`: frames (or -1, with the error in `error`), fps. Every
 * object made for it is destroyed before it returns, whatever happened. */
static long decode(example *ex, run *r, const char *codec, const void *clip, size_t bytes, double *fps, char *error, size_t n) {
    VkDevice dev = ex->vh.device;
    vkcuda_semaphore_create_info sci = {0};
    nvdec_callbacks cb = {r, on_format, on_frame};
    nvdec *d;
    char why[512];
    int s;
    r->ex = ex;
    if (nvdec_open(&d, codec, ex->stream, &cb, why, sizeof why) != 0) {
        char line[600];
        snprintf(line, sizeof line, "no NVDEC: %s", why);
        exit(rig_skip("nvdec_frames", line));
    }
    CHECK(vkcuda_semaphore_create(ex->ctx, &sci, &r->timeline));
    CHECK(vkcuda_semaphore_get_vk_semaphore(r->timeline, &r->vk_timeline));
    double t0 = now_s();
    long frames = nvdec_decode(d, clip, bytes);
    if (frames > 0 && r->mode != ALONE) CHECK(vkcuda_semaphore_host_wait(r->timeline, 2 * (uint64_t)frames, 10000000000ull));
    double t = now_s() - t0;
    *fps = frames > 0 ? (double)frames / t : 0;
    snprintf(error, n, "%s", frames < 0 ? nvdec_error(d) : "");
    nvdec_close(d);
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
    return frames;
}

static run run_of(enum mode mode, const uint64_t *ref, long nref) {
    run r;
    memset(&r, 0, sizeof r);
    r.mode = mode, r.ref = ref, r.nref = nref, r.check_hashes = 1;
    return r;
}

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

int main(int argc, char **argv) {
    const char *dir = ".dev/gpu/clips";
    static const char *clips[2][2] = {{"h264_1080p.h264", "h264"}, {"hevc_main10_1080p.hevc", "hevc"}};
    /* The tags make-clips.sh gives them: matrix, transfer, primaries (H.273), bit depth. */
    static const uint32_t tags[2][4] = {{1, 1, 1, 8}, {9, 14, 9, 10}};
    unsigned char *data[2] = {NULL, NULL};
    size_t bytes[2] = {0, 0};
    int rounds = 2, c, i;
    char path[1024], error[512];
    double fps, best[2][2];
    example ex;
    setvbuf(stdout, NULL, _IONBF, 0);
    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--clips") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else return printf("usage: nvdec_frames [--clips DIR] [--rounds N]\n"), 2;
    example_open(&ex, "nvdec_frames", 0);
    for (c = 0; c < 2; c++) {
        uint64_t *ref = malloc(100000 * sizeof *ref);
        long nref = 0, idx;
        unsigned long long h;
        snprintf(path, sizeof path, "%s/%s", dir, clips[c][0]);
        if (!(data[c] = read_file(path, &bytes[c])))
            return printf("nvdec_frames: FAIL: cannot read %s (scripts/make-clips.sh makes it; --clips DIR)\n", path), 1;
        snprintf(path, sizeof path, "%s/%s.fnv", dir, clips[c][0]);
        FILE *rf = fopen(path, "r");
        if (!rf) return printf("nvdec_frames: FAIL: cannot read %s\n", path), 1;
        while (nref < 100000 && fscanf(rf, "%ld %llx", &idx, &h) == 2) ref[nref++] = h;
        fclose(rf);
        printf("%s (%s, %zu bytes, %ld reference frames)\n", clips[c][0], clips[c][1], bytes[c], nref);
        run r = run_of(VERIFY, ref, nref);
        long frames = decode(&ex, &r, clips[c][1], data[c], bytes[c], &fps, error, sizeof error);
        EXPECT(frames == nref, "verify: %ld frames decoded, the reference has %ld%s%s", frames, nref, frames < 0 ? ": " : "", error);
        EXPECT(r.mismatches == 0, "verify: %ld of %ld frames differ from the CPU decode", r.mismatches, frames);
        printf("  verify: %ld frames (%u-bit, %ux%u) read back by Vulkan, %ld differ from the CPU decode\n", frames,
               r.bit_depth, r.size[0], r.size[1], r.mismatches);
        printf("  colour from CUVIDEOFORMAT: matrix %u, transfer %u, primaries %u, %s range\n", r.color.matrix_coefficients,
               r.color.transfer_characteristics, r.color.colour_primaries, r.color.full_range ? "full" : "narrow");
        EXPECT(r.color.matrix_coefficients == tags[c][0] && r.color.transfer_characteristics == tags[c][1] &&
               r.color.colour_primaries == tags[c][2] && !r.color.full_range && r.bit_depth == tags[c][3],
               "the stream's colour/depth is not the clip's tags (%u, %u, %u, narrow, %u-bit)", tags[c][0], tags[c][1],
               tags[c][2], tags[c][3]);
        best[c][0] = best[c][1] = 0;
        for (i = 0; i < 2 * rounds; i++) { /* alone, pipeline, alone, pipeline, ... */
            run t = run_of(i % 2 ? PIPELINE : ALONE, ref, nref);
            frames = decode(&ex, &t, clips[c][1], data[c], bytes[c], &fps, error, sizeof error);
            if (t.skipped[0]) {
                printf("  SKIPPED: %s pipeline: %s\n", clips[c][0], t.skipped);
                break;
            }
            EXPECT(frames == nref, "%s: %ld frames decoded (%s)", mode_name[t.mode], frames, error);
            if (fps > best[c][i % 2]) best[c][i % 2] = fps;
        }
        if (best[c][1] > 0) {
            double ratio = best[c][1] / best[c][0];
            printf("  throughput: NVDEC alone (decode + map) %.1f fps; decode -> shared frame -> Vulkan samples it %.1f fps; "
                   "ratio %.3f (issue 28 wants >= 0.95)\n", best[c][0], best[c][1], ratio);
            EXPECT(ratio >= 0.95, "the pipeline runs at %.3f of NVDEC alone (< 0.95)", ratio);
        }
        free(ref);
    }
    /* Bad input: each a clear error (or fewer frames), nothing left behind (counted at the end). */
    {
        unsigned char noise[4096];
        uint32_t x = 12345;
        run r = run_of(VERIFY, NULL, 0);
        for (i = 0; i < (int)sizeof noise; i++) x = x * 1664525u + 1013904223u, noise[i] = (unsigned char)(x >> 24);
        long frames = decode(&ex, &r, "h264", noise, sizeof noise, &fps, error, sizeof error);
        printf("bad input: 4 KiB of random bytes as H.264: %ld (%s)\n", frames, error);
        EXPECT(frames < 0 && error[0], "random bytes were not refused");
        r = run_of(VERIFY, NULL, 0), r.check_hashes = 0;
        frames = decode(&ex, &r, "h264", data[0], bytes[0] / 3, &fps, error, sizeof error);
        printf("bad input: the H.264 clip cut to %zu of %zu bytes: %ld frames%s%s\n", bytes[0] / 3, bytes[0], frames,
               frames < 0 ? ", " : "", error);
        EXPECT(frames < 300, "a third of the clip gave %ld frames", frames);
        for (c = 0; c < 2; c++) {
            r = run_of(VERIFY, NULL, 0);
            frames = decode(&ex, &r, clips[1 - c][1], data[c], bytes[c], &fps, error, sizeof error);
            printf("bad input: %s given to the %s parser: %ld (%s)\n", clips[c][0], clips[1 - c][1], frames, error);
            EXPECT(frames < 0 && error[0], "a %s clip decoded as %s was not refused", clips[c][1], clips[1 - c][1]);
        }
    }
    free(data[0]), free(data[1]);
    example_close(&ex);
    vkcuda_live_objects live;
    CHECK(vkcuda_live_objects_get(&live));
    long long left = (long long)(live.contexts + live.vk_buffers + live.vk_memories + live.vk_images + live.vk_semaphores +
                                 live.cuda_allocations + live.cuda_external_memories + live.cuda_external_semaphores);
    printf("live objects after everything: %lld (contexts %lld, images %lld, memories %lld, semaphores %lld, "
           "CUDA imports %lld + %lld)\n", left, (long long)live.contexts, (long long)live.vk_images,
           (long long)live.vk_memories, (long long)live.vk_semaphores, (long long)live.cuda_external_memories,
           (long long)live.cuda_external_semaphores);
    EXPECT(left == 0, "%lld library objects left", left);
    printf("nvdec_frames: %s\n", failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
