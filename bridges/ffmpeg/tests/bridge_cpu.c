/*
 * The FFmpeg bridge without a GPU: lavapipe paired with the stand-in CUDA driver
 * (tests/fake_cuda/libcuda.c built WITH_STREAMS, whose "device memory" is host memory
 * and whose stream work runs when synchronised). Software and CUDA frames go into
 * shared frames (every byte compared through the planes' CUDA pointers, which are the
 * Vulkan memory; one copy per plane, counted), the frame held until the stream ran
 * them; shared frames come out as AVFrames (pointers, pitches, frames context, colour,
 * references); one-plane RGB frames (NVENC's input) both ways, their byte order against
 * FFmpeg's descriptors, and the check of where NVENC reads a frame's planes; the
 * refusals copy nothing and hold nothing; at the end the library's
 * live objects, the driver's allocations and FFmpeg's references are back to zero.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavutil/hwcontext.h>
#include <libavutil/pixdesc.h>

#include "vkcuda_ffmpeg.h"

typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
#define CUDA_VERSION 0
#include <libavutil/hwcontext_cuda.h>

static int failures;
#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);         \
            printf(__VA_ARGS__);                                           \
            printf("\n");                                                  \
            failures++;                                                    \
        }                                                                  \
    } while (0)
#define OK(call) CHECK((call) == VKCUDA_SUCCESS, "%s", vkcuda_ffmpeg_last_error_message())

static struct {
    void *(*stream)(int);
    void (*run)(void);
    int (*copies)(void);
    int (*live)(void);
} fake;

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint8_t next_byte(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint8_t)(rng >> 24);
}

/* Fills every plane row (the row bytes, not the padding) of `f` with random bytes, or
 * for `shift` > 0 with 16-bit samples shifted up (P010's 10 bits in the high bits). */
static void fill(AVFrame *f, int planes, const int row_bytes[3], const int rows[3], int shift) {
    for (int p = 0; p < planes; p++)
        for (int y = 0; y < rows[p]; y++) {
            uint8_t *row = f->data[p] + (size_t)y * f->linesize[p];
            for (int x = 0; x < row_bytes[p]; x++) row[x] = next_byte();
            if (shift)
                for (int x = 0; x < row_bytes[p]; x += 2) {
                    uint16_t v = (uint16_t)(((row[x] | row[x + 1] << 8) & 0x3ff) << shift);
                    memcpy(row + x, &v, 2);
                }
        }
}

/* Every byte of every row of the image's planes against the frame's. */
static long compare(const struct vkcuda_image *image, const uint8_t *const data[3], const int linesize[3]) {
    struct vkcuda_image_info info;
    long wrong = 0;
    OK(vkcuda_image_get_info(image, &info));
    for (uint32_t p = 0; p < info.plane_count; p++) {
        struct vkcuda_image_plane_pointer pp;
        OK(vkcuda_image_get_plane_pointer(image, p, &pp));
        for (uint32_t y = 0; y < pp.height; y++) {
            const uint8_t *a = (const uint8_t *)(uintptr_t)pp.cuda_pointer + (size_t)y * pp.row_pitch;
            const uint8_t *b = data[p] + (size_t)y * linesize[p];
            for (uint32_t x = 0; x < pp.width * pp.bytes_per_texel; x++) wrong += a[x] != b[x];
        }
    }
    return wrong;
}

/* The copy of a frame into `image` through the bridge, checked: held until the stream
 * ran, one copy per plane, every byte equal. */
static void roundtrip(struct vkcuda_ffmpeg *b, AVFrame *f, const struct vkcuda_image *image, int planes,
                      const char *what) {
    uint32_t pending = 99;
    AVBufferRef *watch = av_buffer_ref(f->buf[0]);
    const int refs = av_buffer_get_ref_count(watch); /* the frame's, this watch's, and any other */
    int before = fake.copies();
    OK(vkcuda_ffmpeg_frame_to_image(b, f, image));
    OK(vkcuda_ffmpeg_collect(b, &pending));
    CHECK(pending == 1, "%s: one frame held, not %u", what, pending);
    CHECK(av_buffer_get_ref_count(watch) == refs + 1, "%s: the bridge holds the frame (refs %d)", what,
          av_buffer_get_ref_count(watch));
    CHECK(fake.copies() == before, "%s: nothing ran before the stream", what);
    /* The caller lets go at once: the bridge's reference keeps the data. */
    AVFrame *keep = av_frame_clone(f);
    av_frame_unref(f);
    fake.run();
    CHECK(fake.copies() - before == planes, "%s: %d copies for %d planes", what, fake.copies() - before, planes);
    long wrong = compare(image, (const uint8_t *const *)keep->data, keep->linesize);
    CHECK(wrong == 0, "%s: %ld bytes differ", what, wrong);
    CHECK(av_buffer_get_ref_count(watch) == refs + 1, "%s: still held until collected", what);
    OK(vkcuda_ffmpeg_collect(b, &pending));
    CHECK(pending == 0 && av_buffer_get_ref_count(watch) == refs, "%s: released (pending %u, refs %d)", what, pending,
          av_buffer_get_ref_count(watch));
    printf("  %s: %d copies, every byte equal, frame released after the stream ran\n", what, planes);
    av_frame_move_ref(f, keep);
    av_frame_free(&keep);
    av_buffer_unref(&watch);
}

