/*
 * The FFmpeg bridge (vkcuda_ffmpeg.h): vkcuda's C ABI and FFmpeg's public API, CUDA
 * loaded at run time.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vkcuda_ffmpeg.h"

#include <libavutil/common.h>
#include <libavutil/error.h>
#include <libavutil/hwcontext.h>
#include <libavutil/pixdesc.h>

/* hwcontext_cuda.h includes <cuda.h> unless CUDA_VERSION is defined: the bridge
 * needs no CUDA header, only the two handle types AVCUDADeviceContext holds. */
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
#define CUDA_VERSION 0
#include <libavutil/hwcontext_cuda.h>

/* ---- CUDA, loaded at run time ------------------------------------------------------ */

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void (*CUhostFn)(void *user_data);
enum { CU_MEMORYTYPE_HOST = 1, CU_MEMORYTYPE_DEVICE = 2 };
typedef struct {
    size_t srcXInBytes, srcY;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;

static struct {
    CUresult (*ctx_push)(CUcontext);
    CUresult (*ctx_pop)(CUcontext *);
    CUresult (*memcpy2d_async)(const CUDA_MEMCPY2D *, CUstream);
    CUresult (*launch_host_func)(CUstream, CUhostFn, void *);
    CUresult (*stream_synchronize)(CUstream);
    CUresult (*stream_get_ctx)(CUstream, CUcontext *);
    CUresult (*get_error_name)(CUresult, const char **);
    char error[256]; /* why loading failed, or "" */
} cu;
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;

static void cu_load(void) {
    /* Never closed: the driver stays loaded for the process (vkcuda and FFmpeg hold it too). */
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(cu.error, sizeof cu.error, "libcuda.so.1 could not be loaded: %s", dlerror());
        return;
    }
    static const char *const names[] = {"cuCtxPushCurrent_v2", "cuCtxPopCurrent_v2", "cuMemcpy2DAsync_v2",
                                        "cuLaunchHostFunc", "cuStreamSynchronize", "cuStreamGetCtx"};
    void *fns[6];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        fns[i] = dlsym(lib, names[i]);
        if (!fns[i]) {
            snprintf(cu.error, sizeof cu.error, "libcuda.so.1 has no %s (a driver too old)", names[i]);
            return;
        }
    }
    /* POSIX: function pointers round-trip through void *. */
    memcpy(&cu.ctx_push, &fns[0], sizeof fns[0]);
    memcpy(&cu.ctx_pop, &fns[1], sizeof fns[1]);
    memcpy(&cu.memcpy2d_async, &fns[2], sizeof fns[2]);
    memcpy(&cu.launch_host_func, &fns[3], sizeof fns[3]);
    memcpy(&cu.stream_synchronize, &fns[4], sizeof fns[4]);
    memcpy(&cu.stream_get_ctx, &fns[5], sizeof fns[5]);
    void *name = dlsym(lib, "cuGetErrorName");
    if (name) memcpy(&cu.get_error_name, &name, sizeof name);
}

/* ---- errors ------------------------------------------------------------------------ */

static _Thread_local char last_error[1024];

const char *vkcuda_ffmpeg_last_error_message(void) { return last_error; }

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static enum vkcuda_result fail(enum vkcuda_result code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return code;
}

/* A failed vkcuda call: its code, and its message after `what`. */
static enum vkcuda_result fail_vkcuda(enum vkcuda_result code, const char *what) {
    return fail(code, "%s: %s", what, vkcuda_last_error_message());
}

static enum vkcuda_result fail_cuda(CUresult r, const char *what) {
    const char *name = NULL;
    if (!cu.get_error_name || cu.get_error_name(r, &name) != 0 || !name) name = "?";
    return fail(VKCUDA_ERROR_CUDA, "%s failed: CUresult %d (%s)", what, r, name);
}

static enum vkcuda_result fail_av(int err, const char *what) {
    char text[AV_ERROR_MAX_STRING_SIZE] = {0};
    av_strerror(err, text, sizeof text);
    return fail(err == AVERROR(ENOMEM) ? VKCUDA_ERROR_OUT_OF_MEMORY : VKCUDA_ERROR_INVALID_STATE,
                "%s failed: %s", what, text);
}

/* ---- formats and colour -------------------------------------------------------------- */

