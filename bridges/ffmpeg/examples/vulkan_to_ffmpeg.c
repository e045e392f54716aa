/*
 * vulkan_to_ffmpeg [--frames N] [--out FILE.h264]: Vulkan to FFmpeg's NVENC encoder without a copy,
 * through the FFmpeg bridge. Vulkan writes each frame into a shared LINEAR RGBA frame (one plane of
 * VK_FORMAT_R8G8B8A8_UNORM: a moving gradient copied from a staging buffer, where a renderer's last
 * pass would write; NVIDIA's linear tiling has no colour-attachment feature, so a copy or a storage
 * write) and hands it to CUDA; vkcuda_ffmpeg_frame_from_image makes it an AV_PIX_FMT_CUDA AVFrame of
 * sw_format RGB0 whose plane is the shared frame's (no copy) and whose buffers keep it alive;
 * h264_nvenc takes it as its ABGR input (converting to YUV itself) on the bridge's device (the
 * Vulkan device's GPU) and stream; the packets go to FILE (raw H.264, default vulkan_to_ffmpeg.h264).
 * Four shared frames in a pool: a frame is written again only when FFmpeg has let go of it (its
 * reference count is back to the pool's one).
 *
 * Why RGB and not NV12 (issue 37): FFmpeg's NVENC registers data[0] alone and reads the chroma at
 * data[0] + linesize * height, but NVIDIA's driver puts a LINEAR 1920x1080 NV12 frame's plane 1 at
 * 2 MiB; one plane has no such question (vkcuda_ffmpeg_check_nvenc_layout says so). Where NVENC
 * cannot open a session (no NVENC, or a GPU without an encoder engine, as the H100 and H200) it prints
 * "SKIPPED: vulkan_to_ffmpeg: <why>" and exits 77, as tests/gpu/nvenc_open.c does; without a CUDA
 * GPU, SKIPPED and 77 (1 with VKCUDA_REQUIRE_GPU=1).
 */
#include "example.h"
#include "vkcuda_ffmpeg.h"

#include <libavcodec/avcodec.h>
#include <libavutil/hwcontext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W 1920
#define H 1080
#define POOL 4

