/*
 * vkcuda_ffmpeg.h: FFmpeg frames in and out of vkcuda shared frames (video frames, and
 * one-plane RGB frames).
 *
 * A small C library beside libvkcuda (libvkcuda_ffmpeg, CMake target vkcuda::ffmpeg,
 * pkg-config module vkcuda-ffmpeg), built only where FFmpeg's libavutil and libavcodec
 * are found; libvkcuda itself never links FFmpeg. It uses only vkcuda's C ABI
 * (vkcuda.h) and FFmpeg's public API, and loads CUDA at run time (libcuda.so.1), as
 * vkcuda and FFmpeg do.
 *
 * - vkcuda_ffmpeg_create: a bridge on a vkcuda context and a CUDA stream, with a
 *   CUDA AVHWDeviceContext whose cuda_ctx is the context's CUDA context (the device
 *   paired by UUID with the Vulkan device) and whose stream is the bridge's: give it
 *   to a decoder (AVCodecContext.hw_device_ctx), NVENC or a CUDA filter and they run
 *   on the Vulkan engine's GPU, on that stream.
 * - vkcuda_ffmpeg_frame_to_image: an AVFrame (AV_PIX_FMT_CUDA, or a software frame in
 *   system memory) copied into a shared frame, one stream-ordered copy per plane, with
 *   the frame's colour description (YCbCr formats). The AVFrame stays referenced until
 *   the copies have run on the stream (no host wait): a decoder's surface
 *   (AV_HWACCEL_FLAG_UNSAFE_OUTPUT) is not handed back before the copy read it.
 * - vkcuda_ffmpeg_frame_from_image: a shared frame as an AV_PIX_FMT_CUDA AVFrame, no
 *   copy: its data and linesize are the frame's plane pointers and row pitches, its
 *   buffers keep the shared frame alive.
 *
 * Formats: NV12, P010, P016, YUV444P and YUV444P16 (what NVDEC outputs), as the
 * multi-planar VkFormats of vkcuda_ffmpeg_format_from_av (shared video frames); and
 * RGB0, RGBA, BGR0, BGRA, X2RGB10LE and X2BGR10LE (NVENC's RGB inputs) as one-plane
 * linear frames of R8G8B8A8, B8G8R8A8, A2R10G10B10 and A2B10G10R10
 * (VKCUDA_IMAGE_CREATE_LINEAR_BIT on a single-plane format).
 *
 * NVENC: FFmpeg's h264_nvenc/hevc_nvenc/av1_nvenc (libavcodec/nvenc.c,
 * nvenc_register_frame) register an AV_PIX_FMT_CUDA frame's data[0] with pitch
 * linesize[0] alone and read an NV12/P010 frame's chroma at data[0] + linesize[0] *
 * height (the other planes likewise after it). The Vulkan driver puts a shared video
 * frame's planes where it likes (NVIDIA's: a LINEAR 1920x1080 NV12 frame has plane 1
 * at 2 MiB), so such a frame handed to NVENC without a copy encodes wrong chroma:
 * vkcuda_ffmpeg_check_nvenc_layout tells. A one-plane RGB frame has no such question:
 * give NVENC an RGB0 or BGR0 frame (NVENC converts it to YUV itself).
 *
 * Errors: every function checks its arguments and returns a vkcuda_result; on
 * failure vkcuda_ffmpeg_last_error_message() (per thread) says what was wrong,
 * nothing was copied or enqueued and nothing is left allocated or referenced.
 *
 * Lifetimes: the vkcuda context must outlive the bridge and every FFmpeg object made
 * from it (device, frames contexts, frames): they hold its CUDA context, which the
 * vkcuda context owns. The bridge may be destroyed before the FFmpeg objects.
 *
 * Handoff: as for any CUDA access to a shared frame (vkcuda.h,
 * vkcuda_image_cuda_copy_from_pitched): Vulkan releases the frame to CUDA and the
 * stream waits for that before the copy; Vulkan acquires it back after the copy.
 */
#ifndef VKCUDA_FFMPEG_H
#define VKCUDA_FFMPEG_H

#include <stdint.h>

