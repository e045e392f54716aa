/*
 * ffmpeg_decode [--clips DIR]: FFmpeg's NVDEC decode through the bridge into shared frames,
 * read back by Vulkan, against the CPU reference (issue 37). Clips and references:
 * scripts/lab/make-clips.sh (DIR, default .dev/gpu/clips): h264_1080p.h264 (300 frames, NV12)
 * and hevc_main10_1080p.hevc (60 frames, P010), CLIP.fnv the FNV-1a 64 of each frame of Debian
 * ffmpeg's CPU decode (packed planes). For each clip, without and with
 * AV_HWACCEL_FLAG_UNSAFE_OUTPUT (NVDEC's mapped surface itself, handed back when the AVFrame
 * goes; FFmpeg 6.1 added the flag: before it, Debian 12's 5.1 included, NVDEC's frames are
 * always its mapped surfaces, and each clip is decoded once):
 *   - libavformat demuxes the file, libavcodec decodes with the CUDA hwaccel on the bridge's
 *     device (the vkcuda context's CUDA context, its stream);
 *   - each AV_PIX_FMT_CUDA frame goes through vkcuda_ffmpeg_frame_to_image into one of two
 *     shared frames and is unreferenced at once (the bridge holds it until its copy ran);
 *     Vulkan copies the planes into a host buffer (the timeline orders CUDA and Vulkan); the
 *     hash must equal the reference, for every frame, and the frame count the reference's;
 *   - the colour the bridge set is the clip's tags (BT.709; BT.2020 with transfer 14);
 *   - frame 0 also goes the other ways: a shared frame as an AVFrame
 *     (vkcuda_ffmpeg_frame_from_image), downloaded by FFmpeg (av_hwframe_transfer_data),
 *     and that system-memory frame uploaded into a new shared frame and downloaded again:
 *     both must hash to the reference.
 * At the end nothing is pending in the bridge and the library holds no object. Prints
 * "ffmpeg_decode: PASS"; without a CUDA GPU or FFmpeg's CUDA hwaccel, "SKIPPED: ..." (77).
 */
#include "nvdec_run.h" /* the clips, their tags and references; the rig */

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/hwcontext.h>
#include <libavutil/pixdesc.h>

#include "vkcuda_ffmpeg.h"

static int failures;
#define EXPECT(cond, ...) do { if (!(cond)) { printf("  FAIL: " __VA_ARGS__); printf("\n"); failures++; } } while (0)
#define BRIDGE(call) do { if ((call) != VKCUDA_SUCCESS) { \
    printf("ffmpeg_decode: FAIL: %s: %s\n", #call, vkcuda_ffmpeg_last_error_message()); exit(1); } } while (0)

static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* The packed planes of a system-memory NV12/P010 frame (luma rows, then CbCr rows). */
static uint64_t hash_sw(const AVFrame *f, int bytes_per_sample) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int p = 0; p < 2; p++)
        for (int y = 0; y < (p ? f->height / 2 : f->height); y++)
            h = fnv1a(h, f->data[p] + (size_t)y * f->linesize[p], (size_t)f->width * bytes_per_sample);
    return h;
}

static enum AVPixelFormat pick_cuda(AVCodecContext *c, const enum AVPixelFormat *fmts) {
    (void)c;
    for (; *fmts != AV_PIX_FMT_NONE; fmts++)
        if (*fmts == AV_PIX_FMT_CUDA) return *fmts;
    return AV_PIX_FMT_NONE;
}

typedef struct run {
    example *ex;
    vkcuda_ffmpeg *bridge;
    const nvdec_run_clip *clip;
    vkcuda_image *frame[2];
    vkcuda_image_plane_pointer pp[2];
    VkCommandBuffer cmd[2];
    vkcuda_semaphore *timeline;
    VkSemaphore vk_timeline;
    vk_owned_buffer host;
    VkDeviceSize bytes;
    long frames, mismatches;
} run;

/* A shared frame out as an AVFrame without a copy (it takes the image), downloaded by
 * FFmpeg into `sw` (av_hwframe_transfer_data on the bridge's stream), and hashed. */
static uint64_t download_hash(run *r, vkcuda_image *image, AVFrame *sw) {
    AVBufferRef *ref = NULL;
    AVFrame *cuda = av_frame_alloc();
    BRIDGE(vkcuda_ffmpeg_image_ref_create(image, &ref));
    BRIDGE(vkcuda_ffmpeg_frame_from_image(r->bridge, ref, cuda));
    av_buffer_unref(&ref); /* the AVFrame keeps the shared frame alive */
    av_frame_unref(sw);
    EXPECT(av_hwframe_transfer_data(sw, cuda, 0) == 0, "av_hwframe_transfer_data of a shared frame's AVFrame");
    av_frame_free(&cuda); /* the last reference: the shared frame is destroyed */
    return hash_sw(sw, r->clip->kind->bit_depth > 8 ? 2 : 1);
}