/* A refusal: its code, a message naming `needle`, nothing enqueued or held. */
static void refused(struct vkcuda_ffmpeg *b, const AVFrame *f, const struct vkcuda_image *image,
                    enum vkcuda_result code, const char *needle, const char *what) {
    int before = fake.copies(), refs = f->buf[0] ? av_buffer_get_ref_count(f->buf[0]) : 0;
    uint32_t pending = 99;
    enum vkcuda_result r = vkcuda_ffmpeg_frame_to_image(b, f, image);
    const char *msg = vkcuda_ffmpeg_last_error_message();
    fake.run();
    OK(vkcuda_ffmpeg_collect(b, &pending));
    CHECK(r == code, "%s: result %d, expected %d (%s)", what, r, code, msg);
    CHECK(strstr(msg, needle) != NULL, "%s: the message names '%s': %s", what, needle, msg);
    CHECK(fake.copies() == before && pending == 0, "%s: nothing copied or held", what);
    CHECK(!f->buf[0] || av_buffer_get_ref_count(f->buf[0]) == refs, "%s: no reference taken", what);
    printf("  refused, %s: %s\n", what, msg);
}

static AVFrame *sw_frame(enum AVPixelFormat fmt, int w, int h) {
    AVFrame *f = av_frame_alloc();
    f->format = fmt, f->width = w, f->height = h;
    CHECK(av_frame_get_buffer(f, 0) == 0, "av_frame_get_buffer");
    return f;
}

/* A CUDA frame of FFmpeg's own frames context on `device` (its pool allocates with
 * cuMemAlloc: host memory in the stand-in driver), filled with random rows. */
static AVFrame *cuda_frame(AVBufferRef *device, enum AVPixelFormat fmt, int w, int h, int planes, int bpp, int sub) {
    AVBufferRef *frames = av_hwframe_ctx_alloc(device);
    AVHWFramesContext *fc = (AVHWFramesContext *)frames->data;
    fc->format = AV_PIX_FMT_CUDA, fc->sw_format = fmt, fc->width = w, fc->height = h;
    CHECK(av_hwframe_ctx_init(frames) == 0, "av_hwframe_ctx_init");
    AVFrame *f = av_frame_alloc();
    CHECK(av_hwframe_get_buffer(frames, f, 0) == 0, "av_hwframe_get_buffer");
    av_buffer_unref(&frames); /* the frame holds its frames context */
    int rb[3], rows[3];
    for (int p = 0; p < 3; p++) {
        rb[p] = w * bpp; /* NV12/P01x: CbCr pairs as wide as the luma row */
        rows[p] = sub && p > 0 ? h / 2 : h;
    }
    fill(f, planes, rb, rows, 0);
    return f;
}

static const struct {
    enum AVPixelFormat fmt;
    int planes, bpp, sub;
} kinds[] = {{AV_PIX_FMT_NV12, 2, 1, 1}, {AV_PIX_FMT_P010, 2, 2, 1}, {AV_PIX_FMT_P016, 2, 2, 1},
             {AV_PIX_FMT_YUV444P, 3, 1, 0}, {AV_PIX_FMT_YUV444P16, 3, 2, 0}};

enum { W = 66, H = 38 };

/* What needs shared video frames: software and CUDA frames into them (copies counted,
 * bytes compared, held until the stream ran), shared frames as AVFrames, the refusals
 * that compare a frame with a frame, and destroy with a copy pending. */
