/*
 * nvdec_frames [--clips DIR] [--no-pipeline]: NVDEC into shared linear video frames, tested exhaustively (issue 28,
 * item 3). Clips and references: scripts/lab/make-clips.sh (DIR, default .dev/gpu/clips):
 *   h264_1080p.h264 (300 frames, B-frames -> NV12), hevc_main10_1080p.hevc (60 frames -> P010),
 *   each with CLIP.fnv: FNV-1a 64 of every frame of Debian ffmpeg's CPU decode (packed planes).
 * Per clip (the decode runs are nvdec_run.c's, shared with bench/c/nvdec_throughput.c):
 *   verify     the colour NVDEC reads from the VUI (CUVIDEOFORMAT) is the clip's tags (BT.709 for
 *              H.264, BT.2020 for HEVC: scripts/lab/make-clips.sh); every decoded frame copied
 *              (vkcuda_image_cuda_copy_from_pitched, one cuMemcpy2DAsync per plane) into a shared
 *              LINEAR frame, read back by Vulkan (vkCmdCopyImageToBuffer per plane aspect into a host
 *              buffer), hashed and compared with the CPU reference: 0 mismatching frames and the
 *              reference's frame count required; a pitch shorter than a row is refused
 *   pipeline   decode -> shared frame (two in flight, paced on one timeline, as
 *              examples/video/nvdec_to_vulkan.c) -> Vulkan samples it through the frame's YCbCr
 *              conversion: every frame of the clip through it. Its speed against NVDEC alone is
 *              the benchmark's (bench/c/nvdec_throughput.c, CTest bench_nvdec_throughput): tests
 *              test, benchmarks measure. --no-pipeline leaves it out (the compute-sanitizer runs:
 *              its CUDA calls are verify's, and its Vulkan pass is not what the sanitizer sees)
 * Bad input: 4 KiB of random bytes, the H.264 clip cut to a third, each clip given to the other
 * codec's parser: a clear error (or, cut, fewer frames) and no leak: vkcuda_live_objects_get all 0
 * after the context is gone. Prints "nvdec_frames: PASS"; without a CUDA GPU or NVDEC,
 * "SKIPPED: nvdec_frames: why" and exit 77 (1 with VKCUDA_REQUIRE_GPU=1).
 */
#include "nvdec_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define EXPECT(cond, ...) do { if (!(cond)) { printf("  FAIL: " __VA_ARGS__); printf("\n"); failures++; } } while (0)

