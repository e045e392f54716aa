/*
 * ffmpeg_throughput: decode -> Vulkan frames per second through FFmpeg and the bridge (issue 37,
 * "Speed"), against NVDEC alone and the library's own NVDEC path, on both clips of
 * scripts/lab/make-clips.sh (.dev/gpu/clips), the ratios in one run.
 *
 *   alone     NVDEC alone, no Vulkan: decode + map + stream sync (tests/gpu/nvdec_run.c)
 *   library   the library's NVDEC path: decode -> one cuMemcpy2DAsync per plane into a shared frame ->
 *             Vulkan samples it (nvdec_run.c's pipeline, as bench/c/nvdec_throughput.c)
 *   unsafe    FFmpeg (CUDA hwaccel on the bridge's device, AV_HWACCEL_FLAG_UNSAFE_OUTPUT) ->
 *             vkcuda_ffmpeg_frame_to_image into a shared frame -> Vulkan samples it
 *   default   the same with FFmpeg's defaults (it copies NVDEC's surface into a frame of its pool)
 *   ffmpeg    FFmpeg alone, no bridge, no Vulkan (unsafe output where it exists): decode + stream
 *             sync; for reading the others (where the time goes), no goal
 * The Vulkan side of library, unsafe and default is the same: two shared LINEAR frames (SAMPLED), two
 * in flight on one timeline, a compute pass sampling each through its YCbCr conversion
 * (nvdec_run_sampling_*). The bridge paths make no host wait per frame (the bridge holds the AVFrame
 * until its copies ran); the library path synchronises the stream per frame (NVDEC takes its mapped
 * surface back when the callback returns). FFmpeg decodes single-threaded (thread_count 1, its
 * default); the clip is demuxed into packets once, before the runs. A run's frames per second:
 * (frames - 1) / (last frame consumed - first frame's arrival), the decoder's and the frames' creation
 * left out, as nvdec_throughput. Per clip: one warm-up run of each mode (not timed), then --repeats
 * runs of each, the order rotated every repeat; the figures are medians.
 *
 * Device copies per frame, counted (never assumed):
 *   - FFmpeg's: its CUDA device's function table (the one libavcodec's nvdec and hwcontext_cuda
 *     call through) has its cuMemcpy2D, cuMemcpy2DAsync and cuMemcpyDtoDAsync entries replaced by
 *     counting wrappers. The table is FFmpeg-internal (AVCUDADeviceContext.internal->cuda_dl, the
 *     first field since FFmpeg 4): its entries are found by address (dlsym of libcuda.so.1), and
 *     where none matches the figure says "not counted". Counted in every run.
 *   - the bridge's: in the warm-up runs each vkcuda_ffmpeg_frame_to_image is captured
 *     (cuStreamBeginCapture, relaxed) and the graph's nodes counted by type (memcpy, kernel,
 *     memset), then launched; what the driver received, whoever issued it (the library's
 *     cuMemcpy2DAsync, the bridge's host function).
 *
 *   ffmpeg_throughput [--clips DIR] [--repeats N] [--csv FILE] [--strict]
 *
 * Prints per clip and mode the median fps (min .. max), the copies per frame, the ratios and the two
 * goals: unsafe >= 0.95 x alone, unsafe >= library. Exit 0 when every run decoded every frame (with
 * --strict also every goal met), 1 otherwise; "SKIPPED: ffmpeg_throughput: <why>" and 77 without a
 * CUDA GPU, NVDEC or FFmpeg's CUDA hwaccel (1 with VKCUDA_REQUIRE_GPU=1).
 */
#include "nvdec_run.h" /* the clips, NVDEC alone and the library's path, the sampling pass, the rig */

#include <dlfcn.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/hwcontext.h>
#include <libavutil/hwcontext_cuda.h>

#include "vkcuda_ffmpeg.h"