static const struct {
    enum AVPixelFormat av;
    VkFormat vk;
} formats[] = {
    {AV_PIX_FMT_NV12, VK_FORMAT_G8_B8R8_2PLANE_420_UNORM},
    {AV_PIX_FMT_P010, VK_FORMAT_G10X6_B10X6R10X6_2PLANE_420_UNORM_3PACK16},
    {AV_PIX_FMT_P016, VK_FORMAT_G16_B16R16_2PLANE_420_UNORM},
    {AV_PIX_FMT_YUV444P, VK_FORMAT_G8_B8_R8_3PLANE_444_UNORM},
    {AV_PIX_FMT_YUV444P16, VK_FORMAT_G16_B16_R16_3PLANE_444_UNORM},
    /* NVENC's RGB inputs (ff_nvenc_pix_fmts), as one-plane linear frames. Byte order in
     * memory: RGB0/RGBA are R,G,B,X (NVENC's ABGR), BGR0/BGRA B,G,R,X (ARGB); the 10-bit
     * ones are little-endian 32-bit words, X2RGB10 with R in bits 20-29 and B in 0-9
     * (VK_FORMAT_A2R10G10B10_UNORM_PACK32's), X2BGR10 the other way round. The first of
     * two formats of one VkFormat is what a frame of that image is (the X ones: NVENC
     * ignores alpha). */
    {AV_PIX_FMT_RGB0, VK_FORMAT_R8G8B8A8_UNORM},
    {AV_PIX_FMT_RGBA, VK_FORMAT_R8G8B8A8_UNORM},
    {AV_PIX_FMT_BGR0, VK_FORMAT_B8G8R8A8_UNORM},
    {AV_PIX_FMT_BGRA, VK_FORMAT_B8G8R8A8_UNORM},
    {AV_PIX_FMT_X2RGB10LE, VK_FORMAT_A2R10G10B10_UNORM_PACK32},
    {AV_PIX_FMT_X2BGR10LE, VK_FORMAT_A2B10G10R10_UNORM_PACK32},
};
#define FORMAT_COUNT (sizeof formats / sizeof formats[0])

static const char *pix_fmt_name(int pix_fmt) {
    const char *name = av_get_pix_fmt_name((enum AVPixelFormat)pix_fmt);
    return name ? name : "(not a pixel format)";
}

enum vkcuda_result vkcuda_ffmpeg_format_from_av(int pix_fmt, VkFormat *format) {
    if (!format) return fail(VKCUDA_ERROR_NULL_POINTER, "vkcuda_ffmpeg_format_from_av: format is NULL");
    for (size_t i = 0; i < FORMAT_COUNT; i++) {
        if ((int)formats[i].av == pix_fmt) {
            *format = formats[i].vk;
            return VKCUDA_SUCCESS;
        }
    }
    return fail(VKCUDA_ERROR_UNSUPPORTED,
                "pixel format %d (%s) is not one the bridge maps (nv12, p010le, p016le, yuv444p, yuv444p16le, rgb0, "
                "rgba, bgr0, bgra, x2rgb10le, x2bgr10le)",
                pix_fmt, pix_fmt_name(pix_fmt));
}

static enum AVPixelFormat av_from_vk(VkFormat format) {
    for (size_t i = 0; i < FORMAT_COUNT; i++)
        if (formats[i].vk == format) return formats[i].av;
    return AV_PIX_FMT_NONE;
}

enum vkcuda_result vkcuda_ffmpeg_color_from_frame(const AVFrame *frame, struct vkcuda_video_color *color) {
    if (!frame || !color) return fail(VKCUDA_ERROR_NULL_POINTER, "vkcuda_ffmpeg_color_from_frame: frame or color is NULL");
    struct vkcuda_video_color c = {0};
    c.matrix_coefficients = (uint32_t)frame->colorspace;
    c.transfer_characteristics = (uint32_t)frame->color_trc;
    c.colour_primaries = (uint32_t)frame->color_primaries;
    c.full_range = frame->color_range == AVCOL_RANGE_JPEG ? VK_TRUE : VK_FALSE;
    switch (frame->chroma_location) {
    case AVCHROMA_LOC_UNSPECIFIED:
    case AVCHROMA_LOC_LEFT:
        c.x_chroma_offset = VK_CHROMA_LOCATION_COSITED_EVEN;
        c.y_chroma_offset = VK_CHROMA_LOCATION_MIDPOINT;
        break;
    case AVCHROMA_LOC_CENTER:
        c.x_chroma_offset = VK_CHROMA_LOCATION_MIDPOINT;
        c.y_chroma_offset = VK_CHROMA_LOCATION_MIDPOINT;
        break;
    case AVCHROMA_LOC_TOPLEFT:
        c.x_chroma_offset = VK_CHROMA_LOCATION_COSITED_EVEN;
        c.y_chroma_offset = VK_CHROMA_LOCATION_COSITED_EVEN;
        break;
    case AVCHROMA_LOC_TOP:
        c.x_chroma_offset = VK_CHROMA_LOCATION_MIDPOINT;
        c.y_chroma_offset = VK_CHROMA_LOCATION_COSITED_EVEN;
        break;
    default:
        return fail(VKCUDA_ERROR_UNSUPPORTED,
                    "chroma location %d (%s) has no Vulkan model (co-sited or midpoint only)",
                    (int)frame->chroma_location,
                    av_chroma_location_name(frame->chroma_location) ? av_chroma_location_name(frame->chroma_location)
                                                                     : "unknown");
    }
    *color = c;
    return VKCUDA_SUCCESS;
}