static void video_frames(struct vkcuda_context *ctx, struct vkcuda_ffmpeg **bp, AVBufferRef *device) {
    struct vkcuda_ffmpeg *b = *bp;
    /* Software NV12 and P010 frames, linesizes padded by FFmpeg. */
    for (int i = 0; i < 2; i++) {
        AVFrame *f = sw_frame(kinds[i].fmt, W, H);
        int rb[3] = {W * kinds[i].bpp, W * kinds[i].bpp, 0}, rows[3] = {H, H / 2, 0};
        fill(f, 2, rb, rows, i ? 6 : 0);
        f->colorspace = AVCOL_SPC_BT2020_NCL, f->color_trc = AVCOL_TRC_SMPTE2084;
        f->color_primaries = AVCOL_PRI_BT2020, f->color_range = AVCOL_RANGE_JPEG;
        f->chroma_location = AVCHROMA_LOC_TOPLEFT;
        struct vkcuda_image *image = NULL;
        char what[64];
        snprintf(what, sizeof what, "software %s", av_get_pix_fmt_name(kinds[i].fmt));
        OK(vkcuda_ffmpeg_image_create_for_frame(b, f, &image));
        roundtrip(b, f, image, 2, what);
        struct vkcuda_video_color c;
        OK(vkcuda_image_get_video_color(image, &c));
        CHECK(c.matrix_coefficients == 9 && c.transfer_characteristics == 16 && c.colour_primaries == 9 &&
                  c.full_range && c.x_chroma_offset == 0 && c.y_chroma_offset == 0,
              "%s: colour %u/%u/%u full %u chroma %d,%d", what, c.matrix_coefficients, c.transfer_characteristics,
              c.colour_primaries, c.full_range, c.x_chroma_offset, c.y_chroma_offset);
        vkcuda_image_destroy(image);
        av_frame_free(&f);
    }
    /* A software frame without buffers (the caller's arrays): the bridge copies it when it takes
     * its reference, so the caller may free the arrays before the stream runs. */
    {
        AVFrame *f = av_frame_alloc();
        uint8_t *luma = malloc((size_t)W * H), *chroma = malloc((size_t)W * H / 2);
        uint8_t *want_y = malloc((size_t)W * H), *want_c = malloc((size_t)W * H / 2);
        for (int i = 0; i < W * H; i++) luma[i] = want_y[i] = next_byte();
        for (int i = 0; i < W * H / 2; i++) chroma[i] = want_c[i] = next_byte();
        f->format = AV_PIX_FMT_NV12, f->width = W, f->height = H;
        f->data[0] = luma, f->data[1] = chroma, f->linesize[0] = f->linesize[1] = W;
        struct vkcuda_image *image = NULL;
        OK(vkcuda_ffmpeg_image_create_for_frame(b, f, &image));
        int before = fake.copies();
        OK(vkcuda_ffmpeg_frame_to_image(b, f, image));
        memset(luma, 0xee, (size_t)W * H), memset(chroma, 0xee, (size_t)W * H / 2);
        free(luma), free(chroma); /* gone before the stream ran */
        av_frame_free(&f);
        fake.run();
        const uint8_t *want[3] = {want_y, want_c, NULL};
        const int pitch[3] = {W, W, 0};
        long wrong = compare(image, want, pitch);
        CHECK(fake.copies() - before == 2 && wrong == 0, "a frame without buffers: %d copies, %ld bytes differ",
              fake.copies() - before, wrong);
        printf("  software nv12 without buffers, its arrays freed before the stream ran: every byte equal\n");
        uint32_t pending = 99;
        OK(vkcuda_ffmpeg_collect(b, &pending));
        CHECK(pending == 0, "released");
        free(want_y), free(want_c);
        vkcuda_image_destroy(image);
    }
    /* CUDA frames of every format the bridge maps. */
    for (int i = 0; i < 5; i++) {
        AVFrame *f = cuda_frame(device, kinds[i].fmt, W, H, kinds[i].planes, kinds[i].bpp, kinds[i].sub);
        struct vkcuda_image *image = NULL;
        char what[64];
        snprintf(what, sizeof what, "CUDA %s", av_get_pix_fmt_name(kinds[i].fmt));
        OK(vkcuda_ffmpeg_image_create_for_frame(b, f, &image));
        roundtrip(b, f, image, kinds[i].planes, what);
        struct vkcuda_video_color c;
        OK(vkcuda_image_get_video_color(image, &c));
        CHECK(c.matrix_coefficients == 2 && c.transfer_characteristics == 2 && c.colour_primaries == 2 &&
                  !c.full_range && c.x_chroma_offset == 0 && c.y_chroma_offset == 1,
              "%s: unspecified colour maps to unspecified, narrow, left siting", what);
        vkcuda_image_destroy(image);
        av_frame_free(&f);
    }
    /* Shared frame -> AVFrame, no copy, and through the bridge into another shared frame. */
    {
        struct vkcuda_image_create_info ii = {0};
        ii.flags = VKCUDA_IMAGE_CREATE_LINEAR_BIT, ii.format = VK_FORMAT_G8_B8R8_2PLANE_420_UNORM;
        ii.extent.width = W, ii.extent.height = H, ii.extent.depth = 1;
        struct vkcuda_image *image = NULL, *copy = NULL;
        OK(vkcuda_image_create(ctx, &ii, &image));
        OK(vkcuda_image_create(ctx, &ii, &copy));
        struct vkcuda_video_color c = {0, 1, 1, 1, VK_FALSE, 1, 1};
        OK(vkcuda_image_set_video_color(image, &c));
        struct vkcuda_live_objects lo0, lo;
        OK(vkcuda_live_objects_get(&lo0));
        AVBufferRef *ref = NULL;
        OK(vkcuda_ffmpeg_image_ref_create(image, &ref));
        AVFrame *f = av_frame_alloc();
        OK(vkcuda_ffmpeg_frame_from_image(b, ref, f));
        CHECK(f->format == AV_PIX_FMT_CUDA && f->width == W && f->height == H, "format and size");
        for (uint32_t p = 0; p < 2; p++) {
            struct vkcuda_image_plane_pointer pp;
            OK(vkcuda_image_get_plane_pointer(image, p, &pp));
            CHECK((uintptr_t)f->data[p] == pp.cuda_pointer && (uint64_t)f->linesize[p] == pp.row_pitch,
                  "plane %u: data and linesize are the plane's", p);
        }
        const AVHWFramesContext *fc = (const AVHWFramesContext *)f->hw_frames_ctx->data;
        CHECK(fc->sw_format == AV_PIX_FMT_NV12 && fc->width == W && fc->height == H &&
                  fc->device_ref->data == device->data,
              "the frames context describes it, on the bridge's device");
        CHECK(f->colorspace == AVCOL_SPC_BT709 && f->color_trc == AVCOL_TRC_BT709 &&
                  f->color_primaries == AVCOL_PRI_BT709 && f->color_range == AVCOL_RANGE_MPEG &&
                  f->chroma_location == AVCHROMA_LOC_CENTER,
              "colour fields from the image");
        CHECK(vkcuda_ffmpeg_frame_from_image(b, ref, f) == VKCUDA_ERROR_INVALID_ARGUMENT, "a frame with data is refused");
        int rb[3] = {W, W, 0}, rows[3] = {H, H / 2, 0};
        fill(f, 2, rb, rows, 0); /* the stand-in's device pointers are the Vulkan memory */
        roundtrip(b, f, copy, 2, "shared frame as AVFrame, into another shared frame");
        av_buffer_unref(&ref); /* the frames keep the image alive */
        AVFrame *clone = av_frame_clone(f);
        av_frame_free(&f);
        OK(vkcuda_live_objects_get(&lo));
        CHECK(lo.vk_images == lo0.vk_images, "the clone still holds the image");
        av_frame_free(&clone);
        OK(vkcuda_live_objects_get(&lo));
        CHECK(lo.vk_images == lo0.vk_images - 1, "destroyed with the last frame (%lld -> %lld)",
              (long long)lo0.vk_images, (long long)lo.vk_images);
        printf("  shared frame -> AVFrame: plane pointers and pitches, frames context, colour; the image destroyed "
               "with the last reference\n");
        vkcuda_image_destroy(copy);
    }
    /* Refusals that compare the frame with a shared frame. */
    struct vkcuda_image *nv12 = NULL;
    AVFrame *good = sw_frame(AV_PIX_FMT_NV12, W, H);
    OK(vkcuda_ffmpeg_image_create_for_frame(b, good, &nv12));
    AVFrame *p010 = sw_frame(AV_PIX_FMT_P010, W, H), *big = sw_frame(AV_PIX_FMT_NV12, W + 2, H);
    refused(b, p010, nv12, VKCUDA_ERROR_UNSUPPORTED, "p010", "P010 into an NV12 shared frame");
    refused(b, big, nv12, VKCUDA_ERROR_INVALID_ARGUMENT, "68x38", "another size");
    struct vkcuda_video_color before, after;
    OK(vkcuda_image_get_video_color(nv12, &before));
    good->colorspace = AVCOL_SPC_SMPTE240M;
    refused(b, good, nv12, VKCUDA_ERROR_UNSUPPORTED, "colour", "a matrix Vulkan has no model for");
    OK(vkcuda_image_get_video_color(nv12, &after));
    CHECK(memcmp(&before, &after, sizeof before) == 0, "the image keeps its colour");
    good->colorspace = AVCOL_SPC_BT709;
    av_frame_free(&big);
    av_frame_free(&p010);
    /* Destroying the bridge with a copy pending waits for the stream, then lets go. */
    AVBufferRef *watch = av_buffer_ref(good->buf[0]);
    OK(vkcuda_ffmpeg_frame_to_image(b, good, nv12));
    CHECK(av_buffer_get_ref_count(watch) == 3, "held");
    av_frame_free(&good);
    int before_copies = fake.copies();
    vkcuda_ffmpeg_destroy(b);
    *bp = NULL;
    CHECK(fake.copies() - before_copies == 2 && av_buffer_get_ref_count(watch) == 1,
          "destroy ran the pending copies, then released the frame (refs %d)", av_buffer_get_ref_count(watch));
    printf("  destroy with a copy pending: the stream ran it, then the frame was released\n");
    av_buffer_unref(&watch);
    vkcuda_image_destroy(nv12);
}