#define NAME "ffmpeg_throughput"
#define TARGET 0.95
#define BRIDGE(call) do { if ((call) != VKCUDA_SUCCESS) { \
    printf("%s: FAIL: %s: %s\n", NAME, #call, vkcuda_ffmpeg_last_error_message()); exit(1); } } while (0)

enum { ALONE, LIBRARY, UNSAFE, DEFAULT, FFMPEG, MODES };
static const char *const mode_name[MODES] = {"alone", "library", "unsafe", "default", "ffmpeg"};
static const char *const mode_what[MODES] = {
    "NVDEC alone (decode + map, no Vulkan)", "the library's NVDEC path -> shared frame -> Vulkan",
    "FFmpeg unsafe_output + bridge -> shared frame -> Vulkan", "FFmpeg defaults + bridge -> shared frame -> Vulkan",
    "FFmpeg alone (no bridge, no Vulkan)"};

/* ---- counting FFmpeg's device copies ------------------------------------------------- */

static unsigned long long ff_copies, ff_bytes;
static int ff_counted; /* 1 when at least one entry of FFmpeg's table was wrapped */
static CUresult (*real_2d_async)(const CUDA_MEMCPY2D *, CUstream);
static CUresult (*real_2d)(const CUDA_MEMCPY2D *);
static CUresult (*real_dtod_async)(CUdeviceptr, CUdeviceptr, size_t, CUstream);

static CUresult count_2d_async(const CUDA_MEMCPY2D *c, CUstream s) {
    ff_copies++, ff_bytes += (unsigned long long)c->WidthInBytes * c->Height;
    return real_2d_async(c, s);
}
static CUresult count_2d(const CUDA_MEMCPY2D *c) {
    ff_copies++, ff_bytes += (unsigned long long)c->WidthInBytes * c->Height;
    return real_2d(c);
}
static CUresult count_dtod_async(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
    ff_copies++, ff_bytes += n;
    return real_dtod_async(d, s, n, st);
}

static void *cuda_lib(void) {
    static void *lib;
    if (!lib) lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    return lib;
}

static void *cuda_sym(const char *name) {
    void *lib = cuda_lib();
    return lib ? dlsym(lib, name) : NULL;
}

/* Wraps the copy entries of the bridge's FFmpeg CUDA device's function table (see the top). */
static void count_ffmpeg_copies(vkcuda_ffmpeg *bridge) {
    AVBufferRef *dev = NULL;
    BRIDGE(vkcuda_ffmpeg_device_ref(bridge, &dev));
    AVCUDADeviceContext *hw = ((AVHWDeviceContext *)dev->data)->hwctx;
    void **table = hw->internal ? *(void ***)(void *)hw->internal : NULL;
    const char *names[3] = {"cuMemcpy2DAsync_v2", "cuMemcpy2D_v2", "cuMemcpyDtoDAsync_v2"};
    for (int k = 0; k < 3 && table; k++) {
        void *real = cuda_sym(names[k]), *wrap;
        if (!real) continue;
        if (k == 0) memcpy(&real_2d_async, &real, sizeof real), wrap = (void *)(uintptr_t)count_2d_async;
        else if (k == 1) memcpy(&real_2d, &real, sizeof real), wrap = (void *)(uintptr_t)count_2d;
        else memcpy(&real_dtod_async, &real, sizeof real), wrap = (void *)(uintptr_t)count_dtod_async;
        /* The first 48 entries: the copies sit near index 20 in every nv-codec-headers layout, and
         * every layout has more than 48 entries. */
        for (int i = 0; i < 48; i++)
            if (table[i] == real) table[i] = wrap, ff_counted = 1;
    }
    av_buffer_unref(&dev);
    printf("%s: FFmpeg's device copies: %s\n", NAME,
           ff_counted ? "counted (its CUDA function table's copy entries wrapped)"
                      : "NOT counted (its CUDA function table was not found)");
}

/* ---- counting the bridge's device copies (stream capture) ------------------------- */

static struct {
    CUresult (*begin)(CUstream, CUstreamCaptureMode);
    CUresult (*end)(CUstream, CUgraph *);
    CUresult (*nodes)(CUgraph, CUgraphNode *, size_t *);
    CUresult (*type)(CUgraphNode, CUgraphNodeType *);
    CUresult (*instantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*launch)(CUgraphExec, CUstream);
    CUresult (*exec_destroy)(CUgraphExec);
    CUresult (*destroy)(CUgraph);
} cap;

static int capture_load(void) {
    const char *names[8] = {"cuStreamBeginCapture_v2", "cuStreamEndCapture", "cuGraphGetNodes", "cuGraphNodeGetType",
                            "cuGraphInstantiateWithFlags", "cuGraphLaunch", "cuGraphExecDestroy", "cuGraphDestroy"};
    void *f[8];
    for (int i = 0; i < 8; i++)
        if (!(f[i] = cuda_sym(names[i]))) return 0;
    memcpy(&cap.begin, &f[0], sizeof f[0]), memcpy(&cap.end, &f[1], sizeof f[1]);
    memcpy(&cap.nodes, &f[2], sizeof f[2]), memcpy(&cap.type, &f[3], sizeof f[3]);
    memcpy(&cap.instantiate, &f[4], sizeof f[4]), memcpy(&cap.launch, &f[5], sizeof f[5]);
    memcpy(&cap.exec_destroy, &f[6], sizeof f[6]), memcpy(&cap.destroy, &f[7], sizeof f[7]);
    return 1;
}

typedef struct census {
    int failed; /* a capture call failed: not counted */
    int planes; /* of the shared frames */
    long frames;
    unsigned long long memcpy_nodes, kernel_nodes, memset_nodes, other_nodes;
} census;

/* ---- one FFmpeg run ---------------------------------------------------------------- */

typedef struct packets {
    AVCodecParameters *par;
    AVPacket **pkt;
    int n;
} packets;

static enum AVPixelFormat pick_cuda(AVCodecContext *c, const enum AVPixelFormat *fmts) {
    (void)c;
    for (; *fmts != AV_PIX_FMT_NONE; fmts++)
        if (*fmts == AV_PIX_FMT_CUDA) return *fmts;
    return AV_PIX_FMT_NONE;
}

static void demux(const char *path, packets *p) {
    AVFormatContext *fmt = NULL;
    int err = avformat_open_input(&fmt, path, NULL, NULL), vs = -1;
    if (err == 0) err = avformat_find_stream_info(fmt, NULL);
    if (err == 0) vs = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    if (err < 0 || vs < 0) printf("%s: FAIL: cannot demux %s\n", NAME, path), exit(1);
    p->par = avcodec_parameters_alloc();
    if (!p->par || avcodec_parameters_copy(p->par, fmt->streams[vs]->codecpar) < 0) exit(1);
    AVPacket *pkt = av_packet_alloc();
    while (pkt && av_read_frame(fmt, pkt) >= 0) {
        if (pkt->stream_index != vs) { av_packet_unref(pkt); continue; }
        AVPacket **grown = realloc(p->pkt, (size_t)(p->n + 1) * sizeof *grown);
        if (!grown) exit(1);
        p->pkt = grown;
        p->pkt[p->n++] = pkt;
        pkt = av_packet_alloc();
    }
    av_packet_free(&pkt);
    avformat_close_input(&fmt);
}

static void packets_free(packets *p) {
    for (int i = 0; i < p->n; i++) av_packet_free(&p->pkt[i]);
    free(p->pkt);
    avcodec_parameters_free(&p->par);
    memset(p, 0, sizeof *p);
}

typedef struct ff_run {
    nvdec_run r; /* the shared frames, command buffers, sampling pass and timeline */
    example *ex;
    vkcuda_ffmpeg *bridge;
    int mode, capture, planes;
    long frames;
    census *census;
} ff_run;

static void first_frame(ff_run *f, const AVFrame *frame) {
    example *ex = f->ex;
    nvdec_run *r = &f->r;
    const AVHWFramesContext *fc = (const AVHWFramesContext *)frame->hw_frames_ctx->data;
    VkFormat format;
    vkcuda_video_color color;
    BRIDGE(vkcuda_ffmpeg_format_from_av(fc->sw_format, &format));
    BRIDGE(vkcuda_ffmpeg_color_from_frame(frame, &color));
    r->size[0] = (uint32_t)frame->width, r->size[1] = (uint32_t)frame->height;
    vkcuda_image_create_info ci = {.flags = VKCUDA_IMAGE_CREATE_LINEAR_BIT, .format = format,
        .extent = {r->size[0], r->size[1], 1}, .usage = VK_IMAGE_USAGE_SAMPLED_BIT};
    for (int s = 0; s < 2; s++) {
        vkcuda_result made = vkcuda_image_create(ex->ctx, &ci, &r->frame[s]);
        if (made == VKCUDA_ERROR_UNSUPPORTED)
            exit(rig_skip(NAME, "no sampled shared linear frame of this format (the library's path skips too)"));
        CHECK(made);
        CHECK(vkcuda_image_set_video_color(r->frame[s], &color));
    }
    vkcuda_image_info info;
    CHECK(vkcuda_image_get_info(r->frame[0], &info));
    f->planes = (int)info.plane_count;
    if (nvdec_run_sampling_make(r, format)) exit(rig_skip(NAME, r->skipped));
    vkcuda_handoff_info to_cuda = example_handoff(ex, 0, 0);
    example_record(ex->cmd);
    for (int s = 0; s < 2; s++) {
        r->cmd[s] = example_command_buffer(ex);
        CHECK(vkcuda_image_cmd_release_to_cuda(r->frame[s], ex->cmd, &to_cuda, VK_IMAGE_LAYOUT_UNDEFINED));
    }
    example_run(ex, ex->cmd);
}

/* A census call that failed: said once, and no more capturing (the figure says "not counted"). */
static int census_failed(ff_run *f, CUresult r, const char *what) {
    const char *name = NULL;
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS) name = "?";
    printf("%s: the bridge's copies are not counted: %s failed (%s)\n", NAME, what, name);
    f->census->failed = 1;
    f->capture = 0;
    return 1;
}