/* The AVFrame colour fields of a vkcuda colour description. */
static void color_to_frame(const struct vkcuda_video_color *c, AVFrame *frame) {
    frame->colorspace = (enum AVColorSpace)c->matrix_coefficients;
    frame->color_trc = (enum AVColorTransferCharacteristic)c->transfer_characteristics;
    frame->color_primaries = (enum AVColorPrimaries)c->colour_primaries;
    frame->color_range = c->full_range ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG;
    int xm = c->x_chroma_offset == VK_CHROMA_LOCATION_MIDPOINT;
    int ym = c->y_chroma_offset == VK_CHROMA_LOCATION_MIDPOINT;
    frame->chroma_location = xm ? (ym ? AVCHROMA_LOC_CENTER : AVCHROMA_LOC_TOP)
                                : (ym ? AVCHROMA_LOC_LEFT : AVCHROMA_LOC_TOPLEFT);
}

/* ---- the bridge ---------------------------------------------------------------------- */

/* A frame held until the copies before it have run on the stream. */
struct pending {
    struct vkcuda_ffmpeg *bridge;
    AVFrame *frame;
    int done; /* set by the host function (under the bridge's lock) */
    struct pending *next;
};

struct vkcuda_ffmpeg {
    const struct vkcuda_context *context;
    CUcontext cuda_ctx;
    CUstream stream;
    AVBufferRef *device;
    pthread_mutex_t lock;
    struct pending *pending; /* newest first */
    AVBufferRef *frames;     /* the last frames context of frame_from_image, reused */
};

enum vkcuda_result vkcuda_ffmpeg_create(const struct vkcuda_context *context, struct CUstream_st *stream,
                                        struct vkcuda_ffmpeg **bridge) {
    if (!bridge) return fail(VKCUDA_ERROR_NULL_POINTER, "vkcuda_ffmpeg_create: bridge is NULL");
    *bridge = NULL;
    if (!context) return fail(VKCUDA_ERROR_NULL_POINTER, "vkcuda_ffmpeg_create: context is NULL");
    struct vkcuda_cuda_info info;
    enum vkcuda_result r = vkcuda_context_get_cuda_info(context, &info);
    if (r != VKCUDA_SUCCESS) return fail_vkcuda(r, "vkcuda_ffmpeg_create: the context's CUDA side");
    pthread_once(&cu_once, cu_load);
    if (cu.error[0]) return fail(VKCUDA_ERROR_CUDA_UNAVAILABLE, "vkcuda_ffmpeg_create: %s", cu.error);

    if (stream) { /* NULL is the legacy default stream of whatever context is current */
        CUcontext owner = NULL;
        CUresult cr = cu.stream_get_ctx(stream, &owner);
        if (cr != 0)
            return fail(VKCUDA_ERROR_INVALID_ARGUMENT,
                        "vkcuda_ffmpeg_create: the stream %p is not a CUstream the driver knows (cuStreamGetCtx: "
                        "CUresult %d)",
                        (void *)stream, cr);
        if (owner != info.cuda_context)
            return fail(VKCUDA_ERROR_DEVICE_MISMATCH,
                        "vkcuda_ffmpeg_create: the stream belongs to CUDA context %p, not to the vkcuda context's %p",
                        (void *)owner, (void *)info.cuda_context);
    }
    struct vkcuda_ffmpeg *b = calloc(1, sizeof *b);
    if (!b) return fail(VKCUDA_ERROR_OUT_OF_MEMORY, "vkcuda_ffmpeg_create: out of memory");
    b->context = context;
    b->cuda_ctx = info.cuda_context;
    b->stream = stream;
    if (pthread_mutex_init(&b->lock, NULL) != 0) {
        free(b);
        return fail(VKCUDA_ERROR_OUT_OF_MEMORY, "vkcuda_ffmpeg_create: pthread_mutex_init failed");
    }
    b->device = av_hwdevice_ctx_alloc(AV_HWDEVICE_TYPE_CUDA);
    if (!b->device) {
        r = fail(VKCUDA_ERROR_OUT_OF_MEMORY, "vkcuda_ffmpeg_create: av_hwdevice_ctx_alloc(CUDA) failed");
        goto error;
    }
    AVCUDADeviceContext *hw = ((AVHWDeviceContext *)b->device->data)->hwctx;
    /* FFmpeg's own device creation allocates `internal` and a context it destroys; with
     * cuda_ctx set and internal NULL, av_hwdevice_ctx_init only loads CUDA and the
     * context stays the caller's (FFmpeg never destroys it). */
    hw->cuda_ctx = info.cuda_context;
    hw->stream = stream;
    int err = av_hwdevice_ctx_init(b->device);
    if (err < 0) {
        r = fail_av(err, "vkcuda_ffmpeg_create: av_hwdevice_ctx_init(CUDA)");
        if (r == VKCUDA_ERROR_INVALID_STATE) r = VKCUDA_ERROR_CUDA_UNAVAILABLE;
        goto error;
    }
    *bridge = b;
    return VKCUDA_SUCCESS;
error:
    av_buffer_unref(&b->device);
    pthread_mutex_destroy(&b->lock);
    free(b);
    return r;
}

/* Unlinks and returns the finished frames (all of them with `all`). */
static struct pending *take_done(struct vkcuda_ffmpeg *b, int all, uint32_t *left) {
    struct pending *done = NULL, **p = &b->pending;
    uint32_t n = 0;
    pthread_mutex_lock(&b->lock);
    while (*p) {
        struct pending *e = *p;
        if (all || e->done) {
            *p = e->next;
            e->next = done;
            done = e;
        } else {
            p = &e->next;
            n++;
        }
    }
    pthread_mutex_unlock(&b->lock);
    if (left) *left = n;
    return done;
}

