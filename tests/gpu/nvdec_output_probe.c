/*
 * nvdec_output_probe [--clips DIR] [--frames N]: does NVDEC write a decoded frame into memory the
 * application owns? (issue 28: "if the driver lets NVDEC write into memory the application owns,
 * use that and say so".)
 *
 * The NVDECODE API has no documented way: cuvidCreateDecoder allocates the output surfaces itself
 * (CUVIDDECODECREATEINFO::ulNumOutputSurfaces is a count) and cuvidMapVideoFrame returns a pointer
 * into one of them. The one application pointer it takes is CUVIDPROCPARAMS::raw_output_dptr (with
 * raw_output_pitch), which the headers list under "used for raw YUV input" (the post-processor fed
 * uncompressed YUV). This probe sets it for a decoded bitstream, on both clips of
 * scripts/lab/make-clips.sh: for each of the first N frames (default 16) the destination, a shared
 * Vulkan buffer (Vulkan-allocated, mapped into CUDA: memory the application owns), is filled with
 * 0xa5, the frame is mapped with raw_output_dptr = the buffer and raw_output_pitch = the row size
 * rounded up to 512, and the buffer is compared, row by row, with the frame cuvidMapVideoFrame
 * returned: luma at the buffer's start, CbCr at pitch x height (or pitch x height rounded up to 16).
 *
 * Prints per clip one of
 *   honoured   every probed frame is in the buffer (luma and CbCr; where the CbCr rows landed)
 *   ignored    the buffer still holds 0xa5 after every map: the frame is only in NVDEC's surface
 *   refused    cuvidMapVideoFrame fails with the field set (its CUresult)
 *   partial    anything else (counts of each)
 * then "nvdec_output_probe: DONE" (exit 0): the answer is the output, not a pass or a fail. Exit 1
 * (a FAIL line) when a clip cannot be read or the decode fails for another reason; "SKIPPED:
 * nvdec_output_probe: why" and 77 without a CUDA GPU or NVDEC (1 with VKCUDA_REQUIRE_GPU=1).
 */
#include "nvdec_run.h"
#include "nvdec_clip.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME "nvdec_output_probe"
#define SENTINEL 0xa5

typedef struct probe {
    example *ex;
    uint32_t width, height, bit_depth, bytes_per_sample, frames_to_probe;
    vkcuda_buffer *buffer;
    uint64_t dst, pitch, size;
    unsigned char *fill, *got, *want; /* host copies: the sentinel, the buffer, NVDEC's frame */
    long honoured, untouched, other, same_pointer;
    uint64_t chroma_at; /* where the CbCr rows were found (0: not yet) */
} probe;

static int on_format(void *user, const nvdec_format *f) {
    probe *p = user;
    vkcuda_buffer_create_info bi;
    if (p->buffer) return p->width != f->width || p->height != f->height;
    p->width = f->width, p->height = f->height, p->bit_depth = f->bit_depth, p->bytes_per_sample = f->bit_depth > 8 ? 2 : 1;
    p->pitch = ((uint64_t)p->width * p->bytes_per_sample + 511) & ~511ull;
    p->size = p->pitch * (((uint64_t)p->height + 63) & ~63ull) * 2; /* room for CbCr at any row alignment */
    memset(&bi, 0, sizeof bi);
    bi.size = p->size;
    CHECK(vkcuda_buffer_create(p->ex->ctx, &bi, &p->buffer));
    CHECK(vkcuda_buffer_get_cuda_pointer(p->buffer, &p->dst));
    p->fill = malloc(p->size), p->got = malloc(p->size), p->want = malloc(p->size);
    if (!p->fill || !p->got || !p->want) return 1;
    memset(p->fill, SENTINEL, p->size);
    return 0;
}

static int on_output(void *user, uint32_t index, uint64_t *dptr, uint32_t *pitch) {
    probe *p = user;
    if (index >= p->frames_to_probe) return 0; /* NVDEC's own surface, as usual */
    CHECK_CU(cuMemcpyHtoD(p->dst, p->fill, p->size));
    CHECK_CU(cuCtxSynchronize()); /* from pageable memory the copy may still be in flight */
    *dptr = p->dst, *pitch = (uint32_t)p->pitch;
    return 0;
}

/* Whether `rows` rows of `row` bytes at `got` (pitch gp) equal those at `want` (pitch wp). */
static int rows_equal(const unsigned char *got, uint64_t gp, const unsigned char *want, uint64_t wp, uint32_t rows,
                      uint64_t row) {
    uint32_t y;
    for (y = 0; y < rows; y++)
        if (memcmp(got + y * gp, want + y * wp, row)) return 0;
    return 1;
}

