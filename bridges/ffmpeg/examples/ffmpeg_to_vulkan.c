/*
 * ffmpeg_to_vulkan CLIP [--out FILE]: FFmpeg decodes, Vulkan samples, through the FFmpeg bridge.
 * libavformat demuxes CLIP (an H.264 or HEVC file), libavcodec decodes it with the CUDA hwaccel
 * (NVDEC) on the bridge's device: the vkcuda context's CUDA context, so the Vulkan device's GPU
 * (paired by UUID; FFmpeg alone picks device 0), and the example's stream. Where FFmpeg has
 * AV_HWACCEL_FLAG_UNSAFE_OUTPUT (6.1 on) it is set: the frames are NVDEC's surfaces, not copies
 * (5.1 always hands out the surfaces). Each frame goes through vkcuda_ffmpeg_frame_to_image into
 * one of two shared LINEAR frames: one cuMemcpy2DAsync per plane on the stream, the AVFrame held by
 * the bridge until that copy ran (so NVDEC gets its surface back only then, with no host wait),
 * the colour taken from the frame. Vulkan samples the shared frame through the
 * VkSamplerYcbcrConversion the library describes into RGBA.
 *
 * Frame pacing as in examples/video/nvdec_to_vulkan.c: two frames in flight on one timeline;
 * CUDA signals 2n-1 ("frame n ready") after frame n's copy, the Vulkan submit that samples it
 * waits for that and signals 2n ("consumed"); the stream waits for 2n-2 before signalling, so
 * frame n+2's copy into frame n's slot runs after Vulkan consumed frame n.
 * Prints the frames and the frame rate; --out writes the last frame as a PNG. Without a CUDA GPU
 * or FFmpeg's CUDA hwaccel it prints SKIP and exits 77 (1 with VKCUDA_REQUIRE_GPU=1).
 */
