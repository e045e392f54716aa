/*
 * A tiny loader for the part of the CUDA driver API the examples use: no CUDA
 * header and no libcuda at build time. libcuda.so.1 is opened with dlopen and each
 * entry point is looked up by its ABI symbol name (the name cuda.h maps to, e.g.
 * cuMemcpyDtoH -> cuMemcpyDtoH_v2). Only the types, values and signatures used here
 * are declared, copied from cuda.h (CUDA 13.0).
 *
 * Also: the example kernels (kernels.cu, embedded as PTX in kernels_ptx.h), their
 * launch helpers and host references of what they compute.
 *
 * Why a loader and not <cuda.h> + CUDA::cuda_driver (issue 27, item 5): these programs
 * must start where there is no libcuda.so.1. The GPU test programs' --vulkan-only
 * self-tests (tests/gpu, on this file through example.c) run on CI's lavapipe, and a
 * program without a CUDA driver prints "SKIPPED: <name>: <why>" and exits 77; linked
 * against libcuda it stops before main (exit 127, "libcuda.so.1: cannot open shared
 * object file"). CI has no CUDA toolkit either: PyPI's nvidia-cuda-runtime gives
 * cuda.h (which C99 -Wpedantic accepts only as a system header) but no libcuda stub
 * to link against.
 */
#ifndef VKCUDA_EXAMPLES_CUDA_DRIVER_H
#define VKCUDA_EXAMPLES_CUDA_DRIVER_H

#include <stddef.h>
#include <stdint.h>

/* cuda.h types. The struct names are cuda.h's, so CUcontext and CUstream are the
 * same types as the struct CUctx_st * / struct CUstream_st * of vkcuda.h. */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef void (*CUhostFn)(void *user_data);
typedef int CUjit_option;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_NOT_READY 600
#define CU_STREAM_DEFAULT 0x0
#define CU_STREAM_NON_BLOCKING 0x1
#define CU_JIT_INFO_LOG_BUFFER 3
#define CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES 4
#define CU_JIT_ERROR_LOG_BUFFER 5
#define CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6

/* X(member, ABI symbol, parameter list): every entry point the examples call. */
#define CUDA_DRIVER_FUNCTIONS(X)                                                       \
    X(cuInit, cuInit, (unsigned int flags))                                            \
    X(cuDriverGetVersion, cuDriverGetVersion, (int *version))                          \
    X(cuGetErrorName, cuGetErrorName, (CUresult error, const char **name))             \
    X(cuGetErrorString, cuGetErrorString, (CUresult error, const char **text))         \
    X(cuCtxPushCurrent, cuCtxPushCurrent_v2, (CUcontext ctx))                          \
    X(cuCtxPopCurrent, cuCtxPopCurrent_v2, (CUcontext * ctx))                          \
    X(cuCtxDestroy, cuCtxDestroy_v2, (CUcontext ctx))                                  \
    X(cuCtxSynchronize, cuCtxSynchronize, (void))                                      \
    X(cuModuleLoadDataEx, cuModuleLoadDataEx,                                          \
      (CUmodule * module, const void *image, unsigned int count, CUjit_option *options, \
       void **values))                                                                 \
    X(cuModuleUnload, cuModuleUnload, (CUmodule module))                               \
    X(cuModuleGetFunction, cuModuleGetFunction,                                        \
      (CUfunction * function, CUmodule module, const char *name))                      \
    X(cuLaunchKernel, cuLaunchKernel,                                                  \
      (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, \
       unsigned int by, unsigned int bz, unsigned int shared_bytes, CUstream stream,   \
       void **params, void **extra))                                                   \
    X(cuLaunchHostFunc, cuLaunchHostFunc, (CUstream stream, CUhostFn fn, void *user_data)) \
    X(cuStreamCreate, cuStreamCreate, (CUstream * stream, unsigned int flags))         \
    X(cuStreamDestroy, cuStreamDestroy_v2, (CUstream stream))                          \
    X(cuStreamSynchronize, cuStreamSynchronize, (CUstream stream))                     \
    X(cuStreamQuery, cuStreamQuery, (CUstream stream))                                 \
    X(cuMemcpyHtoD, cuMemcpyHtoD_v2, (CUdeviceptr dst, const void *src, size_t bytes)) \
    X(cuMemcpyDtoH, cuMemcpyDtoH_v2, (void *dst, CUdeviceptr src, size_t bytes))       \
    X(cuMemGetInfo, cuMemGetInfo_v2, (size_t * free_bytes, size_t *total_bytes))

