/*
 * frame_loop: one timeline semaphore paces a Vulkan -> CUDA -> Vulkan frame loop
 * with several frames in flight; every element of every frame is checked.
 *
 * Each frame uses one slot of a ring (default 3): a shared buffer, a host-visible
 * readback buffer and command buffers. Its three stages come from
 * vkcuda_semaphore_next_stage, each waiting for the previous stage's value:
 *   1. Vulkan: vkCmdFillBuffer with the frame's value, release barrier to CUDA,
 *      signal.                                              (queue submit)
 *   2. CUDA: vkcuda_semaphore_cuda_wait, a kernel x = x * mul + add,
 *      vkcuda_semaphore_cuda_signal.                          (CUDA stream)
 *   3. Vulkan: wait, acquire barrier, copy into the slot's readback buffer, signal.
 * The CPU does not wait inside the loop except before reusing a slot: then it
 * waits (vkcuda_semaphore_host_wait, with a timeout) for the slot's last value and
 * checks every word of its readback. Stages are enqueued frame by frame, so CUDA
 * is never more than the ring ahead of Vulkan.
 *
 * Then the edge cases: a host wait on a value never signalled times out after
 * about its timeout (measured), timeout 0 polls; a signal value not greater than
 * the last is refused; a binary semaphore takes one wait per signal; a stream of
 * another CUcontext is refused. And host-wait latency in the alternating pattern
 * (Vulkan queue work, then CUDA work, host waits for the CUDA-signalled value):
 * the library's host wait vs vkWaitSemaphores vs spinning on
 * vkGetSemaphoreCounterValue.
 *
 *   frame_loop [--frames N] [--in-flight K] [--size BYTES] [--latency-rounds R]
 *              [--vulkan-only]
 *
 * --vulkan-only (a test of the program on machines without CUDA, e.g. lavapipe):
 * a Vulkan-only context, a plain Vulkan timeline semaphore, and stage 2 done by a
 * Vulkan submit that writes what the kernel would; no edge cases, no latency.
 *
 * Without a CUDA driver it says why and exits 77 (skipped), or 1 when VKCUDA_REQUIRE_GPU=1.
 */
#define _POSIX_C_SOURCE 200809L
#include <vkcuda.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rig.h"

#define MAX_SLOTS 16
#define MS (1000ull * 1000ull)
#define SLOT_WAIT_TIMEOUT_NS (5000ull * MS)
#define TRANSFORM_MUL 0x01000193u

typedef struct slot {
    vkcuda_buffer *shared;
    VkBuffer vk_buffer;
    uint64_t cuda_pointer;
    vk_owned_buffer readback;
    VkCommandBuffer fill_cmd, copy_cmd, emulated_cuda_cmd;
    int64_t frame; /* the frame whose results are (or will be) in the readback; -1: none */
    uint64_t done_value;
} slot;

static struct {
    vkcuda_cuda_info ci;
    vkcuda_semaphore *sem;  /* NULL in --vulkan-only mode */
    VkSemaphore vk_sem;     /* the timeline's VkSemaphore */
    uint64_t emulated_next; /* --vulkan-only: the next stage's wait value */
    slot slots[MAX_SLOTS];
    unsigned nslots;
    uint64_t size;
    rig_counts checks;
    unsigned long long frames_checked, elements, mismatches;
} A;

static example E; /* the device: rig.h */

/* ---- frame values ------------------------------------------------------------------ */

static uint32_t frame_fill(uint64_t frame) {
    return (uint32_t)(frame + 1) * 0x9e3779b1u;
}

static uint32_t frame_add(uint64_t frame) {
    return (uint32_t)frame ^ 0xa5a5a5a5u;
}

static uint32_t frame_expected(uint64_t frame) {
    return transform_word(frame_fill(frame), TRANSFORM_MUL, frame_add(frame));
}

/* ---- the timeline: library semaphore, or a plain one in --vulkan-only mode ---------- */

static vkcuda_result next_stage(vkcuda_timeline_stage *st) {
    if (A.sem != NULL) return vkcuda_semaphore_next_stage(A.sem, st);
    st->wait_value = A.emulated_next;
    st->signal_value = ++A.emulated_next;
    return VKCUDA_SUCCESS;
}

static vkcuda_result timeline_host_wait(uint64_t value, uint64_t timeout_ns) {
    VkSemaphoreWaitInfo wi;
    VkResult r;
    if (A.sem != NULL) return vkcuda_semaphore_host_wait(A.sem, value, timeout_ns);
    memset(&wi, 0, sizeof wi);
    wi.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO;
    wi.semaphoreCount = 1;
    wi.pSemaphores = &A.vk_sem;
    wi.pValues = &value;
    r = vkWaitSemaphores(E.vh.device, &wi, timeout_ns);
    return r == VK_SUCCESS ? VKCUDA_SUCCESS : r == VK_TIMEOUT ? VKCUDA_ERROR_TIMEOUT : VKCUDA_ERROR_VULKAN;
}

static uint64_t timeline_value(void) {
    uint64_t v = 0;
    if (vkGetSemaphoreCounterValue(E.vh.device, A.vk_sem, &v) != VK_SUCCESS) return UINT64_MAX;
    return v;
}

