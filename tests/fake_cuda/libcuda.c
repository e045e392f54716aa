/*
 * A stand-in for libcuda.so.1 with one device whose UUID matches no Vulkan device,
 * so the CUDA paths of vkcuda can be tested for real on a machine without NVIDIA's
 * driver. FAKE_CUDA_INIT_FAILS makes cuInit fail; building with -DOMIT_MEM_CREATE
 * leaves cuMemCreate out (a driver that is too old).
 *
 * FAKE_CUDA_UUID=<32 hex digits> gives the device that UUID instead: set it to a
 * lavapipe device's UUID and vkcuda pairs with this driver. Its "device memory" is
 * host memory then: the primary context, cuMemAlloc (the library's liveness
 * sentinel), the buffer ids of cuPointerGetAttribute, and the import of Vulkan
 * memory fds (cuImportExternalMemory + cuExternalMemoryGetMappedBuffer map the
 * fd, so a "device pointer" is a host address of the very memory Vulkan uses)
 * work for real, and every mapping, allocation and imported fd is released by the
 * calls that release them in CUDA. fake_cuda_live() counts what is still held.
 * cuMemCreate and the other calls return CUDA_ERROR_UNKNOWN: CUDA-allocated buffers
 * cannot be faked (lavapipe imports only its own memfds).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_UNKNOWN 999
#define CU_POINTER_ATTRIBUTE_BUFFER_ID 7
#define CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD 1

typedef struct { unsigned char bytes[16]; } CUuuid;
typedef unsigned long long CUdeviceptr;

typedef struct {
    int type;
    union {
        int fd;
        struct { void *handle; const void *name; } win32;
        const void *nvSciBufObject;
    } handle;
    unsigned long long size;
    unsigned int flags;
    unsigned int reserved[16];
} CUDA_EXTERNAL_MEMORY_HANDLE_DESC;

typedef struct {
    unsigned long long offset;
    unsigned long long size;
    unsigned int flags;
    unsigned int reserved[16];
} CUDA_EXTERNAL_MEMORY_BUFFER_DESC;

/* What the fake holds: cuMemAlloc blocks, mappings of imported memory, imports. */
enum kind { ALLOC = 1, MAPPING, IMPORT };
struct object {
    enum kind kind;
    void *base;               /* malloc'd block or mmap'd range */
    size_t len;               /* mmap'd length */
    CUdeviceptr ptr;          /* what the caller sees */
    unsigned long long id;    /* buffer id */
    int fd;                   /* IMPORT: the fd the driver owns */
    unsigned long long size;  /* IMPORT: the allocation size */
    struct object *next;
};
static struct object *objects;
static unsigned long long next_id = 1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int primary_retains;

static struct object *add(enum kind kind) {
    struct object *o = calloc(1, sizeof *o);
    if (!o) return NULL;
    o->kind = kind;
    o->id = next_id++;
    o->fd = -1;
    o->next = objects;
    objects = o;
    return o;
}

static struct object *find(enum kind kind, CUdeviceptr ptr, const void *self) {
    for (struct object *o = objects; o; o = o->next)
        if (o->kind == kind && (self ? (const void *)o == self : o->ptr == ptr)) return o;
    return NULL;
}

static void unlink_object(struct object *gone) {
    for (struct object **p = &objects; *p; p = &(*p)->next)
        if (*p == gone) { *p = gone->next; free(gone); return; }
}

/* How many allocations, mappings and imports are held, and primary retains. */
int fake_cuda_live(void) {
    pthread_mutex_lock(&lock);
    int n = primary_retains;
    for (struct object *o = objects; o; o = o->next) n++;
    pthread_mutex_unlock(&lock);
    return n;
}

static int paired(void) { return getenv("FAKE_CUDA_UUID") != NULL; }

int cuInit(unsigned flags) {
    (void)flags;
    return getenv("FAKE_CUDA_INIT_FAILS") ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}