/* The bridge's copy of `frame` into slot s, captured and counted (see the top). 0, or 1 when the
 * capture failed (said; the copy may not have run: this run is a warm-up, its frames unchecked). */
static int captured_copy(ff_run *f, const AVFrame *frame, int s) {
    CUstream stream = f->ex->stream;
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    CUgraphNode nodes[64];
    size_t n = 64;
    CUresult r;
    CHECK_CU(cuStreamSynchronize(stream)); /* nothing left for the bridge to release inside the capture */
    BRIDGE(vkcuda_ffmpeg_collect(f->bridge, NULL));
    if ((r = cap.begin(stream, CU_STREAM_CAPTURE_MODE_RELAXED)) != CUDA_SUCCESS) {
        census_failed(f, r, "cuStreamBeginCapture");
        BRIDGE(vkcuda_ffmpeg_frame_to_image(f->bridge, frame, f->r.frame[s]));
        return 1;
    }
    vkcuda_result got = vkcuda_ffmpeg_frame_to_image(f->bridge, frame, f->r.frame[s]);
    if ((r = cap.end(stream, &graph)) != CUDA_SUCCESS) return census_failed(f, r, "cuStreamEndCapture");
    if (got != VKCUDA_SUCCESS) {
        printf("%s: FAIL: a captured vkcuda_ffmpeg_frame_to_image: %s\n", NAME, vkcuda_ffmpeg_last_error_message());
        exit(1);
    }
    if ((r = cap.nodes(graph, nodes, &n)) != CUDA_SUCCESS) return census_failed(f, r, "cuGraphGetNodes");
    for (size_t i = 0; i < n && i < 64; i++) {
        CUgraphNodeType t;
        if ((r = cap.type(nodes[i], &t)) != CUDA_SUCCESS) return census_failed(f, r, "cuGraphNodeGetType");
        if (t == CU_GRAPH_NODE_TYPE_MEMCPY) f->census->memcpy_nodes++;
        else if (t == CU_GRAPH_NODE_TYPE_KERNEL) f->census->kernel_nodes++;
        else if (t == CU_GRAPH_NODE_TYPE_MEMSET) f->census->memset_nodes++;
        else if (t != CU_GRAPH_NODE_TYPE_HOST) f->census->other_nodes++;
    }
    f->census->frames++;
    f->census->planes = f->planes;
    if ((r = cap.instantiate(&exec, graph, 0)) != CUDA_SUCCESS) return census_failed(f, r, "cuGraphInstantiate");
    if ((r = cap.launch(exec, stream)) != CUDA_SUCCESS) return census_failed(f, r, "cuGraphLaunch");
    CHECK_CU(cap.exec_destroy(exec)); /* freed once the launch completed */
    CHECK_CU(cap.destroy(graph));
    return 0;
}