static void release(struct pending *list) {
    while (list) {
        struct pending *next = list->next;
        av_frame_free(&list->frame);
        free(list);
        list = next;
    }
}

void vkcuda_ffmpeg_destroy(struct vkcuda_ffmpeg *b) {
    if (!b) return;
    uint32_t left = 0;
    release(take_done(b, 0, &left));
    if (left) {
        /* Copies still pending: their frames are released once the stream ran them. */
        CUcontext popped;
        if (cu.ctx_push(b->cuda_ctx) == 0) {
            (void)cu.stream_synchronize(b->stream);
            (void)cu.ctx_pop(&popped);
        }
        release(take_done(b, 1, NULL));
    }
    av_buffer_unref(&b->frames);
    av_buffer_unref(&b->device);
    pthread_mutex_destroy(&b->lock);
    free(b);
}

enum vkcuda_result vkcuda_ffmpeg_device_ref(const struct vkcuda_ffmpeg *b, AVBufferRef **device) {
    if (!b || !device) return fail(VKCUDA_ERROR_NULL_POINTER, "vkcuda_ffmpeg_device_ref: bridge or device is NULL");
    *device = av_buffer_ref(b->device);
    return *device ? VKCUDA_SUCCESS : fail(VKCUDA_ERROR_OUT_OF_MEMORY, "vkcuda_ffmpeg_device_ref: av_buffer_ref failed");
}

enum vkcuda_result vkcuda_ffmpeg_collect(struct vkcuda_ffmpeg *b, uint32_t *pending) {
    if (!b) return fail(VKCUDA_ERROR_NULL_POINTER, "vkcuda_ffmpeg_collect: bridge is NULL");
    release(take_done(b, 0, pending));
    return VKCUDA_SUCCESS;
}

/* The host function enqueued after a frame's copies: runs on a driver thread, where no
 * CUDA call is allowed (freeing an NVDEC frame unmaps it: a CUDA call), so it only
 * marks the frame done. */
static void copies_done(void *user) {
    struct pending *e = user;
    struct vkcuda_ffmpeg *b = e->bridge;
    pthread_mutex_lock(&b->lock);
    e->done = 1;
    pthread_mutex_unlock(&b->lock);
}

/* The pixel format of a frame's samples: its frames context's sw_format for a hardware
 * frame. */
static enum vkcuda_result frame_sw_format(const struct vkcuda_ffmpeg *b, const AVFrame *frame, int *hw,
                                          enum AVPixelFormat *sw) {
    *hw = frame->format == AV_PIX_FMT_CUDA || frame->hw_frames_ctx != NULL;
    if (!*hw) {
        *sw = (enum AVPixelFormat)frame->format;
        return VKCUDA_SUCCESS;
    }
    if (frame->format != AV_PIX_FMT_CUDA)
        return fail(VKCUDA_ERROR_UNSUPPORTED, "the frame is a %s hardware frame, not AV_PIX_FMT_CUDA",
                    pix_fmt_name(frame->format));
    if (!frame->hw_frames_ctx)
        return fail(VKCUDA_ERROR_INVALID_ARGUMENT,
                    "the AV_PIX_FMT_CUDA frame has no hw_frames_ctx (unreferenced or freed): its "
                    "format and CUDA context are unknown");
    const AVHWFramesContext *fc = (const AVHWFramesContext *)frame->hw_frames_ctx->data;
    if (!fc->device_ctx || fc->device_ctx->type != AV_HWDEVICE_TYPE_CUDA)
        return fail(VKCUDA_ERROR_INVALID_ARGUMENT, "the frame's hw_frames_ctx is not on a CUDA device");
    const AVCUDADeviceContext *hw_dev = fc->device_ctx->hwctx;
    if (hw_dev->cuda_ctx != b->cuda_ctx)
        return fail(VKCUDA_ERROR_DEVICE_MISMATCH,
                    "the frame belongs to CUDA context %p, not to the vkcuda context's %p (the "
                    "UUID-paired device): decode with vkcuda_ffmpeg_device_ref's device",
                    (void *)hw_dev->cuda_ctx, (void *)b->cuda_ctx);
    *sw = fc->sw_format;
    return VKCUDA_SUCCESS;
}

