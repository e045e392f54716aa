/* The CUDA driver API loader of the examples; see cuda_driver.h. */
#include "cuda_driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_ptx.h"

/* dlsym returns an object pointer; ISO C has no conversion to a function pointer,
 * so the bits are copied (what POSIX guarantees works). */
static int lookup(void *library, const char *symbol, void *function_pointer, size_t size,
                  char *why, size_t why_size) {
    void *p;
    dlerror();
    p = dlsym(library, symbol);
    if (p == NULL) {
        const char *e = dlerror();
        snprintf(why, why_size, "libcuda.so.1 has no %s (%s)", symbol, e ? e : "NULL");
        return -1;
    }
    memcpy(function_pointer, &p, size);
    return 0;
}

int cuda_driver_load(cuda_driver *cu, char *why, size_t why_size) {
    memset(cu, 0, sizeof *cu);
    cu->library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (cu->library == NULL) {
        const char *e = dlerror();
        snprintf(why, why_size, "dlopen(libcuda.so.1) failed: %s", e ? e : "?");
        return -1;
    }
#define CUDA_DRIVER_LOOKUP(member, symbol, params)                                      \
    if (lookup(cu->library, #symbol, &cu->member, sizeof cu->member, why, why_size) != 0) { \
        cuda_driver_unload(cu);                                                        \
        return -1;                                                                     \
    }
    CUDA_DRIVER_FUNCTIONS(CUDA_DRIVER_LOOKUP)
#undef CUDA_DRIVER_LOOKUP
    {
        void *p = dlsym(cu->library, "cuCtxCreate_v2");
        if (p != NULL) memcpy(&cu->cuCtxCreate_v2, &p, sizeof cu->cuCtxCreate_v2);
        p = dlsym(cu->library, "cuCtxCreate_v4");
        if (p != NULL) memcpy(&cu->cuCtxCreate_v4, &p, sizeof cu->cuCtxCreate_v4);
    }
    return 0;
}

void cuda_driver_unload(cuda_driver *cu) {
    if (cu->library != NULL) dlclose(cu->library);
    memset(cu, 0, sizeof *cu);
}

const char *cuda_result_text(const cuda_driver *cu, CUresult r) {
    static char text[256];
    const char *name = NULL, *what = NULL;
    if (cu->cuGetErrorName == NULL || cu->cuGetErrorName(r, &name) != CUDA_SUCCESS) name = NULL;
    if (cu->cuGetErrorString == NULL || cu->cuGetErrorString(r, &what) != CUDA_SUCCESS) what = NULL;
    snprintf(text, sizeof text, "%s (%d: %s)", name ? name : "CUDA_ERROR_?", r,
             what ? what : "no description");
    return text;
}

CUresult cuda_context_create(const cuda_driver *cu, CUdevice device, CUcontext *ctx) {
    if (cu->cuCtxCreate_v2 != NULL) return cu->cuCtxCreate_v2(ctx, 0, device);
    if (cu->cuCtxCreate_v4 != NULL) return cu->cuCtxCreate_v4(ctx, NULL, 0, device);
    return 500; /* CUDA_ERROR_NOT_FOUND */
}

static char *read_file(const char *path, char *why, size_t why_size) {
    FILE *f = fopen(path, "rb");
    long size;
    char *data;
    if (f == NULL) {
        snprintf(why, why_size, "cannot open %s", path);
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        snprintf(why, why_size, "cannot size %s", path);
        fclose(f);
        return NULL;
    }
    data = (char *)malloc((size_t)size + 1);
    if (data == NULL || fread(data, 1, (size_t)size, f) != (size_t)size) {
        snprintf(why, why_size, "cannot read %s", path);
        free(data);
        fclose(f);
        return NULL;
    }
    data[size] = '\0';
    fclose(f);
    return data;
}

CUresult cuda_kernels_load(const cuda_driver *cu, cuda_kernels *k) {
    static char info_log[8192], error_log[8192];
    CUjit_option options[4] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                               CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[4];
    const char *file = getenv("VKCUDA_EXAMPLES_PTX");
    char *owned = NULL;
    const char *image = kernels_ptx;
    CUresult r;

    memset(k, 0, sizeof *k);
    if (file != NULL && file[0] != '\0') {
        char why[512];
        owned = read_file(file, why, sizeof why);
        if (owned == NULL) {
            fprintf(stderr, "VKCUDA_EXAMPLES_PTX: %s\n", why);
            return 1; /* CUDA_ERROR_INVALID_VALUE */
        }
        image = owned;
        snprintf(k->source, sizeof k->source, "PTX file %s (VKCUDA_EXAMPLES_PTX)", file);
    } else {
        snprintf(k->source, sizeof k->source, "embedded kernels_ptx.h (%s)", KERNELS_PTX_ARCH);
    }
    info_log[0] = error_log[0] = '\0';
    values[0] = info_log;
    values[1] = (void *)(uintptr_t)sizeof info_log;
    values[2] = error_log;
    values[3] = (void *)(uintptr_t)sizeof error_log;
    r = cu->cuModuleLoadDataEx(&k->module, image, 4, options, values);
    free(owned);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "cuModuleLoadDataEx(%s) failed: %s\n  JIT error log: %s\n  JIT info log: %s\n",
                k->source, cuda_result_text(cu, r), error_log, info_log);
        k->module = NULL;
        return r;
    }
    r = cu->cuModuleGetFunction(&k->fill_pattern, k->module, "fill_pattern");
    if (r == CUDA_SUCCESS) r = cu->cuModuleGetFunction(&k->transform, k->module, "transform");
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "cuModuleGetFunction failed: %s\n", cuda_result_text(cu, r));
        cu->cuModuleUnload(k->module);
        k->module = NULL;
    }
    return r;
}

void cuda_kernels_unload(const cuda_driver *cu, cuda_kernels *k) {
    if (k->module != NULL) cu->cuModuleUnload(k->module);
    k->module = NULL;
}

/* 256 threads a block; at most 8192 blocks, the grid-stride loops do the rest. */
static void grid_for(uint64_t bytes, unsigned int *blocks) {
    uint64_t words = word_count(bytes);
    uint64_t b = (words + 255) / 256;
    if (b < 1) b = 1;
    if (b > 8192) b = 8192;
    *blocks = (unsigned int)b;
}

CUresult cuda_fill_pattern(const cuda_driver *cu, const cuda_kernels *k, CUstream stream,
                           CUdeviceptr ptr, uint64_t bytes, uint32_t seed) {
    size_t n = (size_t)bytes;
    void *params[3];
    unsigned int blocks;
    params[0] = &ptr;
    params[1] = &n;
    params[2] = &seed;
    grid_for(bytes, &blocks);
    return cu->cuLaunchKernel(k->fill_pattern, blocks, 1, 1, 256, 1, 1, 0, stream, params, NULL);
}

CUresult cuda_transform(const cuda_driver *cu, const cuda_kernels *k, CUstream stream,
                        CUdeviceptr ptr, uint64_t bytes, uint32_t mul, uint32_t add) {
    size_t n = (size_t)bytes;
    void *params[4];
    unsigned int blocks;
    params[0] = &ptr;
    params[1] = &n;
    params[2] = &mul;
    params[3] = &add;
    grid_for(bytes, &blocks);
    return cu->cuLaunchKernel(k->transform, blocks, 1, 1, 256, 1, 1, 0, stream, params, NULL);
}