static void on_frame(ff_run *f, AVFrame *frame) {
    example *ex = f->ex;
    nvdec_run *r = &f->r;
    uint64_t n = (uint64_t)++f->frames;
    int s = (int)(n % 2);
    if (n == 1) r->t_first = now_s();
    if (frame->format != AV_PIX_FMT_CUDA) printf("%s: FAIL: a frame in system memory, not CUDA\n", NAME), exit(1);
    if (f->mode == FFMPEG) { /* decode (+ FFmpeg's copy), finished on the stream */
        CHECK_CU(cuStreamSynchronize(ex->stream));
        av_frame_unref(frame);
        return;
    }
    if (n == 1) first_frame(f, frame);
    if (n > 2) CHECK(vkcuda_semaphore_host_wait(r->timeline, 2 * n - 4, 10000000000ull)); /* cmd[s] is free */
    if (f->capture) captured_copy(f, frame, s);
    else BRIDGE(vkcuda_ffmpeg_frame_to_image(f->bridge, frame, r->frame[s]));
    av_frame_unref(frame); /* at once: the bridge holds it until its copies ran */
    if (n > 1) CHECK(vkcuda_semaphore_cuda_wait(r->timeline, 2 * n - 2, ex->stream)); /* slot s free for n + 1 */
    CHECK(vkcuda_semaphore_cuda_signal(r->timeline, 2 * n - 1, ex->stream));
    example_record(r->cmd[s]);
    nvdec_run_sampling_record(r, s);
    vkcuda_timeline_stage stage = {2 * n - 1, 2 * n};
    example_submit_stage(ex, r->cmd[s], r->vk_timeline, &stage);
}

