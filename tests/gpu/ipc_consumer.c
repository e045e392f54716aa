/*
 * ipc_consumer: the Vulkan process of a two-process pipeline. It listens on a Unix
 * socket path, receives a shared buffer and a timeline semaphore from ipc_producer
 * (the CUDA process), and for every frame k submits Vulkan work that waits on the
 * timeline for the producer's value 2k+1, copies the buffer into host-visible
 * memory and signals 2k+2; the host checks every 32-bit word of every frame
 * against the pattern the producer's kernel wrote (pattern_word(i, seed of k)).
 *
 *   ipc_consumer SOCKET_PATH [--timeout-ms MS]
 *   ipc_consumer [--frames N] [--size BYTES] [--vulkan-only]
 *
 * With SOCKET_PATH it creates the socket (mode 0600: only this user can connect;
 * the library checks the peer's uid again with SO_PEERCRED), accepts one producer
 * and runs as many frames as the producer says (its --frames). Without it, it is
 * the whole demo in one command: it makes a socket in a new temporary directory,
 * starts ipc_producer (from this executable's directory) on it with the options
 * given, and runs its own half (tests/gpu/ipc_demo.sh starts the two by hand).
 *
 * The consumer itself needs no CUDA: its context is Vulkan-only. The producer needs
 * a CUDA GPU; without one it says so, the consumer exits 77 (skipped), or 1 with
 * VKCUDA_REQUIRE_GPU=1. --vulkan-only (passed to the producer) is the self-test for
 * machines without CUDA (lavapipe): no shared semaphore (lavapipe cannot export
 * one), the producer writes the pattern with Vulkan copies and the two processes
 * take turns by messages on the socket instead; the buffer crosses all the same.
 *
 * The last line is "ipc_consumer: PASS: ..." or "ipc_consumer: FAIL: ..." (or SKIP).
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
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ipc_test.h" /* and rig.h */

/* ---- the consumer ---------------------------------------------------------------------- */

static struct {
    VkCommandBuffer cmd[2];
    VkFence fence[2];
    vk_owned_buffer readback[2];
    vkcuda_buffer *shared;
    vkcuda_semaphore *sem; /* NULL in --vulkan-only mode */
    VkSemaphore vk_sem;
    int listener, conn;
    hello h;
    int started; /* a valid hello arrived and the frames were about to run */
    uint64_t frames_checked, words, mismatches;
} C;

static example E; /* the device (Vulkan-only): rig.h */

static uint64_t check_frame(unsigned slot, uint64_t frame) {
    const void *data = C.readback[slot].mapped;
    uint64_t n = word_count(C.h.size), i, bad = 0;
    uint32_t seed = frame_seed(frame);
    for (i = 0; i < n; i++) {
        uint32_t want = pattern_word(i, seed), got = load_word(data, C.h.size, i);
        if (got != want) {
            if (bad < 3)
                printf("  frame %" PRIu64 ": word %" PRIu64 " is 0x%08x, expected 0x%08x\n", frame, i, got,
                       want);
            bad++;
        }
    }
    C.frames_checked++;
    C.words += n;
    C.mismatches += bad;
    return bad;
}

/* The Vulkan-only context (rig.h), two command buffers and fences for the frames in
 * flight. */
static int setup_vulkan(int *skipped, char *why, size_t why_size) {
    VkFenceCreateInfo fci;
    unsigned i;
    int ok = 0;
    if (!rig_available(1, why, why_size)) {
        *skipped = 1;
        FAILF("%s", why);
    }
    rig_open(&E, "ipc_consumer", 1, NULL);
    printf("ipc_consumer: Vulkan-only context: this process needs no CUDA\n");
    memset(&fci, 0, sizeof fci);
    fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    for (i = 0; i < 2; i++) {
        C.cmd[i] = example_command_buffer(&E);
        CHECK_VK(vkCreateFence(E.vh.device, &fci, NULL, &C.fence[i]));
    }
    ok = 1;
done:
    return ok;
}

/* Listens on `path` with mode 0600 (umask 077 around bind: no window where others
 * could connect) and accepts one connection within `timeout_ns`. */