/* Frame 0 the other ways: CUDA frame -> shared frame -> AVFrame -> system memory, and that
 * system-memory frame uploaded into a new shared frame -> AVFrame -> system memory. */
static void check_other_ways(run *r, const AVFrame *decoded) {
    vkcuda_image *image = NULL, *uploaded = NULL;
    AVFrame *sw = av_frame_alloc(), *sw2 = av_frame_alloc();
    BRIDGE(vkcuda_ffmpeg_image_create_for_frame(r->bridge, decoded, &image));
    BRIDGE(vkcuda_ffmpeg_frame_to_image(r->bridge, decoded, image));
    uint64_t h = download_hash(r, image, sw), ref = r->clip->ref[0];
    EXPECT(h == ref, "frame 0 out as an AVFrame: %016llx, reference %016llx", (unsigned long long)h,
           (unsigned long long)ref);
    BRIDGE(vkcuda_ffmpeg_image_create_for_frame(r->bridge, sw, &uploaded));
    BRIDGE(vkcuda_ffmpeg_frame_to_image(r->bridge, sw, uploaded)); /* host to device */
    uint64_t h2 = download_hash(r, uploaded, sw2);
    EXPECT(h2 == ref, "frame 0 uploaded from system memory: %016llx, reference %016llx", (unsigned long long)h2,
           (unsigned long long)ref);
    printf("  frame 0 out as a shared frame's AVFrame (no copy): %s; uploaded from system memory (%s): %s\n",
           h == ref ? "equals the reference" : "DIFFERS", av_get_pix_fmt_name(sw->format),
           h2 == ref ? "equals the reference" : "DIFFERS");
    av_frame_free(&sw2);
    av_frame_free(&sw);
}

