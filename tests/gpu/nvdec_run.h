/*
 * nvdec_run.h: one decode of a clip through NVDEC (examples/video/nvdec_clip.c), in one of three
 * modes, shared by the test tests/gpu/nvdec_frames.c (verify, pipeline) and the benchmark
 * bench/c/nvdec_throughput.c (alone, pipeline), so that what the benchmark times is the path the
 * test checks:
 *   NVDEC_RUN_ALONE     NVDEC alone: decode + map (+ stream sync), no Vulkan
 *   NVDEC_RUN_PIPELINE  decode -> one cuMemcpy2DAsync per plane (vkcuda_image_cuda_copy_from_pitched)
 *                       into a shared LINEAR frame (two in flight, paced on one timeline, as
 *                       examples/video/nvdec_to_vulkan.c) -> Vulkan samples it through the frame's
 *                       YCbCr conversion (a compute pass into device-local RGBA)
 *   NVDEC_RUN_VERIFY    decode -> shared frame -> Vulkan copies both planes into a host buffer,
 *                       hashed (FNV-1a 64 of the packed planes) and compared with the CPU reference;
 *                       on the first frame a pitch shorter than a row is offered and must be refused
 * The clips and their references: scripts/lab/make-clips.sh (.dev/gpu/clips, carried by
 * scripts/gpu-bundle.sh). On the rig (RIG_EXAMPLE_CHECKS: a failed call ends the program, as in the
 * examples). Without NVDEC the run prints "SKIPPED: <program>: no NVDEC: <why>" and exits 77 (1 with
 * VKCUDA_REQUIRE_GPU=1).
 */
#ifndef VKCUDA_NVDEC_RUN_H
#define VKCUDA_NVDEC_RUN_H

#define RIG_EXAMPLE_CHECKS
#include "rig.h"

#include <stddef.h>
#include <stdint.h>

/* The clips of scripts/lab/make-clips.sh, with the colour tags it gives them (H.273 code points). */
#define NVDEC_RUN_CLIPS 2
typedef struct nvdec_run_clip_kind {
    const char *file, *codec;                          /* "h264_1080p.h264", "h264" */
    uint32_t matrix, transfer, primaries, bit_depth;   /* what CUVIDEOFORMAT must report */
} nvdec_run_clip_kind;
extern const nvdec_run_clip_kind nvdec_run_clip_kinds[NVDEC_RUN_CLIPS];

/* A clip in memory and its CPU reference (one FNV-1a 64 per frame, CLIP.fnv). */
typedef struct nvdec_run_clip {
    const nvdec_run_clip_kind *kind;
    unsigned char *data;
    size_t bytes;
    uint64_t *ref;
    long nref;
} nvdec_run_clip;
/* Reads DIR/<kind file> and its .fnv. 0, or -1 with the reason in `why`. */
int nvdec_run_clip_load(const char *dir, int kind, nvdec_run_clip *clip, char *why, size_t why_size);
void nvdec_run_clip_free(nvdec_run_clip *clip);

typedef enum nvdec_run_mode { NVDEC_RUN_ALONE, NVDEC_RUN_PIPELINE, NVDEC_RUN_VERIFY } nvdec_run_mode;
extern const char *const nvdec_run_mode_name[3]; /* "alone", "pipeline", "verify" */

typedef struct nvdec_run {
    /* In: */
    nvdec_run_mode mode;
    int check_hashes;                 /* VERIFY: compare with ref (0 for a clip cut short) */
    const uint64_t *ref;
    long nref;
    /* Out: */
    long mismatches;                  /* VERIFY: frames whose hash differs from ref */
    vkcuda_result short_pitch;        /* VERIFY: what a 16-byte pitch on frame 0 gave (INVALID_ARGUMENT) */
    uint32_t size[2], bit_depth;
    vkcuda_video_color color;         /* what NVDEC read from the stream's VUI */
    double t_first, t_end;            /* the first frame's arrival, the last frame consumed (s) */
    char skipped[512];                /* PIPELINE: why the device cannot sample this frame */
    /* Inside (made by the decode, destroyed before it returns): */
    example *ex;
    vkcuda_image *frame[2];
    vkcuda_image_plane_pointer pp[2];
    VkCommandBuffer cmd[2];
    vkcuda_semaphore *timeline;
    VkSemaphore vk_timeline;
    vk_owned_buffer host;             /* VERIFY: the packed planes as Vulkan read them */
    VkDeviceSize frame_bytes;
    VkSamplerYcbcrConversion conversion; /* PIPELINE: the sampling pass */
    VkSampler sampler;
    VkImageView view[2];
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    VkDescriptorPool pool;
    VkDescriptorSet set[2];
    vk_owned_buffer rgba;
} nvdec_run;

/* Once, after example_open: the Vulkan functions of the sampling pass; `program` names the skip
 * line. Returns 0, or -1 (printed) when the device lacks one. */
int nvdec_run_init(example *ex, const char *program);
/* A test program's start: stdout unbuffered, example_open (its skip), nvdec_run_init. */
int nvdec_run_open(example *ex, const char *program);
/* A run of `mode` against reference `ref` (NULL, 0: none), hashes checked. */
nvdec_run nvdec_run_of(nvdec_run_mode mode, const uint64_t *ref, long nref);
/* One decode of `bytes` bytes of `clip` as `codec` ("h264", "hevc"): the frames decoded, or -1 with
 * NVDEC's error in `error`. Every object made for it is destroyed before it returns. */
long nvdec_run_decode(example *ex, nvdec_run *r, const char *codec, const void *clip, size_t bytes, char *error,
                      size_t error_size);
/* The sampling pass of NVDEC_RUN_PIPELINE, for another decoder feeding shared frames (the FFmpeg
 * bridge's benchmark, bridges/ffmpeg/bench): r->ex, r->size and r->frame[0..1] (of `format`, made by
 * the caller, owned by `r` from then on) set first. 0, or 1 with r->skipped set where the device cannot
 * sample the frame. */
int nvdec_run_sampling_make(nvdec_run *r, VkFormat format);
/* Records, into r->cmd[s] (begun by the caller), the pass over slot s: acquire from CUDA, sample
 * through the frame's YCbCr conversion into r->rgba, release to CUDA. */
void nvdec_run_sampling_record(nvdec_run *r, int s);
/* Waits for the stream and the device, then destroys what `r` holds (frames, command buffers, the
 * pass, the host buffer, the timeline) and clears it. */
void nvdec_run_release(nvdec_run *r);
/* Frames per second from the first frame's arrival to the last frame consumed (the decoder's and the
 * frames' creation left out): (frames - 1) / (t_end - t_first); 0 below two frames. */
double nvdec_run_fps(const nvdec_run *r, long frames);

#endif /* VKCUDA_NVDEC_RUN_H */
