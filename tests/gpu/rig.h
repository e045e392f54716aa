/*
 * rig.h: what every GPU test program stands on (the examples' equivalent is
 * c_examples/example.h, and the rig builds on it: the device setup is example_open's,
 * not a copy of it).
 *
 * Device (rig.c):
 *   rig_open(e, name, vulkan_only, ci)  example_open() (a standalone context, its
 *                               CUDA context current, a stream, the example kernels,
 *                               a command pool, `cmd` and `fence`);
 *                               no usable GPU: the skip line and exit 77 (1 with
 *                               VKCUDA_REQUIRE_GPU=1); the context's CUDA device in *ci
 *   rig_close(e)                waits for the GPU and destroys what rig_open made
 *   rig_close_module(e, m)      the same, unloading the program's module m first
 *   rig_begin(cmd, flags)       resets and begins a command buffer (RIG_ONCE: one-time)
 *   rig_command_buffers(device, pool, n, cmds)  n primary command buffers from `pool`
 *   rig_fence(device, fence)    an unsignalled fence
 *   rig_timeline(device, sem)   a plain Vulkan timeline semaphore at 0 (no vkcuda: the
 *                               Vulkan-only runs)
 *   rig_submit(queue, cmd, timeline, wait, signal, stage, fence)  one submit of an ended
 *                               `cmd`; with a timeline (not VK_NULL_HANDLE) it waits for
 *                               `wait` at `stage` and signals `signal`
 *   rig_submit_and_wait(e, cmd) ends, submits with e->fence, waits, resets the fence
 *   rig_load_ptx(ptx, what, m)  a module from embedded PTX; prints the JIT error log
 *   rig_skip(name, why)         prints "SKIPPED: <name>: <why>"; returns the exit status
 *                               (77, or 1 with a FAIL line when VKCUDA_REQUIRE_GPU=1)
 *   rig_record(counts, name, ok, s)  one "ok  "/"FAIL" line and the tally
 *   rig_nothing_alive()         1 when the library holds no object (else prints them)
 *
 * Result checks (inline here). A failed check prints "  FAIL at FILE:LINE: what" and
 * jumps to the enclosing function's `done:` label.
 *
 *   FAILF(fmt, ...)             fail with a message
 *   CHECK(cond, fmt, ...)       fail unless cond
 *   CHECK_VKCUDA(call)          a vkcuda call that must succeed (prints its message)
 *   EXPECT_VKCUDA(call, want)   a vkcuda call that must return `want` (an expected
 *                               failure is printed with the library's message)
 *   CHECK_VK(call)              a VkResult that must be VK_SUCCESS
 *   CHECK_CU(call)              a CUresult that must be CUDA_SUCCESS
 *
 * C++ programs include it too (extern "C").
 */
#ifndef VKCUDA_GPU_RIG_H
#define VKCUDA_GPU_RIG_H

#include <cuda.h> /* outside the extern "C" below: they have their own */
#include <vkcuda.h>
#include <vulkan/vulkan.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "example.h"
/* The tests' checks jump to `done:` instead of exiting: example.h's go, unless the
 * program defines RIG_EXAMPLE_CHECKS (the first failure ends it, as in the examples). */
#ifndef RIG_EXAMPLE_CHECKS
#undef CHECK
#undef CHECK_VK
#undef CHECK_CU
#endif

#define RIG_FENCE_TIMEOUT_NS (120ull * 1000 * 1000 * 1000)

void rig_open(example *e, const char *name, int vulkan_only, vkcuda_cuda_info *ci);
void rig_close(example *e);
/* flags: RIG_ONCE (VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT), or 0 for a command
 * buffer submitted again and again. */
#define RIG_ONCE VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT
VkResult rig_begin(VkCommandBuffer cmd, VkCommandBufferUsageFlags flags);
VkResult rig_command_buffers(VkDevice device, VkCommandPool pool, uint32_t n, VkCommandBuffer *cmds);
VkResult rig_fence(VkDevice device, VkFence *fence);
VkResult rig_timeline(VkDevice device, VkSemaphore *sem);
VkResult rig_submit(VkQueue queue, VkCommandBuffer cmd, VkSemaphore timeline, uint64_t wait, uint64_t signal,
                    VkPipelineStageFlags wait_stage, VkFence fence);
VkResult rig_submit_and_wait(example *e, VkCommandBuffer cmd);
void rig_close_module(example *e, CUmodule module);
int rig_skip(const char *name, const char *why);
CUresult rig_load_ptx(const char *ptx, const char *what, CUmodule *module);

typedef struct rig_counts {
    unsigned passed, failed;
} rig_counts;
void rig_record(rig_counts *c, const char *name, int ok, double seconds);
int rig_nothing_alive(void);

static inline void gpu_test_fail_at(const char *file, int line, const char *fmt, ...) {
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("  FAIL at %s:%d: %s\n", file, line, msg);
    fflush(stdout);
}

/* The last vkcuda message, copied before anything else can overwrite it. */
static inline const char *gpu_test_message(void) {
    static char copy[2048];
    snprintf(copy, sizeof copy, "%s", vkcuda_last_error_message());
    return copy;
}

static inline int require_gpu(void) {
    const char *v = getenv("VKCUDA_REQUIRE_GPU");
    return v != NULL && strcmp(v, "1") == 0;
}

static inline uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static inline double now_s(void) {
    return (double)now_ns() * 1e-9;
}

#define FAILF(...)                                         \
    do {                                                   \
        gpu_test_fail_at(__FILE__, __LINE__, __VA_ARGS__); \
        goto done;                                         \
    } while (0)
#ifndef RIG_EXAMPLE_CHECKS
#define CHECK(cond, ...)                 \
    do {                                 \
        if (!(cond)) FAILF(__VA_ARGS__); \
    } while (0)
#endif
#define CHECK_VKCUDA(call)                                                             \
    do {                                                                               \
        vkcuda_result r_ = (call);                                                     \
        if (r_ != VKCUDA_SUCCESS) {                                                    \
            const char *m_ = gpu_test_message();                                       \
            FAILF("%s -> %s: %s", #call, vkcuda_result_to_string(r_), m_);             \
        }                                                                              \
    } while (0)
#define EXPECT_VKCUDA(call, want)                                                      \
    do {                                                                               \
        vkcuda_result r_ = (call);                                                     \
        if (r_ != (want)) {                                                            \
            const char *m_ = gpu_test_message();                                       \
            FAILF("%s -> %s, expected %s: %s", #call, vkcuda_result_to_string(r_),     \
                  vkcuda_result_to_string(want), m_);                                  \
        } else if ((want) != VKCUDA_SUCCESS) {                                         \
            printf("  %s -> %s as expected: %s\n", #call, vkcuda_result_to_string(r_), \
                   gpu_test_message());                                                \
        }                                                                              \
    } while (0)
#ifndef RIG_EXAMPLE_CHECKS
#define CHECK_VK(call)                                                      \
    do {                                                                    \
        VkResult r_ = (call);                                               \
        if (r_ != VK_SUCCESS) FAILF("%s -> %s", #call, vk_result_name(r_)); \
    } while (0)
#define CHECK_CU(call)                                                          \
    do {                                                                        \
        CUresult r_ = (call);                                                   \
        if (r_ != CUDA_SUCCESS) FAILF("%s -> %s", #call, cuda_result_text(r_)); \
    } while (0)
#endif

#ifdef __cplusplus
}
#endif

#endif /* VKCUDA_GPU_RIG_H */