static void on_frame(run *r, AVFrame *f) {
    example *ex = r->ex;
    uint64_t n = (uint64_t)++r->frames;
    int s = (int)(n % 2);
    EXPECT(f->format == AV_PIX_FMT_CUDA, "frame %llu is %s, not a CUDA frame", (unsigned long long)n,
           av_get_pix_fmt_name(f->format));
    if (f->format != AV_PIX_FMT_CUDA) return;
    if (!r->frame[0]) { /* the first frame: two shared frames of its format and size */
        check_other_ways(r, f);
        for (int i = 0; i < 2; i++) BRIDGE(vkcuda_ffmpeg_image_create_for_frame(r->bridge, f, &r->frame[i]));
        CHECK(vkcuda_image_get_plane_pointer(r->frame[0], 0, &r->pp[0]));
        CHECK(vkcuda_image_get_plane_pointer(r->frame[0], 1, &r->pp[1]));
        uint64_t end0 = r->pp[0].offset + r->pp[0].row_pitch * r->pp[0].height;
        printf("  shared frame: pitch %llu, plane 1 at offset %llu, plane 0 ends at %llu: %s\n",
               (unsigned long long)r->pp[0].row_pitch, (unsigned long long)r->pp[1].offset, (unsigned long long)end0,
               r->pp[1].offset == end0 && r->pp[1].row_pitch == r->pp[0].row_pitch
                   ? "contiguous (FFmpeg's NVENC, which reads the chroma at data[0] + linesize * height, can take it)"
                   : "not contiguous (FFmpeg's NVENC, which reads the chroma at data[0] + linesize * height, cannot)");
        r->bytes = (VkDeviceSize)r->pp[0].width * r->pp[0].height * r->pp[0].bytes_per_texel +
                   (VkDeviceSize)r->pp[1].width * r->pp[1].height * r->pp[1].bytes_per_texel;
        r->host = example_host_buffer(ex, r->bytes);
        vkcuda_handoff_info to_cuda = example_handoff(ex, 0, 0);
        example_record(ex->cmd);
        for (int i = 0; i < 2; i++) {
            r->cmd[i] = example_command_buffer(ex);
            CHECK(vkcuda_image_cmd_release_to_cuda(r->frame[i], ex->cmd, &to_cuda, VK_IMAGE_LAYOUT_UNDEFINED));
        }
        example_run(ex, ex->cmd);
    }
    BRIDGE(vkcuda_ffmpeg_frame_to_image(r->bridge, f, r->frame[s]));
    av_frame_unref(f); /* at once: the bridge holds it until the copy ran on the stream */
    CHECK(vkcuda_semaphore_cuda_signal(r->timeline, 2 * n - 1, ex->stream));
    if (n == 1) {
        vkcuda_video_color c;
        const nvdec_run_clip_kind *k = r->clip->kind;
        CHECK(vkcuda_image_get_video_color(r->frame[s], &c));
        printf("  colour set by the bridge: matrix %u, transfer %u, primaries %u, %s range\n", c.matrix_coefficients,
               c.transfer_characteristics, c.colour_primaries, c.full_range ? "full" : "narrow");
        EXPECT(c.matrix_coefficients == k->matrix && c.transfer_characteristics == k->transfer &&
               c.colour_primaries == k->primaries && !c.full_range, "the colour is not the clip's tags (%u, %u, %u, narrow)",
               k->matrix, k->transfer, k->primaries);
    }
    VkCommandBuffer cmd = r->cmd[s];
    vkcuda_handoff_info h = example_handoff(ex, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    VkDeviceSize luma = (VkDeviceSize)r->pp[0].width * r->pp[0].height * r->pp[0].bytes_per_texel;
    VkBufferImageCopy copy[2] = {
        {0, 0, 0, {r->pp[0].aspect, 0, 0, 1}, {0, 0, 0}, {r->pp[0].width, r->pp[0].height, 1}},
        {luma, 0, 0, {r->pp[1].aspect, 0, 0, 1}, {0, 0, 0}, {r->pp[1].width, r->pp[1].height, 1}}};
    vkcuda_image_info fi;
    CHECK(vkcuda_image_get_info(r->frame[s], &fi));
    example_record(cmd);
    CHECK(vkcuda_image_cmd_acquire_from_cuda(r->frame[s], cmd, &h, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL));
    vkCmdCopyImageToBuffer(cmd, fi.image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, r->host.buffer, 2, copy);
    vk_cmd_barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                   VK_ACCESS_HOST_READ_BIT);
    CHECK(vkcuda_image_cmd_release_to_cuda(r->frame[s], cmd, &h, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL));
    vkcuda_timeline_stage stage = {2 * n - 1, 2 * n};
    example_submit_stage(ex, cmd, r->vk_timeline, &stage);
    CHECK(vkcuda_semaphore_host_wait(r->timeline, 2 * n, 10000000000ull));
    CHECK_VK(vk_owned_buffer_invalidate(&ex->vk, &r->host));
    uint64_t hash = fnv1a(0xcbf29ce484222325ull, r->host.mapped, (size_t)r->bytes);
    long i = (long)n - 1;
    if (i >= r->clip->nref || hash != r->clip->ref[i]) {
        if (r->mismatches < 4)
            printf("  frame %ld: Vulkan read %016llx, CPU reference %016llx\n", i, (unsigned long long)hash,
                   i < r->clip->nref ? (unsigned long long)r->clip->ref[i] : 0ull);
        r->mismatches++;
    }
}