/* NVENC's RGB inputs (one-plane linear frames) and the byte order each VkFormat has in
 * memory, checked against FFmpeg's own pixel format descriptors: the offset (8-bit) or
 * the shift in a little-endian word (10-bit) of R, G and B. */
static const struct {
    enum AVPixelFormat fmt;
    VkFormat vk;
    int depth, r, g, b; /* byte offsets (depth 8) or bit positions in the word (depth 10) */
} rgb_kinds[] = {
    {AV_PIX_FMT_RGB0, VK_FORMAT_R8G8B8A8_UNORM, 8, 0, 1, 2},
    {AV_PIX_FMT_RGBA, VK_FORMAT_R8G8B8A8_UNORM, 8, 0, 1, 2},
    {AV_PIX_FMT_BGR0, VK_FORMAT_B8G8R8A8_UNORM, 8, 2, 1, 0},
    {AV_PIX_FMT_BGRA, VK_FORMAT_B8G8R8A8_UNORM, 8, 2, 1, 0},
    {AV_PIX_FMT_X2RGB10LE, VK_FORMAT_A2R10G10B10_UNORM_PACK32, 10, 20, 10, 0},
    {AV_PIX_FMT_X2BGR10LE, VK_FORMAT_A2B10G10R10_UNORM_PACK32, 10, 0, 10, 20},
};
#define RGB_KINDS (int)(sizeof rgb_kinds / sizeof rgb_kinds[0])

/* One-plane RGB frames (issue 37: NVENC's input without a copy): the mapping and its
 * byte order; software and CUDA RGB frames into linear RGBA/BGRA/10-bit frames and back
 * (every byte compared through the plane pointer); an RGBA frame as an RGB0 AVFrame that
 * NVENC reads as it is; vkcuda_ffmpeg_check_nvenc_layout on an NV12 frame laid out as
 * NVENC reads it and on one whose chroma lies elsewhere. */