#include <libavutil/buffer.h>
#include <libavutil/frame.h>
#include <libavutil/pixfmt.h>

#include "vkcuda.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define VKCUDA_FFMPEG_API __attribute__((visibility("default")))
#else
#define VKCUDA_FFMPEG_API
#endif

/** The bridge: a vkcuda context, a CUDA stream and the FFmpeg CUDA device on them. */
typedef struct vkcuda_ffmpeg vkcuda_ffmpeg;

/**
 * Creates a bridge on `context` (a context with CUDA) and `stream` (a CUstream of the
 * context's CUDA context; NULL is the legacy default stream), with a CUDA
 * AVHWDeviceContext made from them (vkcuda_ffmpeg_device_ref): cuda_ctx is the
 * context's CUDA context, stream is `stream`; FFmpeg neither creates nor destroys a
 * CUDA context for it. `VKCUDA_ERROR_CUDA_UNAVAILABLE` for a Vulkan-only context or
 * when libcuda.so.1 cannot be loaded; `VKCUDA_ERROR_DEVICE_MISMATCH` for a stream of
 * another CUDA context, `VKCUDA_ERROR_INVALID_ARGUMENT` for a pointer that is no stream
 * (cuStreamGetCtx). `*bridge` is NULL on failure.
 *
 * Thread-safety: may be called from any thread.
 */
VKCUDA_FFMPEG_API enum vkcuda_result vkcuda_ffmpeg_create(const struct vkcuda_context *context,
                                                          struct CUstream_st *stream,
                                                          struct vkcuda_ffmpeg **bridge);

/**
 * Waits for the bridge's stream (cuStreamSynchronize) when copies are still pending,
 * then releases the AVFrames they held and the bridge's references. The device
 * and the frames made from the bridge stay valid for as long as FFmpeg references
 * them. NULL is ignored.
 *
 * Thread-safety: not concurrently with another call on the same bridge.
 */
VKCUDA_FFMPEG_API void vkcuda_ffmpeg_destroy(struct vkcuda_ffmpeg *bridge);

/**
 * Fills `*device` with a new reference to the bridge's CUDA AVHWDeviceContext
 * (AV_HWDEVICE_TYPE_CUDA): the caller owns it (av_buffer_unref), e.g. by handing
 * it to AVCodecContext.hw_device_ctx.
 *
 * Thread-safety: may be called from any thread.
 */
VKCUDA_FFMPEG_API enum vkcuda_result vkcuda_ffmpeg_device_ref(const struct vkcuda_ffmpeg *bridge,
                                                              AVBufferRef **device);

/**
 * The VkFormat of a shared frame holding frames of `pix_fmt` (an AVPixelFormat): NV12
 * -> VK_FORMAT_G8_B8R8_2PLANE_420_UNORM, P010 ->
 * VK_FORMAT_G10X6_B10X6R10X6_2PLANE_420_UNORM_3PACK16, P016 ->
 * VK_FORMAT_G16_B16R16_2PLANE_420_UNORM, YUV444P -> VK_FORMAT_G8_B8_R8_3PLANE_444_UNORM,
 * YUV444P16 -> VK_FORMAT_G16_B16_R16_3PLANE_444_UNORM; RGB0 and RGBA (bytes R, G, B,
 * X/A) -> VK_FORMAT_R8G8B8A8_UNORM, BGR0 and BGRA (B, G, R, X/A) ->
 * VK_FORMAT_B8G8R8A8_UNORM, X2RGB10LE (a little-endian word, R in bits 20-29) ->
 * VK_FORMAT_A2R10G10B10_UNORM_PACK32, X2BGR10LE (R in bits 0-9) ->
 * VK_FORMAT_A2B10G10R10_UNORM_PACK32 (one-plane linear frames). `VKCUDA_ERROR_UNSUPPORTED`
 * for any other format (AV_PIX_FMT_CUDA included: pass the frames context's
 * sw_format).
 *
 * Thread-safety: may be called from any thread.
 */
VKCUDA_FFMPEG_API enum vkcuda_result vkcuda_ffmpeg_format_from_av(int pix_fmt, VkFormat *format);