enum vkcuda_result vkcuda_ffmpeg_image_create_for_frame(const struct vkcuda_ffmpeg *b, const AVFrame *frame,
                                                        struct vkcuda_image **image) {
    if (!image) return fail(VKCUDA_ERROR_NULL_POINTER, "vkcuda_ffmpeg_image_create_for_frame: image is NULL");
    *image = NULL;
    if (!b || !frame) return fail(VKCUDA_ERROR_NULL_POINTER, "vkcuda_ffmpeg_image_create_for_frame: bridge or frame is NULL");
    int hw = 0;
    enum AVPixelFormat sw = AV_PIX_FMT_NONE;
    VkFormat format = VK_FORMAT_UNDEFINED;
    enum vkcuda_result r = frame_sw_format(b, frame, &hw, &sw);
    if (r == VKCUDA_SUCCESS) r = vkcuda_ffmpeg_format_from_av(sw, &format);
    if (r != VKCUDA_SUCCESS) return r;
    if (frame->width <= 0 || frame->height <= 0)
        return fail(VKCUDA_ERROR_INVALID_ARGUMENT, "the frame's size %dx%d is empty", frame->width, frame->height);
    struct vkcuda_image_create_info info = {0};
    info.flags = VKCUDA_IMAGE_CREATE_LINEAR_BIT;
    info.format = format;
    info.extent.width = (uint32_t)frame->width;
    info.extent.height = (uint32_t)frame->height;
    info.extent.depth = 1;
    r = vkcuda_image_create(b->context, &info, image);
    return r == VKCUDA_SUCCESS ? r : fail_vkcuda(r, "vkcuda_ffmpeg_image_create_for_frame: vkcuda_image_create");
}

enum vkcuda_result vkcuda_ffmpeg_frame_to_image(struct vkcuda_ffmpeg *b, const AVFrame *frame,
                                                const struct vkcuda_image *image) {
    if (!b || !frame || !image)
        return fail(VKCUDA_ERROR_NULL_POINTER, "vkcuda_ffmpeg_frame_to_image: bridge, frame or image is NULL");
    release(take_done(b, 0, NULL));

    /* The frame first (its format, CUDA context and colour), then the image. */
    int hw = 0;
    enum AVPixelFormat sw = AV_PIX_FMT_NONE;
    VkFormat format = VK_FORMAT_UNDEFINED;
    enum vkcuda_result r;
    struct vkcuda_video_color color;
    if ((r = frame_sw_format(b, frame, &hw, &sw)) != VKCUDA_SUCCESS) return r;
    if ((r = vkcuda_ffmpeg_format_from_av(sw, &format)) != VKCUDA_SUCCESS) return r;
    /* RGB frames (one plane) carry no YCbCr colour description. */
    const int rgb = (av_pix_fmt_desc_get(sw)->flags & AV_PIX_FMT_FLAG_RGB) != 0;
    if (!rgb && (r = vkcuda_ffmpeg_color_from_frame(frame, &color)) != VKCUDA_SUCCESS) return r;
    struct vkcuda_image_info info;
    if ((r = vkcuda_image_get_info(image, &info)) != VKCUDA_SUCCESS)
        return fail_vkcuda(r, "vkcuda_ffmpeg_frame_to_image: the image");
    if (!(info.flags & VKCUDA_IMAGE_CREATE_LINEAR_BIT))
        return fail(VKCUDA_ERROR_INVALID_ARGUMENT,
                    "vkcuda_ffmpeg_frame_to_image: the image (VkFormat %d) is not a shared frame (an image made "
                    "with VKCUDA_IMAGE_CREATE_LINEAR_BIT)",
                    (int)info.format);
    if (format != info.format)
        return fail(VKCUDA_ERROR_UNSUPPORTED,
                    "the frame's %s samples are VkFormat %d; the image is VkFormat %d: make the image with "
                    "vkcuda_ffmpeg_format_from_av's format",
                    pix_fmt_name(sw), (int)format, (int)info.format);
    if (frame->width < 0 || frame->height < 0 || (uint32_t)frame->width != info.extent.width ||
        (uint32_t)frame->height != info.extent.height)
        return fail(VKCUDA_ERROR_INVALID_ARGUMENT, "the frame is %dx%d, the image %ux%u", frame->width,
                    frame->height, info.extent.width, info.extent.height);

    /* The reference held until the copies ran, taken first: the copies read its planes (a
     * frame without buffers is copied by av_frame_clone, so the caller's memory is free to go). */
    struct pending *e = calloc(1, sizeof *e);
    AVFrame *held = e ? av_frame_clone(frame) : NULL;
    if (!held) {
        free(e);
        return fail(VKCUDA_ERROR_OUT_OF_MEMORY,
                    "vkcuda_ffmpeg_frame_to_image: av_frame_clone failed (out of memory, or a hardware frame "
                    "without buffers)");
    }
    e->bridge = b;
    e->frame = held;
    struct vkcuda_pitched_planes planes = {0};
    struct vkcuda_image_plane_pointer dst[3];
    struct vkcuda_video_color before;
    planes.plane_count = info.plane_count;
    for (uint32_t p = 0; p < info.plane_count; p++) {
        if ((r = vkcuda_image_get_plane_pointer(image, p, &dst[p])) != VKCUDA_SUCCESS) {
            r = fail_vkcuda(r, "vkcuda_ffmpeg_frame_to_image: the image's plane");
            goto refused;
        }
        if (!held->data[p] || held->linesize[p] <= 0) {
            r = fail(VKCUDA_ERROR_INVALID_ARGUMENT,
                     "the frame's plane %u has no data (data %p, linesize %d; negative linesizes are not "
                     "supported)",
                     p, (void *)held->data[p], held->linesize[p]);
            goto refused;
        }
        if ((uint64_t)held->linesize[p] < (uint64_t)dst[p].width * dst[p].bytes_per_texel) {
            r = fail(VKCUDA_ERROR_INVALID_ARGUMENT, "the frame's plane %u linesize %d is under its row of %llu bytes",
                     p, held->linesize[p], (unsigned long long)dst[p].width * dst[p].bytes_per_texel);
            goto refused;
        }
        planes.planes[p].device_pointer = (uint64_t)(uintptr_t)held->data[p];
        planes.planes[p].pitch = (uint64_t)held->linesize[p];
    }
    /* Checked (and refused) before anything is enqueued: the colour takes effect with
     * the copy, and is put back if the copy cannot be enqueued. */
    if (!rgb && (r = vkcuda_image_get_video_color(image, &before)) != VKCUDA_SUCCESS) {
        r = fail_vkcuda(r, "vkcuda_ffmpeg_frame_to_image: the image's colour");
        goto refused;
    }
    if (!rgb && (r = vkcuda_image_set_video_color(image, &color)) != VKCUDA_SUCCESS) {
        r = fail_vkcuda(r, "vkcuda_ffmpeg_frame_to_image: the frame's colour description");
        goto refused;
    }

    CUcontext popped;
    CUresult cr = cu.ctx_push(b->cuda_ctx);
    if (cr != 0) {
        av_frame_free(&e->frame);
        free(e);
        if (!rgb) (void)vkcuda_image_set_video_color(image, &before);
        return fail_cuda(cr, "vkcuda_ffmpeg_frame_to_image: cuCtxPushCurrent");
    }
    uint32_t enqueued = 0;
    if (hw) {
        r = vkcuda_image_cuda_copy_from_pitched(image, &planes, b->stream);
        if (r != VKCUDA_SUCCESS) r = fail_vkcuda(r, "vkcuda_ffmpeg_frame_to_image: vkcuda_image_cuda_copy_from_pitched");
        else enqueued = info.plane_count;
    } else {
        for (uint32_t p = 0; p < info.plane_count && r == VKCUDA_SUCCESS; p++) {
            CUDA_MEMCPY2D c = {0};
            c.srcMemoryType = CU_MEMORYTYPE_HOST;
            c.srcHost = held->data[p];
            c.srcPitch = (size_t)held->linesize[p];
            c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
            c.dstDevice = dst[p].cuda_pointer;
            c.dstPitch = dst[p].row_pitch;
            c.WidthInBytes = (size_t)dst[p].width * dst[p].bytes_per_texel;
            c.Height = dst[p].height;
            cr = cu.memcpy2d_async(&c, b->stream);
            if (cr != 0) r = fail_cuda(cr, "vkcuda_ffmpeg_frame_to_image: cuMemcpy2DAsync (host to device)");
            else enqueued++;
        }
    }
    if (enqueued) {
        pthread_mutex_lock(&b->lock);
        e->next = b->pending;
        b->pending = e;
        pthread_mutex_unlock(&b->lock);
        cr = cu.launch_host_func(b->stream, copies_done, e);
        if (cr != 0) {
            /* The frame must outlive the copies already enqueued: wait for them here. */
            enum vkcuda_result h = fail_cuda(cr, "vkcuda_ffmpeg_frame_to_image: cuLaunchHostFunc");
            (void)cu.stream_synchronize(b->stream);
            copies_done(e);
            if (r == VKCUDA_SUCCESS) r = h;
        }
    } else {
        av_frame_free(&e->frame);
        free(e);
        if (!rgb) (void)vkcuda_image_set_video_color(image, &before);
    }
    (void)cu.ctx_pop(&popped);
    return r;
refused:
    av_frame_free(&e->frame);
    free(e);
    return r;
}

