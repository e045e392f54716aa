/*
 * frame_loop_ref: the frame loop of bench/python_frames.py, in C, for the ratio
 * "Python loop / the same loop in C" (issue 30, "Speed").
 *
 * One shared buffer (Vulkan-allocated, 4 KiB), one timeline semaphore starting at 0,
 * one command buffer recorded once (simultaneous use): acquire the buffer from CUDA
 * (transfer read/write), copy its first word into a host-visible buffer, release it
 * to CUDA (transfer write). Frame k (1..N), with at most D frames in flight:
 *
 *   if k > D: spin on vkcuda_semaphore_get_value until the timeline is >= 2(k-D)
 *   CUDA stream: a tiny kernel adds 1 to word 0 of the buffer   (torch: t.add_(1))
 *   vkcuda_semaphore_cuda_signal(2k-1, stream)
 *   vkQueueSubmit(cmd, wait 2k-1, signal 2k)                     (vkcuda.queue.Queue.submit)
 *   vkcuda_semaphore_cuda_wait(2k, stream)                       (the handoff back)
 *
 * The host clock is read every BATCH frames; a sample is the time per frame over a
 * batch, the first batch is dropped (warm-up), and the median is printed. At the end
 * the word Vulkan copied out must be N.
 *
 *   frame_loop_ref [--frames N] [--in-flight D] [--batch B]
 *
 * Prints (the line bench/python_frames.py parses):
 *   frame_loop_ref: frames N in_flight D batch B samples S median_us_per_frame M p99_us_per_frame P
 * then "frame_loop_ref: PASS" (exit 0) or a FAIL line (exit 1). Without a CUDA GPU:
 * "SKIPPED: frame_loop_ref: <why>", exit 77 (1 with VKCUDA_REQUIRE_GPU=1).
 */
#include "example.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The kernel: word 0 += 1, launched with one thread (the same PTX as bench/interop.rs's). */
static const char TINY_PTX[] =
    ".version 7.0\n"
    ".target sm_70\n"
    ".address_size 64\n"
    ".visible .entry tiny(.param .u64 p)\n"
    "{\n"
    "    .reg .u64 %rd<3>;\n"
    "    .reg .u32 %r<3>;\n"
    "    ld.param.u64 %rd1, [p];\n"
    "    cvta.to.global.u64 %rd2, %rd1;\n"
    "    ld.global.u32 %r1, [%rd2];\n"
    "    add.u32 %r2, %r1, 1;\n"
    "    st.global.u32 [%rd2], %r2;\n"
    "    ret;\n"
    "}\n";

#define SPIN_LIMIT_NS (10ull * 1000 * 1000 * 1000)

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Of sorted samples: the median (the mean of the middle two for an even count, as
 * Python's statistics.median) and the 99th percentile (as bench/interop.rs's p99). */