/* After a failure, work may be queued that waits for values nobody will signal:
 * a host signal far ahead releases every waiter, so the teardown does not hang. */
static void unblock(vkcuda_semaphore *s, VkSemaphore vs) {
    uint64_t v = 0;
    if (vkGetSemaphoreCounterValue(E.vh.device, vs, &v) != VK_SUCCESS) return;
    v += 1u << 20;
    if (s != NULL) {
        if (vkcuda_semaphore_host_signal(s, v) != VKCUDA_SUCCESS)
            printf("  unblocking: vkcuda_semaphore_host_signal(%" PRIu64 ") failed: %s\n", v, gpu_test_message());
    } else {
        VkSemaphoreSignalInfo si;
        memset(&si, 0, sizeof si);
        si.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO;
        si.semaphore = vs;
        si.value = v;
        vkSignalSemaphore(E.vh.device, &si);
    }
    printf("  unblocking the queue and the stream: host-signalled %" PRIu64 "\n", v);
}

/* One submit on the timeline: waits for `wait`, signals `signal` (and `fence`, if not
 * VK_NULL_HANDLE). */
static VkResult submit_timeline(VkSemaphore sem, VkCommandBuffer cmd, uint64_t wait, uint64_t signal, VkFence fence) {
    return rig_submit(&E, cmd, sem, wait, signal, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, fence);
}

/* ---- the frame loop ---------------------------------------------------------------- */