static int listen_and_accept(const char *path, uint64_t timeout_ns) {
    struct sockaddr_un addr;
    struct stat st;
    struct pollfd pf;
    mode_t old;
    int ok = 0, r;
    CHECK(strlen(path) < sizeof addr.sun_path, "socket path too long: %s", path);
    if (lstat(path, &st) == 0) {
        CHECK(S_ISSOCK(st.st_mode), "%s exists and is not a socket: not touching it", path);
        unlink(path); /* a stale socket of an earlier run */
    }
    C.listener = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(C.listener >= 0, "socket: %s", strerror(errno));
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, path, strlen(path) + 1);
    old = umask(077);
    r = bind(C.listener, (const struct sockaddr *)&addr, sizeof addr);
    umask(old);
    CHECK(r == 0, "bind %s: %s", path, strerror(errno));
    CHECK(listen(C.listener, 1) == 0, "listen: %s", strerror(errno));
    printf("ipc_consumer: listening on %s (mode 0600)\n", path);
    pf.fd = C.listener;
    pf.events = POLLIN;
    pf.revents = 0;
    do {
        r = poll(&pf, 1, (int)(timeout_ns / MS));
    } while (r < 0 && errno == EINTR);
    CHECK(r == 1, "no producer connected within %" PRIu64 " ms", timeout_ns / MS);
    C.conn = accept(C.listener, NULL, NULL);
    CHECK(C.conn >= 0, "accept: %s", strerror(errno));
    ok = 1;
done:
    return ok;
}

/* Records slot `s`'s command buffer once: acquire the shared buffer from the
 * producer (VK_QUEUE_FAMILY_EXTERNAL), copy it into the slot's readback, release it
 * back, make the copy visible to the host. */