static double median(const double *v, size_t n) {
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

static double p99(const double *v, size_t n) {
    size_t i = (size_t)((double)n * 0.99);
    return v[i < n ? i : n - 1];
}

static void spin_until(vkcuda_semaphore *s, uint64_t value) {
    uint64_t v = 0, t0 = now_ns();
    for (;;) {
        CHECK(vkcuda_semaphore_get_value(s, &v));
        if (v >= value) return;
        if (now_ns() - t0 > SPIN_LIMIT_NS) {
            printf("frame_loop_ref: FAIL: the timeline is stuck at %" PRIu64 " below %" PRIu64 "\n", v, value);
            exit(1);
        }
    }
}

static uint64_t parse_count(const char *flag, const char *text) {
    char *end = NULL;
    unsigned long long v = strtoull(text, &end, 10);
    if (end == text || *end != '\0' || v == 0) {
        printf("frame_loop_ref: %s takes a positive integer, not '%s'\n", flag, text);
        exit(2);
    }
    return (uint64_t)v;
}

int main(int argc, char **argv) {
    example ex;
    uint64_t frames = 5000, in_flight = 2, batch = 100, k, t0, value = 0;
    vkcuda_semaphore_create_info tci;
    vkcuda_buffer_create_info bci;
    vkcuda_semaphore *sem;
    VkSemaphore vk_sem;
    vkcuda_buffer *buf;
    vkcuda_buffer_info info;
    vk_owned_buffer readback;
    vkcuda_handoff_info acquire, release;
    VkCommandBuffer cmd;
    VkCommandBufferBeginInfo begin;
    VkBufferCopy region = {0, 0, 4};
    VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    CUmodule module;
    CUfunction tiny;
    CUdeviceptr word;
    void *params[1];
    double *samples;
    size_t n = 0, cap;
    uint32_t got;
    int i;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--frames") == 0 && i + 1 < argc) {
            frames = parse_count("--frames", argv[++i]);
        } else if (strcmp(argv[i], "--in-flight") == 0 && i + 1 < argc) {
            in_flight = parse_count("--in-flight", argv[++i]);
        } else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc) {
            batch = parse_count("--batch", argv[++i]);
        } else {
            printf("usage: frame_loop_ref [--frames N] [--in-flight D] [--batch B]\n");
            return 2;
        }
    }
    if (frames < 2 * batch) {
        printf("frame_loop_ref: --frames must be at least 2 x --batch (%" PRIu64 ")\n", 2 * batch);
        return 2;
    }

    example_open(&ex, "frame_loop_ref", 0);
    CHECK_CU(cuModuleLoadDataEx(&module, TINY_PTX, 0, NULL, NULL));
    CHECK_CU(cuModuleGetFunction(&tiny, module, "tiny"));

    memset(&tci, 0, sizeof tci); /* a timeline at 0 */
    CHECK(vkcuda_semaphore_create(ex.ctx, &tci, &sem));
    CHECK(vkcuda_semaphore_get_vk_semaphore(sem, &vk_sem));
    memset(&bci, 0, sizeof bci); /* Vulkan-allocated, as ctx.buffer(4096) */
    bci.size = 4096;
    CHECK(vkcuda_buffer_create(ex.ctx, &bci, &buf));
    CHECK(vkcuda_buffer_get_info(buf, &info));
    word = (CUdeviceptr)info.cuda_pointer;
    readback = example_host_buffer(&ex, 4);
    memset(readback.mapped, 0, 4);

    /* What vkcuda.queue's Recorder records: acquire_from_cuda, copy, release_to_cuda. */
    acquire = example_handoff(&ex, VK_PIPELINE_STAGE_TRANSFER_BIT,
                              VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    release = example_handoff(&ex, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
    cmd = example_command_buffer(&ex);
    memset(&begin, 0, sizeof begin);
    begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    begin.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;
    CHECK_VK(vkBeginCommandBuffer(cmd, &begin));
    CHECK(vkcuda_buffer_cmd_acquire_from_cuda(buf, cmd, &acquire));
    vkCmdCopyBuffer(cmd, info.buffer, readback.buffer, 1, &region);
    CHECK(vkcuda_buffer_cmd_release_to_cuda(buf, cmd, &release));
    CHECK_VK(vkEndCommandBuffer(cmd));

    /* The word starts at 0 (CUDA writes it; no Vulkan access is pending yet). */
    {
        uint32_t zero = 0;
        CHECK_CU(cuMemcpyHtoD(word, &zero, 4));
        CHECK_CU(cuCtxSynchronize());
    }

    cap = (size_t)(frames / batch) + 1;
    samples = (double *)calloc(cap, sizeof *samples);
    if (samples == NULL) return 1;
    params[0] = &word;
    t0 = now_ns();
    for (k = 1; k <= frames; k++) {
        uint64_t wait_value = 2 * k - 1, signal_value = 2 * k;
        VkTimelineSemaphoreSubmitInfo ts;
        VkSubmitInfo si;
        if (k > in_flight) spin_until(sem, 2 * (k - in_flight));
        CHECK_CU(cuLaunchKernel(tiny, 1, 1, 1, 1, 1, 1, 0, ex.stream, params, NULL));
        CHECK(vkcuda_semaphore_cuda_signal(sem, wait_value, ex.stream));
        memset(&ts, 0, sizeof ts);
        ts.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO;
        ts.waitSemaphoreValueCount = 1;
        ts.pWaitSemaphoreValues = &wait_value;
        ts.signalSemaphoreValueCount = 1;
        ts.pSignalSemaphoreValues = &signal_value;
        memset(&si, 0, sizeof si);
        si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
        si.pNext = &ts;
        si.waitSemaphoreCount = 1;
        si.pWaitSemaphores = &vk_sem;
        si.pWaitDstStageMask = &wait_stage;
        si.commandBufferCount = 1;
        si.pCommandBuffers = &cmd;
        si.signalSemaphoreCount = 1;
        si.pSignalSemaphores = &vk_sem;
        CHECK_VK(vkQueueSubmit(ex.vh.queue, 1, &si, VK_NULL_HANDLE));
        CHECK(vkcuda_semaphore_cuda_wait(sem, signal_value, ex.stream));
        if (k % batch == 0) {
            uint64_t t = now_ns();
            if (n < cap) samples[n++] = (double)(t - t0) / 1000.0 / (double)batch;
            t0 = t;
        }
    }
    spin_until(sem, 2 * frames);
    CHECK_CU(cuStreamSynchronize(ex.stream));
    CHECK_VK(vkQueueWaitIdle(ex.vh.queue));
    CHECK(vkcuda_semaphore_get_value(sem, &value));
    memcpy(&got, readback.mapped, 4);

    /* The first batch is the warm-up. */
    qsort(samples + 1, n - 1, sizeof *samples, cmp_double);
    printf("frame_loop_ref: frames %" PRIu64 " in_flight %" PRIu64 " batch %" PRIu64
           " samples %zu median_us_per_frame %.3f p99_us_per_frame %.3f\n",
           frames, in_flight, batch, n - 1, median(samples + 1, n - 1), p99(samples + 1, n - 1));
    free(samples);

    CHECK_VK(vkDeviceWaitIdle(ex.vh.device));
    vk_owned_buffer_destroy(&ex.vk, &readback);
    vkcuda_buffer_destroy(buf);
    vkcuda_semaphore_destroy(sem);
    CHECK_CU(cuModuleUnload(module));
    example_close(&ex);
    if (got != (uint32_t)frames || value != 2 * frames) {
        printf("frame_loop_ref: FAIL: Vulkan read %u (want %" PRIu64 "), the timeline is at %" PRIu64
               " (want %" PRIu64 ")\n", got, frames, value, 2 * frames);
        return 1;
    }
    printf("frame_loop_ref: PASS\n");
    return 0;
}