/**
 * The colour description of `frame`: matrix (colorspace), transfer (color_trc) and
 * primaries (color_primaries) as their H.273 code points (FFmpeg's values are
 * those), full range for AVCOL_RANGE_JPEG (else narrow), chroma siting from
 * chroma_location (LEFT and UNSPECIFIED: x co-sited, y midpoint; CENTER: both
 * midpoint; TOPLEFT: both co-sited; TOP: x midpoint, y co-sited).
 * `VKCUDA_ERROR_UNSUPPORTED` for BOTTOMLEFT and BOTTOM siting, which Vulkan cannot
 * express. The matrix is checked by vkcuda_image_set_video_color.
 *
 * Thread-safety: may be called from any thread.
 */
VKCUDA_FFMPEG_API enum vkcuda_result vkcuda_ffmpeg_color_from_frame(const AVFrame *frame,
                                                                    struct vkcuda_video_color *color);

/**
 * Creates a shared frame (vkcuda_image_create, VKCUDA_IMAGE_CREATE_LINEAR_BIT,
 * default usage) that `frame` can be copied into: its size, and the format of its
 * pixel format (its frames context's sw_format for an AV_PIX_FMT_CUDA frame). The
 * caller owns `*image` (vkcuda_image_destroy, or vkcuda_ffmpeg_image_ref_create).
 *
 * Thread-safety: may be called from any thread.
 */
VKCUDA_FFMPEG_API enum vkcuda_result vkcuda_ffmpeg_image_create_for_frame(const struct vkcuda_ffmpeg *bridge,
                                                                          const AVFrame *frame,
                                                                          struct vkcuda_image **image);

/**
 * Enqueues on the bridge's stream the copy of `frame` into the shared frame `image`,
 * one 2D copy per plane, and for a YCbCr format sets the image's colour description
 * from the frame (vkcuda_ffmpeg_color_from_frame; an RGB frame's colour fields are
 * not read). `frame` is an AV_PIX_FMT_CUDA frame of a
 * frames context on the bridge's CUDA context (device to device,
 * vkcuda_image_cuda_copy_from_pitched), or a software frame in system memory (no
 * hw_frames_ctx; host to device). The frame's format must be that of the image
 * (vkcuda_ffmpeg_format_from_av) and its size the image's. The bridge keeps a
 * reference to the frame (av_frame_ref) until the copies have run on the stream
 * (a host function enqueued after them marks it done, and the next
 * vkcuda_ffmpeg_frame_to_image, vkcuda_ffmpeg_collect or vkcuda_ffmpeg_destroy releases
 * it): the caller may unref its frame at once. No host wait. The copies read the held
 * reference's planes: a frame without buffers (plain arrays) is copied by av_frame_clone
 * first, so its memory may go at once too.
 *
 * Refused before anything is enqueued, with no reference kept: another pixel format, a
 * chroma siting or colour matrix Vulkan cannot express (`VKCUDA_ERROR_UNSUPPORTED`); a
 * frame of another CUDA context (`VKCUDA_ERROR_DEVICE_MISMATCH`); another size, a CUDA
 * frame without a frames context, a plane without data or with a linesize under its
 * row, an image that is not a shared frame (made with VKCUDA_IMAGE_CREATE_LINEAR_BIT), a
 * destroyed image
 * (`VKCUDA_ERROR_INVALID_ARGUMENT`); the image keeps its colour description.
 *
 * Thread-safety: may be called from any thread.
 */
VKCUDA_FFMPEG_API enum vkcuda_result vkcuda_ffmpeg_frame_to_image(struct vkcuda_ffmpeg *bridge,
                                                                  const AVFrame *frame,
                                                                  const struct vkcuda_image *image);

/**
 * Releases the frames whose copies have run on the stream; `*pending` (may be NULL)
 * is set to how many are still held. Every vkcuda_ffmpeg_frame_to_image call does
 * this first; call it where no more frames come (end of stream), or use
 * vkcuda_ffmpeg_destroy.
 *
 * Thread-safety: may be called from any thread.
 */
VKCUDA_FFMPEG_API enum vkcuda_result vkcuda_ffmpeg_collect(struct vkcuda_ffmpeg *bridge, uint32_t *pending);