/* One FFmpeg run of `mode`: the frames decoded (and fps), or -1 (printed). */
static long ffmpeg_run(example *ex, vkcuda_ffmpeg *bridge, const packets *p, int mode, census *c, double *fps) {
    ff_run f;
    memset(&f, 0, sizeof f);
    f.r = nvdec_run_of(NVDEC_RUN_PIPELINE, NULL, 0);
    f.r.ex = ex, f.ex = ex, f.bridge = bridge, f.mode = mode, f.census = c, f.capture = c != NULL;
    const AVCodec *codec = avcodec_find_decoder(p->par->codec_id);
    AVCodecContext *dec = codec ? avcodec_alloc_context3(codec) : NULL;
    if (!dec || avcodec_parameters_to_context(dec, p->par) < 0) printf("%s: FAIL: no decoder\n", NAME), exit(1);
    BRIDGE(vkcuda_ffmpeg_device_ref(bridge, &dec->hw_device_ctx));
    dec->get_format = pick_cuda;
    dec->thread_count = 1;
#ifdef AV_HWACCEL_FLAG_UNSAFE_OUTPUT
    if (mode != DEFAULT) dec->hwaccel_flags |= AV_HWACCEL_FLAG_UNSAFE_OUTPUT;
#endif
    if (avcodec_open2(dec, codec, NULL) < 0) exit(rig_skip(NAME, "avcodec_open2 failed (no CUDA hwaccel)"));
    vkcuda_semaphore_create_info sci = {0};
    CHECK(vkcuda_semaphore_create(ex->ctx, &sci, &f.r.timeline));
    CHECK(vkcuda_semaphore_get_vk_semaphore(f.r.timeline, &f.r.vk_timeline));
    AVFrame *frame = av_frame_alloc();
    int err = 0, i = 0;
    while (i <= p->n && err >= 0) { /* every packet, then the flush (NULL) */
        err = avcodec_send_packet(dec, i < p->n ? p->pkt[i] : NULL);
        if (err == AVERROR(EAGAIN)) err = 0; /* frames to receive first: the packet is sent again */
        else if (err >= 0) i++;
        while (err >= 0 && (err = avcodec_receive_frame(dec, frame)) >= 0) on_frame(&f, frame);
        if (err == AVERROR(EAGAIN) || err == AVERROR_EOF) err = 0;
        if (err < 0 && f.frames == 0) exit(rig_skip(NAME, "FFmpeg's CUDA hwaccel decodes nothing here"));
    }
    if (err < 0)
        printf("%s: FAIL: %s %s: decode error after %ld frames: %s\n", NAME, avcodec_get_name(p->par->codec_id),
               mode_name[mode], f.frames, av_err2str(err));
    if (f.frames > 0 && mode != FFMPEG)
        CHECK(vkcuda_semaphore_host_wait(f.r.timeline, 2 * (uint64_t)f.frames, 10000000000ull));
    f.r.t_end = now_s();
    *fps = nvdec_run_fps(&f.r, f.frames);
    av_frame_free(&frame);
    avcodec_free_context(&dec);
    nvdec_run_release(&f.r); /* the stream and the device idle, the run's objects destroyed */
    uint32_t pending = 0;
    BRIDGE(vkcuda_ffmpeg_collect(bridge, &pending));
    if (pending && !(c && c->failed))
        printf("%s: FAIL: the bridge still holds %u frames after the stream finished\n", NAME, pending), exit(1);
    return err < 0 ? -1 : f.frames;
}