int main(int argc, char **argv) {
    const char *dir = ".dev/gpu/clips";
    nvdec_run_clip clips[NVDEC_RUN_CLIPS];
    char error[512];
    int c, i, pipeline = 1;
    example ex;
    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--clips") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--no-pipeline")) pipeline = 0;
        else return printf("usage: nvdec_frames [--clips DIR] [--no-pipeline]\n"), 2;
    if (nvdec_run_open(&ex, "nvdec_frames") != 0) return 1;
    for (c = 0; c < NVDEC_RUN_CLIPS; c++) {
        nvdec_run_clip *clip = &clips[c];
        const nvdec_run_clip_kind *k = &nvdec_run_clip_kinds[c];
        if (nvdec_run_clip_load(dir, c, clip, error, sizeof error) != 0) return printf("nvdec_frames: FAIL: %s\n", error), 1;
        printf("%s (%s, %zu bytes, %ld reference frames)\n", k->file, k->codec, clip->bytes, clip->nref);
        nvdec_run r = nvdec_run_of(NVDEC_RUN_VERIFY, clip->ref, clip->nref);
        long frames = nvdec_run_decode(&ex, &r, k->codec, clip->data, clip->bytes, error, sizeof error);
        EXPECT(frames == clip->nref, "verify: %ld frames decoded, the reference has %ld%s%s", frames, clip->nref,
               frames < 0 ? ": " : "", error);
        EXPECT(r.mismatches == 0, "verify: %ld of %ld frames differ from the CPU decode", r.mismatches, frames);
        printf("  verify: %ld frames (%u-bit, %ux%u) read back by Vulkan, %ld differ from the CPU decode\n", frames,
               r.bit_depth, r.size[0], r.size[1], r.mismatches);
        EXPECT(r.short_pitch == VKCUDA_ERROR_INVALID_ARGUMENT, "a 16-byte pitch for a %u-texel row was not refused (%s)",
               r.size[0], vkcuda_result_to_string(r.short_pitch));
        printf("  colour from CUVIDEOFORMAT: matrix %u, transfer %u, primaries %u, %s range\n", r.color.matrix_coefficients,
               r.color.transfer_characteristics, r.color.colour_primaries, r.color.full_range ? "full" : "narrow");
        EXPECT(r.color.matrix_coefficients == k->matrix && r.color.transfer_characteristics == k->transfer &&
               r.color.colour_primaries == k->primaries && !r.color.full_range && r.bit_depth == k->bit_depth,
               "the stream's colour/depth is not the clip's tags (%u, %u, %u, narrow, %u-bit)", k->matrix, k->transfer,
               k->primaries, k->bit_depth);
        if (!pipeline) continue;
        nvdec_run p = nvdec_run_of(NVDEC_RUN_PIPELINE, clip->ref, clip->nref);
        frames = nvdec_run_decode(&ex, &p, k->codec, clip->data, clip->bytes, error, sizeof error);
        if (p.skipped[0]) {
            printf("  SKIPPED: %s pipeline: %s\n", k->file, p.skipped);
        } else {
            EXPECT(frames == clip->nref, "pipeline: %ld frames decoded and sampled, the reference has %ld%s%s", frames,
                   clip->nref, frames < 0 ? ": " : "", error);
            printf("  pipeline: %ld frames decoded, copied into the shared frame and sampled by Vulkan\n", frames);
        }
    }
    /* Bad input: each a clear error (or fewer frames), nothing left behind (counted at the end). */
    {
        unsigned char noise[4096];
        uint32_t x = 12345;
        nvdec_run r = nvdec_run_of(NVDEC_RUN_VERIFY, NULL, 0);
        for (i = 0; i < (int)sizeof noise; i++) x = x * 1664525u + 1013904223u, noise[i] = (unsigned char)(x >> 24);
        long frames = nvdec_run_decode(&ex, &r, "h264", noise, sizeof noise, error, sizeof error);
        printf("bad input: 4 KiB of random bytes as H.264: %ld (%s)\n", frames, error);
        EXPECT(frames < 0 && error[0], "random bytes were not refused");
        r = nvdec_run_of(NVDEC_RUN_VERIFY, NULL, 0), r.check_hashes = 0;
        frames = nvdec_run_decode(&ex, &r, "h264", clips[0].data, clips[0].bytes / 3, error, sizeof error);
        printf("bad input: the H.264 clip cut to %zu of %zu bytes: %ld frames%s%s\n", clips[0].bytes / 3, clips[0].bytes,
               frames, frames < 0 ? ", " : "", error);
        EXPECT(frames < clips[0].nref, "a third of the clip gave %ld frames", frames);
        for (c = 0; c < NVDEC_RUN_CLIPS; c++) {
            const char *other = nvdec_run_clip_kinds[1 - c].codec;
            r = nvdec_run_of(NVDEC_RUN_VERIFY, NULL, 0);
            frames = nvdec_run_decode(&ex, &r, other, clips[c].data, clips[c].bytes, error, sizeof error);
            printf("bad input: %s given to the %s parser: %ld (%s)\n", nvdec_run_clip_kinds[c].file, other, frames, error);
            EXPECT(frames < 0 && error[0], "a %s clip decoded as %s was not refused", nvdec_run_clip_kinds[c].codec, other);
        }
    }
    for (c = 0; c < NVDEC_RUN_CLIPS; c++) nvdec_run_clip_free(&clips[c]);
    example_close(&ex);
    EXPECT(rig_nothing_alive(), "library objects left after the context is gone (listed above)");
    printf("nvdec_frames: %s\n", failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
