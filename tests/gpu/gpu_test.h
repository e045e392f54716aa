/*
 * gpu_test.h: the result checks and small helpers the GPU test programs share (the
 * examples' equivalent is c_examples/example.h). A failed check prints
 * "  FAIL at FILE:LINE: what" and jumps to the enclosing function's `done:` label; the
 * first failure's text is kept for a final summary line (gpu_test_first_failure()).
 *
 *   FAILF(fmt, ...)             fail with a message
 *   CHECK(cond, fmt, ...)       fail unless cond
 *   CHECK_VKCUDA(call)          a vkcuda call that must succeed (prints its message)
 *   EXPECT_VKCUDA(call, want)   a vkcuda call that must return `want` (an expected
 *                               failure is printed with the library's message)
 *   CHECK_VK(call)              a VkResult that must be VK_SUCCESS
 *   CHECK_CU(call)              a CUresult that must be CUDA_SUCCESS; the program
 *                               defines GPU_TEST_CUDA_DRIVER (a const cuda_driver *) for
 *                               the error names before it uses CHECK_CU
 */
#ifndef VKCUDA_GPU_TEST_H
#define VKCUDA_GPU_TEST_H

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vkcuda.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_driver.h"
#include "vk_loader.h"

/* The text of the first failure, "" while nothing has failed. */
static inline char *gpu_test_first_failure(void) {
    static char text[1024];
    return text;
}

static inline void gpu_test_fail_at(const char *file, int line, const char *fmt, ...) {
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("  FAIL at %s:%d: %s\n", file, line, msg);
    if (gpu_test_first_failure()[0] == '\0') snprintf(gpu_test_first_failure(), 1024, "%s", msg);
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
#define CHECK(cond, ...)                 \
    do {                                 \
        if (!(cond)) FAILF(__VA_ARGS__); \
    } while (0)
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
#define CHECK_VK(call)                                                      \
    do {                                                                    \
        VkResult r_ = (call);                                               \
        if (r_ != VK_SUCCESS) FAILF("%s -> %s", #call, vk_result_name(r_)); \
    } while (0)
#define CHECK_CU(call)                                                                             \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) FAILF("%s -> %s", #call, cuda_result_text(GPU_TEST_CUDA_DRIVER, r_)); \
    } while (0)

#endif /* VKCUDA_GPU_TEST_H */