#define CUDA_DRIVER_MEMBER(member, symbol, params) CUresult (*member) params;
typedef struct cuda_driver {
    void *library;
    CUDA_DRIVER_FUNCTIONS(CUDA_DRIVER_MEMBER)
    /* Optional, NULL when absent: the legacy cuCtxCreate_v2 and the CUDA 12.5+
     * cuCtxCreate_v4 (what cuda.h 13 maps cuCtxCreate to). */
    CUresult (*cuCtxCreate_v2)(CUcontext *ctx, unsigned int flags, CUdevice dev);
    CUresult (*cuCtxCreate_v4)(CUcontext *ctx, void *params, unsigned int flags, CUdevice dev);
} cuda_driver;
#undef CUDA_DRIVER_MEMBER

/* Opens libcuda.so.1 and looks up every entry point. On failure returns -1 and
 * writes why into `why` (the dlopen/dlsym message). Does not call cuInit: the vkcuda
 * context has done that when it made the CUDA context. */
int cuda_driver_load(cuda_driver *cu, char *why, size_t why_size);
void cuda_driver_unload(cuda_driver *cu);

/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for `r`, in a static buffer. */
const char *cuda_result_text(const cuda_driver *cu, CUresult r);

/* A new context on `device` (cuCtxCreate_v2, else cuCtxCreate_v4 with NULL
 * params); it is made current, as cuCtxCreate does. CUDA_ERROR_NOT_FOUND (500)
 * when the driver has neither. */
CUresult cuda_context_create(const cuda_driver *cu, CUdevice device, CUcontext *ctx);

/* The example kernels, loaded from kernels_ptx.h (or, when the environment
 * variable VKCUDA_EXAMPLES_PTX names a file, from that PTX file instead: the GPU
 * test runs the examples once with PTX freshly compiled from kernels.cu). */
typedef struct cuda_kernels {
    CUmodule module;
    CUfunction fill_pattern;
    CUfunction transform;
    char source[256]; /* "embedded kernels_ptx.h" or the file name */
} cuda_kernels;

/* Loads the module in the current context; on a JIT failure prints the JIT log. */
CUresult cuda_kernels_load(const cuda_driver *cu, cuda_kernels *k);
void cuda_kernels_unload(const cuda_driver *cu, cuda_kernels *k);

/* Launches fill_pattern / transform over `bytes` bytes at `ptr` on `stream`. */
CUresult cuda_fill_pattern(const cuda_driver *cu, const cuda_kernels *k, CUstream stream,
                           CUdeviceptr ptr, uint64_t bytes, uint32_t seed);
CUresult cuda_transform(const cuda_driver *cu, const cuda_kernels *k, CUstream stream,
                        CUdeviceptr ptr, uint64_t bytes, uint32_t mul, uint32_t add);

/* Host references of the kernels (see kernels.cu: word i of a byte buffer, the
 * last word partial). They must stay equal to the device code. */
static inline uint32_t pattern_word(uint64_t i, uint32_t seed) {
    uint32_t x = (uint32_t)i ^ (uint32_t)(i >> 32) * 0x9e3779b9u ^ seed;
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    x *= 0xc2b2ae35u;
    x ^= x >> 16;
    return x;
}

static inline uint32_t transform_word(uint32_t x, uint32_t mul, uint32_t add) {
    return x * mul + add;
}

/* Word i of a buffer of `bytes` bytes, little-endian, the missing bytes of a
 * partial last word read as 0. */
static inline uint32_t load_word(const void *buffer, uint64_t bytes, uint64_t i) {
    const uint8_t *b = (const uint8_t *)buffer + 4 * i;
    uint64_t n = bytes - 4 * i < 4 ? bytes - 4 * i : 4;
    uint32_t v = 0;
    uint64_t k;
    for (k = 0; k < n; k++) v |= (uint32_t)b[k] << (8 * k);
    return v;
}

/* The number of (possibly partial) words in `bytes` bytes. */
static inline uint64_t word_count(uint64_t bytes) {
    return (bytes + 3) / 4;
}

#endif /* VKCUDA_EXAMPLES_CUDA_DRIVER_H */
