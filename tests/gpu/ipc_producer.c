/*
 * ipc_producer: the CUDA process of a two-process pipeline. It allocates a shared
 * buffer with CUDA (VKCUDA_ALLOCATOR_CUDA: cuMemCreate, exported as a POSIX fd) and a
 * timeline semaphore, connects to ipc_consumer's Unix socket, and sends both
 * (vkcuda_buffer_send, vkcuda_semaphore_send: a description plus an fd by
 * SCM_RIGHTS). Then for every frame k a CUDA stream waits on the timeline for 2k
 * (the consumer is done with frame k-1), a kernel writes frame k's pattern into the
 * buffer (fill_pattern, seed of k), and the stream signals 2k+1; the consumer's
 * Vulkan submit waits for 2k+1, copies the buffer out and signals 2k+2. The host
 * never waits on the GPU inside the loop except to stay at most one frame ahead.
 * At the end the consumer reports how many frames and words it checked.
 *
 *   ipc_producer SOCKET_PATH [--frames N] [--size BYTES] [--vulkan-only] [--timeout-ms MS]
 *   ipc_producer [--frames N] [--size BYTES] [--vulkan-only]   (starts ipc_consumer itself)
 *
 * Defaults: 1000 frames of 1048576 bytes (a multiple of 4). With SOCKET_PATH it
 * connects to a consumer listening there (retrying while it starts); without it,
 * it makes a socket in a new temporary directory and starts ipc_consumer (from this
 * executable's directory) on it.
 *
 * Without a CUDA GPU it says why (to the consumer too) and exits 77 (skipped), or 1
 * with VKCUDA_REQUIRE_GPU=1. --vulkan-only is the self-test for machines without
 * CUDA (lavapipe): a Vulkan-only context, a Vulkan-allocated buffer, the pattern
 * written by Vulkan copies, and the processes taking turns by messages on the socket
 * instead of the timeline (lavapipe cannot share semaphores).
 *
 * The last line is "ipc_producer: PASS: ..." or "ipc_producer: FAIL: ..." (or SKIP).
 */
#define _POSIX_C_SOURCE 200809L
#include <vkcuda.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ipc_test.h" /* and rig.h */

/* Connects to `path`, retrying while the consumer starts; the socket or -1. */
static int connect_retry(const char *path, uint64_t timeout_ns) {
    struct sockaddr_un addr;
    uint64_t deadline = now_ns() + timeout_ns;
    if (strlen(path) >= sizeof addr.sun_path) {
        printf("  socket path too long: %s\n", path);
        return -1;
    }
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, path, strlen(path) + 1);
    for (;;) {
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        if (s < 0) return -1;
        if (connect(s, (const struct sockaddr *)&addr, sizeof addr) == 0) return s;
        close(s);
        if ((errno != ENOENT && errno != ECONNREFUSED) || now_ns() > deadline) {
            printf("  connecting to %s: %s\n", path, strerror(errno));
            return -1;
        }
        sleep_ms(20);
    }
}

/* ---- the producer ---------------------------------------------------------------------- */

static struct {
    vkcuda_buffer *buffer;
    uint64_t cuda_pointer;
    vkcuda_semaphore *sem;
    /* --vulkan-only */
    vk_owned_buffer staging;
    int conn;
    uint64_t frames, size;
    result res;
} P;

static example E; /* the device: rig.h */

/* The context, the CUDA stream and kernels, the shared buffer and timeline. Sets
 * `*skipped` (with `why`) when this machine cannot run the CUDA half. */
static int setup(int vulkan_only, int *skipped, char *why, size_t why_size) {
    vkcuda_buffer_create_info bi;
    vkcuda_result r;
    int ok = 0;
    if (!rig_available(vulkan_only, why, why_size)) {
        *skipped = 1;
        FAILF("%s", why);
    }
    rig_open(&E, "ipc_producer", vulkan_only, NULL);
    memset(&bi, 0, sizeof bi);
    bi.size = P.size;
    if (E.cuda) {
        vkcuda_semaphore_create_info sci;
        memset(&sci, 0, sizeof sci);
        sci.semaphore_type = VKCUDA_SEMAPHORE_TYPE_TIMELINE;
        r = vkcuda_semaphore_create(E.ctx, &sci, &P.sem);
        if (r == VKCUDA_ERROR_EXTENSION_NOT_PRESENT || r == VKCUDA_ERROR_UNSUPPORTED) {
            snprintf(why, why_size, "vkcuda_semaphore_create -> %s: %.800s", vkcuda_result_to_string(r),
                     gpu_test_message());
            *skipped = 1;
            FAILF("%s", why);
        }
        CHECK_VKCUDA(r);
        bi.allocator = VKCUDA_ALLOCATOR_CUDA;
        CHECK_VKCUDA(vkcuda_buffer_create(E.ctx, &bi, &P.buffer));
        CHECK_VKCUDA(vkcuda_buffer_get_cuda_pointer(P.buffer, &P.cuda_pointer));
    } else {
        bi.allocator = VKCUDA_ALLOCATOR_VULKAN;
        CHECK_VKCUDA(vkcuda_buffer_create(E.ctx, &bi, &P.buffer));
        CHECK_VK(vk_owned_buffer_create(&E.vk, P.size, VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                                        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                        &P.staging));
    }
    ok = 1;
done:
    return ok;
}

