/*
 * A stand-in for libcuda.so.1, so the CUDA paths of vkcuda can be tested for real
 * on a machine without NVIDIA's driver. By default it has one device whose UUID
 * matches no Vulkan device. Only the calls the library makes up to pairing (and a
 * primary context) do anything; every other driver call returns
 * CUDA_ERROR_UNKNOWN.
 *
 * Variants, chosen by environment variables of the process that loads it:
 *   FAKE_CUDA_INIT_FAILS=1        cuInit fails with CUDA_ERROR_NO_DEVICE
 *   FAKE_CUDA_VERSION=11010       cuDriverGetVersion reports this (default 12080)
 *   FAKE_CUDA_UUIDS=hex32,hex32   one device per UUID (32 hex digits each; at most
 *                                 4), default one device of UUID ab ab ... ab
 *   CUDA_VISIBLE_DEVICES=1        as the real driver: only these indices of that
 *                                 list are devices, renumbered from 0
 * Building with -DOMIT_MEM_CREATE leaves cuMemCreate out (a driver too old).
 *
 * Contexts: cuDevicePrimaryCtxRetain hands out one fake CUcontext per device; they
 * can be pushed, popped and asked for their device; cuMemAlloc_v2 in them returns
 * fake addresses that cuPointerGetAttribute(BUFFER_ID) knows. fake_cuda_stream(i)
 * returns a fake CUstream of device i's context for cuStreamGetCtx. Handles that
 * are not these are refused with CUDA_ERROR_INVALID_CONTEXT / INVALID_HANDLE.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_INVALID_HANDLE 400
#define CUDA_ERROR_UNKNOWN 999
#define CU_POINTER_ATTRIBUTE_BUFFER_ID 7

#define MAX_DEVICES 4

typedef struct { unsigned char bytes[16]; } CUuuid;
typedef struct { int device; } fake_ctx;
typedef struct { int device; } fake_stream;

static fake_ctx contexts[MAX_DEVICES];
static fake_stream streams[MAX_DEVICES];
static int count = -1;
static unsigned char uuids[MAX_DEVICES][16];

static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The device table: FAKE_CUDA_UUIDS filtered by CUDA_VISIBLE_DEVICES. */
static void load_devices(void) {
    unsigned char all[MAX_DEVICES][16];
    int n = 0, i;
    const char *list = getenv("FAKE_CUDA_UUIDS");
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    if (count >= 0) return;
    if (!list || !*list) {
        memset(all[0], 0xab, 16);
        n = 1;
    } else {
        const char *p = list;
        while (*p && n < MAX_DEVICES) {
            for (i = 0; i < 16; i++) {
                int hi = hex(p[0]), lo = hi < 0 ? -1 : hex(p[1]);
                if (lo < 0) break;
                all[n][i] = (unsigned char)(hi * 16 + lo);
                p += 2;
            }
            if (i < 16) break; /* malformed: stop here */
            n++;
            if (*p == ',') p++;
        }
    }
    count = 0;
    if (visible) {
        const char *p = visible;
        while (*p && count < MAX_DEVICES) {
            char *end;
            long idx = strtol(p, &end, 10);
            if (end == p) break;
            if (idx >= 0 && idx < n) memcpy(uuids[count++], all[idx], 16);
            p = *end == ',' ? end + 1 : end;
        }
    } else {
        for (i = 0; i < n; i++) memcpy(uuids[count++], all[i], 16);
    }
    for (i = 0; i < MAX_DEVICES; i++) {
        contexts[i].device = i;
        streams[i].device = i;
    }
}

static int ctx_device(const void *ctx) {
    int i;
    for (i = 0; i < count; i++)
        if (ctx == (const void *)&contexts[i]) return i;
    return -1;
}

int cuInit(unsigned flags) {
    (void)flags;
    load_devices();
    return getenv("FAKE_CUDA_INIT_FAILS") ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}
int cuDriverGetVersion(int *v) {
    const char *s = getenv("FAKE_CUDA_VERSION");
    *v = s ? atoi(s) : 12080;
    return CUDA_SUCCESS;
}
int cuDeviceGetCount(int *n) { load_devices(); *n = count; return CUDA_SUCCESS; }
int cuDeviceGet(int *d, int ordinal) {
    load_devices();
    if (ordinal < 0 || ordinal >= count) return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
}
int cuDeviceGetUuid_v2(CUuuid *u, int d) {
    if (d < 0 || d >= count) return CUDA_ERROR_INVALID_DEVICE;
    memcpy(u->bytes, uuids[d], 16);
    return CUDA_SUCCESS;
}
int cuDeviceGetName(char *name, int len, int d) {
    static const char *names[MAX_DEVICES] = {"vkcuda fake GPU", "vkcuda fake GPU 1", "vkcuda fake GPU 2",
                                             "vkcuda fake GPU 3"};
    if (d < 0 || d >= count) return CUDA_ERROR_INVALID_DEVICE;
    strncpy(name, names[d], (size_t)len);
    name[len - 1] = 0;
    return CUDA_SUCCESS;
}

