/*
 * A stand-in for libcuda.so.1, so the CUDA paths of vkcuda can be tested for real
 * on a machine without NVIDIA's driver. By default it has one device whose UUID
 * matches no Vulkan device. The calls up to pairing, primary contexts, a context
 * stack per thread, cuMemAlloc, streams and the import of Vulkan memory fds do
 * something; every other driver call returns CUDA_ERROR_UNKNOWN.
 *
 * Variants, chosen by environment variables of the process that loads it:
 *   FAKE_CUDA_INIT_FAILS=1        cuInit fails with CUDA_ERROR_NO_DEVICE
 *   FAKE_CUDA_VERSION=11010       cuDriverGetVersion reports this (default 12080)
 *   FAKE_CUDA_UUIDS=hex32,hex32   one device per UUID (32 hex digits each; at most
 *                                 4), default one device of UUID ab ab ... ab
 *   FAKE_CUDA_UUID=hex32          one device of that UUID (set it to a lavapipe
 *                                 device's UUID and vkcuda pairs with this driver)
 *   CUDA_VISIBLE_DEVICES=1        as the real driver: only these indices of that
 *                                 list are devices, renumbered from 0; when none
 *                                 is left (empty, or no such index) cuInit fails
 *                                 with CUDA_ERROR_NO_DEVICE
 *   FAKE_CUDA_STICKY=name[:n]     the n-th call (default the first) of the driver
 *                                 function `name` raises a sticky error, as a
 *                                 faulting kernel does on a real GPU: from then
 *                                 on the context calls below (cuMemAlloc,
 *                                 cuMemFree, the imports and mappings,
 *                                 cuStreamGetCtx, cuCtxGetDevice) return it;
 *                                 the release calls still release (so
 *                                 fake_cuda_live can show what the library gave
 *                                 back)
 *   FAKE_CUDA_STICKY_CODE=719     the sticky CUresult (default 700,
 *                                 CUDA_ERROR_ILLEGAL_ADDRESS)
 *   FAKE_CUDA_STICKY_EVERYWHERE=1 once the sticky error is raised,
 *                                 cuPointerGetAttribute and cuCtxPushCurrent
 *                                 return it too (the library cannot even make
 *                                 the context current to release its objects)
 * Pitched copies: cuMemGetAddressRange knows the cuMemAlloc blocks and the
 * mappings of imported memory (CUDA_ERROR_INVALID_VALUE for any other address);
 * cuMemcpy2DAsync (but WITH_STREAMS's, below) copies between device pointers
 * (host memory here) at once and
 * counts the copies (fake_cuda_copies); a copy that touches an address outside
 * every block and mapping "faults" as on a GPU: it returns CUDA_SUCCESS (the
 * fault comes later on a GPU) and raises the sticky error.
 * Building with -DWITH_ARRAYS adds mipmapped arrays of imported memory
 * (cuExternalMemoryGetMappedMipmappedArray, cuMipmappedArrayGetLevel,
 * cuMipmappedArrayDestroy): each level array keeps its texels in host memory of
 * its own (the layout of an OPTIMAL image is the driver's), and cuMemcpy2DAsync
 * copies between it and device pointers, so a copy into an array and back out
 * shows what the library asked for.
 * Building with -DOMIT_MEM_CREATE leaves cuMemCreate out (a driver too old).
 * Building with -DWITH_COPIES adds the copies of the deep self-test
 * (src/selftest.rs): cuMemcpyHtoD/DtoH between host memory and a mapped buffer of
 * imported memory (so data really crosses lavapipe's memory), cuCtxSynchronize,
 * and cuMemcpy2D/3D returning CUDA_ERROR_UNKNOWN; with FAKE_CUDA_FLIP_BYTE=N
 * cuMemcpyDtoH inverts byte N of what it copies (a driver that reads wrong).
 * Corrupting drivers, to test the deep self-test itself (WITH_COPIES):
 *   FAKE_CUDA_CORRUPT=kind        every copy inverts bytes of one kind of data:
 *     uniform  one byte (the 4097th) of every run of one value longer than 4 KiB
 *              (what a compression engine squeezes: a driver that gets only
 *              those wrong)
 *     zeros    the middle byte of every run of zeros longer than 4 KiB
 *     tile     the middle byte of every run of one non-zero value of 64 KiB or more
 *     ramp     byte 128 of every run of 256 or more bytes each one more than the
 *              one before (mod 256)
 *     random   the middle byte of the first 64 bytes in a row where no byte
 *              equals the one before, or the one before plus one
 *   FAKE_CUDA_CORRUPT_DIR=htod|dtoh  only cuMemcpyHtoD (CUDA writes wrong) or
 *                                 only cuMemcpyDtoH (CUDA reads wrong); default both
 *   FAKE_CUDA_CORRUPT_LOG=path    appends one line per copy it corrupted:
 *                                 "<htod|dtoh> <offset> <expected> <got> <count>",
 *                                 the offset (from the copy's start) and bytes of
 *                                 the first byte it inverted, and how many
 *                                 bytes of that copy it inverted
 *
 * Building with -DWITH_STREAMS (the FFmpeg bridge's tests, bridges/ffmpeg/tests)
 * adds streams whose work runs when synchronised: cuMemcpy2DAsync (host or device
 * memory on either side) and cuLaunchHostFunc queue their work, in one queue for
 * all streams, run in order by cuStreamSynchronize, cuCtxSynchronize or
 * fake_cuda_streams_run(); cuStreamQuery says CUDA_ERROR_NOT_READY while work
 * waits; fake_cuda_copies() counts the copies run; cuDeviceGetAttribute knows
 * the texture alignment (512). It also exports, refused, every
 * function FFmpeg's CUDA loader (ffnvcodec's cuda_load_functions) requires, so
 * av_hwdevice_ctx_init(CUDA) loads this driver. Not combined with WITH_COPIES.
 *
 * Contexts: cuDevicePrimaryCtxRetain hands out one fake CUcontext per device; they
 * can be pushed, popped and asked for their device. fake_cuda_stream(i) returns a
 * fake CUstream of device i's context for cuStreamGetCtx. Handles that are not
 * these are refused with CUDA_ERROR_INVALID_CONTEXT / INVALID_HANDLE.
 *
 * Memory: host memory stands in for device memory. cuMemAlloc (the library's
 * liveness sentinel) mallocs, cuPointerGetAttribute(BUFFER_ID) knows each block,
 * and the import of a Vulkan memory fd (cuImportExternalMemory +
 * cuExternalMemoryGetMappedBuffer) maps the fd, so a "device pointer" is a host
 * address of the very memory Vulkan uses (lavapipe's memfds). Every mapping,
 * allocation and import is released by the calls that release them in CUDA;
 * fake_cuda_live() counts what is still held. cuMemCreate and the other calls
 * return CUDA_ERROR_UNKNOWN: CUDA-allocated buffers cannot be faked (lavapipe
 * imports only its own memfds).
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
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_INVALID_HANDLE 400
#define CUDA_ERROR_UNKNOWN 999
#define CU_POINTER_ATTRIBUTE_BUFFER_ID 7
#define CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD 1

#define MAX_DEVICES 4

typedef struct { unsigned char bytes[16]; } CUuuid;
typedef unsigned long long CUdeviceptr;
typedef struct { int device; } fake_ctx;
typedef struct { int device; } fake_stream;

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

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- sticky errors (FAKE_CUDA_STICKY) ------------------------------------ */