/* ---- shared frame -> AVFrame ------------------------------------------------------- */

/* The opaque of every image reference: how frame_from_image knows one. */
static const char image_ref_tag = 0;

static void image_free(void *opaque, uint8_t *data) {
    (void)opaque;
    vkcuda_image_destroy((struct vkcuda_image *)(void *)data);
}

enum vkcuda_result vkcuda_ffmpeg_image_ref_create(struct vkcuda_image *image, AVBufferRef **ref) {
    if (!ref) return fail(VKCUDA_ERROR_NULL_POINTER, "vkcuda_ffmpeg_image_ref_create: ref is NULL");
    *ref = NULL;
    if (!image) return fail(VKCUDA_ERROR_NULL_POINTER, "vkcuda_ffmpeg_image_ref_create: image is NULL");
    struct vkcuda_image_plane_pointer plane;
    enum vkcuda_result r = vkcuda_image_get_plane_pointer(image, 0, &plane);
    if (r != VKCUDA_SUCCESS)
        return fail_vkcuda(r, "vkcuda_ffmpeg_image_ref_create: not a shared frame");
    /* The buffer's size is nominal: its data is the handle, never read as bytes. */
    *ref = av_buffer_create((uint8_t *)(void *)image, 1, image_free, (void *)&image_ref_tag, AV_BUFFER_FLAG_READONLY);
    return *ref ? VKCUDA_SUCCESS : fail(VKCUDA_ERROR_OUT_OF_MEMORY, "vkcuda_ffmpeg_image_ref_create: av_buffer_create failed");
}

