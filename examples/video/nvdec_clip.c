/* nvdec_clip.c: see nvdec_clip.h. Raw NVDEC calls through nv-codec-headers (dynlink_loader.h). */
#include "nvdec_clip.h"

#include <ffnvcodec/dynlink_loader.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct nvdec {
    CuvidFunctions *cv;
    cudaVideoCodec codec;
    const char *codec_name;
    CUstream stream;
    nvdec_callbacks cb;
    CUvideoparser parser;
    CUvideodecoder decoder;
    CUVIDDECODECREATEINFO info;
    long frames;
    int failed;
    char error[512];
};

static int fail(nvdec *d, const char *what, CUresult r) {
    if (!d->failed) snprintf(d->error, sizeof d->error, "%s (CUresult %d)", what, (int)r);
    d->failed = 1;
    return 0; /* the parser's "stop" */
}

/* The sequence callback: check the capabilities, make the decoder, tell the user the format. */
static int CUDAAPI on_sequence(void *user, CUVIDEOFORMAT *f) {
    nvdec *d = user;
    unsigned surfaces = f->min_num_decode_surfaces ? f->min_num_decode_surfaces : 20;
    uint32_t w = (uint32_t)(f->display_area.right - f->display_area.left);
    uint32_t h = (uint32_t)(f->display_area.bottom - f->display_area.top);
    CUVIDDECODECAPS caps;
    CUresult r;
    if (d->failed) return 0;
    if (w == 0 || h == 0 || w > 16384 || h > 16384)
        return fail(d, "the sequence header gives no usable display area", 0);
    if (d->decoder) { /* a repeated sequence header: the same format keeps the decoder */
        if (d->info.ulTargetWidth == w && d->info.ulTargetHeight == h && d->info.bitDepthMinus8 == f->bit_depth_luma_minus8)
            return (int)d->info.ulNumDecodeSurfaces;
        return fail(d, "the sequence changes size or depth mid-clip (not handled here)", 0);
    }
    memset(&caps, 0, sizeof caps);
    caps.eCodecType = f->codec, caps.eChromaFormat = f->chroma_format, caps.nBitDepthMinus8 = f->bit_depth_luma_minus8;
    if ((r = d->cv->cuvidGetDecoderCaps(&caps)) != CUDA_SUCCESS) return fail(d, "cuvidGetDecoderCaps failed", r);
    if (!caps.bIsSupported || f->chroma_format != cudaVideoChromaFormat_420 || f->coded_width > caps.nMaxWidth ||
        f->coded_height > caps.nMaxHeight) {
        snprintf(d->error, sizeof d->error, "NVDEC cannot decode this %s stream (%ux%u, %d-bit, chroma format %d; "
                 "supported %d, at most %ux%u, 4:2:0 only here)", d->codec_name, f->coded_width, f->coded_height,
                 8 + f->bit_depth_luma_minus8, (int)f->chroma_format, caps.bIsSupported, caps.nMaxWidth, caps.nMaxHeight);
        d->failed = 1;
        return 0;
    }
    CUVIDDECODECREATEINFO *ci = &d->info;
    memset(ci, 0, sizeof *ci);
    ci->CodecType = f->codec, ci->ChromaFormat = f->chroma_format, ci->bitDepthMinus8 = f->bit_depth_luma_minus8;
    ci->OutputFormat = f->bit_depth_luma_minus8 ? cudaVideoSurfaceFormat_P016 : cudaVideoSurfaceFormat_NV12;
    ci->DeinterlaceMode = cudaVideoDeinterlaceMode_Weave, ci->ulNumOutputSurfaces = 2;
    ci->ulCreationFlags = cudaVideoCreate_PreferCUVID, ci->ulNumDecodeSurfaces = surfaces;
    ci->ulWidth = ci->ulMaxWidth = f->coded_width, ci->ulHeight = ci->ulMaxHeight = f->coded_height;
    ci->ulTargetWidth = w, ci->ulTargetHeight = h;
    ci->display_area.left = (short)f->display_area.left, ci->display_area.top = (short)f->display_area.top;
    ci->display_area.right = (short)f->display_area.right, ci->display_area.bottom = (short)f->display_area.bottom;
    if ((r = d->cv->cuvidCreateDecoder(&d->decoder, ci)) != CUDA_SUCCESS) return fail(d, "cuvidCreateDecoder failed", r);
    nvdec_format nf;
    memset(&nf, 0, sizeof nf);
    nf.width = w, nf.height = h, nf.bit_depth = 8u + f->bit_depth_luma_minus8;
    nf.color.matrix_coefficients = f->video_signal_description.matrix_coefficients;
    nf.color.transfer_characteristics = f->video_signal_description.transfer_characteristics;
    nf.color.colour_primaries = f->video_signal_description.color_primaries;
    if (!nf.color.matrix_coefficients && !nf.color.transfer_characteristics && !nf.color.colour_primaries)
        nf.color.matrix_coefficients = nf.color.transfer_characteristics = nf.color.colour_primaries = 2; /* not filled */
    nf.color.full_range = f->video_signal_description.video_full_range_flag ? VK_TRUE : VK_FALSE;
    nf.color.x_chroma_offset = VK_CHROMA_LOCATION_COSITED_EVEN; /* H.264/HEVC's default siting (type 0) */
    nf.color.y_chroma_offset = VK_CHROMA_LOCATION_MIDPOINT;
    if (d->cb.format && d->cb.format(d->cb.user, &nf)) return fail(d, "the format callback refused the stream", 0);
    return (int)surfaces;
}