int cuDriverGetVersion(int *v) { *v = 12080; return CUDA_SUCCESS; }
int cuDeviceGetCount(int *n) { *n = 1; return CUDA_SUCCESS; }
int cuDeviceGet(int *d, int ordinal) { *d = ordinal; return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN; }
int cuDeviceGetUuid_v2(CUuuid *u, int d) {
    (void)d;
    const char *hex = getenv("FAKE_CUDA_UUID");
    memset(u->bytes, 0xab, 16);
    if (hex && strlen(hex) == 32)
        for (int i = 0; i < 16; i++) {
            unsigned v = 0;
            if (sscanf(hex + 2 * i, "%2x", &v) != 1) return CUDA_ERROR_INVALID_VALUE;
            u->bytes[i] = (unsigned char)v;
        }
    return CUDA_SUCCESS;
}
int cuDeviceGetName(char *name, int len, int d) {
    (void)d;
    strncpy(name, "vkcuda fake GPU", (size_t)len);
    name[len - 1] = 0;
    return CUDA_SUCCESS;
}

/* ---- the paired device's context: one primary context, always current. */
static int fake_context;

int cuDevicePrimaryCtxRetain(void **ctx, int d) {
    if (!paired() || d != 0) return CUDA_ERROR_UNKNOWN;
    pthread_mutex_lock(&lock);
    primary_retains++;
    pthread_mutex_unlock(&lock);
    *ctx = &fake_context;
    return CUDA_SUCCESS;
}
int cuDevicePrimaryCtxRelease_v2(int d) {
    if (!paired() || d != 0) return CUDA_ERROR_UNKNOWN;
    pthread_mutex_lock(&lock);
    int r = primary_retains > 0 ? (primary_retains--, CUDA_SUCCESS) : CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&lock);
    return r;
}
int cuCtxPushCurrent_v2(void *ctx) { return ctx == &fake_context ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN; }
int cuCtxPopCurrent_v2(void **ctx) {
    if (ctx) *ctx = &fake_context;
    return paired() ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
}
/* No context is ever current on a thread: the library pushes and pops its own. */
int cuCtxGetCurrent(void **ctx) {
    *ctx = NULL;
    return CUDA_SUCCESS;
}
int cuCtxGetDevice(int *d) {
    *d = 0;
    return paired() ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
}

/* ---- memory: host memory stands in for device memory. */
int cuMemAlloc_v2(CUdeviceptr *ptr, size_t size) {
    if (!paired()) return CUDA_ERROR_UNKNOWN;
    void *p = malloc(size ? size : 1);
    if (!p) return CUDA_ERROR_UNKNOWN;
    pthread_mutex_lock(&lock);
    struct object *o = add(ALLOC);
    if (o) { o->base = p; o->ptr = (CUdeviceptr)(uintptr_t)p; }
    pthread_mutex_unlock(&lock);
    if (!o) { free(p); return CUDA_ERROR_UNKNOWN; }
    *ptr = o->ptr;
    return CUDA_SUCCESS;
}