/* A CUDA frames context on the bridge's device for `sw` frames of `w` x `h`: the last
 * one made when it matches (frames contexts are immutable once initialised). */
static enum vkcuda_result frames_ctx(struct vkcuda_ffmpeg *b, enum AVPixelFormat sw, int w, int h,
                                     AVBufferRef **out) {
    pthread_mutex_lock(&b->lock);
    if (b->frames) {
        const AVHWFramesContext *fc = (const AVHWFramesContext *)b->frames->data;
        if (fc->sw_format == sw && fc->width == w && fc->height == h) {
            *out = av_buffer_ref(b->frames);
            pthread_mutex_unlock(&b->lock);
            return *out ? VKCUDA_SUCCESS : fail(VKCUDA_ERROR_OUT_OF_MEMORY, "av_buffer_ref failed");
        }
    }
    pthread_mutex_unlock(&b->lock);
    AVBufferRef *ref = av_hwframe_ctx_alloc(b->device);
    if (!ref) return fail(VKCUDA_ERROR_OUT_OF_MEMORY, "av_hwframe_ctx_alloc failed");
    AVHWFramesContext *fc = (AVHWFramesContext *)ref->data;
    fc->format = AV_PIX_FMT_CUDA;
    fc->sw_format = sw;
    fc->width = w;
    fc->height = h;
    /* No initial pool: nothing is allocated unless someone asks it for a buffer. */
    int err = av_hwframe_ctx_init(ref);
    if (err < 0) {
        av_buffer_unref(&ref);
        if (err == AVERROR(ENOSYS)) /* hwcontext_cuda's list of formats lacks it */
            return fail(VKCUDA_ERROR_UNSUPPORTED,
                        "av_hwframe_ctx_init(CUDA): this FFmpeg's CUDA frames contexts do not take sw_format %s "
                        "(FFmpeg 7.1's take no X2RGB10/X2BGR10): copy the frame into FFmpeg instead",
                        pix_fmt_name(sw));
        return fail_av(err, "av_hwframe_ctx_init(CUDA)");
    }
    pthread_mutex_lock(&b->lock);
    av_buffer_unref(&b->frames);
    b->frames = av_buffer_ref(ref); /* a cache: NULL on failure is fine */
    pthread_mutex_unlock(&b->lock);
    *out = ref;
    return VKCUDA_SUCCESS;
}

enum vkcuda_result vkcuda_ffmpeg_frame_from_image(struct vkcuda_ffmpeg *b, AVBufferRef *image_ref, AVFrame *frame) {
    if (!b || !image_ref || !frame)
        return fail(VKCUDA_ERROR_NULL_POINTER, "vkcuda_ffmpeg_frame_from_image: bridge, image_ref or frame is NULL");
    if (frame->buf[0] || frame->data[0] || frame->hw_frames_ctx)
        return fail(VKCUDA_ERROR_INVALID_ARGUMENT,
                    "vkcuda_ffmpeg_frame_from_image: the frame holds data: av_frame_unref it first");
    if (av_buffer_get_opaque(image_ref) != &image_ref_tag)
        return fail(VKCUDA_ERROR_INVALID_ARGUMENT,
                    "vkcuda_ffmpeg_frame_from_image: image_ref is not a vkcuda_ffmpeg_image_ref_create reference");
    const struct vkcuda_image *image = (const struct vkcuda_image *)(const void *)image_ref->data;
    struct vkcuda_image_info info;
    enum vkcuda_result r = vkcuda_image_get_info(image, &info);
    if (r != VKCUDA_SUCCESS) return fail_vkcuda(r, "vkcuda_ffmpeg_frame_from_image: the image");
    enum AVPixelFormat sw = av_from_vk(info.format);
    if (sw == AV_PIX_FMT_NONE)
        return fail(VKCUDA_ERROR_UNSUPPORTED,
                    "vkcuda_ffmpeg_frame_from_image: the image's VkFormat %d has no FFmpeg pixel format the bridge maps",
                    (int)info.format);
    if (info.extent.width > INT_MAX || info.extent.height > INT_MAX)
        return fail(VKCUDA_ERROR_UNSUPPORTED, "vkcuda_ffmpeg_frame_from_image: the image is too large for an AVFrame");
    struct vkcuda_image_plane_pointer planes[3];
    for (uint32_t p = 0; p < info.plane_count; p++) {
        if ((r = vkcuda_image_get_plane_pointer(image, p, &planes[p])) != VKCUDA_SUCCESS)
            return fail_vkcuda(r, "vkcuda_ffmpeg_frame_from_image: the image's plane");
        if (planes[p].row_pitch > INT_MAX || planes[p].cuda_pointer == 0)
            return fail(VKCUDA_ERROR_UNSUPPORTED,
                        "vkcuda_ffmpeg_frame_from_image: plane %u has no CUDA pointer or a pitch past INT_MAX", p);
    }
    /* A YCbCr frame's colour description; RGB (one plane) has none. */
    struct vkcuda_video_color color;
    if (info.plane_count > 1 && (r = vkcuda_image_get_video_color(image, &color)) != VKCUDA_SUCCESS)
        return fail_vkcuda(r, "vkcuda_ffmpeg_frame_from_image: the image's colour");