static int CUDAAPI on_decode(void *user, CUVIDPICPARAMS *pic) {
    nvdec *d = user;
    CUresult r;
    if (d->failed) return 0;
    if ((r = d->cv->cuvidDecodePicture(d->decoder, pic)) != CUDA_SUCCESS) return fail(d, "cuvidDecodePicture failed", r);
    return 1;
}

/* The display callback: map the frame on the stream, hand it over, unmap it. */
static int CUDAAPI on_display(void *user, CUVIDPARSERDISPINFO *di) {
    nvdec *d = user;
    CUVIDPROCPARAMS pp;
    CUdeviceptr src = 0;
    unsigned int pitch = 0;
    CUresult r;
    if (d->failed) return 0;
    if (!di) return 1; /* end of stream */
    memset(&pp, 0, sizeof pp);
    pp.progressive_frame = di->progressive_frame, pp.second_field = di->repeat_first_field + 1;
    pp.top_field_first = di->top_field_first, pp.unpaired_field = di->repeat_first_field < 0;
    pp.output_stream = d->stream;
    if (d->cb.output) { /* the probe's destination (nvdec_clip.h) */
        uint64_t dst = 0;
        uint32_t dst_pitch = 0;
        if (d->cb.output(d->cb.user, (uint32_t)d->frames, &dst, &dst_pitch))
            return fail(d, "the output callback stopped the decode", 0);
        pp.raw_output_dptr = dst, pp.raw_output_pitch = dst_pitch;
    }
    if ((r = d->cv->cuvidMapVideoFrame(d->decoder, di->picture_index, &src, &pitch, &pp)) != CUDA_SUCCESS)
        return fail(d, "cuvidMapVideoFrame failed", r);
    /* The CbCr rows follow the luma rows of the (even) target height. */
    nvdec_frame fr = {src, src + (CUdeviceptr)pitch * ((d->info.ulTargetHeight + 1) & ~1ul), pitch, (uint32_t)d->frames};
    int stop = d->cb.frame ? d->cb.frame(d->cb.user, &fr) : 0;
    if ((r = d->cv->cuvidUnmapVideoFrame(d->decoder, src)) != CUDA_SUCCESS) return fail(d, "cuvidUnmapVideoFrame failed", r);
    if (stop) return fail(d, "the frame callback stopped the decode", 0);
    d->frames++;
    return 1;
}

int nvdec_open(nvdec **out, const char *codec, struct CUstream_st *stream, const nvdec_callbacks *callbacks,
               char *why, size_t why_size) {
    nvdec *d;
    *out = NULL;
    if (strcmp(codec, "h264") && strcmp(codec, "hevc"))
        return snprintf(why, why_size, "unknown codec \"%s\" (h264 or hevc)", codec), -1;
    if (!(d = calloc(1, sizeof *d))) return snprintf(why, why_size, "out of memory"), -1;
    if (cuvid_load_functions(&d->cv, NULL) != 0) {
        free(d);
        return snprintf(why, why_size, "libnvcuvid.so.1 does not load: no NVDEC driver library here"), -1;
    }
    d->codec = strcmp(codec, "h264") ? cudaVideoCodec_HEVC : cudaVideoCodec_H264;
    d->codec_name = strcmp(codec, "h264") ? "HEVC" : "H.264";
    d->stream = stream, d->cb = *callbacks;
    *out = d;
    return 0;
}

static void teardown(nvdec *d) {
    if (d->parser) d->cv->cuvidDestroyVideoParser(d->parser);
    if (d->decoder) d->cv->cuvidDestroyDecoder(d->decoder);
    d->parser = NULL, d->decoder = NULL;
}

long nvdec_decode(nvdec *d, const void *data, size_t size) {
    CUVIDPARSERPARAMS pr;
    CUVIDSOURCEDATAPACKET pk;
    CUresult r;
    size_t at, chunk = 65536;
    d->frames = 0, d->failed = 0, d->error[0] = 0;
    memset(&pr, 0, sizeof pr);
    pr.CodecType = d->codec, pr.ulMaxNumDecodeSurfaces = 1, pr.ulMaxDisplayDelay = 1, pr.pUserData = d;
    pr.pfnSequenceCallback = on_sequence, pr.pfnDecodePicture = on_decode, pr.pfnDisplayPicture = on_display;
    if ((r = d->cv->cuvidCreateVideoParser(&d->parser, &pr)) != CUDA_SUCCESS) {
        fail(d, "cuvidCreateVideoParser failed", r);
        return -1;
    }
    for (at = 0; at < size && !d->failed; at += chunk) { /* as a demuxer would hand it over */
        memset(&pk, 0, sizeof pk);
        pk.payload = (const unsigned char *)data + at, pk.payload_size = (unsigned long)(size - at < chunk ? size - at : chunk);
        if ((r = d->cv->cuvidParseVideoData(d->parser, &pk)) != CUDA_SUCCESS && !d->failed)
            fail(d, "cuvidParseVideoData failed", r);
    }
    if (!d->failed) { /* flush: the frames still held for display order */
        memset(&pk, 0, sizeof pk);
        pk.flags = CUVID_PKT_ENDOFSTREAM;
        if ((r = d->cv->cuvidParseVideoData(d->parser, &pk)) != CUDA_SUCCESS && !d->failed)
            fail(d, "cuvidParseVideoData (end of stream) failed", r);
    }
    if (!d->failed && !d->decoder)
        snprintf(d->error, sizeof d->error, "no %s sequence found in %zu bytes: not an %s elementary stream", d->codec_name,
                 size, d->codec_name), d->failed = 1;
    teardown(d);
    return d->failed ? -1 : d->frames;
}

const char *nvdec_error(const nvdec *d) {
    return d->error;
}

void nvdec_close(nvdec *d) {
    if (!d) return;
    teardown(d);
    cuvid_free_functions(&d->cv);
    free(d);
}