#include "example.h"
#include "vkcuda_ffmpeg.h"
#include "ycbcr_comp_spv.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/hwcontext.h>
#include <libavutil/pixdesc.h>
#include <stb_image_write.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A bridge call: on failure, the bridge's message and exit 1. */
#define BRIDGE(call) do { if ((call) != VKCUDA_SUCCESS) { \
    printf("ffmpeg_to_vulkan: FAIL: %s: %s\n", #call, vkcuda_ffmpeg_last_error_message()); exit(1); } } while (0)

typedef struct player {
    example ex;
    vkcuda_ffmpeg *bridge;
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
    uint64_t frames;
} player;

static void skip(const char *why) {
    const char *req = getenv("VKCUDA_REQUIRE_GPU");
    printf("ffmpeg_to_vulkan: SKIP: %s\n", why);
    exit(req && strcmp(req, "1") == 0 ? 1 : 77);
}

/* FFmpeg offers the formats it can decode into: take CUDA frames (NVDEC) or nothing. */
static enum AVPixelFormat pick_cuda(AVCodecContext *c, const enum AVPixelFormat *fmts) {
    (void)c;
    for (; *fmts != AV_PIX_FMT_NONE; fmts++)
        if (*fmts == AV_PIX_FMT_CUDA) return *fmts;
    return AV_PIX_FMT_NONE;
}

/* The first frame: two shared frames of its format, size and colour, and the sampling pass. */
static void setup(player *p, const AVFrame *f) {
    example *ex = &p->ex;
    VkDevice dev = ex->vh.device;
    vkcuda_video_color color;
    VkSamplerYcbcrConversionCreateInfo cci;
    BRIDGE(vkcuda_ffmpeg_color_from_frame(f, &color)); /* the stream's matrix, range, siting */
    for (int s = 0; s < 2; s++) {
        BRIDGE(vkcuda_ffmpeg_image_create_for_frame(p->bridge, f, &p->frame[s]));
        CHECK(vkcuda_image_set_video_color(p->frame[s], &color));
    }
    /* The library turns the frame's format and colour into the conversion; the engine creates it. */
    vkcuda_result sampled = vkcuda_image_get_ycbcr_conversion_info(p->frame[0], &cci);
    if (sampled == VKCUDA_ERROR_UNSUPPORTED) skip(vkcuda_last_error_message());
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
    p->size[0] = (uint32_t)f->width, p->size[1] = (uint32_t)f->height;
    CHECK_VK(vk_owned_buffer_create(&ex->vk, (VkDeviceSize)f->width * f->height * 4, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                                    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0, &p->rgba));
    vkcuda_handoff_info to_cuda = example_handoff(ex, 0, 0);
    example_record(ex->cmd);
    for (int s = 0; s < 2; s++) {
        vkcuda_image_info fi;
        CHECK(vkcuda_image_get_info(p->frame[s], &fi));
        VkImageViewCreateInfo vci = {.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO, .pNext = &conv, .image = fi.image,
            .viewType = VK_IMAGE_VIEW_TYPE_2D, .format = fi.format, .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
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
    printf("ffmpeg_to_vulkan: %dx%d %s -> shared linear frames x2; colour: matrix %u, transfer %u, primaries %u, %s range\n",
           f->width, f->height, av_get_pix_fmt_name(((AVHWFramesContext *)f->hw_frames_ctx->data)->sw_format),
           color.matrix_coefficients, color.transfer_characteristics, color.colour_primaries,
           color.full_range ? "full" : "narrow");
}

/* A decoded frame: into slot n % 2 through the bridge, then Vulkan samples it. */
static void on_frame(player *p, AVFrame *f) {
    example *ex = &p->ex;
    uint64_t n = ++p->frames;
    int s = (int)(n % 2);
    if (f->format != AV_PIX_FMT_CUDA) skip("FFmpeg decoded in software: no CUDA hwaccel (NVDEC) here");
    if (!p->frame[0]) setup(p, f);
    /* CUDA: the copy (the stream already waited for 2n-4, "frame n-2 consumed": the slot is free). */
    BRIDGE(vkcuda_ffmpeg_frame_to_image(p->bridge, f, p->frame[s]));
    av_frame_unref(f); /* at once: the bridge holds the frame until its copy ran on the stream */
    if (n > 1) CHECK(vkcuda_semaphore_cuda_wait(p->timeline, 2 * n - 2, ex->stream));
    CHECK(vkcuda_semaphore_cuda_signal(p->timeline, 2 * n - 1, ex->stream)); /* frame n ready */
    /* Vulkan: cmd[s] was last submitted for frame n-2: wait until it was consumed. */
    if (n > 2) CHECK(vkcuda_semaphore_host_wait(p->timeline, 2 * n - 4, 10000000000ull));
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
}

int main(int argc, char **argv) {
    const char *clip = NULL, *out = NULL;
    player p;
    memset(&p, 0, sizeof p);
    for (int a = 1; a < argc; a++)
        if (!strcmp(argv[a], "--out") && a + 1 < argc) out = argv[++a];
        else if (argv[a][0] != '-' && !clip) clip = argv[a];
        else return printf("usage: ffmpeg_to_vulkan CLIP [--out FILE.png]\n"), 2;
    if (!clip) return printf("usage: ffmpeg_to_vulkan CLIP [--out FILE.png]\n"), 2;
    /* 1. A context (Vulkan + CUDA) and the bridge: FFmpeg's CUDA device on its CUDA context and stream. */
    example_open(&p.ex, "ffmpeg_to_vulkan", 0);
    BRIDGE(vkcuda_ffmpeg_create(p.ex.ctx, p.ex.stream, &p.bridge));
    /* 2. FFmpeg: the demuxer, and the decoder on the bridge's device, CUDA frames only. */
    AVFormatContext *fmt = NULL;
    int err = avformat_open_input(&fmt, clip, NULL, NULL), vs = -1;
    if (err == 0) err = avformat_find_stream_info(fmt, NULL);
    if (err == 0) vs = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    if (err < 0 || vs < 0) return printf("ffmpeg_to_vulkan: FAIL: %s: %s\n", clip, av_err2str(err < 0 ? err : vs)), 1;
    const AVCodec *codec = avcodec_find_decoder(fmt->streams[vs]->codecpar->codec_id);
    AVCodecContext *dec = codec ? avcodec_alloc_context3(codec) : NULL;
    if (!dec || avcodec_parameters_to_context(dec, fmt->streams[vs]->codecpar) < 0)
        return printf("ffmpeg_to_vulkan: FAIL: no decoder for %s\n", clip), 1;
    BRIDGE(vkcuda_ffmpeg_device_ref(p.bridge, &dec->hw_device_ctx));
    dec->get_format = pick_cuda;
#ifdef AV_HWACCEL_FLAG_UNSAFE_OUTPUT
    dec->hwaccel_flags |= AV_HWACCEL_FLAG_UNSAFE_OUTPUT; /* NVDEC's surfaces, no copy out of them */
#endif
    if ((err = avcodec_open2(dec, codec, NULL)) < 0) skip(av_err2str(err));
    /* 3. The timeline both sides pace the frames with. */
    vkcuda_semaphore_create_info sci = {0};
    CHECK(vkcuda_semaphore_create(p.ex.ctx, &sci, &p.timeline));
    CHECK(vkcuda_semaphore_get_vk_semaphore(p.timeline, &p.vk_timeline));
    /* 4. Decode: every frame through the shared frames into Vulkan's sampler. */
    AVPacket *pkt = av_packet_alloc();
    AVFrame *frame = av_frame_alloc();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int eof = 0; !eof;) {
        eof = av_read_frame(fmt, pkt) < 0;
        if (!eof && pkt->stream_index != vs) { av_packet_unref(pkt); continue; }
        err = avcodec_send_packet(dec, eof ? NULL : pkt); /* NULL: drain */
        av_packet_unref(pkt);
        while (err >= 0 && (err = avcodec_receive_frame(dec, frame)) >= 0) on_frame(&p, frame);
        if (err < 0 && err != AVERROR(EAGAIN) && err != AVERROR_EOF) {
            if (!p.frames) skip(av_err2str(err)); /* the hwaccel could not start (no NVDEC) */
            return printf("ffmpeg_to_vulkan: FAIL: decoding %s: %s\n", clip, av_err2str(err)), 1;
        }
    }
    if (!p.frames) return printf("ffmpeg_to_vulkan: FAIL: no frame decoded\n"), 1;
    CHECK(vkcuda_semaphore_host_wait(p.timeline, 2 * p.frames, 10000000000ull)); /* the last one consumed */
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("ffmpeg_to_vulkan: %s (%s): %llu frames decoded by FFmpeg and sampled by Vulkan in %.3f s = %.1f fps\n",
           clip, codec->name, (unsigned long long)p.frames, seconds, (double)p.frames / seconds);
    if (out && !stbi_write_png(out, (int)p.size[0], (int)p.size[1], 4, p.rgba.mapped, (int)p.size[0] * 4))
        return printf("ffmpeg_to_vulkan: FAIL: cannot write %s\n", out), 1;
    if (out) printf("ffmpeg_to_vulkan: the last frame as Vulkan sampled it: %s\n", out);
    /* 5. Everything back, in reverse: FFmpeg, the bridge (it waits for its last copies), Vulkan. */
    av_frame_free(&frame);
    av_packet_free(&pkt);
    avcodec_free_context(&dec);
    avformat_close_input(&fmt);
    vkcuda_ffmpeg_destroy(p.bridge);
    VkDevice dev = p.ex.vh.device;
    CHECK_VK(vkDeviceWaitIdle(dev));
    for (int s = 0; s < 2; s++) vkDestroyImageView(dev, p.view[s], NULL), vkcuda_image_destroy(p.frame[s]);
    vk_owned_buffer_destroy(&p.ex.vk, &p.rgba);
    vkDestroyDescriptorPool(dev, p.pool, NULL);
    vkDestroyPipeline(dev, p.pipeline, NULL);
    vkDestroyPipelineLayout(dev, p.layout, NULL);
    vkDestroyDescriptorSetLayout(dev, p.dsl, NULL);
    vkDestroySampler(dev, p.sampler, NULL);
    vkDestroySamplerYcbcrConversion(dev, p.conversion, NULL);
    vkcuda_semaphore_destroy(p.timeline);
    example_close(&p.ex);
    printf("ffmpeg_to_vulkan: PASS\n");
    return 0;
}