    AVBufferRef *frames = NULL, *buf = av_buffer_ref(image_ref);
    if (!buf) return fail(VKCUDA_ERROR_OUT_OF_MEMORY, "vkcuda_ffmpeg_frame_from_image: av_buffer_ref failed");
    if ((r = frames_ctx(b, sw, (int)info.extent.width, (int)info.extent.height, &frames)) != VKCUDA_SUCCESS) {
        av_buffer_unref(&buf);
        return r;
    }
    frame->format = AV_PIX_FMT_CUDA;
    frame->width = (int)info.extent.width;
    frame->height = (int)info.extent.height;
    for (uint32_t p = 0; p < info.plane_count; p++) {
        frame->data[p] = (uint8_t *)(uintptr_t)planes[p].cuda_pointer;
        frame->linesize[p] = (int)planes[p].row_pitch;
    }
    frame->buf[0] = buf;
    frame->hw_frames_ctx = frames;
    if (info.plane_count > 1) {
        color_to_frame(&color, frame);
    } else {
        frame->colorspace = AVCOL_SPC_RGB;
        frame->color_range = AVCOL_RANGE_JPEG;
    }
    return VKCUDA_SUCCESS;
}

/* ---- NVENC's reading of a frame ------------------------------------------------------ */

enum vkcuda_result vkcuda_ffmpeg_check_nvenc_layout(const AVFrame *frame) {
    if (!frame) return fail(VKCUDA_ERROR_NULL_POINTER, "vkcuda_ffmpeg_check_nvenc_layout: frame is NULL");
    enum AVPixelFormat sw = (enum AVPixelFormat)frame->format;
    if (sw == AV_PIX_FMT_CUDA) {
        if (!frame->hw_frames_ctx)
            return fail(VKCUDA_ERROR_INVALID_ARGUMENT,
                        "vkcuda_ffmpeg_check_nvenc_layout: the AV_PIX_FMT_CUDA frame has no hw_frames_ctx");
        sw = ((const AVHWFramesContext *)frame->hw_frames_ctx->data)->sw_format;
    }
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(sw);
    if (!d || (d->flags & AV_PIX_FMT_FLAG_HWACCEL))
        return fail(VKCUDA_ERROR_INVALID_ARGUMENT, "vkcuda_ffmpeg_check_nvenc_layout: %s is not a pixel format of samples",
                    pix_fmt_name(sw));
    if (!frame->data[0] || frame->linesize[0] <= 0 || frame->height <= 0)
        return fail(VKCUDA_ERROR_INVALID_ARGUMENT,
                    "vkcuda_ffmpeg_check_nvenc_layout: the frame has no data (data[0] %p, linesize %d, height %d)",
                    (void *)frame->data[0], frame->linesize[0], frame->height);
    /* NVENC registers data[0] with pitch linesize[0] alone: the planes after it must follow
     * it, each at the pitch NVENC derives (linesize[0] for interleaved chroma and 4:4:4,
     * linesize[0] >> chroma shift for 4:2:0 and 4:2:2 planar chroma). */
    const int planes = av_pix_fmt_count_planes(sw);
    const int interleaved = d->nb_components >= 3 && d->comp[1].plane == d->comp[2].plane;
    const uint64_t base = (uint64_t)(uintptr_t)frame->data[0];
    uint64_t want = 0;
    for (int p = 1; p < planes; p++) {
        const int q = p - 1; /* the plane before */
        const uint64_t rows = q == 0 ? (uint64_t)frame->height : (uint64_t)AV_CEIL_RSHIFT(frame->height, d->log2_chroma_h);
        const uint64_t pitch_q = q == 0 || interleaved ? (uint64_t)frame->linesize[0]
                                                       : (uint64_t)frame->linesize[0] >> d->log2_chroma_w;
        want += pitch_q * rows;
        const uint64_t pitch = interleaved ? (uint64_t)frame->linesize[0] : (uint64_t)frame->linesize[0] >> d->log2_chroma_w;
        const uint64_t at = (uint64_t)(uintptr_t)frame->data[p];
        if (!frame->data[p] || at < base || at - base != want || (uint64_t)frame->linesize[p] != pitch)
            return fail(VKCUDA_ERROR_UNSUPPORTED,
                        "FFmpeg's NVENC reads a %s CUDA frame from data[0] and linesize[0] alone: plane %d at data[0] + "
                        "%llu with linesize %llu, but this frame's plane %d is at data[0] %c %llu with linesize %d "
                        "(a shared video frame's planes lie where the Vulkan driver puts them): give NVENC a "
                        "single-plane RGB frame (AV_PIX_FMT_RGB0/BGR0 sw_format) or copy into FFmpeg's own frame",
                        pix_fmt_name(sw), p, (unsigned long long)want, (unsigned long long)pitch, p,
                        at >= base ? '+' : '-', (unsigned long long)(at >= base ? at - base : base - at),
                        frame->linesize[p]);
    }
    return VKCUDA_SUCCESS;
}