/* ---- the benchmark ------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* FFmpeg's copies over the timed runs of a mode. */
typedef struct tally {
    unsigned long long copies, bytes;
    long frames;
} tally;

/* One run of `mode`: 0, or 1 (printed) when it did not decode the whole clip. FFmpeg's copies added to
 * `t` (NULL: not tallied). */
static int timed(example *ex, vkcuda_ffmpeg *bridge, const nvdec_run_clip *clip, const packets *p, int mode,
                 census *c, double *fps, tally *t) {
    long frames;
    char error[512] = "";
    unsigned long long c0 = ff_copies, b0 = ff_bytes;
    if (mode == ALONE || mode == LIBRARY) {
        nvdec_run r = nvdec_run_of(mode == ALONE ? NVDEC_RUN_ALONE : NVDEC_RUN_PIPELINE, NULL, 0);
        frames = nvdec_run_decode(ex, &r, clip->kind->codec, clip->data, clip->bytes, error, sizeof error);
        if (r.skipped[0]) exit(rig_skip(NAME, r.skipped));
        *fps = nvdec_run_fps(&r, frames);
    } else {
        frames = ffmpeg_run(ex, bridge, p, mode, c, fps);
    }
    if (frames != clip->nref || *fps <= 0) {
        printf("%s: FAIL: %s %s: %ld frames decoded, the clip has %ld%s%s\n", NAME, clip->kind->file, mode_name[mode],
               frames, clip->nref, error[0] ? ": " : "", error);
        return 1;
    }
    if (t) t->copies += ff_copies - c0, t->bytes += ff_bytes - b0, t->frames += frames;
    return 0;
}