/* Host reference of the kernel: frame k's words, written into `dst`. */
static void host_pattern(void *dst, uint64_t size, uint64_t frame) {
    uint32_t *w = (uint32_t *)dst;
    uint64_t i, n = size / 4;
    uint32_t seed = frame_seed(frame);
    for (i = 0; i < n; i++) {
        uint32_t v = pattern_word(i, seed);
        unsigned char *b = (unsigned char *)&w[i];
        b[0] = (unsigned char)v; /* little-endian, as the kernel stores it */
        b[1] = (unsigned char)(v >> 8);
        b[2] = (unsigned char)(v >> 16);
        b[3] = (unsigned char)(v >> 24);
    }
}

/* --vulkan-only: frame k written by a Vulkan copy (what the kernel writes), handed
 * to the consumer (VK_QUEUE_FAMILY_EXTERNAL), announced on the socket. */
static int vulkan_frame(uint64_t k) {
    VkBufferCopy copy;
    VkBuffer dst = VK_NULL_HANDLE;
    vkcuda_handoff_info write = example_handoff(&E, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
    uint64_t ack = UINT64_MAX;
    VkResult vr;
    int ok = 0, r;
    host_pattern(P.staging.mapped, P.size, k);
    CHECK_VK(vk_owned_buffer_flush(&E.vk, &P.staging));
    CHECK_VK(rig_begin(E.cmd, RIG_ONCE));
    CHECK_VKCUDA(vkcuda_buffer_cmd_acquire_from_cuda(P.buffer, E.cmd, &write));
    copy.srcOffset = copy.dstOffset = 0;
    copy.size = P.size;
    CHECK_VKCUDA(vkcuda_buffer_get_vk_buffer(P.buffer, &dst));
    vkCmdCopyBuffer(E.cmd, P.staging.buffer, dst, 1, &copy);
    CHECK_VKCUDA(vkcuda_buffer_cmd_release_to_cuda(P.buffer, E.cmd, &write));
    vr = rig_submit_and_wait(&E, E.cmd);
    CHECK(vr == VK_SUCCESS, "frame %" PRIu64 ": the copy did not finish (%s)", k, vk_result_name(vr));
    CHECK(send_all(P.conn, &k, sizeof k) == 0, "announcing frame %" PRIu64 ": %s", k, strerror(errno));
    r = recv_all(P.conn, &ack, sizeof ack, 10 * SECOND);
    CHECK(r == 0, "frame %" PRIu64 ": waiting for the consumer: %s", k, recv_error(r));
    CHECK(ack == k, "the consumer acknowledged frame %" PRIu64 ", expected %" PRIu64, ack, k);
    ok = 1;
done:
    return ok;
}

/* Frame k on the CUDA stream: wait for 2k, write the pattern, signal 2k+1. */
static int cuda_frame(uint64_t k) {
    int ok = 0;
    /* At most one frame ahead of the consumer (a stream that runs far ahead of the
     * waits it depends on only fills its queue). */
    if (k >= 2) CHECK_VKCUDA(vkcuda_semaphore_host_wait(P.sem, 2 * k - 2, 10 * SECOND));
    CHECK_VKCUDA(vkcuda_semaphore_cuda_wait(P.sem, 2 * k, E.stream));
    CHECK_CU(cuda_fill_pattern(&E.kernels, E.stream, P.cuda_pointer, P.size, frame_seed(k)));
    CHECK_VKCUDA(vkcuda_semaphore_cuda_signal(P.sem, 2 * k + 1, E.stream));
    ok = 1;
done:
    return ok;
}

/* After the last frame: the consumer is done with it, and the buffer still holds it. */
static int cuda_final_check(void) {
    unsigned char *host = NULL;
    uint64_t i, n = P.size / 4, bad = 0;
    uint32_t seed = frame_seed(P.frames - 1);
    int ok = 0;
    CHECK_VKCUDA(vkcuda_semaphore_host_wait(P.sem, 2 * P.frames, 10 * SECOND));
    host = (unsigned char *)malloc((size_t)P.size);
    CHECK(host != NULL, "out of host memory");
    CHECK_CU(cuStreamSynchronize(E.stream));
    CHECK_CU(cuMemcpyDtoH(host, P.cuda_pointer, (size_t)P.size));
    for (i = 0; i < n; i++)
        if (load_word(host, P.size, i) != pattern_word(i, seed)) bad++;
    CHECK(bad == 0, "%" PRIu64 " words of the last frame differ in the producer's own CUDA view", bad);
    ok = 1;
done:
    free(host);
    return ok;
}

static CUresult stream_wait(uint64_t timeout_ns) {
    uint64_t deadline = now_ns() + timeout_ns;
    for (;;) {
        CUresult r = cuStreamQuery(E.stream);
        if (r != CUDA_ERROR_NOT_READY) return r;
        if (now_ns() > deadline) return CUDA_ERROR_NOT_READY;
        sleep_ms(1);
    }
}

static void teardown(int failed) {
    if (failed && P.sem != NULL) {
        /* The stream may wait for a value the consumer will never signal. */
        uint64_t v = 0;
        if (vkcuda_semaphore_get_value(P.sem, &v) == VKCUDA_SUCCESS &&
            vkcuda_semaphore_host_signal(P.sem, v + (1u << 20)) == VKCUDA_SUCCESS)
            printf("  unblocking the stream: host-signalled %" PRIu64 "\n", v + (1u << 20));
    }
    if (E.stream != NULL && stream_wait(10 * SECOND) != CUDA_SUCCESS)
        printf("  teardown: the CUDA stream did not finish\n");
    if (E.vh.device != VK_NULL_HANDLE) vkDeviceWaitIdle(E.vh.device);
    if (P.staging.buffer != VK_NULL_HANDLE) vk_owned_buffer_destroy(&E.vk, &P.staging);
    vkcuda_semaphore_destroy(P.sem);
    vkcuda_buffer_destroy(P.buffer);
    rig_close(&E);
    if (P.conn >= 0) close(P.conn);
}

/* 0 pass, 1 fail, EXIT_SKIP skipped. */
static int produce(const char *path, int vulkan_only, uint64_t timeout_ns) {
    vkcuda_share_options opts;
    hello h, reply;
    char why[1024] = "";
    int skipped = 0, ok = 0, have_setup, r;
    uint64_t k, t0 = now_ns(), t_frames = 0;

    P.conn = -1;
    have_setup = setup(vulkan_only, &skipped, why, sizeof why);
    if (!have_setup && !skipped) goto done;
    P.conn = connect_retry(path, timeout_ns);
    CHECK(P.conn >= 0, "could not connect to the consumer at %s", path);
    memset(&h, 0, sizeof h);
    memcpy(h.magic, HELLO_MAGIC, 8);
    h.mode = skipped ? MODE_SKIP : vulkan_only ? MODE_VULKAN_ONLY : MODE_CUDA;
    h.frames = P.frames;
    h.size = P.size;
    snprintf(h.note, sizeof h.note, "%.*s", (int)sizeof h.note - 1, why);
    CHECK(send_all(P.conn, &h, sizeof h) == 0, "sending the hello: %s", strerror(errno));
    if (skipped) goto done;
    r = recv_all(P.conn, &reply, sizeof reply, timeout_ns);
    CHECK(r == 0, "waiting for the consumer's answer: %s", recv_error(r));
    CHECK(memcmp(reply.magic, HELLO_MAGIC, 8) == 0, "the peer is not ipc_consumer (bad answer)");
    reply.note[sizeof reply.note - 1] = '\0';
    if (reply.mode == MODE_SKIP) {
        snprintf(why, sizeof why, "the consumer cannot run: %s", reply.note);
        skipped = 1;
        goto done;
    }
    CHECK(reply.mode == MODE_READY, "unknown answer %u", reply.mode);

    /* The library's messages: descriptions, fds by SCM_RIGHTS; only a peer of this
     * user is accepted (the default check). */
    memset(&opts, 0, sizeof opts);
    opts.timeout_ns = timeout_ns;
    CHECK_VKCUDA(vkcuda_buffer_send(P.buffer, P.conn, &opts));
    if (P.sem != NULL) CHECK_VKCUDA(vkcuda_semaphore_send(P.sem, P.conn, &opts));
    printf("ipc_producer: sent the %s buffer%s; %" PRIu64 " frames of %" PRIu64 " bytes\n",
           E.cuda ? "CUDA-allocated" : "Vulkan-allocated", P.sem ? " and the timeline" : "", P.frames, P.size);

    t_frames = now_ns();
    for (k = 0; k < P.frames; k++)
        if (!(E.cuda ? cuda_frame(k) : vulkan_frame(k))) goto done;
    if (E.cuda && !cuda_final_check()) goto done;
    t_frames = now_ns() - t_frames;
    r = recv_all(P.conn, &P.res, sizeof P.res, 10 * SECOND);
    CHECK(r == 0, "waiting for the consumer's result: %s", recv_error(r));
    CHECK(memcmp(P.res.magic, RESULT_MAGIC, 8) == 0, "the consumer's result is garbled");
    printf("ipc_producer: the consumer checked %" PRIu64 " frames, %" PRIu64 " words, %" PRIu64
           " mismatched\n",
           P.res.frames_checked, P.res.words, P.res.mismatches);
    CHECK(P.res.frames_checked == P.frames && P.res.mismatches == 0,
          "the consumer checked %" PRIu64 " of %" PRIu64 " frames with %" PRIu64 " mismatched words",
          P.res.frames_checked, P.frames, P.res.mismatches);
    printf("ipc_producer: %" PRIu64 " frames in %.3f s (%.1f us a frame)\n", P.frames, (double)t_frames * 1e-9,
           (double)t_frames * 1e-3 / (double)P.frames);
    ok = 1;
done:
    if (!ok && !skipped && P.conn >= 0 && P.res.magic[0] == '\0') {
        /* The consumer may have said why it stopped. */
        result res;
        if (recv_all(P.conn, &res, sizeof res, 100 * MS) == 0 && memcmp(res.magic, RESULT_MAGIC, 8) == 0)
            printf("  the consumer reported %" PRIu64 " frames checked, %" PRIu64 " mismatched words\n",
                   res.frames_checked, res.mismatches);
    }
    teardown(!ok);
    if (!rig_nothing_alive()) {
        printf("  FAIL: objects left alive after destroying everything\n");
        ok = 0;
    }
    if (skipped) return rig_skip("ipc_producer", why);
    printf("ipc_producer: %s: %" PRIu64 " frames written, the consumer checked %" PRIu64 " frames (%" PRIu64
           " words, %" PRIu64 " mismatched)%s (%.1f s)%s%s\n",
           ok ? "PASS" : "FAIL", ok ? P.frames : 0, P.res.frames_checked, P.res.words, P.res.mismatches,
           vulkan_only ? " [Vulkan-only self-test]" : "", (double)(now_ns() - t0) * 1e-9, ok ? "" : ": ",
           ok ? "" : gpu_test_first_failure());
    return ok ? 0 : 1;
}

/* ---- the one-command demo: start the consumer next to this executable ---------------- */

static int produce_here(const char *path, void *vulkan_only) {
    return produce(path, *(const int *)vulkan_only, 30 * SECOND);
}

static void usage(void) {
    printf("usage: ipc_producer SOCKET_PATH [--frames N] [--size BYTES] [--vulkan-only] [--timeout-ms MS]\n"
           "       ipc_producer [--frames N] [--size BYTES] [--vulkan-only]   (starts ipc_consumer itself)\n"
           "  defaults: 1000 frames, 1048576 bytes (a multiple of 4)\n");
}

int main(int argc, char **argv) {
    const char *path = NULL;
    uint64_t timeout_ms = 30000;
    int vulkan_only = 0, i;
    setvbuf(stdout, NULL, _IOLBF, 0);
    P.frames = 1000;
    P.size = 1024 * 1024;
    printf("ipc_producer: vkcuda %s\n", vkcuda_version_string());
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--frames") == 0 && v) {
            P.frames = strtoull(v, NULL, 10);
            i++;
        } else if (strcmp(a, "--size") == 0 && v) {
            P.size = strtoull(v, NULL, 10);
            i++;
        } else if (strcmp(a, "--timeout-ms") == 0 && v) {
            timeout_ms = strtoull(v, NULL, 10);
            i++;
        } else if (strcmp(a, "--vulkan-only") == 0) {
            vulkan_only = 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage();
            return 0;
        } else if (a[0] != '-' && path == NULL) {
            path = a;
        } else {
            usage();
            printf("ipc_producer: FAIL: bad argument '%s'\n", a);
            return 1;
        }
    }
    if (P.frames == 0 || P.size == 0 || P.size % 4 != 0) {
        usage();
        printf("ipc_producer: FAIL: bad --frames or --size\n");
        return 1;
    }
    if (path == NULL) return ipc_run_both("ipc_producer", "ipc_consumer", NULL, produce_here, &vulkan_only);
    return produce(path, vulkan_only, timeout_ms * MS);
}