static int create_slots(void) {
    VkCommandBufferAllocateInfo cai;
    VkCommandBuffer cmds[3];
    vkcuda_handoff_info acquire = example_handoff(&E, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    unsigned i;
    int ok = 0;
    for (i = 0; i < A.nslots; i++) {
        slot *s = &A.slots[i];
        vkcuda_buffer_create_info bi;
        VkBufferCopy copy;
        memset(&bi, 0, sizeof bi);
        /* Alternate the allocating side, so both kinds go through the loop. */
        bi.allocator = (E.cuda && i % 2 == 1) ? VKCUDA_ALLOCATOR_CUDA : VKCUDA_ALLOCATOR_VULKAN;
        bi.size = A.size;
        CHECK_VKCUDA(vkcuda_buffer_create(E.ctx, &bi, &s->shared));
        CHECK_VKCUDA(vkcuda_buffer_get_vk_buffer(s->shared, &s->vk_buffer));
        if (E.cuda) CHECK_VKCUDA(vkcuda_buffer_get_cuda_pointer(s->shared, &s->cuda_pointer));
        CHECK_VK(vk_owned_buffer_create(&E.vk, A.size, VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                                        VK_MEMORY_PROPERTY_HOST_CACHED_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                        &s->readback));
        memset(&cai, 0, sizeof cai);
        cai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
        cai.commandPool = E.pool;
        cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        cai.commandBufferCount = 3;
        CHECK_VK(vkAllocateCommandBuffers(E.vh.device, &cai, cmds));
        s->fill_cmd = cmds[0];
        s->copy_cmd = cmds[1];
        s->emulated_cuda_cmd = cmds[2];
        s->frame = -1;

        /* Stage 3 is the same every time: recorded once, resubmitted each frame. */
        CHECK_VK(rig_begin(s->copy_cmd, 0));
        CHECK_VKCUDA(vkcuda_buffer_cmd_acquire_from_cuda(s->shared, s->copy_cmd, &acquire));
        copy.srcOffset = copy.dstOffset = 0;
        copy.size = A.size;
        vkCmdCopyBuffer(s->copy_cmd, s->vk_buffer, s->readback.buffer, 1, &copy);
        vk_cmd_barrier(s->copy_cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
        CHECK_VK(vkEndCommandBuffer(s->copy_cmd));
    }
    ok = 1;
done:
    return ok;
}

static void destroy_slots(void) {
    unsigned i;
    for (i = 0; i < A.nslots; i++) {
        slot *s = &A.slots[i];
        vkcuda_buffer_destroy(s->shared);
        vk_owned_buffer_destroy(&E.vk, &s->readback);
        memset(s, 0, sizeof *s);
    }
}

/* Stage 2 of frame `frame` in slot `s`: CUDA, or its Vulkan stand-in. */
static int cuda_stage(slot *s, uint64_t frame, const vkcuda_timeline_stage *st) {
    int ok = 0;
    if (E.cuda) {
        CHECK_VKCUDA(vkcuda_semaphore_cuda_wait(A.sem, st->wait_value, E.stream));
        CHECK_CU(cuda_transform(&E.kernels, E.stream, s->cuda_pointer, A.size, TRANSFORM_MUL,
                                frame_add(frame)));
        CHECK_VKCUDA(vkcuda_semaphore_cuda_signal(A.sem, st->signal_value, E.stream));
    } else {
        /* What the kernel would write, by a Vulkan submit that acquires the buffer
         * from and releases it back to "CUDA" (VK_QUEUE_FAMILY_EXTERNAL). */
        vkcuda_handoff_info acquire = example_handoff(&E, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
        CHECK_VK(rig_begin(s->emulated_cuda_cmd, RIG_ONCE));
        CHECK_VKCUDA(vkcuda_buffer_cmd_acquire_from_cuda(s->shared, s->emulated_cuda_cmd, &acquire));
        vkCmdFillBuffer(s->emulated_cuda_cmd, s->vk_buffer, 0, A.size, frame_expected(frame));
        CHECK_VKCUDA(vkcuda_buffer_cmd_release_to_cuda(s->shared, s->emulated_cuda_cmd, &acquire));
        CHECK_VK(vkEndCommandBuffer(s->emulated_cuda_cmd));
        CHECK_VK(submit_timeline(A.vk_sem, s->emulated_cuda_cmd, st->wait_value, st->signal_value, VK_NULL_HANDLE));
    }
    ok = 1;
done:
    return ok;
}

typedef struct loop_stats {
    double wait_s, check_s, max_wait_s;
} loop_stats;

/* Waits for the slot's last frame and checks every word of its readback. */
static int retire_slot(slot *s, loop_stats *stats) {
    const uint32_t *w = (const uint32_t *)s->readback.mapped;
    uint64_t words = A.size / 4, i, bad = 0;
    uint32_t want;
    double t0 = now_s(), t1;
    vkcuda_result r;
    int ok = 0;
    if (s->frame < 0) return 1;
    r = timeline_host_wait(s->done_value, SLOT_WAIT_TIMEOUT_NS);
    t1 = now_s();
    stats->wait_s += t1 - t0;
    if (t1 - t0 > stats->max_wait_s) stats->max_wait_s = t1 - t0;
    if (r != VKCUDA_SUCCESS) {
        const char *m = gpu_test_message();
        FAILF("frame %" PRId64 ": waiting for value %" PRIu64 " -> %s (semaphore at %" PRIu64 "): %s",
              s->frame, s->done_value, vkcuda_result_to_string(r), timeline_value(), m);
    }
    CHECK_VK(vk_owned_buffer_invalidate(&E.vk, &s->readback));
    want = frame_expected((uint64_t)s->frame);
    for (i = 0; i < words; i++) {
        if (w[i] != want) {
            if (bad < 5)
                printf("  frame %" PRId64 ": word %" PRIu64 " is 0x%08x, expected 0x%08x\n", s->frame, i,
                       w[i], want);
            bad++;
        }
    }
    A.elements += words;
    A.mismatches += bad;
    A.frames_checked++;
    CHECK(bad == 0, "frame %" PRId64 ": %" PRIu64 " of %" PRIu64 " words wrong", s->frame, bad, words);
    s->frame = -1;
    ok = 1;
done:
    stats->check_s += now_s() - t1;
    return ok;
}

static int run_frames(uint64_t frames) {
    vkcuda_handoff_info release = example_handoff(&E, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
    loop_stats stats;
    uint64_t f;
    unsigned i;
    double t0, elapsed;
    int ok = 0;

    memset(&stats, 0, sizeof stats);
    t0 = now_s();
    for (f = 0; f < frames; f++) {
        slot *s = &A.slots[f % A.nslots];
        vkcuda_timeline_stage st1, st2, st3;

        /* The only CPU wait: the slot's previous frame must be done before reuse. */
        if (!retire_slot(s, &stats)) goto done;

        CHECK_VKCUDA(next_stage(&st1));
        CHECK_VK(rig_begin(s->fill_cmd, RIG_ONCE));
        vkCmdFillBuffer(s->fill_cmd, s->vk_buffer, 0, A.size, frame_fill(f));
        CHECK_VKCUDA(vkcuda_buffer_cmd_release_to_cuda(s->shared, s->fill_cmd, &release));
        CHECK_VK(vkEndCommandBuffer(s->fill_cmd));
        CHECK_VK(submit_timeline(A.vk_sem, s->fill_cmd, st1.wait_value, st1.signal_value, VK_NULL_HANDLE));

        CHECK_VKCUDA(next_stage(&st2));
        if (!cuda_stage(s, f, &st2)) goto done;

        CHECK_VKCUDA(next_stage(&st3));
        CHECK_VK(submit_timeline(A.vk_sem, s->copy_cmd, st3.wait_value, st3.signal_value, VK_NULL_HANDLE));
        s->frame = (int64_t)f;
        s->done_value = st3.signal_value;
    }
    for (i = 0; i < A.nslots; i++) /* the last frames, oldest first */
        if (!retire_slot(&A.slots[(f + i) % A.nslots], &stats)) goto done;
    elapsed = now_s() - t0;
    printf("  %" PRIu64 " frames of %" PRIu64 " B with %u in flight: %.0f frames/s, %.1f us per frame\n", frames,
           A.size, A.nslots, (double)frames / elapsed, elapsed * 1e6 / (double)frames);
    printf("  CPU time waiting for slots %.3f s (longest wait %.3f ms), checking %.3f s; semaphore at %" PRIu64 "\n",
           stats.wait_s, stats.max_wait_s * 1e3, stats.check_s, timeline_value());
    ok = 1;
done:
    if (!ok) {
        printf("  the frame loop stopped at frame %" PRIu64 "\n", f);
        unblock(A.sem, A.vk_sem);
    }
    return ok;
}

/* ---- edge cases ----------------------------------------------------------------------- */

static vkcuda_semaphore *make_semaphore(vkcuda_semaphore_type type, uint32_t flags) {
    vkcuda_semaphore_create_info si;
    vkcuda_semaphore *s = NULL;
    vkcuda_result r;
    memset(&si, 0, sizeof si);
    si.semaphore_type = type;
    si.flags = flags;
    r = vkcuda_semaphore_create(E.ctx, &si, &s);
    if (r != VKCUDA_SUCCESS) {
        const char *m = gpu_test_message();
        printf("  FAIL: vkcuda_semaphore_create -> %s: %s\n", vkcuda_result_to_string(r), m);
        return NULL;
    }
    return s;
}

static int test_timeouts(uint32_t flags) {
    vkcuda_semaphore *s = make_semaphore(VKCUDA_SEMAPHORE_TYPE_TIMELINE, flags);
    const uint64_t timeout = 100 * MS;
    uint64_t t0, t;
    int ok = 0;
    if (s == NULL) return 0;
    t0 = now_ns();
    EXPECT_VKCUDA(vkcuda_semaphore_host_wait(s, 1000, timeout), VKCUDA_ERROR_TIMEOUT);
    t = now_ns() - t0;
    printf("  host_wait(never signalled, timeout 100 ms) returned after %.3f ms\n", (double)t / 1e6);
    CHECK(t >= timeout, "it returned %.3f ms early", (double)(timeout - t) / 1e6);
    CHECK(t < timeout + 50 * MS, "it returned %.3f ms late (allowed: 50 ms)", (double)(t - timeout) / 1e6);
    t0 = now_ns();
    EXPECT_VKCUDA(vkcuda_semaphore_host_wait(s, 1000, 0), VKCUDA_ERROR_TIMEOUT);
    t = now_ns() - t0;
    printf("  host_wait(never signalled, timeout 0) returned after %.1f us\n", (double)t / 1e3);
    CHECK(t < 5 * MS, "timeout 0 took %.3f ms: it should poll once", (double)t / 1e6);
    EXPECT_VKCUDA(vkcuda_semaphore_host_wait(s, 0, 0), VKCUDA_SUCCESS);
    ok = 1;
done:
    vkcuda_semaphore_destroy(s);
    return ok;
}

/* Waits for the stream with a deadline instead of cuStreamSynchronize, so a wait
 * that never completes is reported, not hung on. */
static CUresult stream_wait(CUstream stream, uint64_t timeout_ns) {
    uint64_t deadline = now_ns() + timeout_ns;
    for (;;) {
        CUresult r = cuStreamQuery(stream);
        if (r != CUDA_ERROR_NOT_READY) return r;
        if (now_ns() > deadline) return CUDA_ERROR_NOT_READY;
    }
}

static int test_refused_signals(void) {
    vkcuda_semaphore *s = make_semaphore(VKCUDA_SEMAPHORE_TYPE_TIMELINE, 0);
    uint64_t v = 0;
    int ok = 0;
    if (s == NULL) return 0;
    CHECK_VKCUDA(vkcuda_semaphore_host_signal(s, 5));
    EXPECT_VKCUDA(vkcuda_semaphore_host_signal(s, 5), VKCUDA_ERROR_INVALID_ARGUMENT);
    EXPECT_VKCUDA(vkcuda_semaphore_host_signal(s, 4), VKCUDA_ERROR_INVALID_ARGUMENT);
    EXPECT_VKCUDA(vkcuda_semaphore_cuda_signal(s, 5, E.stream), VKCUDA_ERROR_INVALID_ARGUMENT);
    EXPECT_VKCUDA(vkcuda_semaphore_cuda_signal(s, 3, E.stream), VKCUDA_ERROR_INVALID_ARGUMENT);
    CHECK_VKCUDA(vkcuda_semaphore_cuda_signal(s, 6, E.stream));
    CHECK_VKCUDA(vkcuda_semaphore_host_wait(s, 6, 5000 * MS));
    CHECK_VKCUDA(vkcuda_semaphore_get_value(s, &v));
    CHECK(v == 6, "the value is %" PRIu64 ", expected 6", v);
    ok = 1;
done:
    if (E.stream) stream_wait(E.stream, 5000 * MS);
    vkcuda_semaphore_destroy(s);
    return ok;
}

static int test_binary(void) {
    vkcuda_semaphore *s = make_semaphore(VKCUDA_SEMAPHORE_TYPE_BINARY, 0);
    int ok = 0;
    if (s == NULL) return 0;
    EXPECT_VKCUDA(vkcuda_semaphore_cuda_wait(s, 0, E.stream), VKCUDA_ERROR_INVALID_STATE);
    CHECK_VKCUDA(vkcuda_semaphore_cuda_signal(s, 0, E.stream));
    EXPECT_VKCUDA(vkcuda_semaphore_cuda_signal(s, 0, E.stream), VKCUDA_ERROR_INVALID_STATE);
    CHECK_VKCUDA(vkcuda_semaphore_cuda_wait(s, 0, E.stream));
    EXPECT_VKCUDA(vkcuda_semaphore_cuda_wait(s, 0, E.stream), VKCUDA_ERROR_INVALID_STATE);
    EXPECT_VKCUDA(vkcuda_semaphore_cuda_signal(s, 1, E.stream), VKCUDA_ERROR_INVALID_ARGUMENT);
    EXPECT_VKCUDA(vkcuda_semaphore_host_wait(s, 0, 0), VKCUDA_ERROR_INVALID_ARGUMENT);
    CHECK_CU(stream_wait(E.stream, 5000 * MS));
    ok = 1;
done:
    if (!ok && E.stream) stream_wait(E.stream, 5000 * MS);
    vkcuda_semaphore_destroy(s);
    return ok;
}

static int test_other_context_stream(void) {
    vkcuda_semaphore *s = make_semaphore(VKCUDA_SEMAPHORE_TYPE_TIMELINE, 0);
    CUcontext other = NULL, popped = NULL;
    CUstream other_stream = NULL;
    int ok = 0;
    if (s == NULL) return 0;
    CHECK_CU(cuCtxCreate(&other, NULL, 0, A.ci.cuda_device)); /* now current */
    CHECK_CU(cuStreamCreate(&other_stream, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuCtxPopCurrent(&popped));
    CHECK(popped == other, "popped another context than the one created");
    EXPECT_VKCUDA(vkcuda_semaphore_cuda_signal(s, 1, other_stream), VKCUDA_ERROR_DEVICE_MISMATCH);
    EXPECT_VKCUDA(vkcuda_semaphore_cuda_wait(s, 1, other_stream), VKCUDA_ERROR_DEVICE_MISMATCH);
    /* The refused signal did not use up the value. */
    CHECK_VKCUDA(vkcuda_semaphore_cuda_signal(s, 1, E.stream));
    CHECK_VKCUDA(vkcuda_semaphore_host_wait(s, 1, 5000 * MS));
    ok = 1;
done:
    if (other != NULL) {
        if (other_stream != NULL && cuCtxPushCurrent(other) == CUDA_SUCCESS) {
            cuStreamDestroy(other_stream);
            cuCtxPopCurrent(&popped);
        }
        cuCtxDestroy(other);
    }
    if (E.stream) stream_wait(E.stream, 5000 * MS);
    vkcuda_semaphore_destroy(s);
    return ok;
}

/* ---- host-wait latency in the alternating pattern ------------------------------------- */

typedef enum wait_method { WAIT_LIBRARY, WAIT_VK_WAIT_SEMAPHORES, WAIT_SPIN, WAIT_METHODS } wait_method;
static const char *const method_names[] = {"vkcuda_semaphore_host_wait", "vkWaitSemaphores",
                                           "spin vkGetSemaphoreCounterValue"};

/* The reference observer: a thread spinning on the counter for `target`. */
static struct {
    VkSemaphore sem;
    uint64_t target;   /* the value to watch for; 0: none */
    uint64_t seen_for; /* the target whose time is in seen_ns */
    uint64_t seen_ns;
    int stop;
} spinner;

static void *spinner_main(void *unused) {
    (void)unused;
    while (!__atomic_load_n(&spinner.stop, __ATOMIC_ACQUIRE)) {
        uint64_t target = __atomic_load_n(&spinner.target, __ATOMIC_ACQUIRE), v = 0;
        if (target == 0) { /* idle: no driver calls, little CPU */
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
            continue;
        }
        if (__atomic_load_n(&spinner.seen_for, __ATOMIC_ACQUIRE) == target) continue;
        if (vkGetSemaphoreCounterValue(E.vh.device, spinner.sem, &v) == VK_SUCCESS && v >= target) {
            __atomic_store_n(&spinner.seen_ns, now_ns(), __ATOMIC_RELAXED);
            __atomic_store_n(&spinner.seen_for, target, __ATOMIC_RELEASE);
        }
    }
    return NULL;
}

/* Runs on CUDA's callback thread when the stream reaches it: right after the
 * kernel, right before the signal. */
static void hostfn_stamp(void *p) {
    __atomic_store_n((uint64_t *)p, now_ns(), __ATOMIC_RELEASE);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct_us(int64_t *v, unsigned n, double p) {
    unsigned i;
    qsort(v, n, sizeof *v, cmp_i64);
    i = (unsigned)(p * (double)n + 0.999999);
    if (i < 1) i = 1;
    if (i > n) i = n;
    return (double)v[i - 1] / 1e3;
}

static int wait_by(wait_method m, vkcuda_semaphore *s, VkSemaphore vs, uint64_t value) {
    const uint64_t timeout = 2000 * MS;
    int ok = 0;
    if (m == WAIT_LIBRARY) {
        CHECK_VKCUDA(vkcuda_semaphore_host_wait(s, value, timeout));
    } else if (m == WAIT_VK_WAIT_SEMAPHORES) {
        VkSemaphoreWaitInfo wi;
        memset(&wi, 0, sizeof wi);
        wi.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO;
        wi.semaphoreCount = 1;
        wi.pSemaphores = &vs;
        wi.pValues = &value;
        CHECK_VK(vkWaitSemaphores(E.vh.device, &wi, timeout));
    } else {
        uint64_t v = 0, deadline = now_ns() + timeout;
        for (;;) {
            CHECK_VK(vkGetSemaphoreCounterValue(E.vh.device, vs, &v));
            if (v >= value) break;
            CHECK(now_ns() < deadline, "spinning: value %" PRIu64 " not reached in 2 s (at %" PRIu64 ")", value, v);
        }
    }
    ok = 1;
done:
    return ok;
}

static int test_latency(unsigned rounds) {
    vkcuda_semaphore *s = make_semaphore(VKCUDA_SEMAPHORE_TYPE_TIMELINE, 0);
    vkcuda_buffer *buf = NULL;
    VkBuffer vb = VK_NULL_HANDLE;
    vkcuda_buffer_create_info bi;
    VkCommandBuffer cmds[2] = {VK_NULL_HANDLE, VK_NULL_HANDLE};
    VkFence fences[2] = {VK_NULL_HANDLE, VK_NULL_HANDLE}; /* signalled by each one's last submit */
    int submitted[2] = {0, 0};                             /* its fence is still to be waited for */
    VkCommandBufferAllocateInfo cai;
    VkFenceCreateInfo fci;
    VkSemaphore vs = VK_NULL_HANDLE;
    vkcuda_handoff_info acquire = example_handoff(&E, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
    vkcuda_handoff_info release = example_handoff(&E, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
    int64_t *vs_hostfn = NULL, *vs_spinner = NULL, *round_ns = NULL;
    double table[WAIT_METHODS][5];
    uint64_t ptr = 0, hostfn_ns = 0;
    const uint64_t size = 64 * 1024;
    pthread_t thread;
    int thread_started = 0, ok = 0, m;
    unsigned r, pass, warmup = 3, total = rounds + warmup;

    if (s == NULL) return 0;
    memset(table, 0, sizeof table);
    CHECK_VKCUDA(vkcuda_semaphore_get_vk_semaphore(s, &vs));
    memset(&bi, 0, sizeof bi);
    bi.size = size;
    CHECK_VKCUDA(vkcuda_buffer_create(E.ctx, &bi, &buf));
    CHECK_VKCUDA(vkcuda_buffer_get_cuda_pointer(buf, &ptr));
    memset(&cai, 0, sizeof cai);
    cai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    cai.commandPool = E.pool;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 2;
    CHECK_VK(vkAllocateCommandBuffers(E.vh.device, &cai, cmds));
    memset(&fci, 0, sizeof fci);
    fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    CHECK_VK(vkCreateFence(E.vh.device, &fci, NULL, &fences[0]));
    CHECK_VK(vkCreateFence(E.vh.device, &fci, NULL, &fences[1]));
    vs_hostfn = (int64_t *)calloc(rounds, sizeof *vs_hostfn);
    vs_spinner = (int64_t *)calloc(rounds, sizeof *vs_spinner);
    round_ns = (int64_t *)calloc(rounds, sizeof *round_ns);
    CHECK(vs_hostfn && vs_spinner && round_ns, "out of memory");

    memset(&spinner, 0, sizeof spinner);
    spinner.sem = vs;
    CHECK(pthread_create(&thread, NULL, spinner_main, NULL) == 0, "pthread_create failed");
    thread_started = 1;

    /* Per method two passes: without the observer thread (reference A, round time:
     * nothing else touches the semaphore), then with it (reference B). */
    for (m = 0; m < WAIT_METHODS; m++) {
        for (pass = 0; pass < 2; pass++) {
            for (r = 0; r < total; r++) {
                vkcuda_timeline_stage st1, st2;
                VkCommandBuffer cmd = cmds[r % 2];
                uint64_t t_start, t_seen, t_hostfn, deadline;

                /* The command buffer's last submit is complete: its signal is below the
                 * CUDA-signalled value seen last round. Its fence (signalled already: the
                 * wait returns at once) is what an engine checks before reusing a command
                 * buffer, and what lets the validation layer see the submit complete: the
                 * layer does not tie a timeline value that CUDA signalled, nor a
                 * vkWaitSemaphores for a value below it, to the completion of earlier
                 * queue work. */
                if (submitted[r % 2]) {
                    CHECK_VK(vkWaitForFences(E.vh.device, 1, &fences[r % 2], VK_TRUE, 2000 * MS));
                    CHECK_VK(vkResetFences(E.vh.device, 1, &fences[r % 2]));
                    submitted[r % 2] = 0;
                }
                t_start = now_ns();

                /* Vulkan queue work: acquire the buffer back from CUDA, fill it, release it. */
                CHECK_VKCUDA(vkcuda_semaphore_next_stage(s, &st1));
                CHECK_VK(rig_begin(cmd, RIG_ONCE));
                if (m > 0 || pass > 0 || r > 0) /* from the second round on, CUDA had it last */
                    CHECK_VKCUDA(vkcuda_buffer_cmd_acquire_from_cuda(buf, cmd, &acquire));
                CHECK_VKCUDA(vkcuda_buffer_get_vk_buffer(buf, &vb));
                vkCmdFillBuffer(cmd, vb, 0, size, r);
                CHECK_VKCUDA(vkcuda_buffer_cmd_release_to_cuda(buf, cmd, &release));
                CHECK_VK(vkEndCommandBuffer(cmd));
                CHECK_VKCUDA(vkcuda_semaphore_next_stage(s, &st2));
                __atomic_store_n(&spinner.target, pass == 1 ? st2.signal_value : 0, __ATOMIC_RELEASE);
                __atomic_store_n(&hostfn_ns, 0, __ATOMIC_RELEASE);
                CHECK_VK(submit_timeline(vs, cmd, st1.wait_value, st1.signal_value, fences[r % 2]));
                submitted[r % 2] = 1;

                /* CUDA work, then the signal the host waits for. */
                CHECK_VKCUDA(vkcuda_semaphore_cuda_wait(s, st2.wait_value, E.stream));
                CHECK_CU(cuda_transform(&E.kernels, E.stream, ptr, size, 3, 1));
                CHECK_CU(cuLaunchHostFunc(E.stream, hostfn_stamp, &hostfn_ns));
                CHECK_VKCUDA(vkcuda_semaphore_cuda_signal(s, st2.signal_value, E.stream));

                if (!wait_by((wait_method)m, s, vs, st2.signal_value)) goto done;
                t_seen = now_ns();
                t_hostfn = __atomic_load_n(&hostfn_ns, __ATOMIC_ACQUIRE);
                CHECK(t_hostfn != 0, "the CUDA host function did not run before the value was seen");
                if (pass == 1) {
                    deadline = t_seen + 2000 * MS;
                    while (__atomic_load_n(&spinner.seen_for, __ATOMIC_ACQUIRE) != st2.signal_value)
                        CHECK(now_ns() < deadline, "the spinning observer did not see %" PRIu64, st2.signal_value);
                }
                if (r < warmup) continue;
                if (pass == 0) {
                    vs_hostfn[r - warmup] = (int64_t)(t_seen - t_hostfn);
                    round_ns[r - warmup] = (int64_t)(t_seen - t_start);
                } else {
                    vs_spinner[r - warmup] =
                        (int64_t)t_seen - (int64_t)__atomic_load_n(&spinner.seen_ns, __ATOMIC_RELAXED);
                }
            }
        }
        table[m][0] = pct_us(vs_hostfn, rounds, 0.5);
        table[m][1] = pct_us(vs_hostfn, rounds, 0.99);
        table[m][2] = pct_us(vs_spinner, rounds, 0.5);
        table[m][3] = pct_us(vs_spinner, rounds, 0.99);
        table[m][4] = pct_us(round_ns, rounds, 0.5);
    }
    printf("  host wait for a CUDA-signalled value, Vulkan queue work and CUDA work alternating; %u rounds per\n"
           "  method and pass (+%u warm-up), the time the waiting thread saw the value minus:\n",
           rounds, warmup);
    printf("  A = a CUDA host function's time stamp (cuLaunchHostFunc after the kernel, before the signal: the\n"
           "      CUDA work is done then; the signal itself is still to run), pass without an observer thread\n");
    printf("  B = the time a second thread spinning on vkGetSemaphoreCounterValue saw it (pass with that thread;\n"
           "      negative: the waiter saw it first)\n");
    printf("  | %-31s | seen-A median | seen-A p99 | seen-B median | seen-B p99 | round median |\n", "method");
    printf("  |---------------------------------|---------------|------------|---------------|------------|--------------|\n");
    for (m = 0; m < WAIT_METHODS; m++)
        printf("  | %-31s | %10.1f us | %7.1f us | %10.1f us | %7.1f us | %9.1f us |\n", method_names[m], table[m][0],
               table[m][1], table[m][2], table[m][3], table[m][4]);
    ok = 1;
done:
    if (!ok && vs != VK_NULL_HANDLE) unblock(s, vs);
    if (thread_started) {
        __atomic_store_n(&spinner.stop, 1, __ATOMIC_RELEASE);
        pthread_join(thread, NULL);
    }
    if (E.stream) stream_wait(E.stream, 5000 * MS);
    if (E.vh.queue != VK_NULL_HANDLE) vkQueueWaitIdle(E.vh.queue);
    if (cmds[0] != VK_NULL_HANDLE) vkFreeCommandBuffers(E.vh.device, E.pool, 2, cmds);
    for (r = 0; r < 2; r++)
        if (fences[r] != VK_NULL_HANDLE) vkDestroyFence(E.vh.device, fences[r], NULL);
    free(vs_hostfn);
    free(vs_spinner);
    free(round_ns);
    vkcuda_buffer_destroy(buf);
    vkcuda_semaphore_destroy(s);
    return ok;
}

/* ---- setup ------------------------------------------------------------------------------ */

static int setup(int vulkan_only) {
    int ok = 0;
    rig_open(&E, "frame_loop", vulkan_only, &A.ci);
    if (E.cuda) {
        vkcuda_semaphore_create_info sci;
        memset(&sci, 0, sizeof sci);
        sci.semaphore_type = VKCUDA_SEMAPHORE_TYPE_TIMELINE;
        CHECK_VKCUDA(vkcuda_semaphore_create(E.ctx, &sci, &A.sem));
        CHECK_VKCUDA(vkcuda_semaphore_get_vk_semaphore(A.sem, &A.vk_sem));
    } else {
        VkSemaphoreTypeCreateInfo ti;
        VkSemaphoreCreateInfo sci;
        printf("Vulkan-only self-test: a plain timeline semaphore, stage 2 by a Vulkan submit\n");
        memset(&ti, 0, sizeof ti);
        ti.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO;
        ti.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
        memset(&sci, 0, sizeof sci);
        sci.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO;
        sci.pNext = &ti;
        CHECK_VK(vkCreateSemaphore(E.vh.device, &sci, NULL, &A.vk_sem));
    }
    ok = 1;
done:
    return ok;
}

static void teardown(void) {
    if (E.stream != NULL) {
        CUresult r = stream_wait(E.stream, 10000 * MS);
        if (r != CUDA_SUCCESS) printf("  teardown: the CUDA stream did not finish: %s\n", cuda_result_text(r));
    }
    if (E.vh.device != VK_NULL_HANDLE) {
        VkResult r = vkDeviceWaitIdle(E.vh.device);
        if (r != VK_SUCCESS) printf("  teardown: vkDeviceWaitIdle -> %s\n", vk_result_name(r));
    }
    destroy_slots();
    if (A.sem != NULL)
        vkcuda_semaphore_destroy(A.sem);
    else if (A.vk_sem != VK_NULL_HANDLE)
        vkDestroySemaphore(E.vh.device, A.vk_sem, NULL);
    rig_close(&E);
}

static void usage(void) {
    printf("usage: frame_loop [--frames N] [--in-flight K] [--size BYTES] [--latency-rounds R] [--vulkan-only]\n"
           "  defaults: 10000 frames, 3 in flight (at most %d), 1048576 bytes (a multiple of 4), 200 rounds\n",
           MAX_SLOTS);
}

int main(int argc, char **argv) {
    uint64_t frames = 10000;
    unsigned latency_rounds = 200;
    int vulkan_only = 0, i, ok;
    double t0, start = now_s();
    char name[160];

    setvbuf(stdout, NULL, _IOLBF, 0);
    A.nslots = 3;
    A.size = 1024 * 1024;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--vulkan-only") == 0) {
            vulkan_only = 1;
        } else if (strcmp(a, "--frames") == 0 && v) {
            frames = strtoull(v, NULL, 10);
            i++;
        } else if (strcmp(a, "--in-flight") == 0 && v) {
            A.nslots = (unsigned)strtoul(v, NULL, 10);
            i++;
        } else if (strcmp(a, "--size") == 0 && v) {
            A.size = strtoull(v, NULL, 10);
            i++;
        } else if (strcmp(a, "--latency-rounds") == 0 && v) {
            latency_rounds = (unsigned)strtoul(v, NULL, 10);
            i++;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage();
            return 0;
        } else {
            usage();
            printf("frame_loop: FAIL: bad argument '%s'\n", a);
            return 1;
        }
    }
    if (A.nslots < 1 || A.nslots > MAX_SLOTS || A.size == 0 || A.size % 4 != 0 || frames == 0) {
        usage();
        printf("frame_loop: FAIL: bad --in-flight, --size or --frames\n");
        return 1;
    }
    printf("frame_loop: vkcuda %s\n", vkcuda_version_string());
    if (!setup(vulkan_only)) {
        teardown();
        printf("frame_loop: FAIL: setup failed (see above)\n");
        return 1;
    }

    if (E.cuda) {
        t0 = now_s();
        rig_record(&A.checks, "host_wait timeouts (spinning first)", test_timeouts(0), now_s() - t0);
        t0 = now_s();
        rig_record(&A.checks, "host_wait timeouts (VKCUDA_SEMAPHORE_CREATE_NO_SPIN_BIT)",
                     test_timeouts(VKCUDA_SEMAPHORE_CREATE_NO_SPIN_BIT), now_s() - t0);
        t0 = now_s();
        rig_record(&A.checks, "signal values must increase", test_refused_signals(), now_s() - t0);
        t0 = now_s();
        rig_record(&A.checks, "binary semaphore: one wait per signal", test_binary(), now_s() - t0);
        t0 = now_s();
        rig_record(&A.checks, "a stream of another CUcontext is refused", test_other_context_stream(), now_s() - t0);
    }

    t0 = now_s();
    ok = create_slots() && run_frames(frames);
    snprintf(name, sizeof name, "frame loop: %" PRIu64 " frames, %u in flight, %" PRIu64 " B a frame", frames,
             A.nslots, A.size);
    rig_record(&A.checks, name, ok, now_s() - t0);

    if (E.cuda && latency_rounds > 0 && ok) {
        t0 = now_s();
        rig_record(&A.checks, "host-wait latency (alternating pattern)", test_latency(latency_rounds), now_s() - t0);
    }
    teardown();
    t0 = now_s();
    rig_record(&A.checks, "nothing left alive after destroying everything", rig_nothing_alive(), now_s() - t0);

    ok = A.checks.failed == 0 && A.mismatches == 0;
    printf("frame_loop: %s: %u checks passed, %u failed; %llu frames checked, %llu words compared, %llu mismatched%s "
           "(%.1f s)\n",
           ok ? "PASS" : "FAIL", A.checks.passed, A.checks.failed, A.frames_checked, A.elements, A.mismatches,
           E.cuda ? "" : " [Vulkan-only self-test]", now_s() - start);
    return ok ? 0 : 1;
}