/* Frees a cuMemAlloc block or unmaps a mapped buffer of imported memory. */
int cuMemFree_v2(CUdeviceptr ptr) {
    pthread_mutex_lock(&lock);
    struct object *o = find(ALLOC, ptr, NULL);
    if (!o) o = find(MAPPING, ptr, NULL);
    int r = CUDA_ERROR_INVALID_VALUE;
    if (o) {
        if (o->kind == ALLOC) free(o->base);
        else munmap(o->base, o->len);
        unlink_object(o);
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

int cuPointerGetAttribute(void *data, int attribute, CUdeviceptr ptr) {
    if (attribute != CU_POINTER_ATTRIBUTE_BUFFER_ID) return CUDA_ERROR_UNKNOWN;
    pthread_mutex_lock(&lock);
    struct object *o = find(ALLOC, ptr, NULL);
    if (!o) o = find(MAPPING, ptr, NULL);
    if (o) *(unsigned long long *)data = o->id;
    pthread_mutex_unlock(&lock);
    return o ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Takes the fd (closed by cuDestroyExternalMemory). */
int cuImportExternalMemory(void **ext, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC *desc) {
    if (!paired() || desc->type != CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD) return CUDA_ERROR_UNKNOWN;
    struct stat st;
    if (desc->handle.fd < 0 || fstat(desc->handle.fd, &st) != 0) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct object *o = add(IMPORT);
    if (o) { o->fd = desc->handle.fd; o->size = desc->size; }
    pthread_mutex_unlock(&lock);
    if (!o) return CUDA_ERROR_UNKNOWN;
    *ext = o;
    return CUDA_SUCCESS;
}

/* Maps the imported memory. The payload of lavapipe's memory fds starts after
 * Mesa's header (util/os_memory_fd.c: the file's size, the payload's offset, a
 * driver id), so that is where offset 0 of the allocation is. */
int cuExternalMemoryGetMappedBuffer(CUdeviceptr *ptr, void *ext, const CUDA_EXTERNAL_MEMORY_BUFFER_DESC *desc) {
    pthread_mutex_lock(&lock);
    struct object *imp = find(IMPORT, 0, ext);
    pthread_mutex_unlock(&lock);
    if (!imp) return CUDA_ERROR_INVALID_VALUE;
    if (desc->offset + desc->size > imp->size) return CUDA_ERROR_INVALID_VALUE;
    struct stat st;
    if (fstat(imp->fd, &st) != 0) return CUDA_ERROR_UNKNOWN;
    uint64_t header[2] = {0, 0};
    size_t payload = 0;
    if (pread(imp->fd, header, sizeof header, 0) == (ssize_t)sizeof header &&
        header[0] == (uint64_t)st.st_size && header[1] < header[0] && header[1] % 4096 == 0)
        payload = (size_t)header[1];
    size_t len = payload + desc->offset + desc->size;
    if (len > (size_t)st.st_size) return CUDA_ERROR_INVALID_VALUE;
    void *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, imp->fd, 0);
    if (base == MAP_FAILED) return CUDA_ERROR_UNKNOWN;
    pthread_mutex_lock(&lock);
    struct object *o = add(MAPPING);
    if (o) {
        o->base = base;
        o->len = len;
        o->ptr = (CUdeviceptr)(uintptr_t)base + payload + desc->offset;
    }
    pthread_mutex_unlock(&lock);
    if (!o) { munmap(base, len); return CUDA_ERROR_UNKNOWN; }
    *ptr = o->ptr;
    return CUDA_SUCCESS;
}

int cuDestroyExternalMemory(void *ext) {
    pthread_mutex_lock(&lock);
    struct object *o = find(IMPORT, 0, ext);
    if (o) { close(o->fd); unlink_object(o); }
    pthread_mutex_unlock(&lock);
    return o ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

#define UNKNOWN(name) int name(void) { return CUDA_ERROR_UNKNOWN; }
UNKNOWN(cuStreamGetCtx)
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
UNKNOWN(cuImportExternalSemaphore)
UNKNOWN(cuSignalExternalSemaphoresAsync)
UNKNOWN(cuWaitExternalSemaphoresAsync)
UNKNOWN(cuDestroyExternalSemaphore)
UNKNOWN(cuExternalMemoryGetMappedMipmappedArray)
UNKNOWN(cuMipmappedArrayGetLevel)
UNKNOWN(cuMemcpy2DAsync_v2)
UNKNOWN(cuMemGetAddressRange_v2)
UNKNOWN(cuMipmappedArrayDestroy)
UNKNOWN(cuSurfObjectCreate)
UNKNOWN(cuSurfObjectDestroy)
UNKNOWN(cuTexObjectCreate)
UNKNOWN(cuTexObjectDestroy)
UNKNOWN(cuGetErrorName)
UNKNOWN(cuStreamIsCapturing)
UNKNOWN(cuGraphAddExternalSemaphoresSignalNode)
UNKNOWN(cuGraphAddExternalSemaphoresWaitNode)
UNKNOWN(cuGraphExecExternalSemaphoresSignalNodeSetParams)
UNKNOWN(cuGraphExecExternalSemaphoresWaitNodeSetParams)
UNKNOWN(cuGraphExternalSemaphoresSignalNodeGetParams)
UNKNOWN(cuGraphExternalSemaphoresWaitNodeGetParams)
UNKNOWN(cuGraphNodeGetType)