#define CUDA_ERROR_ILLEGAL_ADDRESS 700

static int sticky;       /* the sticky error once raised, else 0 */
static int sticky_calls; /* calls of the named function so far */

/* The sticky error to return from `fn`, or 0; raises it on the chosen call. */
static int sticky_check(const char *fn) {
    pthread_mutex_lock(&lock);
    if (!sticky) {
        const char *s = getenv("FAKE_CUDA_STICKY");
        size_t n = s ? strcspn(s, ":") : 0;
        if (s && strlen(fn) == n && strncmp(s, fn, n) == 0) {
            int nth = s[n] == ':' ? atoi(s + n + 1) : 1;
            if (++sticky_calls >= nth) {
                const char *c = getenv("FAKE_CUDA_STICKY_CODE");
                sticky = c ? atoi(c) : CUDA_ERROR_ILLEGAL_ADDRESS;
            }
        }
    }
    int r = sticky;
    pthread_mutex_unlock(&lock);
    return r;
}
/* The sticky error already raised, for FAKE_CUDA_STICKY_EVERYWHERE's calls. */
static int sticky_everywhere(void) {
    if (!getenv("FAKE_CUDA_STICKY_EVERYWHERE")) return 0;
    pthread_mutex_lock(&lock);
    int r = sticky;
    pthread_mutex_unlock(&lock);
    return r;
}
#define STICKY()                           \
    do {                                   \
        int sticky_ = sticky_check(__func__); \
        if (sticky_) return sticky_;       \
    } while (0)

