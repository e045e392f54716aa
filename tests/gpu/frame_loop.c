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
 * The semaphore's edge cases (timeouts, refused signals, binary semaphores, a stream
 * of another CUcontext) are tests/semaphore.rs's, the host-wait latency is
 * bench/interop.rs's ([host wait]).
 *
 *   frame_loop [--frames N] [--in-flight K] [--size BYTES] [--vulkan-only]
 *
 * --vulkan-only (a test of the program on machines without CUDA, e.g. lavapipe):
 * a Vulkan-only context, a plain Vulkan timeline semaphore, and stage 2 done by a
 * Vulkan submit that writes what the kernel would.
 *
 * Without a CUDA driver it says why and exits 77 (skipped), or 1 when VKCUDA_REQUIRE_GPU=1.
 */
#define _POSIX_C_SOURCE 200809L
#include <vkcuda.h>

#include <inttypes.h>
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
    return rig_submit(E.vh.queue, cmd, sem, wait, signal, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, fence);
}

/* ---- the frame loop ---------------------------------------------------------------- */

static int create_slots(void) {
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
        CHECK_VK(rig_command_buffers(E.vh.device, E.pool, 3, cmds));
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

/* ---- setup ------------------------------------------------------------------------------ */

static int setup(int vulkan_only) {
    int ok = 0;
    rig_open(&E, "frame_loop", vulkan_only, NULL);
    if (E.cuda) {
        vkcuda_semaphore_create_info sci;
        memset(&sci, 0, sizeof sci);
        sci.semaphore_type = VKCUDA_SEMAPHORE_TYPE_TIMELINE;
        CHECK_VKCUDA(vkcuda_semaphore_create(E.ctx, &sci, &A.sem));
        CHECK_VKCUDA(vkcuda_semaphore_get_vk_semaphore(A.sem, &A.vk_sem));
    } else {
        printf("Vulkan-only self-test: a plain timeline semaphore, stage 2 by a Vulkan submit\n");
        CHECK_VK(rig_timeline(E.vh.device, &A.vk_sem));
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
    printf("usage: frame_loop [--frames N] [--in-flight K] [--size BYTES] [--vulkan-only]\n"
           "  defaults: 10000 frames, 3 in flight (at most %d), 1048576 bytes (a multiple of 4)\n",
           MAX_SLOTS);
}

int main(int argc, char **argv) {
    uint64_t frames = 10000;
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

    t0 = now_s();
    ok = create_slots() && run_frames(frames);
    snprintf(name, sizeof name, "frame loop: %" PRIu64 " frames, %u in flight, %" PRIu64 " B a frame", frames,
             A.nslots, A.size);
    rig_record(&A.checks, name, ok, now_s() - t0);

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