static int record_slot(unsigned s, VkBuffer shared) {
    VkBufferCopy copy;
    vkcuda_handoff_info read = example_handoff(&E, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    int ok = 0;
    CHECK_VK(rig_begin(C.cmd[s], 0)); /* submitted once a frame */
    CHECK_VKCUDA(vkcuda_buffer_cmd_acquire_from_cuda(C.shared, C.cmd[s], &read));
    copy.srcOffset = copy.dstOffset = 0;
    copy.size = C.h.size;
    vkCmdCopyBuffer(C.cmd[s], shared, C.readback[s].buffer, 1, &copy);
    CHECK_VKCUDA(vkcuda_buffer_cmd_release_to_cuda(C.shared, C.cmd[s], &read));
    vk_cmd_barrier(C.cmd[s], VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    CHECK_VK(vkEndCommandBuffer(C.cmd[s]));
    ok = 1;
done:
    return ok;
}

/* Frame k in slot s: the submit waits for the producer's 2k+1 and signals 2k+2. */
static VkResult submit_frame(unsigned s, uint64_t frame) {
    return rig_submit(&E, C.cmd[s], C.sem != NULL ? C.vk_sem : VK_NULL_HANDLE, 2 * frame + 1, 2 * frame + 2,
                      VK_PIPELINE_STAGE_TRANSFER_BIT, C.fence[s]);
}

static int wait_and_check(unsigned s, uint64_t frame) {
    VkResult r = vkWaitForFences(E.vh.device, 1, &C.fence[s], VK_TRUE, 10 * SECOND);
    int ok = 0;
    CHECK(r == VK_SUCCESS, "frame %" PRIu64 ": the copy did not finish within 10 s (%s): is the producer alive?",
          frame, vk_result_name(r));
    CHECK_VK(vkResetFences(E.vh.device, 1, &C.fence[s]));
    CHECK_VK(vk_owned_buffer_invalidate(&E.vk, &C.readback[s]));
    CHECK(check_frame(s, frame) == 0, "frame %" PRIu64 " has wrong words", frame);
    ok = 1;
done:
    return ok;
}

static int run_frames(void) {
    uint64_t k, t0 = now_ns();
    int ok = 0, pending = 0;
    for (k = 0; k < C.h.frames; k++) {
        unsigned s = (unsigned)(k % 2);
        if (C.sem == NULL) {
            /* --vulkan-only: the producer says when frame k is in the buffer. */
            uint64_t ready = 0;
            int r = recv_all(C.conn, &ready, sizeof ready, 10 * SECOND);
            CHECK(r == 0, "frame %" PRIu64 ": waiting for the producer: %s", k, recv_error(r));
            CHECK(ready == k, "the producer announced frame %" PRIu64 ", expected %" PRIu64, ready, k);
            CHECK_VK(submit_frame(s, k));
            if (!wait_and_check(s, k)) goto done;
            CHECK(send_all(C.conn, &k, sizeof k) == 0, "acknowledging frame %" PRIu64 ": %s", k,
                  strerror(errno));
        } else {
            /* The queue waits for the producer; the host checks the previous frame
             * while this one is in flight. */
            CHECK_VK(submit_frame(s, k));
            pending = 1;
            if (k > 0 && !wait_and_check(1 - s, k - 1)) goto done;
        }
    }
    if (C.sem != NULL && pending && !wait_and_check((unsigned)((C.h.frames - 1) % 2), C.h.frames - 1)) goto done;
    printf("ipc_consumer: %" PRIu64 " frames of %" PRIu64 " bytes checked in %.3f s (%.1f us a frame)\n",
           C.frames_checked, C.h.size, (double)(now_ns() - t0) * 1e-9,
           (double)(now_ns() - t0) * 1e-3 / (double)(C.h.frames ? C.h.frames : 1));
    ok = 1;
done:
    return ok;
}

/* After a failure, submits may wait for values nobody will signal: signal far ahead
 * so the queue drains (the producer then sees its waits satisfied and fails too). */
static void unblock(void) {
    uint64_t v = 0;
    VkSemaphoreSignalInfo si;
    if (C.vk_sem == VK_NULL_HANDLE || vkGetSemaphoreCounterValue(E.vh.device, C.vk_sem, &v) != VK_SUCCESS)
        return;
    memset(&si, 0, sizeof si);
    si.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO;
    si.semaphore = C.vk_sem;
    si.value = v + (1u << 20);
    if (vkSignalSemaphore(E.vh.device, &si) == VK_SUCCESS)
        printf("  unblocking the queue: host-signalled %" PRIu64 "\n", si.value);
}

static void teardown(void) {
    unsigned i;
    if (E.vh.device != VK_NULL_HANDLE) vkDeviceWaitIdle(E.vh.device);
    for (i = 0; i < 2; i++) {
        if (C.fence[i] != VK_NULL_HANDLE) vkDestroyFence(E.vh.device, C.fence[i], NULL);
        if (C.readback[i].buffer != VK_NULL_HANDLE) vk_owned_buffer_destroy(&E.vk, &C.readback[i]);
    }
    vkcuda_semaphore_destroy(C.sem);
    vkcuda_buffer_destroy(C.shared);
    rig_close(&E);
    if (C.conn > 0) close(C.conn);
    if (C.listener > 0) close(C.listener);
}

/* 0 pass, 1 fail, EXIT_SKIP skipped. */
static int consume(const char *path, uint64_t timeout_ns) {
    vkcuda_share_options opts;
    vkcuda_buffer_info bi;
    hello reply;
    char why[1024] = "";
    int skipped = 0, ok = 0, r, have_vulkan;
    uint64_t t0 = now_ns();
    unsigned i;

    C.listener = C.conn = -1;
    have_vulkan = setup_vulkan(&skipped, why, sizeof why);
    if (!have_vulkan && !skipped) goto done;
    if (!listen_and_accept(path, timeout_ns)) goto done;
    r = recv_all(C.conn, &C.h, sizeof C.h, timeout_ns);
    CHECK(r == 0, "reading the producer's hello: %s", recv_error(r));
    CHECK(memcmp(C.h.magic, HELLO_MAGIC, 8) == 0, "the peer is not ipc_producer (bad hello)");
    C.h.note[sizeof C.h.note - 1] = '\0';
    if (C.h.mode == MODE_SKIP) { /* the producer has closed the connection */
        printf("ipc_consumer: the producer cannot run: %s\n", C.h.note);
        skipped = 1;
        goto done;
    }
    memset(&reply, 0, sizeof reply);
    memcpy(reply.magic, HELLO_MAGIC, 8);
    reply.mode = have_vulkan ? MODE_READY : MODE_SKIP;
    snprintf(reply.note, sizeof reply.note, "%.*s", (int)sizeof reply.note - 1, why);
    CHECK(send_all(C.conn, &reply, sizeof reply) == 0, "answering the hello: %s", strerror(errno));
    if (!have_vulkan) goto done;
    CHECK(C.h.mode == MODE_CUDA || C.h.mode == MODE_VULKAN_ONLY, "unknown mode %u", C.h.mode);
    CHECK(C.h.size > 0 && C.h.size % 4 == 0, "bad size %" PRIu64, C.h.size);
    C.started = 1;
    printf("ipc_consumer: producer connected: %" PRIu64 " frames of %" PRIu64 " bytes, %s\n", C.h.frames,
           C.h.size, C.h.mode == MODE_CUDA ? "CUDA kernel + shared timeline" : "Vulkan-only self-test");

    /* The library's messages: the buffer (and the timeline), fds by SCM_RIGHTS. */
    memset(&opts, 0, sizeof opts);
    opts.timeout_ns = timeout_ns;
    opts.buffer_usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    CHECK_VKCUDA(vkcuda_buffer_receive(E.ctx, C.conn, &opts, &C.shared));
    CHECK_VKCUDA(vkcuda_buffer_get_info(C.shared, &bi));
    CHECK(bi.size == C.h.size, "the buffer has %" PRIu64 " bytes, the producer said %" PRIu64, bi.size,
          C.h.size);
    printf("ipc_consumer: received a %s-allocated buffer: %" PRIu64 " bytes (allocation %" PRIu64
           ", %sdedicated)\n",
           bi.allocator == VKCUDA_ALLOCATOR_CUDA ? "CUDA" : "Vulkan", bi.size, bi.allocation_size,
           bi.dedicated ? "" : "not ");
    if (C.h.mode == MODE_CUDA) {
        uint64_t value = 0;
        CHECK_VKCUDA(vkcuda_semaphore_receive(E.ctx, C.conn, &opts, &C.sem));
        CHECK_VKCUDA(vkcuda_semaphore_get_vk_semaphore(C.sem, &C.vk_sem));
        CHECK_VKCUDA(vkcuda_semaphore_get_value(C.sem, &value));
        printf("ipc_consumer: received the timeline semaphore (value %" PRIu64 ")\n", value);
    }
    for (i = 0; i < 2; i++) {
        CHECK_VK(vk_owned_buffer_create(&E.vk, C.h.size, VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                                        VK_MEMORY_PROPERTY_HOST_CACHED_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                        &C.readback[i]));
        if (!record_slot(i, bi.buffer)) goto done;
    }
    if (!run_frames()) goto done;
    ok = 1;
done:
    if (C.started) {
        result res;
        memset(&res, 0, sizeof res);
        memcpy(res.magic, RESULT_MAGIC, 8);
        res.frames_checked = ok ? C.frames_checked : 0;
        res.words = C.words;
        res.mismatches = C.mismatches;
        if (send_all(C.conn, &res, sizeof res) != 0 && ok) {
            printf("  FAIL: sending the result to the producer: %s\n", strerror(errno));
            ok = 0;
        }
    }
    if (!ok) unblock();
    teardown();
    if (!rig_nothing_alive()) {
        printf("  FAIL: objects left alive after destroying everything\n");
        ok = 0;
    }
    if (skipped) return rig_skip("ipc_consumer", why[0] ? why : C.h.note);
    printf("ipc_consumer: %s: %" PRIu64 " frames checked, %" PRIu64 " words compared, %" PRIu64
           " mismatched%s (%.1f s)%s%s\n",
           ok ? "PASS" : "FAIL", C.frames_checked, C.words, C.mismatches,
           C.h.mode == MODE_VULKAN_ONLY ? " [Vulkan-only self-test]" : "", (double)(now_ns() - t0) * 1e-9,
           ok ? "" : ": ", ok ? "" : gpu_test_first_failure());
    return ok ? 0 : 1;
}

/* ---- the one-command demo: start the producer next to this executable ---------------- */

static int consume_here(const char *path, void *unused) {
    (void)unused;
    return consume(path, 30 * SECOND);
}

static void usage(void) {
    printf("usage: ipc_consumer SOCKET_PATH [--timeout-ms MS]\n"
           "       ipc_consumer [--frames N] [--size BYTES] [--vulkan-only]   (starts ipc_producer itself)\n");
}

int main(int argc, char **argv) {
    const char *path = NULL;
    uint64_t timeout_ms = 30000;
    int i;
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("ipc_consumer: vkcuda %s\n", vkcuda_version_string());
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if ((strcmp(a, "--frames") == 0 || strcmp(a, "--size") == 0) && v) {
            i++; /* for the producer */
        } else if (strcmp(a, "--vulkan-only") == 0) {
            /* for the producer */
        } else if (strcmp(a, "--timeout-ms") == 0 && v) {
            timeout_ms = strtoull(v, NULL, 10);
            i++;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage();
            return 0;
        } else if (a[0] != '-' && path == NULL) {
            path = a;
        } else {
            usage();
            printf("ipc_consumer: FAIL: bad argument '%s'\n", a);
            return 1;
        }
    }
    if (path == NULL) return ipc_run_both("ipc_consumer", "ipc_producer", argv + 1, consume_here, NULL);
    return consume(path, timeout_ms * MS);
}
