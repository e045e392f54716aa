/* The examples' CUDA side; see cuda_util.h. */
#include "cuda_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_ptx.h"

const char *cuda_result_text(CUresult r) {
    static char text[256];
    const char *name = NULL, *what = NULL;
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS) name = NULL;
    if (cuGetErrorString(r, &what) != CUDA_SUCCESS) what = NULL;
    snprintf(text, sizeof text, "%s (%d: %s)", name ? name : "CUDA_ERROR_?", (int)r,
             what ? what : "no description");
    return text;
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

CUresult cuda_kernels_load(cuda_kernels *k) {
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
            return CUDA_ERROR_INVALID_VALUE;
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
    r = cuModuleLoadDataEx(&k->module, image, 4, options, values);
    free(owned);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "cuModuleLoadDataEx(%s) failed: %s\n  JIT error log: %s\n  JIT info log: %s\n",
                k->source, cuda_result_text(r), error_log, info_log);
        k->module = NULL;
        return r;
    }
    r = cuModuleGetFunction(&k->fill_pattern, k->module, "fill_pattern");
    if (r == CUDA_SUCCESS) r = cuModuleGetFunction(&k->transform, k->module, "transform");
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "cuModuleGetFunction failed: %s\n", cuda_result_text(r));
        cuModuleUnload(k->module);
        k->module = NULL;
    }
    return r;
}

void cuda_kernels_unload(cuda_kernels *k) {
    if (k->module != NULL) cuModuleUnload(k->module);
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

CUresult cuda_fill_pattern(const cuda_kernels *k, CUstream stream, CUdeviceptr ptr, uint64_t bytes,
                           uint32_t seed) {
    size_t n = (size_t)bytes;
    void *params[3];
    unsigned int blocks;
    params[0] = &ptr;
    params[1] = &n;
    params[2] = &seed;
    grid_for(bytes, &blocks);
    return cuLaunchKernel(k->fill_pattern, blocks, 1, 1, 256, 1, 1, 0, stream, params, NULL);
}

CUresult cuda_transform(const cuda_kernels *k, CUstream stream, CUdeviceptr ptr, uint64_t bytes,
                        uint32_t mul, uint32_t add) {
    size_t n = (size_t)bytes;
    void *params[4];
    unsigned int blocks;
    params[0] = &ptr;
    params[1] = &n;
    params[2] = &mul;
    params[3] = &add;
    grid_for(bytes, &blocks);
    return cuLaunchKernel(k->transform, blocks, 1, 1, 256, 1, 1, 0, stream, params, NULL);
}