static void rgb_frames(struct vkcuda_context *ctx, struct vkcuda_ffmpeg *b, AVBufferRef *device) {
    for (int i = 0; i < RGB_KINDS; i++) {
        const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(rgb_kinds[i].fmt);
        VkFormat f = VK_FORMAT_UNDEFINED;
        OK(vkcuda_ffmpeg_format_from_av(rgb_kinds[i].fmt, &f));
        CHECK(f == rgb_kinds[i].vk, "%s -> VkFormat %d", d->name, (int)f);
        CHECK((d->flags & AV_PIX_FMT_FLAG_RGB) && !(d->flags & AV_PIX_FMT_FLAG_BE) &&
                  av_pix_fmt_count_planes(rgb_kinds[i].fmt) == 1,
              "%s: one plane of RGB, little-endian", d->name);
        for (int c = 0; c < 3; c++) {
            const AVComponentDescriptor *k = &d->comp[c];
            const int want = c == 0 ? rgb_kinds[i].r : c == 1 ? rgb_kinds[i].g : rgb_kinds[i].b;
            /* The bit position in the little-endian word: offset bytes plus shift bits. */
            const int got = rgb_kinds[i].depth == 8 ? (k->shift == 0 ? k->offset : -1) : k->offset * 8 + k->shift;
            CHECK(k->step == 4 && k->depth == rgb_kinds[i].depth && got == want,
                  "%s component %d: step %d depth %d offset %d shift %d, want %d", d->name, c, k->step, k->depth,
                  k->offset, k->shift, want);
        }
    }
    printf("  RGB formats: %d mapped, byte order checked against FFmpeg's pixel format descriptors\n", RGB_KINDS);
    /* (each software frame below goes in, and its image comes out as a CUDA frame) */

    /* Software frames of each, into a linear frame made for them and compared. */
    for (int i = 0; i < RGB_KINDS; i++) {
        AVFrame *f = sw_frame(rgb_kinds[i].fmt, W - 1, H);
        int rb[3] = {(W - 1) * 4, 0, 0}, rows[3] = {H, 0, 0};
        fill(f, 1, rb, rows, 0);
        f->chroma_location = AVCHROMA_LOC_BOTTOM; /* not read for RGB */
        struct vkcuda_image *image = NULL;
        OK(vkcuda_ffmpeg_image_create_for_frame(b, f, &image));
        struct vkcuda_image_info info;
        OK(vkcuda_image_get_info(image, &info));
        CHECK(info.format == rgb_kinds[i].vk && info.plane_count == 1 && (info.flags & VKCUDA_IMAGE_CREATE_LINEAR_BIT),
              "%s: a one-plane linear frame of VkFormat %d", av_get_pix_fmt_name(rgb_kinds[i].fmt), (int)info.format);
        char what[64];
        snprintf(what, sizeof what, "software %s", av_get_pix_fmt_name(rgb_kinds[i].fmt));
        roundtrip(b, f, image, 1, what);
        /* Out again as a CUDA frame: the first pixel format of its VkFormat (RGB0, BGR0, X2...). */
        const int first = i == 0 || rgb_kinds[i - 1].vk != rgb_kinds[i].vk;
        AVBufferRef *ref = NULL;
        OK(vkcuda_ffmpeg_image_ref_create(image, &ref)); /* owns the image now */
        AVFrame *out = av_frame_alloc();
        const enum AVPixelFormat want = first ? rgb_kinds[i].fmt : rgb_kinds[i - 1].fmt;
        enum vkcuda_result r = vkcuda_ffmpeg_frame_from_image(b, ref, out);
        if (r == VKCUDA_SUCCESS) {
            CHECK(((const AVHWFramesContext *)out->hw_frames_ctx->data)->sw_format == want &&
                      (uintptr_t)out->data[0] != 0 && out->linesize[0] > 0,
                  "%s: the image out as a %s CUDA frame", what, av_get_pix_fmt_name(want));
        } else {
            /* FFmpeg 7.1's CUDA frames contexts take no 10-bit RGB: refused, saying so. */
            CHECK(r == VKCUDA_ERROR_UNSUPPORTED && rgb_kinds[i].depth == 10 &&
                      strstr(vkcuda_ffmpeg_last_error_message(), av_get_pix_fmt_name(want)) && !out->buf[0] &&
                      !out->hw_frames_ctx,
                  "%s out as a CUDA frame: %d: %s", what, r, vkcuda_ffmpeg_last_error_message());
            printf("  refused, %s out as a CUDA frame: %s\n", what, vkcuda_ffmpeg_last_error_message());
        }
        long wrong = compare(image, (const uint8_t *const *)f->data, f->linesize);
        CHECK(wrong == 0, "%s: %ld bytes differ", what, wrong);
        av_frame_free(&out);
        av_buffer_unref(&ref);
        av_frame_free(&f);
    }
    /* A CUDA RGB0 frame of FFmpeg's pool, and the compressible pattern of a rendered frame. */
    {
        AVFrame *f = cuda_frame(device, AV_PIX_FMT_RGB0, W, H, 1, 4, 0);
        for (int y = 0; y < H / 2; y++)
            for (int x = 0; x < W * 4; x++) f->data[0][(size_t)y * f->linesize[0] + x] = (uint8_t)(x / 16 + y);
        struct vkcuda_image *image = NULL;
        OK(vkcuda_ffmpeg_image_create_for_frame(b, f, &image));
        roundtrip(b, f, image, 1, "CUDA rgb0 (half ramp, half random)");
        vkcuda_image_destroy(image);
        av_frame_free(&f);
    }
    /* A linear RGBA frame as an AVFrame: RGB0, plane 0 its only one, read by NVENC as it is. */
    {
        struct vkcuda_image_create_info ii = {0};
        ii.flags = VKCUDA_IMAGE_CREATE_LINEAR_BIT, ii.format = VK_FORMAT_R8G8B8A8_UNORM;
        ii.extent.width = W, ii.extent.height = H, ii.extent.depth = 1;
        struct vkcuda_image *image = NULL, *copy = NULL;
        OK(vkcuda_image_create(ctx, &ii, &image));
        OK(vkcuda_image_create(ctx, &ii, &copy));
        AVBufferRef *ref = NULL;
        OK(vkcuda_ffmpeg_image_ref_create(image, &ref));
        AVFrame *f = av_frame_alloc();
        OK(vkcuda_ffmpeg_frame_from_image(b, ref, f));
        struct vkcuda_image_plane_pointer pp;
        OK(vkcuda_image_get_plane_pointer(image, 0, &pp));
        const AVHWFramesContext *fc = (const AVHWFramesContext *)f->hw_frames_ctx->data;
        CHECK(f->format == AV_PIX_FMT_CUDA && fc->sw_format == AV_PIX_FMT_RGB0 && f->width == W && f->height == H,
              "an RGBA frame is an RGB0 CUDA frame");
        CHECK((uintptr_t)f->data[0] == pp.cuda_pointer && (uint64_t)f->linesize[0] == pp.row_pitch && !f->data[1],
              "one plane: the image's pointer and row pitch");
        CHECK(f->colorspace == AVCOL_SPC_RGB && f->color_range == AVCOL_RANGE_JPEG, "RGB colour fields");
        OK(vkcuda_ffmpeg_check_nvenc_layout(f));
        int rb[3] = {W * 4, 0, 0}, rows[3] = {H, 0, 0};
        fill(f, 1, rb, rows, 0);
        roundtrip(b, f, copy, 1, "linear RGBA frame as AVFrame, into another");
        av_frame_free(&f);
        av_buffer_unref(&ref);
        vkcuda_image_destroy(copy);
        printf("  linear RGBA frame -> AVFrame: RGB0, one plane, NVENC reads it as it is\n");
    }
    /* NV12 as NVENC reads it: chroma right after the luma rows, or refused saying where. */
    {
        uint8_t *mem = calloc(1, (size_t)W * H * 3 / 2 + 4096);
        AVFrame *f = av_frame_alloc();
        f->format = AV_PIX_FMT_NV12, f->width = W, f->height = H;
        f->data[0] = mem, f->data[1] = mem + (size_t)W * H, f->linesize[0] = f->linesize[1] = W;
        OK(vkcuda_ffmpeg_check_nvenc_layout(f));
        f->data[1] = mem + 4096;
        CHECK(vkcuda_ffmpeg_check_nvenc_layout(f) == VKCUDA_ERROR_UNSUPPORTED &&
                  strstr(vkcuda_ffmpeg_last_error_message(), "plane 1 at data[0] + 2508") &&
                  strstr(vkcuda_ffmpeg_last_error_message(), "data[0] + 4096"),
              "chroma elsewhere is refused: %s", vkcuda_ffmpeg_last_error_message());
        printf("  refused, NV12 chroma where NVENC does not read it: %s\n", vkcuda_ffmpeg_last_error_message());
        f->data[1] = mem + (size_t)W * H, f->linesize[1] = W + 2;
        CHECK(vkcuda_ffmpeg_check_nvenc_layout(f) == VKCUDA_ERROR_UNSUPPORTED, "another chroma pitch is refused");
        f->data[0] = NULL;
        CHECK(vkcuda_ffmpeg_check_nvenc_layout(f) == VKCUDA_ERROR_INVALID_ARGUMENT, "no data");
        CHECK(vkcuda_ffmpeg_check_nvenc_layout(NULL) == VKCUDA_ERROR_NULL_POINTER, "NULL");
        av_frame_free(&f);
        free(mem);
    }
}