/* One decode of the clip at `path`. The frames decoded, or -1 (printed). */
static long decode(run *r, const char *path, int unsafe_output) {
    AVFormatContext *fmt = NULL;
    AVCodecContext *dec = NULL;
    AVPacket *pkt = av_packet_alloc();
    AVFrame *f = av_frame_alloc();
    vkcuda_semaphore_create_info sci = {0};
    int err = avformat_open_input(&fmt, path, NULL, NULL), vs = -1;
    if (err == 0) err = avformat_find_stream_info(fmt, NULL);
    if (err == 0) vs = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    const AVCodec *codec = vs >= 0 ? avcodec_find_decoder(fmt->streams[vs]->codecpar->codec_id) : NULL;
    if (err < 0 || !codec || !(dec = avcodec_alloc_context3(codec)) ||
        avcodec_parameters_to_context(dec, fmt->streams[vs]->codecpar) < 0) {
        printf("ffmpeg_decode: FAIL: cannot open %s for decoding (%s)\n", path, av_err2str(err));
        exit(1);
    }
    BRIDGE(vkcuda_ffmpeg_device_ref(r->bridge, &dec->hw_device_ctx));
    dec->get_format = pick_cuda;
#ifdef AV_HWACCEL_FLAG_UNSAFE_OUTPUT
    if (unsafe_output) dec->hwaccel_flags |= AV_HWACCEL_FLAG_UNSAFE_OUTPUT;
#else
    (void)unsafe_output;
#endif
    if ((err = avcodec_open2(dec, codec, NULL)) < 0) exit(rig_skip("ffmpeg_decode", "avcodec_open2 failed"));
    CHECK(vkcuda_semaphore_create(r->ex->ctx, &sci, &r->timeline));
    CHECK(vkcuda_semaphore_get_vk_semaphore(r->timeline, &r->vk_timeline));
    for (int eof = 0; !eof;) {
        if ((err = av_read_frame(fmt, pkt)) < 0) eof = 1;
        if (!eof && pkt->stream_index != vs) { av_packet_unref(pkt); continue; }
        err = avcodec_send_packet(dec, eof ? NULL : pkt);
        av_packet_unref(pkt);
        while (err >= 0 && (err = avcodec_receive_frame(dec, f)) >= 0) on_frame(r, f);
        if (err < 0 && err != AVERROR(EAGAIN) && err != AVERROR_EOF) {
            if (r->frames == 0) exit(rig_skip("ffmpeg_decode", "FFmpeg's CUDA hwaccel decodes nothing here"));
            printf("  FAIL: decode error after %ld frames: %s\n", r->frames, av_err2str(err));
            failures++;
            break;
        }
    }
    CHECK_CU(cuStreamSynchronize(r->ex->stream));
    CHECK_VK(vkDeviceWaitIdle(r->ex->vh.device));
    uint32_t pending = 99;
    BRIDGE(vkcuda_ffmpeg_collect(r->bridge, &pending));
    EXPECT(pending == 0, "%u frames still held after the stream finished", pending);
    av_frame_free(&f);
    av_packet_free(&pkt);
    avcodec_free_context(&dec);
    avformat_close_input(&fmt);
    for (int s = 0; s < 2; s++) {
        if (r->cmd[s]) vkFreeCommandBuffers(r->ex->vh.device, r->ex->pool, 1, &r->cmd[s]);
        vkcuda_image_destroy(r->frame[s]);
    }
    if (r->host.buffer) vk_owned_buffer_destroy(&r->ex->vk, &r->host);
    vkcuda_semaphore_destroy(r->timeline);
    return r->frames;
}

int main(int argc, char **argv) {
    const char *dir = ".dev/gpu/clips";
    char why[512], path[1024];
    example ex;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--clips") && i + 1 < argc) dir = argv[++i];
        else return printf("usage: ffmpeg_decode [--clips DIR]\n"), 2;
    if (nvdec_run_open(&ex, "ffmpeg_decode") != 0) return 1;
    vkcuda_ffmpeg *bridge = NULL;
    BRIDGE(vkcuda_ffmpeg_create(ex.ctx, ex.stream, &bridge));
    for (int c = 0; c < NVDEC_RUN_CLIPS; c++) {
        nvdec_run_clip clip;
        if (nvdec_run_clip_load(dir, c, &clip, why, sizeof why) != 0) return printf("ffmpeg_decode: FAIL: %s\n", why), 1;
        snprintf(path, sizeof path, "%s/%s", dir, clip.kind->file);
#ifdef AV_HWACCEL_FLAG_UNSAFE_OUTPUT
        const int modes = 2;
#else
        const int modes = 1;
#endif
        for (int unsafe = 0; unsafe < modes; unsafe++) {
            run r;
            memset(&r, 0, sizeof r);
            r.ex = &ex, r.bridge = bridge, r.clip = &clip;
            printf("%s, %s:\n", clip.kind->file,
                   unsafe ? "AV_HWACCEL_FLAG_UNSAFE_OUTPUT"
                          : modes == 2 ? "FFmpeg's defaults (a copy out of NVDEC's surface)"
                                       : "this FFmpeg has no AV_HWACCEL_FLAG_UNSAFE_OUTPUT: NVDEC's mapped surfaces");
            long frames = decode(&r, path, unsafe);
            EXPECT(frames == clip.nref, "%ld frames decoded, the reference has %ld", frames, clip.nref);
            EXPECT(r.mismatches == 0, "%ld of %ld frames differ from the CPU decode", r.mismatches, frames);
            printf("  %ld frames bridged into shared frames and read back by Vulkan: %ld differ from the CPU decode\n",
                   frames, r.mismatches);
        }
        nvdec_run_clip_free(&clip);
    }
    vkcuda_ffmpeg_destroy(bridge);
    example_close(&ex);
    EXPECT(rig_nothing_alive(), "the library still holds objects");
    printf("ffmpeg_decode: %s\n", failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