/* A bridge call: on failure, the bridge's message and exit 1. */
#define BRIDGE(call) do { if ((call) != VKCUDA_SUCCESS) { \
    printf("vulkan_to_ffmpeg: FAIL: %s: %s\n", #call, vkcuda_ffmpeg_last_error_message()); exit(1); } } while (0)

/* Writes every packet the encoder has ready to `out`; returns how many. */
static int drain(AVCodecContext *enc, AVPacket *pkt, FILE *out) {
    int n = 0, err;
    while ((err = avcodec_receive_packet(enc, pkt)) >= 0) {
        if (fwrite(pkt->data, 1, (size_t)pkt->size, out) != (size_t)pkt->size)
            printf("vulkan_to_ffmpeg: FAIL: writing a packet\n"), exit(1);
        av_packet_unref(pkt), n++;
    }
    if (err != AVERROR(EAGAIN) && err != AVERROR_EOF)
        printf("vulkan_to_ffmpeg: FAIL: avcodec_receive_packet: %s\n", av_err2str(err)), exit(1);
    return n;
}

int main(int argc, char **argv) {
    const char *path = "vulkan_to_ffmpeg.h264";
    int frames = 120;
    for (int a = 1; a < argc; a++)
        if (!strcmp(argv[a], "--frames") && a + 1 < argc) frames = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--out") && a + 1 < argc) path = argv[++a];
        else return printf("usage: vulkan_to_ffmpeg [--frames N] [--out FILE.h264]\n"), 2;
    /* 1. A context (Vulkan + CUDA) and the bridge on its CUDA context and stream. */
    example ex;
    example_open(&ex, "vulkan_to_ffmpeg", 0);
    vkcuda_ffmpeg *bridge = NULL;
    BRIDGE(vkcuda_ffmpeg_create(ex.ctx, ex.stream, &bridge));
    /* 2. The pool of shared RGBA frames, each owned by a reference FFmpeg's frames will share. */
    AVBufferRef *pool[POOL];
    vkcuda_image_create_info ci = {.flags = VKCUDA_IMAGE_CREATE_LINEAR_BIT, .format = VK_FORMAT_R8G8B8A8_UNORM,
                                   .extent = {W, H, 1}, .usage = VK_IMAGE_USAGE_TRANSFER_DST_BIT};
    vkcuda_handoff_info to_cuda = example_handoff(&ex, 0, 0);
    example_record(ex.cmd);
    for (int i = 0; i < POOL; i++) {
        vkcuda_image *image = NULL;
        CHECK(vkcuda_image_create(ex.ctx, &ci, &image));
        CHECK(vkcuda_image_cmd_release_to_cuda(image, ex.cmd, &to_cuda, VK_IMAGE_LAYOUT_UNDEFINED)); /* CUDA's side */
        BRIDGE(vkcuda_ffmpeg_image_ref_create(image, &pool[i])); /* the reference owns the image now */
    }
    example_run(&ex, ex.cmd);
    /* 3. The encoder: h264_nvenc on the bridge's device, CUDA RGB0 frames of the bridge's frames context. */
    AVFrame *frame = av_frame_alloc();
    BRIDGE(vkcuda_ffmpeg_frame_from_image(bridge, pool[0], frame));
    BRIDGE(vkcuda_ffmpeg_check_nvenc_layout(frame)); /* one plane: NVENC reads it where it is */
    const AVCodec *codec = avcodec_find_encoder_by_name("h264_nvenc");
    if (!codec) return printf("SKIPPED: vulkan_to_ffmpeg: this FFmpeg has no h264_nvenc\n"), 77;
    AVCodecContext *enc = avcodec_alloc_context3(codec);
    enc->width = W, enc->height = H, enc->time_base = (AVRational){1, 30}, enc->framerate = (AVRational){30, 1};
    enc->pix_fmt = AV_PIX_FMT_CUDA, enc->max_b_frames = 0, enc->gop_size = 30;
    enc->hw_frames_ctx = av_buffer_ref(frame->hw_frames_ctx);
    int err = avcodec_open2(enc, codec, NULL);
    if (err < 0) { /* no encoder engine (H100/H200: NV_ENC_ERR_UNSUPPORTED_DEVICE), or no libnvidia-encode */
        printf("SKIPPED: vulkan_to_ffmpeg: h264_nvenc cannot open a session on this GPU: %s\n", av_err2str(err));
        return 77;
    }
    av_frame_unref(frame);
    /* 4. Each frame: Vulkan writes a pool frame FFmpeg no longer holds, then NVENC encodes it. */
    vk_owned_buffer staging = example_host_buffer(&ex, (VkDeviceSize)W * H * 4);
    vkcuda_handoff_info xfer = example_handoff(&ex, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
    AVPacket *pkt = av_packet_alloc();
    FILE *out = fopen(path, "wb");
    if (!out) return printf("vulkan_to_ffmpeg: FAIL: cannot write %s\n", path), 1;
    int packets = 0, waits = 0;
    for (int n = 0; n < frames; n++) {
        int slot = -1;
        while (slot < 0) { /* a frame only the pool references: FFmpeg is done with it */
            for (int i = 0; i < POOL && slot < 0; i++)
                if (av_buffer_get_ref_count(pool[i]) == 1) slot = i;
            if (slot < 0) {
                int got = drain(enc, pkt, out);
                packets += got, waits++;
                if (!got) return printf("vulkan_to_ffmpeg: FAIL: every pool frame held and no packet out\n"), 1;
            }
        }
        vkcuda_image *image = (vkcuda_image *)pool[slot]->data;
        uint8_t *px = staging.mapped; /* R, G, B, X: gradients moving one pixel a frame */
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                uint8_t *t = px + ((size_t)y * W + x) * 4;
                t[0] = (uint8_t)((x + n) % W * 255 / W), t[1] = (uint8_t)(y * 255 / H);
                t[2] = (uint8_t)((x + y + n) / 12), t[3] = 255;
            }
        CHECK_VK(vk_owned_buffer_flush(&ex.vk, &staging));
        VkBufferImageCopy copy = {0, 0, 0, {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1}, {0, 0, 0}, {W, H, 1}};
        vkcuda_image_info fi;
        CHECK(vkcuda_image_get_info(image, &fi));
        example_record(ex.cmd);
        CHECK(vkcuda_image_cmd_acquire_from_cuda(image, ex.cmd, &xfer, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL));
        vkCmdCopyBufferToImage(ex.cmd, staging.buffer, fi.image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &copy);
        CHECK(vkcuda_image_cmd_release_to_cuda(image, ex.cmd, &xfer, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL));
        example_run(&ex, ex.cmd); /* written and handed to CUDA (the GPU ran it) */
        BRIDGE(vkcuda_ffmpeg_frame_from_image(bridge, pool[slot], frame)); /* no copy: the plane is the frame's */
        frame->pts = n;
        if ((err = avcodec_send_frame(enc, frame)) < 0)
            return printf("vulkan_to_ffmpeg: FAIL: avcodec_send_frame: %s\n", av_err2str(err)), 1;
        av_frame_unref(frame); /* FFmpeg holds its own reference while it needs the frame */
        packets += drain(enc, pkt, out);
    }
    avcodec_send_frame(enc, NULL); /* flush */
    packets += drain(enc, pkt, out);
    long bytes = ftell(out);
    fclose(out);
    printf("vulkan_to_ffmpeg: %d frames written by Vulkan, encoded by %s without a copy: %d packets, %ld bytes in %s "
           "(%d waits for a pool frame)\n", frames, codec->name, packets, bytes, path, waits);
    if (packets != frames || bytes <= 0) return printf("vulkan_to_ffmpeg: FAIL: %d packets for %d frames\n", packets, frames), 1;
    /* 5. Everything back: FFmpeg lets go of the frames, the pool's references destroy the images. */
    av_packet_free(&pkt);
    av_frame_free(&frame);
    avcodec_free_context(&enc);
    CHECK_CU(cuStreamSynchronize(ex.stream));
    for (int i = 0; i < POOL; i++) av_buffer_unref(&pool[i]);
    vkcuda_ffmpeg_destroy(bridge);
    vk_owned_buffer_destroy(&ex.vk, &staging);
    example_close(&ex);
    printf("vulkan_to_ffmpeg: PASS\n");
    return 0;
}