/**
 * Makes `*ref`, a reference-counted owner of the shared frame `image`: when
 * its last reference is released (av_buffer_unref, and the AVFrames of
 * vkcuda_ffmpeg_frame_from_image), the image is destroyed (vkcuda_image_destroy).
 * `ref->data` is the image. The caller gives up `image`: it must not destroy it
 * itself. On failure the image is left to the caller.
 *
 * Thread-safety: may be called from any thread.
 */
VKCUDA_FFMPEG_API enum vkcuda_result vkcuda_ffmpeg_image_ref_create(struct vkcuda_image *image,
                                                                    AVBufferRef **ref);

/**
 * Fills the empty `frame` (av_frame_alloc'd or av_frame_unref'd) with the shared
 * frame of `image_ref` (vkcuda_ffmpeg_image_ref_create), without a copy: format
 * AV_PIX_FMT_CUDA, the image's size, data[i] and linesize[i] the CUDA pointer and row
 * pitch of plane i, buf[0] a new reference to `image_ref` (the image lives while the
 * frame does), hw_frames_ctx a CUDA frames context on the bridge's device with the
 * image's sw_format and size, and the colour fields from the image's colour
 * description (a one-plane RGB image: AVCOL_SPC_RGB, AVCOL_RANGE_JPEG, the rest
 * unspecified). The sw_format is the first of vkcuda_ffmpeg_format_from_av's formats
 * for the image's VkFormat: an R8G8B8A8_UNORM image is RGB0, B8G8R8A8_UNORM BGR0.
 * The image's format must be one of vkcuda_ffmpeg_format_from_av's
 * (`VKCUDA_ERROR_UNSUPPORTED`), and one FFmpeg's CUDA frames contexts take
 * (`VKCUDA_ERROR_UNSUPPORTED` otherwise: FFmpeg 7.1's take no X2RGB10/X2BGR10, so
 * 10-bit RGB images go into FFmpeg only by a copy); a frame with data is refused
 * (`VKCUDA_ERROR_INVALID_ARGUMENT`) and left as it was.
 *
 * For NVENC: a one-plane RGB frame is read as it is; a video frame's planes are read
 * from data[0] and linesize[0] alone (see the top of this header): check with
 * vkcuda_ffmpeg_check_nvenc_layout before encoding one without a copy.
 *
 * Thread-safety: may be called from any thread.
 */
VKCUDA_FFMPEG_API enum vkcuda_result vkcuda_ffmpeg_frame_from_image(struct vkcuda_ffmpeg *bridge,
                                                                    AVBufferRef *image_ref,
                                                                    AVFrame *frame);

/**
 * Whether FFmpeg's NVENC reads `frame` (an AV_PIX_FMT_CUDA frame, or a software
 * frame) where its planes are: NVENC registers data[0] with pitch linesize[0] alone,
 * so plane p must lie right after the planes before it (NV12/P010: data[1] ==
 * data[0] + linesize[0] * height) at the pitch NVENC derives (linesize[0] for
 * interleaved chroma and 4:4:4, linesize[0] >> the chroma shift for planar 4:2:0 and
 * 4:2:2 chroma). `VKCUDA_SUCCESS` when it does (always for one-plane formats such as
 * RGB0 and BGR0); `VKCUDA_ERROR_UNSUPPORTED` with a message naming the plane, where
 * NVENC would read it and where it is, when it does not (a shared video frame on
 * NVIDIA's driver: its chroma lies where the driver puts it);
 * `VKCUDA_ERROR_INVALID_ARGUMENT` for a frame without data or a CUDA frame without
 * its frames context.
 *
 * Thread-safety: may be called from any thread.
 */
VKCUDA_FFMPEG_API enum vkcuda_result vkcuda_ffmpeg_check_nvenc_layout(const AVFrame *frame);

/**
 * The message of the last failed vkcuda_ffmpeg_* call on this thread ("" when none).
 * Valid until the next failing call on this thread.
 */
VKCUDA_FFMPEG_API const char *vkcuda_ffmpeg_last_error_message(void);

#ifdef __cplusplus
}
#endif

#endif /* VKCUDA_FFMPEG_H */