/* The current-context stack of each thread. */
static __thread const void *stack[16];
static __thread int depth;

int cuDevicePrimaryCtxRetain(void **ctx, int d) {
    if (d < 0 || d >= count) return CUDA_ERROR_INVALID_DEVICE;
    *ctx = &contexts[d];
    return CUDA_SUCCESS;
}
int cuDevicePrimaryCtxRelease_v2(int d) { return d >= 0 && d < count ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE; }
int cuCtxPushCurrent_v2(void *ctx) {
    if (ctx_device(ctx) < 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (depth == 16) return CUDA_ERROR_UNKNOWN;
    stack[depth++] = ctx;
    return CUDA_SUCCESS;
}
int cuCtxPopCurrent_v2(void **ctx) {
    if (depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    depth--;
    if (ctx) *ctx = (void *)stack[depth];
    return CUDA_SUCCESS;
}
int cuCtxGetCurrent(void **ctx) {
    *ctx = depth ? (void *)stack[depth - 1] : NULL;
    return CUDA_SUCCESS;
}
int cuCtxGetDevice(int *d) {
    if (depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    *d = ctx_device(stack[depth - 1]);
    return CUDA_SUCCESS;
}

/* Allocations: fake addresses, each with a unique buffer id while it lives. */
#define MAX_ALLOCS 64
static uint64_t alloc_ptr[MAX_ALLOCS];
static uint64_t alloc_id[MAX_ALLOCS];
static uint64_t next_ptr = 0x7f0000000000ull, next_id = 1;

int cuMemAlloc_v2(uint64_t *p, size_t size) {
    int i;
    if (depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    for (i = 0; i < MAX_ALLOCS; i++) {
        if (alloc_ptr[i] == 0) {
            alloc_ptr[i] = next_ptr;
            alloc_id[i] = next_id++;
            next_ptr += (size + 0xffff) & ~(uint64_t)0xffff;
            *p = alloc_ptr[i];
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_UNKNOWN;
}
int cuMemFree_v2(uint64_t p) {
    int i;
    for (i = 0; i < MAX_ALLOCS; i++) {
        if (alloc_ptr[i] == p && p != 0) {
            alloc_ptr[i] = 0;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_VALUE;
}
int cuPointerGetAttribute(void *data, int attribute, uint64_t p) {
    int i;
    if (attribute != CU_POINTER_ATTRIBUTE_BUFFER_ID) return CUDA_ERROR_UNKNOWN;
    for (i = 0; i < MAX_ALLOCS; i++) {
        if (alloc_ptr[i] == p && p != 0) {
            memcpy(data, &alloc_id[i], sizeof(uint64_t));
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_VALUE;
}

/* A fake CUstream of device `d`'s primary context (for tests). */
void *fake_cuda_stream(int d) {
    load_devices();
    return d >= 0 && d < count ? (void *)&streams[d] : NULL;
}
int cuStreamGetCtx(void *stream, void **ctx) {
    int i;
    for (i = 0; i < count; i++) {
        if (stream == (void *)&streams[i]) {
            *ctx = &contexts[i];
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_HANDLE;
}

#define UNKNOWN(name) int name(void) { return CUDA_ERROR_UNKNOWN; }
UNKNOWN(cuMemGetAllocationGranularity)
#ifndef OMIT_MEM_CREATE
UNKNOWN(cuMemCreate)
#endif
UNKNOWN(cuMemRelease)
UNKNOWN(cuMemAddressReserve)
UNKNOWN(cuMemAddressFree)
UNKNOWN(cuMemMap)
UNKNOWN(cuMemUnmap)
UNKNOWN(cuMemSetAccess)
UNKNOWN(cuMemExportToShareableHandle)
UNKNOWN(cuMemImportFromShareableHandle)
UNKNOWN(cuImportExternalMemory)
UNKNOWN(cuExternalMemoryGetMappedBuffer)
UNKNOWN(cuDestroyExternalMemory)
UNKNOWN(cuImportExternalSemaphore)
UNKNOWN(cuSignalExternalSemaphoresAsync)
UNKNOWN(cuWaitExternalSemaphoresAsync)
UNKNOWN(cuDestroyExternalSemaphore)
UNKNOWN(cuExternalMemoryGetMappedMipmappedArray)
UNKNOWN(cuMipmappedArrayGetLevel)
UNKNOWN(cuMipmappedArrayDestroy)
UNKNOWN(cuSurfObjectCreate)
UNKNOWN(cuSurfObjectDestroy)
UNKNOWN(cuTexObjectCreate)
UNKNOWN(cuTexObjectDestroy)
UNKNOWN(cuGetErrorName)
