/*
 * cuda_shim.c: the CUDA driver entry points the programs call, for a build without a
 * CUDA driver to link. Where one is installed the build links CUDA::cuda_driver
 * instead and this file is not compiled (cmake/vkcudaPrograms.cmake).
 *
 * Why it exists: a program linked against libcuda.so.1 does not start where there is
 * none (the dynamic loader stops it before main, exit 127), and these programs must:
 * without a CUDA driver they print "SKIPPED: <name>: <why>" and exit 77, and the GPU
 * tests' --vulkan-only self-tests run on CI's lavapipe. Each function here has the
 * prototype of <cuda.h> (the compiler checks it) and forwards to libcuda.so.1, opened
 * at the first call and looked up by the name <cuda.h> gives it (cuMemcpyDtoH is
 * cuMemcpyDtoH_v2), as the dynamic linker would. Without the library every call
 * returns CUDA_ERROR_STUB_LIBRARY, as NVIDIA's link stub does; the programs never get
 * that far, since the vkcuda context they open first finds no CUDA driver either.
 */
#include <cuda.h>

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

/* X(function, parameters, arguments): every entry point the programs call. */
#define CUDA_SHIM_FUNCTIONS(X)                                                                     \
    X(cuGetErrorName, (CUresult error, const char **text), (error, text))                          \
    X(cuGetErrorString, (CUresult error, const char **text), (error, text))                        \
    X(cuCtxCreate, (CUcontext * ctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev), \
      (ctx, params, flags, dev))                                                                   \
    X(cuCtxDestroy, (CUcontext ctx), (ctx))                                                        \
    X(cuCtxPushCurrent, (CUcontext ctx), (ctx))                                                    \
    X(cuCtxPopCurrent, (CUcontext * ctx), (ctx))                                                   \
    X(cuCtxSynchronize, (void), ())                                                                \
    X(cuMemGetInfo, (size_t * free_bytes, size_t *total_bytes), (free_bytes, total_bytes))         \
    X(cuMemAlloc, (CUdeviceptr * ptr, size_t bytes), (ptr, bytes))                                 \
    X(cuMemFree, (CUdeviceptr ptr), (ptr))                                                         \
    X(cuMemcpyHtoD, (CUdeviceptr dst, const void *src, size_t bytes), (dst, src, bytes))           \
    X(cuMemcpyDtoH, (void *dst, CUdeviceptr src, size_t bytes), (dst, src, bytes))                 \
    X(cuMemcpy2D, (const CUDA_MEMCPY2D *copy), (copy))                                             \
    X(cuModuleLoadDataEx,                                                                          \
      (CUmodule * module, const void *image, unsigned int n, CUjit_option *options, void **values), \
      (module, image, n, options, values))                                                         \
    X(cuModuleGetFunction, (CUfunction * f, CUmodule module, const char *name), (f, module, name)) \
    X(cuModuleUnload, (CUmodule module), (module))                                                 \
    X(cuLaunchKernel,                                                                              \
      (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,           \
       unsigned int by, unsigned int bz, unsigned int shared, CUstream stream, void **params,      \
       void **extra),                                                                              \
      (f, gx, gy, gz, bx, by, bz, shared, stream, params, extra))                                  \
    X(cuLaunchHostFunc, (CUstream stream, CUhostFn fn, void *user), (stream, fn, user))            \
    X(cuStreamCreate, (CUstream * stream, unsigned int flags), (stream, flags))                    \
    X(cuStreamDestroy, (CUstream stream), (stream))                                                \
    X(cuStreamQuery, (CUstream stream), (stream))                                                  \
    X(cuStreamSynchronize, (CUstream stream), (stream))

/* The ABI name of `f`: the name after <cuda.h>'s macros. */
#define CUDA_SHIM_NAME(f) CUDA_SHIM_STRING(f)
#define CUDA_SHIM_STRING(f) #f

#define CUDA_SHIM_POINTER(f, params, args) static CUresult(CUDAAPI *real_##f) params;
CUDA_SHIM_FUNCTIONS(CUDA_SHIM_POINTER)

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
    void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), *p;
    if (library == NULL) return;
    /* dlsym gives an object pointer; its bits are the function's (what POSIX promises). */
#define CUDA_SHIM_LOOKUP(f, params, args)                                      \
    if ((p = dlsym(library, CUDA_SHIM_NAME(f))) != NULL) memcpy(&real_##f, &p, sizeof p);
    CUDA_SHIM_FUNCTIONS(CUDA_SHIM_LOOKUP)
}

#define CUDA_SHIM_FORWARD(f, params, args)                                     \
    CUresult CUDAAPI f params {                                                \
        pthread_once(&once, load);                                             \
        return real_##f != NULL ? real_##f args : CUDA_ERROR_STUB_LIBRARY;     \
    }
CUDA_SHIM_FUNCTIONS(CUDA_SHIM_FORWARD)