/* ---- devices ------------------------------------------------------------- */

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

/* The device table: FAKE_CUDA_UUIDS (or FAKE_CUDA_UUID) filtered by
 * CUDA_VISIBLE_DEVICES, read again whenever those variables changed (a test may
 * learn the UUID to pair with only from a first, Vulkan-only context). */
static void load_devices(void) {
    static char seen[2048];
    char key[2048];
    unsigned char all[MAX_DEVICES][16];
    int n = 0, i;
    const char *list = getenv("FAKE_CUDA_UUIDS");
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    pthread_mutex_lock(&lock);
    if (!list || !*list) list = getenv("FAKE_CUDA_UUID");
    snprintf(key, sizeof key, "%s|%s", list ? list : "", visible ? visible : "(unset)");
    if (count >= 0 && strcmp(key, seen) == 0) {
        pthread_mutex_unlock(&lock);
        return;
    }
    snprintf(seen, sizeof seen, "%s", key);
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
    int found = 0;
    if (visible) {
        const char *p = visible;
        while (*p && found < MAX_DEVICES) {
            char *end;
            long idx = strtol(p, &end, 10);
            if (end == p) break;
            if (idx >= 0 && idx < n) memcpy(uuids[found++], all[idx], 16);
            p = *end == ',' ? end + 1 : end;
        }
    } else {
        for (i = 0; i < n; i++) memcpy(uuids[found++], all[i], 16);
    }
    for (i = 0; i < MAX_DEVICES; i++) {
        contexts[i].device = i;
        streams[i].device = i;
    }
    count = found;
    pthread_mutex_unlock(&lock);
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
    /* As the real driver: no visible device (CUDA_VISIBLE_DEVICES empty or naming
     * none of them) is CUDA_ERROR_NO_DEVICE. */
    return getenv("FAKE_CUDA_INIT_FAILS") || count == 0 ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
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

/* ---- contexts: one primary context per device, a stack per thread --------- */

static __thread const void *stack[16];
static __thread int depth;

/* How often the calls a per-frame call of the library may make were made, for
 * tests (fake_cuda_calls("cuCtxGetCurrent")): what one pitched copy asks. */
static const char *const counted[] = {
    "cuCtxPushCurrent_v2", "cuCtxPopCurrent_v2", "cuCtxGetCurrent", "cuStreamGetCtx",
    "cuPointerGetAttribute", "cuMemGetAddressRange_v2", "cuMemcpy2DAsync_v2",
};
enum { PUSH, POP, CURRENT, STREAM_CTX, POINTER_ATTR, RANGE, COPY_2D, COUNTED };
static int calls[COUNTED];
#define COUNT(c) __atomic_fetch_add(&calls[c], 1, __ATOMIC_RELAXED)

/* The calls of `name` so far; -1 for a function not counted. */
int fake_cuda_calls(const char *name) {
    for (int i = 0; i < COUNTED; i++)
        if (!strcmp(name, counted[i])) return __atomic_load_n(&calls[i], __ATOMIC_RELAXED);
    return -1;
}
static int primary_retains;

int cuDevicePrimaryCtxRetain(void **ctx, int d) {
    if (d < 0 || d >= count) return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    primary_retains++;
    pthread_mutex_unlock(&lock);
    *ctx = &contexts[d];
    return CUDA_SUCCESS;
}
int cuDevicePrimaryCtxRelease_v2(int d) {
    if (d < 0 || d >= count) return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    int r = primary_retains > 0 ? (primary_retains--, CUDA_SUCCESS) : CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&lock);
    return r;
}
int cuCtxPushCurrent_v2(void *ctx) {
    COUNT(PUSH);
    int sticky_ = sticky_everywhere();
    if (sticky_) return sticky_;
    if (ctx_device(ctx) < 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (depth == 16) return CUDA_ERROR_UNKNOWN;
    stack[depth++] = ctx;
    return CUDA_SUCCESS;
}
int cuCtxPopCurrent_v2(void **ctx) {
    COUNT(POP);
    if (depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    depth--;
    if (ctx) *ctx = (void *)stack[depth];
    return CUDA_SUCCESS;
}
int cuCtxGetCurrent(void **ctx) {
    COUNT(CURRENT);
    *ctx = depth ? (void *)stack[depth - 1] : NULL;
    return CUDA_SUCCESS;
}
int cuCtxGetDevice(int *d) {
    STICKY();
    if (depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    *d = ctx_device(stack[depth - 1]);
    return CUDA_SUCCESS;
}

/* A fake CUstream of device `d`'s primary context (for tests). */
void *fake_cuda_stream(int d) {
    load_devices();
    return d >= 0 && d < count ? (void *)&streams[d] : NULL;
}
int cuStreamGetCtx(void *stream, void **ctx) {
    int i;
    COUNT(STREAM_CTX);
    STICKY();
    for (i = 0; i < count; i++) {
        if (stream == (void *)&streams[i]) {
            *ctx = &contexts[i];
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_HANDLE;
}

/* ---- memory: host memory stands in for device memory ---------------------- */

/* What the fake holds: cuMemAlloc blocks, mappings of imported memory, imports. */
enum kind { ALLOC = 1, MAPPING, IMPORT, MIPMAP, ARRAY };
struct object {
    enum kind kind;
    void *base;               /* malloc'd block or mmap'd range */
    size_t len;               /* mmap'd length */
    CUdeviceptr ptr;          /* what the caller sees */
    unsigned long long id;    /* buffer id */
    int fd;                   /* IMPORT: the fd the driver owns */
    unsigned long long size;  /* IMPORT: the allocation size */
    size_t row, rows;         /* ARRAY: bytes of a row, rows (texels in `base`) */
    struct object *levels[16];/* MIPMAP: its level arrays */
    unsigned nlevels;
    struct object *next;
};
static struct object *objects;
static unsigned long long next_id = 1;

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

int cuMemAlloc_v2(CUdeviceptr *ptr, size_t size) {
    STICKY();
    if (depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    void *p = malloc(size ? size : 1);
    if (!p) return CUDA_ERROR_UNKNOWN;
    pthread_mutex_lock(&lock);
    struct object *o = add(ALLOC);
    if (o) { o->base = p; o->len = size ? size : 1; o->ptr = (CUdeviceptr)(uintptr_t)p; }
    pthread_mutex_unlock(&lock);
    if (!o) { free(p); return CUDA_ERROR_UNKNOWN; }
    *ptr = o->ptr;
    return CUDA_SUCCESS;
}

/* Frees a cuMemAlloc block or unmaps a mapped buffer of imported memory. */
int cuMemFree_v2(CUdeviceptr ptr) {
    int sticky_ = sticky_check(__func__);
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
    return sticky_ ? sticky_ : r;
}

int cuPointerGetAttribute(void *data, int attribute, CUdeviceptr ptr) {
    COUNT(POINTER_ATTR);
    int sticky_ = sticky_everywhere();
    if (sticky_) return sticky_;
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
    STICKY();
    if (depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (desc->type != CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD) return CUDA_ERROR_UNKNOWN;
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
    STICKY();
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
    int sticky_ = sticky_check(__func__);
    pthread_mutex_lock(&lock);
    struct object *o = find(IMPORT, 0, ext);
    if (o) { close(o->fd); unlink_object(o); }
    pthread_mutex_unlock(&lock);
    return sticky_ ? sticky_ : o ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- pitched copies -------------------------------------------------------- */

/* Where a block or mapping ends (a mapping starts at `ptr`, after Mesa's header). */
static CUdeviceptr object_end(const struct object *o) {
    return (CUdeviceptr)(uintptr_t)o->base + o->len;
}

/* The block or mapping `ptr` lies in, or NULL; caller holds the lock. */
static struct object *containing(CUdeviceptr ptr) {
    for (struct object *o = objects; o; o = o->next) {
        if (o->kind != ALLOC && o->kind != MAPPING) continue;
        if (ptr >= o->ptr && ptr < object_end(o)) return o;
    }
    return NULL;
}

int cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr ptr) {
    STICKY();
    if (depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    COUNT(RANGE);
    pthread_mutex_lock(&lock);
    struct object *o = containing(ptr);
    if (o) {
        if (base) *base = o->ptr;
        if (size) *size = (size_t)(object_end(o) - o->ptr);
    }
    pthread_mutex_unlock(&lock);
    return o ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

#define CU_MEMORYTYPE_DEVICE 2
#define CU_MEMORYTYPE_ARRAY 3

#ifdef WITH_ARRAYS
typedef struct {
    unsigned long long offset;
    struct {
        size_t Width, Height, Depth;
        int Format;
        unsigned NumChannels, Flags;
    } arrayDesc;
    unsigned numLevels;
    unsigned reserved[16];
} CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC;

static size_t format_bytes(int format) {
    switch (format) {
    case 0x02: case 0x09: case 0x10: return 2; /* 16-bit ints, half */
    case 0x03: case 0x0a: case 0x20: return 4; /* 32-bit ints, float */
    default: return 1;
    }
}

int cuExternalMemoryGetMappedMipmappedArray(void **mipmap, void *ext,
                                            const CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC *desc) {
    STICKY();
    if (depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    unsigned n = desc->numLevels;
    if (n == 0 || n > 16) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct object *imp = ext ? find(IMPORT, 0, ext) : NULL;
    struct object *m = imp ? add(MIPMAP) : NULL;
    int r = imp ? (m ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN) : CUDA_ERROR_INVALID_VALUE;
    if (m) {
        size_t w = desc->arrayDesc.Width, h = desc->arrayDesc.Height ? desc->arrayDesc.Height : 1;
        size_t texel = format_bytes(desc->arrayDesc.Format) * desc->arrayDesc.NumChannels;
        for (unsigned l = 0; l < n; l++) {
            struct object *a = add(ARRAY);
            if (!a) { r = CUDA_ERROR_UNKNOWN; break; }
            a->row = (w ? w : 1) * texel;
            a->rows = h ? h : 1;
            a->base = calloc(a->rows, a->row);
            m->levels[m->nlevels++] = a;
            w /= 2;
            h /= 2;
        }
        *mipmap = m;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

int cuMipmappedArrayGetLevel(void **array, void *mipmap, unsigned level) {
    STICKY();
    pthread_mutex_lock(&lock);
    struct object *m = mipmap ? find(MIPMAP, 0, mipmap) : NULL;
    int r = m && level < m->nlevels ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) *array = m->levels[level];
    pthread_mutex_unlock(&lock);
    return r;
}

int cuMipmappedArrayDestroy(void *mipmap) {
    int sticky_ = sticky_check(__func__);
    pthread_mutex_lock(&lock);
    struct object *m = mipmap ? find(MIPMAP, 0, mipmap) : NULL;
    if (m) {
        for (unsigned l = 0; l < m->nlevels; l++) {
            free(m->levels[l]->base);
            unlink_object(m->levels[l]);
        }
        unlink_object(m);
    }
    pthread_mutex_unlock(&lock);
    return sticky_ ? sticky_ : m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
#endif
/* cuMemcpy2DAsync's descriptor, as the driver API lays it out. */
typedef struct {
    size_t srcXInBytes, srcY;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;
#ifndef WITH_STREAMS /* WITH_STREAMS has copies of its own, queued on its streams */

static int copies;

/* How many cuMemcpy2DAsync calls were enqueued (for tests). */
int fake_cuda_copies(void) {
    pthread_mutex_lock(&lock);
    int n = copies;
    pthread_mutex_unlock(&lock);
    return n;
}

/* Whether `rows` rows of `width` bytes, `pitch` apart, from `ptr` lie in one
 * block or mapping; caller holds the lock. */
static int rows_inside(CUdeviceptr ptr, size_t pitch, size_t width, size_t rows) {
    struct object *o = containing(ptr);
    if (!o || rows == 0) return o != NULL;
    return ptr + pitch * (rows - 1) + width <= object_end(o);
}

int cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *c, void *stream) {
    (void)stream;
    COUNT(COPY_2D);
    STICKY();
    if (depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    /* Each side as a device pointer and pitch; an array side is its host store. */
    CUdeviceptr src = c->srcDevice, dst = c->dstDevice;
    size_t src_pitch = c->srcPitch, dst_pitch = c->dstPitch;
    pthread_mutex_lock(&lock);
    int r = CUDA_SUCCESS;
    for (int side = 0; side < 2 && r == CUDA_SUCCESS; side++) {
        int type = side ? c->dstMemoryType : c->srcMemoryType;
        if (type == CU_MEMORYTYPE_DEVICE) continue;
        const void *handle = side ? c->dstArray : c->srcArray;
        struct object *a = type == CU_MEMORYTYPE_ARRAY && handle ? find(ARRAY, 0, handle) : NULL;
        if (!a || c->WidthInBytes > a->row || c->Height > a->rows) {
            r = type == CU_MEMORYTYPE_ARRAY ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_UNKNOWN;
            break;
        }
        if (side) { dst = (CUdeviceptr)(uintptr_t)a->base; dst_pitch = a->row; }
        else { src = (CUdeviceptr)(uintptr_t)a->base; src_pitch = a->row; }
    }
    if (r != CUDA_SUCCESS) {
        pthread_mutex_unlock(&lock);
        return r;
    }
    copies++;
    int inside = (c->srcMemoryType != CU_MEMORYTYPE_DEVICE ||
                  rows_inside(src, src_pitch, c->WidthInBytes, c->Height)) &&
                 (c->dstMemoryType != CU_MEMORYTYPE_DEVICE ||
                  rows_inside(dst, dst_pitch, c->WidthInBytes, c->Height));
    if (!inside) {
        /* A GPU faults on the copy, later: the context is lost from now on. */
        const char *code = getenv("FAKE_CUDA_STICKY_CODE");
        sticky = code ? atoi(code) : CUDA_ERROR_ILLEGAL_ADDRESS;
    } else {
        for (size_t y = 0; y < c->Height; y++)
            memmove((void *)(uintptr_t)(dst + y * dst_pitch),
                    (const void *)(uintptr_t)(src + y * src_pitch), c->WidthInBytes);
    }
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
#endif

#ifdef WITH_COPIES
/* The mapping `ptr .. ptr + n` lies in, or NULL. */
static struct object *mapped_range(CUdeviceptr ptr, size_t n) {
    for (struct object *o = objects; o; o = o->next) {
        if (o->kind != MAPPING) continue;
        CUdeviceptr start = (CUdeviceptr)(uintptr_t)o->base, end = start + o->len;
        if (ptr >= start && ptr + n <= end) return o;
    }
    return NULL;
}

/* FAKE_CUDA_CORRUPT: inverts the chosen kind of bytes of `p` (what a copy in
 * direction `dir` just wrote) and logs the first. */
static void corrupt(unsigned char *p, size_t n, const char *dir) {
    const char *kind = getenv("FAKE_CUDA_CORRUPT");
    const char *only = getenv("FAKE_CUDA_CORRUPT_DIR");
    if (!kind || (only && strcmp(only, dir) != 0)) return;
    size_t first = 0, count = 0, i = 0, j;
    unsigned char was = 0;
#define FLIP(at)                          \
    do {                                  \
        if (count++ == 0) {               \
            first = (at);                 \
            was = p[first];               \
        }                                 \
        p[(at)] ^= 0xff;                  \
    } while (0)
    if (!strcmp(kind, "uniform") || !strcmp(kind, "zeros") || !strcmp(kind, "tile")) {
        while (i < n) {
            for (j = i + 1; j < n && p[j] == p[i]; j++) {
            }
            size_t len = j - i;
            if (!strcmp(kind, "uniform") && len > 4096) FLIP(i + 4096);
            if (!strcmp(kind, "zeros") && p[i] == 0 && len > 4096) FLIP(i + len / 2);
            if (!strcmp(kind, "tile") && p[i] != 0 && len >= 65536) FLIP(i + len / 2);
            i = j;
        }
    } else if (!strcmp(kind, "ramp")) {
        while (i < n) {
            for (j = i + 1; j < n && p[j] == (unsigned char)(p[j - 1] + 1); j++) {
            }
            if (j - i >= 256) FLIP(i + 128);
            i = j;
        }
    } else if (!strcmp(kind, "random")) {
        size_t streak = 1;
        for (i = 1; i < n; i++) {
            int step = p[i] == p[i - 1] || p[i] == (unsigned char)(p[i - 1] + 1);
            streak = step ? 1 : streak + 1;
            if (streak == 64) {
                FLIP(i - 31);
                break;
            }
        }
    }
#undef FLIP
    const char *log = getenv("FAKE_CUDA_CORRUPT_LOG");
    if (count && log) {
        FILE *f = fopen(log, "a");
        if (f) {
            fprintf(f, "%s %zu %u %u %zu\n", dir, first, was, (unsigned)(was ^ 0xff), count);
            fclose(f);
        }
    }
}

int cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
    if (depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&lock);
    struct object *o = mapped_range(dst, n);
    pthread_mutex_unlock(&lock);
    if (!o) return CUDA_ERROR_INVALID_VALUE;
    memcpy((void *)(uintptr_t)dst, src, n);
    corrupt((unsigned char *)(uintptr_t)dst, n, "htod");
    return CUDA_SUCCESS;
}

int cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
    if (depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&lock);
    struct object *o = mapped_range(src, n);
    pthread_mutex_unlock(&lock);
    if (!o) return CUDA_ERROR_INVALID_VALUE;
    memcpy(dst, (const void *)(uintptr_t)src, n);
    const char *flip = getenv("FAKE_CUDA_FLIP_BYTE");
    if (flip) {
        size_t at = (size_t)strtoull(flip, NULL, 10);
        if (at < n) ((unsigned char *)dst)[at] ^= 0xff;
    }
    corrupt((unsigned char *)dst, n, "dtoh");
    return CUDA_SUCCESS;
}

int cuCtxSynchronize(void) { return depth ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT; }
#endif

#ifdef WITH_STREAMS
#if defined(WITH_COPIES)
#error "WITH_STREAMS and WITH_COPIES are separate variants"
#endif
#define CUDA_ERROR_NOT_READY 600
struct work {
    int is_copy;
    CUDA_MEMCPY2D copy;
    void (*fn)(void *);
    void *data;
    struct work *next;
};
static struct work *queue_head, **queue_tail = &queue_head;
static int copies_run;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;

static int known_stream(const void *stream) {
    int i;
    if (!stream) return 1;
    for (i = 0; i < count; i++)
        if (stream == (const void *)&streams[i]) return 1;
    return 0;
}

static int enqueue(struct work *w) {
    pthread_mutex_lock(&queue_lock);
    w->next = NULL;
    *queue_tail = w;
    queue_tail = &w->next;
    pthread_mutex_unlock(&queue_lock);
    return CUDA_SUCCESS;
}

/* Runs the queued work in order (host functions may enqueue more: run too). */
void fake_cuda_streams_run(void) {
    for (;;) {
        pthread_mutex_lock(&queue_lock);
        struct work *w = queue_head;
        if (w) {
            queue_head = w->next;
            if (!queue_head) queue_tail = &queue_head;
        }
        pthread_mutex_unlock(&queue_lock);
        if (!w) return;
        if (w->is_copy) {
            const CUDA_MEMCPY2D *c = &w->copy;
            const unsigned char *src = c->srcMemoryType == 1 ? (const unsigned char *)c->srcHost
                                                             : (const unsigned char *)(uintptr_t)c->srcDevice;
            unsigned char *dst = c->dstMemoryType == 1 ? (unsigned char *)c->dstHost
                                                       : (unsigned char *)(uintptr_t)c->dstDevice;
            size_t y;
            src += c->srcY * c->srcPitch + c->srcXInBytes;
            dst += c->dstY * c->dstPitch + c->dstXInBytes;
            for (y = 0; y < c->Height; y++) memcpy(dst + y * c->dstPitch, src + y * c->srcPitch, c->WidthInBytes);
            pthread_mutex_lock(&queue_lock);
            copies_run++;
            pthread_mutex_unlock(&queue_lock);
        } else {
            w->fn(w->data);
        }
        free(w);
    }
}

int fake_cuda_copies(void) {
    pthread_mutex_lock(&queue_lock);
    int n = copies_run;
    pthread_mutex_unlock(&queue_lock);
    return n;
}

int cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *c, void *stream) {
    COUNT(COPY_2D);
    if (depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (!known_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
    if (!c || (c->srcMemoryType != 1 && c->srcMemoryType != 2) || (c->dstMemoryType != 1 && c->dstMemoryType != 2) ||
        (c->srcMemoryType == 1 ? !c->srcHost : !c->srcDevice) || (c->dstMemoryType == 1 ? !c->dstHost : !c->dstDevice) ||
        c->WidthInBytes > c->srcPitch || c->WidthInBytes > c->dstPitch)
        return CUDA_ERROR_INVALID_VALUE;
    struct work *w = calloc(1, sizeof *w);
    if (!w) return CUDA_ERROR_UNKNOWN;
    w->is_copy = 1;
    w->copy = *c;
    return enqueue(w);
}

int cuLaunchHostFunc(void *stream, void (*fn)(void *), void *data) {
    if (depth == 0 && !stream) return CUDA_ERROR_INVALID_CONTEXT;
    if (!known_stream(stream) || !fn) return CUDA_ERROR_INVALID_HANDLE;
    struct work *w = calloc(1, sizeof *w);
    if (!w) return CUDA_ERROR_UNKNOWN;
    w->fn = fn;
    w->data = data;
    return enqueue(w);
}

int cuStreamSynchronize(void *stream) {
    if (!known_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
    fake_cuda_streams_run();
    return CUDA_SUCCESS;
}

int cuCtxSynchronize(void) {
    if (depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    fake_cuda_streams_run();
    return CUDA_SUCCESS;
}

/* FFmpeg's frames contexts ask for the texture alignment (14). */
int cuDeviceGetAttribute(int *value, int attribute, int device) {
    load_devices();
    if (!value || device < 0 || device >= count) return CUDA_ERROR_INVALID_VALUE;
    if (attribute != 14) return CUDA_ERROR_INVALID_VALUE;
    *value = 512;
    return CUDA_SUCCESS;
}

int cuStreamQuery(void *stream) {
    if (!known_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&queue_lock);
    int busy = queue_head != NULL;
    pthread_mutex_unlock(&queue_lock);
    return busy ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}
#endif

/* ---- everything else: there, but refused --------------------------------- */

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
UNKNOWN(cuImportExternalSemaphore)
UNKNOWN(cuSignalExternalSemaphoresAsync)
UNKNOWN(cuWaitExternalSemaphoresAsync)
UNKNOWN(cuDestroyExternalSemaphore)
#ifndef WITH_ARRAYS
UNKNOWN(cuExternalMemoryGetMappedMipmappedArray)
UNKNOWN(cuMipmappedArrayGetLevel)
UNKNOWN(cuMipmappedArrayDestroy)
#endif
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
#ifdef WITH_COPIES
UNKNOWN(cuMemcpy2D_v2)
UNKNOWN(cuMemcpy3D_v2)
#endif
#ifdef WITH_STREAMS
/* The rest of what FFmpeg's CUDA loader requires (nv-codec-headers 11.1 and 12.1). */
UNKNOWN(cuStreamWaitEvent)
UNKNOWN(cuArrayCreate_v2)
UNKNOWN(cuDeviceComputeCapability)
UNKNOWN(cuCtxCreate_v2)
UNKNOWN(cuCtxSetLimit)
UNKNOWN(cuCtxDestroy_v2)
UNKNOWN(cuMemAllocPitch_v2)
UNKNOWN(cuMemAllocManaged)
UNKNOWN(cuMemsetD8Async)
UNKNOWN(cuMemcpy)
UNKNOWN(cuMemcpyAsync)
UNKNOWN(cuMemcpy2D_v2)
UNKNOWN(cuMemcpyHtoD_v2)
UNKNOWN(cuMemcpyHtoDAsync_v2)
UNKNOWN(cuMemcpyDtoH_v2)
UNKNOWN(cuMemcpyDtoHAsync_v2)
UNKNOWN(cuMemcpyDtoD_v2)
UNKNOWN(cuMemcpyDtoDAsync_v2)
UNKNOWN(cuGetErrorString)
UNKNOWN(cuDevicePrimaryCtxRelease)
UNKNOWN(cuDevicePrimaryCtxSetFlags)
UNKNOWN(cuDevicePrimaryCtxGetState)
UNKNOWN(cuDevicePrimaryCtxReset)
UNKNOWN(cuStreamCreate)
UNKNOWN(cuStreamDestroy_v2)
UNKNOWN(cuStreamAddCallback)
UNKNOWN(cuEventCreate)
UNKNOWN(cuEventDestroy_v2)
UNKNOWN(cuEventSynchronize)
UNKNOWN(cuEventQuery)
UNKNOWN(cuEventRecord)
UNKNOWN(cuLaunchKernel)
UNKNOWN(cuLinkCreate)
UNKNOWN(cuLinkAddData)
UNKNOWN(cuLinkComplete)
UNKNOWN(cuLinkDestroy)
UNKNOWN(cuModuleLoadData)
UNKNOWN(cuModuleUnload)
UNKNOWN(cuModuleGetFunction)
UNKNOWN(cuModuleGetGlobal)
UNKNOWN(cuGLGetDevices_v2)
UNKNOWN(cuGraphicsGLRegisterImage)
UNKNOWN(cuGraphicsUnregisterResource)
UNKNOWN(cuGraphicsMapResources)
UNKNOWN(cuGraphicsUnmapResources)
UNKNOWN(cuGraphicsSubResourceGetMappedArray)
UNKNOWN(cuGraphicsResourceGetMappedPointer_v2)
UNKNOWN(cuArray3DCreate_v2)
UNKNOWN(cuArrayDestroy)
#endif
