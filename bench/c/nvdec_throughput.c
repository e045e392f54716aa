/*
 * nvdec_throughput: decode throughput of NVDEC alone against NVDEC into a shared frame that Vulkan
 * samples, on both clips of scripts/lab/make-clips.sh, the ratio in one run (issue 28, "Speed": the
 * pipeline at >= 0.95 x NVDEC alone).
 *
 *   alone      NVDEC alone: decode + map (cuvidMapVideoFrame on the stream, stream synchronised),
 *              no Vulkan
 *   pipeline   decode -> one cuMemcpy2DAsync per plane into a shared LINEAR frame (two in flight,
 *              paced on one timeline) -> Vulkan samples it through the frame's YCbCr conversion
 *              (a full-frame compute pass into device-local RGBA)
 * Both are tests/gpu/nvdec_run.c's runs: the path tests/gpu/nvdec_frames.c checks frame by frame
 * against the CPU decode. A run's frames per second count from the first frame's arrival to the last
 * frame consumed ((frames - 1) / that time): the decoder's and the frames' creation are left out of
 * both. Per clip: one warm-up run of each (not counted), then --repeats runs of each, alternated
 * (alone, pipeline; then pipeline, alone; ...); each figure is the median over the repeats and the
 * ratio is median(pipeline) / median(alone).
 *
 *   nvdec_throughput [--clips DIR] [--repeats N] [--csv FILE] [--strict]
 *
 * Prints per clip
 *   nvdec_throughput: CLIP frames F repeats N alone_fps A (min .. max) pipeline_fps P (min .. max) ratio R
 * and whether the 0.95 target is met. Exit 0 when every run decoded every frame of the clip (with
 * --strict, also every ratio >= 0.95), 1 otherwise; "SKIPPED: nvdec_throughput: <why>" and 77 without
 * a CUDA GPU or NVDEC (1 with VKCUDA_REQUIRE_GPU=1), or where the device cannot sample the frames.
 */
#include "nvdec_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME "nvdec_throughput"
#define TARGET 0.95

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of n values (sorted in place; the mean of the middle two for an even n). */
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* One timed run into *fps. 0; 1 (printed) when it did not decode the whole clip; 2 when the device
 * cannot sample the frame (the reason in `skipped`). */
static int timed(example *ex, nvdec_run_mode mode, const nvdec_run_clip *clip, double *fps, char *skipped, size_t n) {
    char error[512];
    nvdec_run r = nvdec_run_of(mode, NULL, 0);
    long frames = nvdec_run_decode(ex, &r, clip->kind->codec, clip->data, clip->bytes, error, sizeof error);
    if (r.skipped[0]) return snprintf(skipped, n, "%s", r.skipped), 2;
    *fps = nvdec_run_fps(&r, frames);
    if (frames != clip->nref || *fps <= 0) {
        printf("%s: FAIL: %s %s: %ld frames decoded, the clip has %ld%s%s\n", NAME, clip->kind->file,
               nvdec_run_mode_name[mode], frames, clip->nref, frames < 0 ? ": " : "", error);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *dir = ".dev/gpu/clips", *csv = NULL;
    int repeats = 7, strict = 0, failed = 0, missed = 0, measured = 0, c, i, m;
    char why[512];
    FILE *out = NULL;
    example ex;
    setvbuf(stdout, NULL, _IONBF, 0);
    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--clips") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv = argv[++i];
        else if (!strcmp(argv[i], "--strict")) strict = 1;
        else return printf("usage: %s [--clips DIR] [--repeats N] [--csv FILE] [--strict]\n", NAME), 2;
    if (repeats < 1 || repeats > 1000) return printf("%s: --repeats takes 1 to 1000\n", NAME), 2;
    example_open(&ex, NAME, 0);
    if (nvdec_run_init(&ex, NAME) != 0) return 1;
    if (csv && !(out = fopen(csv, "w"))) return printf("%s: FAIL: cannot write %s\n", NAME, csv), 1;
    if (out) fprintf(out, "clip,what,value,unit,frames,repeats\n");
    double *fps = malloc(2 * (size_t)repeats * sizeof *fps);
    if (!fps) return 1;
    for (c = 0; c < NVDEC_RUN_CLIPS; c++) {
        nvdec_run_clip clip;
        const char *file = nvdec_run_clip_kinds[c].file;
        double lo[2], hi[2], med[2];
        if (nvdec_run_clip_load(dir, c, &clip, why, sizeof why) != 0) {
            printf("%s: FAIL: %s\n", NAME, why);
            return 1;
        }
        /* Warm-up: the first decode of a clip also warms the decoder (../shared/gpu NOTES). */
        int got = timed(&ex, NVDEC_RUN_ALONE, &clip, &fps[0], why, sizeof why);
        if (!got) got = timed(&ex, NVDEC_RUN_PIPELINE, &clip, &fps[0], why, sizeof why);
        if (got == 2) printf("SKIPPED: %s: %s: %s\n", NAME, file, why);
        for (i = 0; i < repeats && !got; i++) /* alone, pipeline; pipeline, alone; ... */
            for (m = 0; m < 2 && !got; m++) {
                int mode = (m + i) % 2; /* 0 alone, 1 pipeline */
                got = timed(&ex, mode ? NVDEC_RUN_PIPELINE : NVDEC_RUN_ALONE, &clip, &fps[mode * repeats + i], why,
                            sizeof why);
            }
        if (got) {
            nvdec_run_clip_free(&clip);
            if (got == 1) {
                failed = 1;
                break;
            }
            continue;
        }
        for (m = 0; m < 2; m++) {
            double *v = fps + m * repeats;
            med[m] = median(v, repeats); /* sorts v */
            lo[m] = v[0], hi[m] = v[repeats - 1];
        }
        double ratio = med[1] / med[0];
        measured++;
        if (ratio < TARGET) missed++;
        printf("%s: %s frames %ld repeats %d alone_fps %.1f (%.1f .. %.1f) pipeline_fps %.1f (%.1f .. %.1f) ratio %.3f\n",
               NAME, file, clip.nref, repeats, med[0], lo[0], hi[0], med[1], lo[1], hi[1], ratio);
        printf("  NVDEC alone (decode + map) %.1f fps; decode -> shared frame -> Vulkan samples it %.1f fps: %.3f x, "
               "target >= %.2f %s\n", med[0], med[1], ratio, TARGET, ratio >= TARGET ? "met" : "MISSED");
        if (out) {
            fprintf(out, "%s,NVDEC alone (decode + map),%.2f,frames/s median,%ld,%d\n", file, med[0], clip.nref, repeats);
            fprintf(out, "%s,decode -> shared frame -> Vulkan samples it,%.2f,frames/s median,%ld,%d\n", file, med[1],
                    clip.nref, repeats);
            fprintf(out, "%s,pipeline / alone,%.4f,target >= %.2f,%ld,%d\n", file, ratio, TARGET, clip.nref, repeats);
        }
        nvdec_run_clip_free(&clip);
    }
    free(fps);
    if (out) fclose(out);
    example_close(&ex);
    if (failed) return printf("%s: FAIL: a run did not decode its whole clip\n", NAME), 1;
    if (!measured) return rig_skip(NAME, "no clip could be measured (the device cannot sample the frames)");
    if (missed && strict) return printf("%s: FAIL: %d of %d clips under %.2f x NVDEC alone (--strict)\n", NAME, missed,
                                        measured, TARGET), 1;
    printf("%s: %s (%d clips measured%s)\n", NAME, missed ? "target missed, not strict" : "PASS", measured,
           missed ? "; --strict fails this" : "");
    return 0;
}