static int on_frame(void *user, const nvdec_frame *f) {
    probe *p = user;
    uint64_t row = (uint64_t)p->width * p->bytes_per_sample, h16 = ((uint64_t)p->height + 15) & ~15ull;
    uint64_t luma = f->pitch * p->height, chroma = f->pitch * (p->height / 2), i;
    if (f->index >= p->frames_to_probe) return 0;
    CHECK_CU(cuStreamSynchronize(p->ex->stream)); /* the map's post-processing is on the stream */
    if (f->luma == p->dst) p->same_pointer++;
    CHECK_CU(cuMemcpyDtoH(p->want, f->luma, luma));
    CHECK_CU(cuMemcpyDtoH(p->want + luma, f->chroma, chroma));
    CHECK_CU(cuMemcpyDtoH(p->got, p->dst, p->size));
    for (i = 0; i < p->size && p->got[i] == SENTINEL; i++) {
    }
    if (i == p->size) {
        p->untouched++;
        return 0;
    }
    int luma_ok = rows_equal(p->got, p->pitch, p->want, f->pitch, p->height, row);
    int at_h = rows_equal(p->got + p->pitch * p->height, p->pitch, p->want + luma, f->pitch, p->height / 2, row);
    int at_h16 = !at_h && rows_equal(p->got + p->pitch * h16, p->pitch, p->want + luma, f->pitch, p->height / 2, row);
    if (luma_ok && (at_h || at_h16)) {
        p->honoured++;
        p->chroma_at = p->pitch * (at_h ? p->height : h16);
    } else {
        if (p->other < 2)
            printf("  frame %u: the buffer was written but %s\n", f->index,
                   luma_ok ? "its CbCr rows are at neither pitch x height nor pitch x height16"
                           : "its luma rows differ from the frame NVDEC mapped");
        p->other++;
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *dir = ".dev/gpu/clips";
    uint32_t frames_to_probe = 16;
    char why[512];
    int c, i, failed = 0;
    example ex;
    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--clips") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--frames") && i + 1 < argc) frames_to_probe = (uint32_t)strtoul(argv[++i], NULL, 10);
        else return printf("usage: %s [--clips DIR] [--frames N]\n", NAME), 2;
    if (frames_to_probe < 1) return printf("%s: --frames takes a positive count\n", NAME), 2;
    if (nvdec_run_open(&ex, NAME) != 0) return 1;
    for (c = 0; c < NVDEC_RUN_CLIPS; c++) {
        nvdec_run_clip clip;
        probe p;
        nvdec *d;
        if (nvdec_run_clip_load(dir, c, &clip, why, sizeof why) != 0) return printf("%s: FAIL: %s\n", NAME, why), 1;
        memset(&p, 0, sizeof p);
        p.ex = &ex, p.frames_to_probe = frames_to_probe;
        nvdec_callbacks cb = {&p, on_format, on_frame, on_output};
        if (nvdec_open(&d, clip.kind->codec, ex.stream, &cb, why, sizeof why) != 0) {
            char line[600];
            snprintf(line, sizeof line, "no NVDEC: %s", why);
            return rig_skip(NAME, line);
        }
        long frames = nvdec_decode(d, clip.data, clip.bytes);
        long probed = p.honoured + p.untouched + p.other;
        printf("%s: %s (%ux%u, %u-bit samples in %u bytes), destination pitch %llu:\n", NAME, clip.kind->file, p.width,
               p.height, p.bit_depth, p.bytes_per_sample, (unsigned long long)p.pitch);
        if (frames < 0 && strstr(nvdec_error(d), "cuvidMapVideoFrame")) {
            printf("  refused: %s (after %ld probed frames)\n", nvdec_error(d), probed);
        } else if (frames != clip.nref) {
            printf("%s: FAIL: %s: %ld frames decoded, the clip has %ld%s%s\n", NAME, clip.kind->file, frames, clip.nref,
                   frames < 0 ? ": " : "", frames < 0 ? nvdec_error(d) : "");
            failed = 1;
        } else if (p.honoured == probed) {
            printf("  honoured: %ld of %ld frames written into the application's buffer (CbCr at offset %llu = pitch x "
                   "%llu); cuvidMapVideoFrame returned the buffer itself %ld times\n", p.honoured, probed,
                   (unsigned long long)p.chroma_at, (unsigned long long)(p.chroma_at / p.pitch), p.same_pointer);
        } else if (p.untouched == probed) {
            printf("  ignored: the buffer still holds 0x%02x after each of %ld maps: the frame is only in NVDEC's own "
                   "output surface\n", SENTINEL, probed);
        } else {
            printf("  partial: %ld honoured, %ld untouched, %ld written differently, of %ld\n", p.honoured, p.untouched,
                   p.other, probed);
        }
        nvdec_close(d);
        CHECK_CU(cuStreamSynchronize(ex.stream));
        vkcuda_buffer_destroy(p.buffer);
        free(p.fill), free(p.got), free(p.want);
        nvdec_run_clip_free(&clip);
    }
    example_close(&ex);
    if (failed) return 1;
    printf("%s: DONE\n", NAME);
    return 0;
}
