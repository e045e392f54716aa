/*
 * nvdec_clip.h: NVDEC decoding an elementary stream (H.264 or HEVC, Annex B) through FFmpeg's
 * nv-codec-headers (Debian/Ubuntu: libffmpeg-nvenc-dev): libnvcuvid.so.1 is loaded at run time,
 * nothing links it. The parser finds the sequence, a decoder is made for it, and each frame in
 * display order is mapped (cuvidMapVideoFrame) and handed to a callback as pitched device memory:
 * luma at `luma`, the interleaved CbCr rows at `chroma` (= luma + pitch x height), both with row
 * pitch `pitch`; 8-bit streams come out as NV12, 10-bit ones as P016 with the samples in the high
 * bits (= P010). Used by nvdec_to_vulkan.c and tests/gpu/nvdec_frames.c.
 *
 * Why a separate file: nv-codec-headers declare the CUDA driver types themselves (CUresult as an
 * enum), so they cannot share a translation unit with <cuda.h>, which declares the same names;
 * nothing of theirs appears here.
 */
#ifndef VKCUDA_NVDEC_CLIP_H
#define VKCUDA_NVDEC_CLIP_H

#include <stddef.h>
#include <stdint.h>
#include <vkcuda.h>

/* What the sequence header says, before the first frame. */
typedef struct nvdec_format {
    uint32_t width, height;   /* the display area: the frame to make */
    uint32_t bit_depth;       /* 8 (NV12 out) or 10/12 (P016 out: high bits) */
    vkcuda_video_color color; /* CUVIDEOFORMAT::video_signal_description, as H.273 code points */
} nvdec_format;

/* One decoded frame, mapped: valid until the frame callback returns. */
typedef struct nvdec_frame {
    uint64_t luma, chroma, pitch; /* CUdeviceptr, CUdeviceptr, bytes per row of both planes */
    uint32_t index;               /* display order, from 0 */
} nvdec_frame;

typedef struct nvdec_callbacks {
    void *user;
    /* Once per clip (or when the sequence changes size). Non-zero stops the decode: the error. */
    int (*format)(void *user, const nvdec_format *format);
    /* Each frame. The frame is unmapped when this returns: whatever reads it on the stream must be
     * finished first (cuStreamSynchronize). Non-zero stops the decode. */
    int (*frame)(void *user, const nvdec_frame *frame);
    /* Optional, NULL everywhere but tests/gpu/nvdec_output_probe.c: before frame `index` is mapped,
     * a destination (*dptr, *pitch; left 0: none) handed to cuvidMapVideoFrame as
     * CUVIDPROCPARAMS::raw_output_dptr / raw_output_pitch, fields NVIDIA's headers document for raw
     * YUV input only. The probe asks whether the driver writes a decoded frame there (README.md,
     * "Who owns the decoded frame"). Non-zero stops the decode. */
    int (*output)(void *user, uint32_t index, uint64_t *dptr, uint32_t *pitch);
} nvdec_callbacks;

typedef struct nvdec nvdec;

/* Loads libnvcuvid.so.1 and makes a parser for `codec` ("h264" or "hevc"). The CUDA context that
 * decodes must be current on the calling thread; `stream` is where the frames are mapped. Returns 0,
 * or -1 with the reason in `why` (no libnvcuvid: no NVDEC here). */
int nvdec_open(nvdec **out, const char *codec, struct CUstream_st *stream, const nvdec_callbacks *callbacks,
               char *why, size_t why_size);
/* Decodes a whole clip (`size` bytes of an elementary stream), frames to the callbacks. Returns the
 * number of frames, or -1 (nvdec_error says why: not a bitstream of this codec, a callback's error,
 * an NVDEC error). Each call starts a fresh parser and decoder. */
long nvdec_decode(nvdec *d, const void *data, size_t size);
const char *nvdec_error(const nvdec *d);
/* Destroys the parser and decoder and unloads libnvcuvid. NULL does nothing. */
void nvdec_close(nvdec *d);

#endif /* VKCUDA_NVDEC_CLIP_H */