int main(int argc, char **argv) {
    const char *dir = ".dev/gpu/clips", *csv = NULL;
    int repeats = 7, strict = 0, failed = 0, missed = 0, i, m;
    char why[512], path[1024];
    FILE *out = NULL;
    example ex;
    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--clips") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv = argv[++i];
        else if (!strcmp(argv[i], "--strict")) strict = 1;
        else return printf("usage: %s [--clips DIR] [--repeats N] [--csv FILE] [--strict]\n", NAME), 2;
    if (repeats < 1 || repeats > 1000) return printf("%s: --repeats takes 1 to 1000\n", NAME), 2;
    if (nvdec_run_open(&ex, NAME) != 0) return 1; /* "SKIPPED" (77) without a CUDA GPU */
    vkcuda_ffmpeg *bridge = NULL;
    BRIDGE(vkcuda_ffmpeg_create(ex.ctx, ex.stream, &bridge));
    count_ffmpeg_copies(bridge);
    int have_capture = capture_load();
#ifdef AV_HWACCEL_FLAG_UNSAFE_OUTPUT
    const int modes = MODES;
    const int order[MODES] = {ALONE, LIBRARY, UNSAFE, DEFAULT, FFMPEG};
#else /* FFmpeg before 6.1: NVDEC's frames are always its mapped surfaces; "unsafe" is FFmpeg's only way */
    const int modes = MODES - 1;
    const int order[MODES] = {ALONE, LIBRARY, UNSAFE, FFMPEG, DEFAULT};
    printf("%s: this FFmpeg (libavcodec %s) has no AV_HWACCEL_FLAG_UNSAFE_OUTPUT: its NVDEC frames are the mapped "
           "surfaces, 'unsafe' is its only path and 'default' is not run\n", NAME, LIBAVCODEC_IDENT);
#endif
    if (csv && !(out = fopen(csv, "w"))) return printf("%s: FAIL: cannot write %s\n", NAME, csv), 1;
    if (out) fprintf(out, "clip,what,value,unit,frames,repeats\n");
    double *fps = malloc((size_t)MODES * (size_t)repeats * sizeof *fps);
    if (!fps) return 1;
    for (int c = 0; c < NVDEC_RUN_CLIPS && !failed; c++) {
        nvdec_run_clip clip;
        packets p = {0};
        census cen[MODES];
        tally tal[MODES];
        double med[MODES] = {0}, lo[MODES] = {0}, hi[MODES] = {0}, warm;
        memset(cen, 0, sizeof cen), memset(tal, 0, sizeof tal);
        if (nvdec_run_clip_load(dir, c, &clip, why, sizeof why) != 0) return printf("%s: FAIL: %s\n", NAME, why), 1;
        snprintf(path, sizeof path, "%s/%s", dir, clip.kind->file);
        demux(path, &p);
        /* Warm-up, not timed: the bridge's copies captured and counted here. */
        for (m = 0; m < modes && !failed; m++) {
            int mode = order[m];
            census *cc = have_capture && (mode == UNSAFE || mode == DEFAULT) ? &cen[mode] : NULL;
            vkcuda_ffmpeg *wb = bridge; /* a census run has a bridge of its own: a failed capture stays in it */
            if (cc) BRIDGE(vkcuda_ffmpeg_create(ex.ctx, ex.stream, &wb));
            failed = timed(&ex, wb, &clip, &p, mode, cc, &warm, NULL);
            if (cc) vkcuda_ffmpeg_destroy(wb);
        }
        for (i = 0; i < repeats && !failed; i++) /* the order rotated every repeat */
            for (m = 0; m < modes && !failed; m++) {
                int mode = order[(m + i) % modes];
                failed = timed(&ex, bridge, &clip, &p, mode, NULL, &fps[mode * repeats + i], &tal[mode]);
            }
        if (failed) {
            packets_free(&p);
            nvdec_run_clip_free(&clip);
            break;
        }
        printf("%s: %s: %ld frames, %d repeats (medians, min .. max)\n", NAME, clip.kind->file, clip.nref, repeats);
        for (m = 0; m < modes; m++) {
            int mode = order[m];
            double *v = fps + mode * repeats;
            med[mode] = median(v, repeats);
            lo[mode] = v[0], hi[mode] = v[repeats - 1];
            printf("  %-8s %8.1f fps (%.1f .. %.1f)  %.3f x alone  %s\n", mode_name[mode], med[mode], lo[mode],
                   hi[mode], med[mode] / med[ALONE], mode_what[mode]);
            if (out)
                fprintf(out, "%s,%s,%.2f,frames/s median,%ld,%d\n", clip.kind->file, mode_what[mode], med[mode],
                        clip.nref, repeats);
        }
        for (m = 0; m < modes; m++) { /* the copies per frame, counted */
            int mode = order[m];
            if (mode != UNSAFE && mode != DEFAULT && mode != FFMPEG) continue;
            char ff[160], br[256];
            double ffc = tal[mode].frames ? (double)tal[mode].copies / (double)tal[mode].frames : 0;
            if (ff_counted)
                snprintf(ff, sizeof ff, "FFmpeg %.2f (%.0f bytes; over the %ld frames of the timed runs)", ffc,
                         tal[mode].frames ? (double)tal[mode].bytes / (double)tal[mode].frames : 0, tal[mode].frames);
            else snprintf(ff, sizeof ff, "FFmpeg not counted");
            if (mode == FFMPEG) snprintf(br, sizeof br, "no bridge");
            else if (!have_capture || !cen[mode].frames || cen[mode].failed)
                snprintf(br, sizeof br, "bridge not counted (no stream capture)");
            else snprintf(br, sizeof br, "bridge %.2f for %d planes (memcpy nodes per frame over %ld captured frames; "
                          "kernels %llu, memsets %llu, other %llu)",
                          (double)cen[mode].memcpy_nodes / (double)cen[mode].frames, cen[mode].planes, cen[mode].frames,
                          cen[mode].kernel_nodes, cen[mode].memset_nodes, cen[mode].other_nodes);
            int bridge_counted = mode != FFMPEG && cen[mode].frames && !cen[mode].failed;
            double total = (ff_counted ? ffc : 0) +
                           (bridge_counted ? (double)cen[mode].memcpy_nodes / (double)cen[mode].frames : 0);
            int all_counted = ff_counted && (mode == FFMPEG || bridge_counted);
            printf("  device copies per frame, %-8s %s; %s: ", mode_name[mode], ff, br);
            if (all_counted) printf("%.2f in all\n", total);
            else printf("the sum is not known (a part was not counted)\n");
            if (out && all_counted)
                fprintf(out, "%s,device copies per frame: %s,%.2f,copies/frame,%ld,%d\n", clip.kind->file,
                        mode_name[mode], total, clip.nref, repeats);
        }
        double r_alone = med[UNSAFE] / med[ALONE], r_lib = med[UNSAFE] / med[LIBRARY];
        int ok1 = r_alone >= TARGET, ok2 = r_lib >= 1.0;
        missed += !ok1 + !ok2;
        printf("  goal: unsafe >= %.2f x alone: %.3f %s; unsafe >= library: %.3f x %s\n", TARGET, r_alone,
               ok1 ? "met" : "MISSED", r_lib, ok2 ? "met" : "MISSED");
        if (modes == MODES) printf("  defaults / unsafe_output: %.3f\n", med[DEFAULT] / med[UNSAFE]);
        if (out) {
            fprintf(out, "%s,unsafe / alone,%.4f,target >= %.2f,%ld,%d\n", clip.kind->file, r_alone, TARGET, clip.nref,
                    repeats);
            fprintf(out, "%s,unsafe / library,%.4f,target >= 1,%ld,%d\n", clip.kind->file, r_lib, clip.nref, repeats);
        }
        packets_free(&p);
        nvdec_run_clip_free(&clip);
    }
    free(fps);
    if (out) fclose(out);
    vkcuda_ffmpeg_destroy(bridge);
    example_close(&ex);
    if (failed) return printf("%s: FAIL: a run did not decode its whole clip\n", NAME), 1;
    if (missed && strict) return printf("%s: FAIL: %d goals missed (--strict)\n", NAME, missed), 1;
    printf("%s: %s\n", NAME, missed ? "goals missed, not strict" : "PASS (every goal met)");
    return 0;
}