int main(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib || !(*(void **)&fake.stream = dlsym(lib, "fake_cuda_stream")) ||
        !(*(void **)&fake.run = dlsym(lib, "fake_cuda_streams_run"))) {
        printf("SKIPPED: ffmpeg_bridge: libcuda.so.1 is not the stand-in driver built WITH_STREAMS\n");
        return getenv("VKCUDA_FAKE_CUDA_EXPECTED") ? 1 : 77;
    }
    *(void **)&fake.copies = dlsym(lib, "fake_cuda_copies");
    *(void **)&fake.live = dlsym(lib, "fake_cuda_live");
    /* Pair the stand-in driver with lavapipe: its one device takes Vulkan device 0's UUID. */
    struct vkcuda_physical_device_support dev[4];
    uint32_t n = 4;
    if (vkcuda_physical_devices_enumerate(&n, dev) != VKCUDA_SUCCESS || n == 0) {
        printf("SKIPPED: ffmpeg_bridge: no Vulkan device: %s\n", vkcuda_last_error_message());
        return 77;
    }
    char uuid[33];
    for (int i = 0; i < 16; i++) snprintf(uuid + 2 * i, 3, "%02x", dev[0].device_uuid[i]);
    setenv("FAKE_CUDA_UUID", uuid, 1);
    int live0 = fake.live();
    struct vkcuda_context *ctx = NULL, *vk_only = NULL;
    if (vkcuda_context_create_standalone(NULL, &ctx) != VKCUDA_SUCCESS) {
        printf("FAIL: a context on %s with the stand-in driver: %s\n", dev[0].device_name, vkcuda_last_error_message());
        return 1;
    }
    struct vkcuda_standalone_create_info si = {0};
    si.flags = VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT;
    OK(vkcuda_context_create_standalone(&si, &vk_only));
    struct vkcuda_cuda_info ci;
    OK(vkcuda_context_get_cuda_info(ctx, &ci));
    CUstream stream = (CUstream)fake.stream(0);

    /* The device: the context's CUDA context and the bridge's stream; a Vulkan-only context has none. */
    struct vkcuda_ffmpeg *b = NULL, *none = (struct vkcuda_ffmpeg *)&n;
    CHECK(vkcuda_ffmpeg_create(ctx, stream, NULL) == VKCUDA_ERROR_NULL_POINTER, "NULL bridge");
    CHECK(vkcuda_ffmpeg_create(vk_only, NULL, &none) == VKCUDA_ERROR_CUDA_UNAVAILABLE && none == NULL,
          "a Vulkan-only context is refused: %s", vkcuda_ffmpeg_last_error_message());
    printf("  refused, a Vulkan-only context: %s\n", vkcuda_ffmpeg_last_error_message());
    static char not_a_stream;
    CHECK(vkcuda_ffmpeg_create(ctx, (CUstream)(void *)&not_a_stream, &none) == VKCUDA_ERROR_INVALID_ARGUMENT && !none,
          "a pointer that is no stream is refused: %s", vkcuda_ffmpeg_last_error_message());
    printf("  refused, not a stream: %s\n", vkcuda_ffmpeg_last_error_message());
    AVBufferRef *device = NULL;
    if (vkcuda_ffmpeg_create(ctx, stream, &b) != VKCUDA_SUCCESS || vkcuda_ffmpeg_device_ref(b, &device) != VKCUDA_SUCCESS) {
        printf("FAIL: the bridge on the stand-in driver: %s\n", vkcuda_ffmpeg_last_error_message());
        return 1;
    }
    AVHWDeviceContext *dc = (AVHWDeviceContext *)device->data;
    AVCUDADeviceContext *cu = dc->hwctx;
    CHECK(dc->type == AV_HWDEVICE_TYPE_CUDA && cu->cuda_ctx == ci.cuda_context && cu->stream == stream,
          "the device is CUDA on the context's CUDA context and the stream");
    printf("  device: AV_HWDEVICE_TYPE_CUDA, cuda_ctx = the context's (%p), stream = the bridge's\n",
           (void *)cu->cuda_ctx);

    /* Formats and colour: the tables. */
    {
        static const VkFormat vk[] = {VK_FORMAT_G8_B8R8_2PLANE_420_UNORM, VK_FORMAT_G10X6_B10X6R10X6_2PLANE_420_UNORM_3PACK16,
                                      VK_FORMAT_G16_B16R16_2PLANE_420_UNORM, VK_FORMAT_G8_B8_R8_3PLANE_444_UNORM,
                                      VK_FORMAT_G16_B16_R16_3PLANE_444_UNORM};
        for (int i = 0; i < 5; i++) {
            VkFormat f = VK_FORMAT_UNDEFINED;
            OK(vkcuda_ffmpeg_format_from_av(kinds[i].fmt, &f));
            CHECK(f == vk[i], "%s -> VkFormat %d", av_get_pix_fmt_name(kinds[i].fmt), (int)f);
        }
        VkFormat f = VK_FORMAT_UNDEFINED;
        CHECK(vkcuda_ffmpeg_format_from_av(AV_PIX_FMT_CUDA, &f) == VKCUDA_ERROR_UNSUPPORTED && f == VK_FORMAT_UNDEFINED,
              "AV_PIX_FMT_CUDA itself has no VkFormat");
        static const struct {
            enum AVChromaLocation loc;
            int x, y;
            enum vkcuda_result r;
        } sites[] = {{AVCHROMA_LOC_UNSPECIFIED, 0, 1, VKCUDA_SUCCESS}, {AVCHROMA_LOC_LEFT, 0, 1, VKCUDA_SUCCESS},
                     {AVCHROMA_LOC_CENTER, 1, 1, VKCUDA_SUCCESS},      {AVCHROMA_LOC_TOPLEFT, 0, 0, VKCUDA_SUCCESS},
                     {AVCHROMA_LOC_TOP, 1, 0, VKCUDA_SUCCESS},         {AVCHROMA_LOC_BOTTOMLEFT, 0, 0, VKCUDA_ERROR_UNSUPPORTED},
                     {AVCHROMA_LOC_BOTTOM, 0, 0, VKCUDA_ERROR_UNSUPPORTED}};
        AVFrame *fr = av_frame_alloc();
        fr->colorspace = AVCOL_SPC_BT470BG, fr->color_trc = AVCOL_TRC_ARIB_STD_B67;
        fr->color_primaries = AVCOL_PRI_SMPTE170M, fr->color_range = AVCOL_RANGE_JPEG;
        for (size_t i = 0; i < sizeof sites / sizeof sites[0]; i++) {
            struct vkcuda_video_color c = {0};
            fr->chroma_location = sites[i].loc;
            enum vkcuda_result r = vkcuda_ffmpeg_color_from_frame(fr, &c);
            CHECK(r == sites[i].r, "chroma location %d: result %d", sites[i].loc, r);
            CHECK(r || (c.x_chroma_offset == sites[i].x && c.y_chroma_offset == sites[i].y && c.matrix_coefficients == 5 &&
                        c.transfer_characteristics == 18 && c.colour_primaries == 6 && c.full_range),
                  "chroma location %d: %d,%d", sites[i].loc, c.x_chroma_offset, c.y_chroma_offset);
        }
        av_frame_free(&fr);
        printf("  formats: 5 mapped; colour: matrix/transfer/primaries/range and 7 chroma sitings (bottom ones refused)\n");
    }

    /* Shared video frames, where the device offers them (Mesa 22.3's lavapipe offers no
     * multi-planar format at all: the GPU test gpu_ffmpeg_decode covers them there). */
    {
        AVFrame *probe = sw_frame(AV_PIX_FMT_NV12, W, H);
        struct vkcuda_image *image = NULL;
        enum vkcuda_result r = vkcuda_ffmpeg_image_create_for_frame(b, probe, &image);
        av_frame_free(&probe);
        vkcuda_image_destroy(image);
        if (r == VKCUDA_ERROR_UNSUPPORTED && getenv("VKCUDA_EXPECT_VIDEO_FRAMES")) {
            CHECK(0, "VKCUDA_EXPECT_VIDEO_FRAMES, but: %s", vkcuda_ffmpeg_last_error_message());
        } else if (r == VKCUDA_ERROR_UNSUPPORTED) {
            printf("  SKIPPED part: the copies into shared video frames: %s\n", vkcuda_ffmpeg_last_error_message());
        } else {
            OK(r);
            video_frames(ctx, &b, device);
        }
    }

    /* Refusals of the frame itself (an R8 image of the Vulkan-only context as the target:
     * the frame is refused before the image is looked at). */
    if (!b) OK(vkcuda_ffmpeg_create(ctx, stream, &b));
    rgb_frames(ctx, b, device);
    {
        struct vkcuda_image_create_info ii = {0};
        ii.format = VK_FORMAT_R8_UNORM, ii.extent.width = W, ii.extent.height = H, ii.extent.depth = 1;
        struct vkcuda_image *r8 = NULL, *gone = NULL;
        OK(vkcuda_image_create(vk_only, &ii, &r8));
        OK(vkcuda_image_create(vk_only, &ii, &gone));
        vkcuda_image_destroy(gone);
        AVFrame *good = sw_frame(AV_PIX_FMT_NV12, W, H), *yuv420 = sw_frame(AV_PIX_FMT_YUV420P, W, H);
        refused(b, yuv420, r8, VKCUDA_ERROR_UNSUPPORTED, "yuv420p", "another pixel format");
        good->chroma_location = AVCHROMA_LOC_BOTTOM;
        refused(b, good, r8, VKCUDA_ERROR_UNSUPPORTED, "bottom", "bottom chroma siting");
        good->chroma_location = AVCHROMA_LOC_LEFT;
        refused(b, good, r8, VKCUDA_ERROR_INVALID_ARGUMENT, "not a shared frame", "an image that is not a shared frame");
        refused(b, good, gone, VKCUDA_ERROR_INVALID_ARGUMENT, "already destroyed", "a destroyed shared frame");
        refused(b, good, NULL, VKCUDA_ERROR_NULL_POINTER, "NULL", "no shared frame");
        /* A CUDA frame of another CUDA context (another device's, as FFmpeg picks by index). */
        AVBufferRef *other = av_hwdevice_ctx_alloc(AV_HWDEVICE_TYPE_CUDA);
        static char not_ours;
        ((AVCUDADeviceContext *)((AVHWDeviceContext *)other->data)->hwctx)->cuda_ctx = (CUcontext)(void *)&not_ours;
        CHECK(av_hwdevice_ctx_init(other) == 0, "another device");
        AVBufferRef *oframes = av_hwframe_ctx_alloc(other);
        AVHWFramesContext *ofc = (AVHWFramesContext *)oframes->data;
        ofc->format = AV_PIX_FMT_CUDA, ofc->sw_format = AV_PIX_FMT_NV12, ofc->width = W, ofc->height = H;
        CHECK(av_hwframe_ctx_init(oframes) == 0, "frames of another device");
        AVFrame *foreign = av_frame_alloc();
        foreign->format = AV_PIX_FMT_CUDA, foreign->width = W, foreign->height = H;
        foreign->hw_frames_ctx = av_buffer_ref(oframes);
        foreign->buf[0] = av_buffer_ref(good->buf[0]);
        for (int p = 0; p < 2; p++) foreign->data[p] = good->data[p], foreign->linesize[p] = good->linesize[p];
        refused(b, foreign, r8, VKCUDA_ERROR_DEVICE_MISMATCH, "CUDA context", "a frame of another CUDA context");
        /* A CUDA frame of ours whose frames context was released. */
        AVFrame *orphan = cuda_frame(device, AV_PIX_FMT_NV12, W, H, 2, 1, 1);
        /* The test keeps the frames context: the pool's buffer frees itself through it when
         * the frame goes (freeing it first was a use after free, a SIGBUS in about half the runs). */
        AVBufferRef *orphan_frames = orphan->hw_frames_ctx;
        orphan->hw_frames_ctx = NULL;
        refused(b, orphan, r8, VKCUDA_ERROR_INVALID_ARGUMENT, "hw_frames_ctx", "a CUDA frame without its frames context");
        /* Shared frame -> AVFrame of what is not a shared video frame. */
        AVBufferRef *ref = (AVBufferRef *)&n;
        CHECK(vkcuda_ffmpeg_image_ref_create(r8, &ref) == VKCUDA_ERROR_INVALID_ARGUMENT && ref == NULL,
              "an R8 image is no shared video frame: %s", vkcuda_ffmpeg_last_error_message());
        AVFrame *empty = av_frame_alloc();
        CHECK(vkcuda_ffmpeg_frame_from_image(b, device, empty) == VKCUDA_ERROR_INVALID_ARGUMENT &&
                  strstr(vkcuda_ffmpeg_last_error_message(), "image_ref") && !empty->buf[0] && !empty->hw_frames_ctx,
              "a buffer that is not an image reference: %s", vkcuda_ffmpeg_last_error_message());
        printf("  refused, image_ref_create of an R8 image; frame_from_image of another buffer\n");
        av_frame_free(&empty);
        av_frame_free(&orphan);
        av_buffer_unref(&orphan_frames);
        av_frame_free(&foreign);
        av_buffer_unref(&oframes);
        av_buffer_unref(&other);
        av_frame_free(&yuv420);
        av_frame_free(&good);
        vkcuda_image_destroy(r8);
    }
    uint32_t pending = 99;
    OK(vkcuda_ffmpeg_collect(b, &pending));
    CHECK(pending == 0, "nothing held");
    vkcuda_ffmpeg_destroy(b);
    CHECK(av_buffer_get_ref_count(device) == 1, "only the test's reference to the device is left (%d)",
          av_buffer_get_ref_count(device));
    av_buffer_unref(&device);
    vkcuda_context_destroy(vk_only);
    vkcuda_context_destroy(ctx);
    struct vkcuda_live_objects lo;
    OK(vkcuda_live_objects_get(&lo));
    CHECK(lo.contexts == 0 && lo.vk_images == 0 && lo.vk_memories == 0 && lo.cuda_external_memories == 0,
          "the library holds nothing (contexts %lld, images %lld, memories %lld, CUDA imports %lld)",
          (long long)lo.contexts, (long long)lo.vk_images, (long long)lo.vk_memories,
          (long long)lo.cuda_external_memories);
    CHECK(fake.live() == live0, "the driver holds what it held before (%d, was %d)", fake.live(), live0);
    if (failures) {
        printf("ffmpeg_bridge: %d check(s) FAILED\n", failures);
        return 1;
    }
    printf("ffmpeg_bridge: all checks passed\n");
    return 0;
}
