/*
 * buffer_roundtrip: shared buffers in both directions, checked element by element.
 *
 *   (a) CUDA -> Vulkan: a VKCUDA_ALLOCATOR_CUDA buffer; a CUDA kernel writes a
 *       pattern through the CUDA pointer; Vulkan acquires the buffer from CUDA and
 *       copies it into a host-visible staging buffer; the host checks every word.
 *   (b) Vulkan -> CUDA: a VKCUDA_ALLOCATOR_VULKAN buffer filled by a Vulkan copy
 *       from staging and released to CUDA; a CUDA kernel transforms it in place
 *       (x * mul + add); read back with cuMemcpyDtoH and again through Vulkan.
 *   (c) Wrap: the program allocates exportable VkDeviceMemory itself with two
 *       VkBuffers in it (the second at an aligned offset), and once more as a
 *       dedicated allocation; vkcuda_buffer_wrap gives CUDA views; a kernel writes,
 *       Vulkan reads back.
 *   (d) 1000 create/destroy cycles of each kind (CUDA-allocated, Vulkan-allocated,
 *       wrapped): the library's live objects (vkcuda_live_objects_get), open fds
 *       and cuMemGetInfo free memory (which counts Vulkan's allocations too) must
 *       return to where they started; after everything is destroyed nothing is alive.
 *
 * Sizes (default 4, 1M+1, 64M, 1G bytes) can be given as arguments: a number with
 * an optional K/M/G suffix (binary) and an optional +N, e.g. 1M+1.
 *
 *   buffer_roundtrip [--cycles N] [--vulkan-only] [SIZE...]
 *
 * --vulkan-only makes a Vulkan-only context and runs the Vulkan half only (a test of
 * the program itself on machines without CUDA, e.g. lavapipe).
 *
 * A GPU test program (tests/gpu): c_examples/buffer_cuda_to_vulkan.c and
 * buffer_vulkan_to_cuda.c are the short examples.
 *
 * Without a CUDA driver (or without a Vulkan device that matches a CUDA device) it
 * prints the skip line and exits 77, or 1 when VKCUDA_REQUIRE_GPU=1 (rig.h). Synchronisation is by fences
 * and cuStreamSynchronize; frame_loop shows the semaphores.
 */
#define _POSIX_C_SOURCE 200809L
#include <vkcuda.h>

#include <dirent.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rig.h"

#define MiB ((uint64_t)1024 * 1024)
#define MAX_SIZES 32
#define FREE_MEMORY_TOLERANCE (4 * MiB)

static struct {
    int quiet; /* no per-allocation lines (the create/destroy cycles) */
    rig_counts checks;
    unsigned long long elements, mismatches;
} A;

static example E; /* the device: rig.h */

/* ---- reporting (the checks are rig.h's) -------------------- */

static int count_open_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;
    if (d == NULL) return -1;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

static const char *human(uint64_t bytes) {
    static char buf[4][32];
    static int next;
    char *b = buf[next++ & 3];
    if (bytes >= MiB && bytes % MiB == 0)
        snprintf(b, 32, "%" PRIu64 " MiB", bytes / MiB);
    else if (bytes > MiB && (bytes - 1) % MiB == 0)
        snprintf(b, 32, "%" PRIu64 " MiB + 1", bytes / MiB);
    else
        snprintf(b, 32, "%" PRIu64 " B", bytes);
    return b;
}

/* ---- element checks ----------------------------------------------------------- */

typedef struct expectation {
    uint32_t seed;
    int transformed;
    uint32_t mul, add;
} expectation;

static uint32_t word_mask(uint64_t bytes, uint64_t i) {
    uint64_t left = bytes - 4 * i;
    return left >= 4 ? 0xffffffffu : (uint32_t)((1ull << (8 * left)) - 1);
}

static uint32_t expected_word(const expectation *e, uint64_t bytes, uint64_t i) {
    uint32_t m = word_mask(bytes, i);
    uint32_t v = pattern_word(i, e->seed) & m;
    if (e->transformed) v = transform_word(v, e->mul, e->add) & m;
    return v;
}

/* Compares every word of `data` with the expectation; prints the first mismatches
 * and returns how many words differ. */
static uint64_t compare_words(const char *what, const void *data, uint64_t bytes,
                              const expectation *e) {
    const uint32_t *w = (const uint32_t *)data;
    uint64_t words = word_count(bytes), full = bytes / 4, i, bad = 0;
    for (i = 0; i < words; i++) {
        uint32_t got = i < full ? w[i] : load_word(data, bytes, i);
        uint32_t want = expected_word(e, bytes, i);
        if (got != want) {
            if (bad < 5)
                printf("  mismatch in %s: word %" PRIu64 " (byte %" PRIu64 ") is 0x%08x, expected 0x%08x\n",
                       what, i, 4 * i, got, want);
            bad++;
        }
    }
    A.elements += words;
    A.mismatches += bad;
    if (bad)
        printf("  %s: %" PRIu64 " of %" PRIu64 " words differ\n", what, bad, words);
    return bad;
}

static void fill_words(void *data, uint64_t bytes, const expectation *e) {
    uint32_t *w = (uint32_t *)data;
    uint64_t full = bytes / 4, i, k;
    for (i = 0; i < full; i++) w[i] = expected_word(e, bytes, i);
    if (bytes % 4) {
        uint32_t v = expected_word(e, bytes, full);
        uint8_t *b = (uint8_t *)data + 4 * full;
        for (k = 0; k < bytes % 4; k++) b[k] = (uint8_t)(v >> (8 * k));
    }
}

/* ---- Vulkan command helpers ------------------------------------------------------ */

static void copy_cmd(VkBuffer src, VkBuffer dst, VkDeviceSize size) {
    VkBufferCopy c;
    c.srcOffset = 0;
    c.dstOffset = 0;
    c.size = size;
    vkCmdCopyBuffer(E.cmd, src, dst, 1, &c);
}

static void to_host_barrier(void) {
    vk_cmd_barrier(E.cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
}

/* Vulkan acquires `buffers` from CUDA and copies each into its staging buffer. */
static int vulkan_readback(vkcuda_buffer *const *buffers, vk_owned_buffer *const *staging,
                           int count, uint64_t size) {
    vkcuda_handoff_info acquire = example_handoff(&E, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    int ok = 0, i;
    CHECK_VK(rig_begin(E.cmd, RIG_ONCE));
    for (i = 0; i < count; i++) {
        VkBuffer vb = VK_NULL_HANDLE;
        CHECK_VKCUDA(vkcuda_buffer_get_vk_buffer(buffers[i], &vb));
        CHECK_VKCUDA(vkcuda_buffer_cmd_acquire_from_cuda(buffers[i], E.cmd, &acquire));
        copy_cmd(vb, staging[i]->buffer, size);
    }
    to_host_barrier();
    CHECK_VK(rig_submit_and_wait(&E, E.cmd));
    for (i = 0; i < count; i++) CHECK_VK(vk_owned_buffer_invalidate(&E.vk, staging[i]));
    ok = 1;
done:
    return ok;
}

static int check_info(vkcuda_buffer *b, uint64_t size, vkcuda_allocator allocator, VkBool32 wrapped,
                      uint64_t offset, vkcuda_buffer_info *out) {
    vkcuda_buffer_info info;
    int ok = 0;
    CHECK_VKCUDA(vkcuda_buffer_get_info(b, &info));
    CHECK(info.size == size, "info.size %" PRIu64 " != %" PRIu64, info.size, size);
    CHECK(info.allocation_size >= info.offset + size, "allocation_size %" PRIu64 " < offset + size",
          info.allocation_size);
    CHECK(info.allocator == allocator, "info.allocator %d != %d", (int)info.allocator, (int)allocator);
    CHECK(info.wrapped == wrapped, "info.wrapped %u != %u", info.wrapped, wrapped);
    CHECK(info.offset == offset, "info.offset %" PRIu64 " != %" PRIu64, info.offset, offset);
    {
        VkBuffer vb = VK_NULL_HANDLE;
        CHECK_VKCUDA(vkcuda_buffer_get_vk_buffer(b, &vb));
        CHECK(info.buffer != VK_NULL_HANDLE && info.buffer == vb,
              "info.buffer is not the VkBuffer of the buffer");
    }
    CHECK(!E.cuda || info.cuda_pointer != 0, "info.cuda_pointer is 0");
    if (out) *out = info;
    ok = 1;
done:
    return ok;
}

/* ---- (a) CUDA -> Vulkan ----------------------------------------------------------- */

static int test_cuda_to_vulkan(uint64_t size, uint32_t seed) {
    vkcuda_buffer_create_info ci;
    vkcuda_buffer *buf = NULL;
    vkcuda_buffer_info info;
    vk_owned_buffer staging;
    vk_owned_buffer *stagings[1];
    expectation e;
    int ok = 0;

    memset(&staging, 0, sizeof staging);
    memset(&ci, 0, sizeof ci);
    ci.allocator = VKCUDA_ALLOCATOR_CUDA;
    ci.size = size;
    ci.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    if (!E.cuda) {
        EXPECT_VKCUDA(vkcuda_buffer_create(E.ctx, &ci, &buf), VKCUDA_ERROR_CUDA_UNAVAILABLE);
        CHECK(buf == NULL, "the output handle is not NULL after a failure");
        ok = 1;
        goto done;
    }
    CHECK_VKCUDA(vkcuda_buffer_create(E.ctx, &ci, &buf));
    if (!check_info(buf, size, VKCUDA_ALLOCATOR_CUDA, VK_FALSE, 0, &info)) goto done;
    printf("  CUDA allocation of %s: allocation_size %" PRIu64 ", dedicated %u\n", human(size),
           info.allocation_size, info.dedicated);
    CHECK_VK(rig_staging(&E, size, &staging));

    CHECK_CU(cuda_fill_pattern(&E.kernels, E.stream, info.cuda_pointer, size, seed));
    CHECK_CU(cuStreamSynchronize(E.stream));
    stagings[0] = &staging;
    if (!vulkan_readback(&buf, stagings, 1, size)) goto done;

    memset(&e, 0, sizeof e);
    e.seed = seed;
    ok = compare_words("Vulkan copy of the CUDA-written buffer", staging.mapped, size, &e) == 0;
done:
    vkcuda_buffer_destroy(buf);
    vk_owned_buffer_destroy(&E.vk, &staging);
    return ok;
}

/* ---- (b) Vulkan -> CUDA ----------------------------------------------------------- */

static int test_vulkan_to_cuda(uint64_t size, uint32_t seed) {
    vkcuda_buffer_create_info ci;
    vkcuda_buffer *buf = NULL;
    vkcuda_buffer_info info;
    vk_owned_buffer staging;
    vk_owned_buffer *stagings[1];
    vkcuda_handoff_info release = example_handoff(&E, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
    expectation e;
    void *host = NULL;
    int ok = 0;

    memset(&staging, 0, sizeof staging);
    memset(&ci, 0, sizeof ci);
    ci.allocator = VKCUDA_ALLOCATOR_VULKAN;
    ci.size = size;
    CHECK_VKCUDA(vkcuda_buffer_create(E.ctx, &ci, &buf));
    if (!check_info(buf, size, VKCUDA_ALLOCATOR_VULKAN, VK_FALSE, 0, &info)) goto done;
    printf("  Vulkan allocation of %s: allocation_size %" PRIu64 ", dedicated %u\n", human(size),
           info.allocation_size, info.dedicated);
    CHECK_VK(rig_staging(&E, size, &staging));
    memset(&e, 0, sizeof e);
    e.seed = seed;
    fill_words(staging.mapped, size, &e);
    CHECK_VK(vk_owned_buffer_flush(&E.vk, &staging));

    /* Vulkan writes the shared buffer, then releases it to CUDA. */
    CHECK_VK(rig_begin(E.cmd, RIG_ONCE));
    copy_cmd(staging.buffer, info.buffer, size);
    CHECK_VKCUDA(vkcuda_buffer_cmd_release_to_cuda(buf, E.cmd, &release));
    CHECK_VK(rig_submit_and_wait(&E, E.cmd));
    memset(staging.mapped, 0x5a, (size_t)size);
    CHECK_VK(vk_owned_buffer_flush(&E.vk, &staging));

    if (E.cuda) {
        e.transformed = 1;
        e.mul = 2654435761u;
        e.add = seed ^ 0x0badcafeu;
        CHECK_CU(cuda_transform(&E.kernels, E.stream, info.cuda_pointer, size, e.mul, e.add));
        CHECK_CU(cuStreamSynchronize(E.stream));
        host = malloc((size_t)size);
        CHECK(host != NULL, "malloc(%" PRIu64 ") failed", size);
        memset(host, 0x5a, (size_t)size);
        CHECK_CU(cuMemcpyDtoH(host, info.cuda_pointer, (size_t)size));
        if (compare_words("cuMemcpyDtoH of the transformed buffer", host, size, &e) != 0) goto done;
    }

    /* And back to Vulkan: acquire from CUDA, copy into the staging buffer. */
    stagings[0] = &staging;
    if (!vulkan_readback(&buf, stagings, 1, size)) goto done;
    ok = compare_words(E.cuda ? "Vulkan copy of the transformed buffer" : "Vulkan copy (no CUDA)",
                       staging.mapped, size, &e) == 0;
done:
    free(host);
    vkcuda_buffer_destroy(buf);
    vk_owned_buffer_destroy(&E.vk, &staging);
    return ok;
}

/* ---- (c) wrapping the engine's own memory ----------------------------------------- */

typedef struct engine_allocation {
    VkBuffer buffers[2];
    VkDeviceSize offsets[2];
    int count;
    VkDeviceMemory memory;
    VkDeviceSize allocation_size;
    VkBool32 dedicated;
} engine_allocation;

static VkResult create_exportable_buffer(VkDeviceSize size, VkBuffer *buffer) {
    VkExternalMemoryBufferCreateInfo ext;
    VkBufferCreateInfo bci;
    memset(&ext, 0, sizeof ext);
    ext.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO;
    ext.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
    memset(&bci, 0, sizeof bci);
    bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bci.pNext = &ext;
    bci.size = size;
    bci.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    return vkCreateBuffer(E.vh.device, &bci, NULL, buffer);
}

static void requirements(VkBuffer buffer, VkMemoryRequirements *req, VkMemoryDedicatedRequirements *ded) {
    VkBufferMemoryRequirementsInfo2 info;
    VkMemoryRequirements2 r2;
    memset(&info, 0, sizeof info);
    info.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_REQUIREMENTS_INFO_2;
    info.buffer = buffer;
    memset(ded, 0, sizeof *ded);
    ded->sType = VK_STRUCTURE_TYPE_MEMORY_DEDICATED_REQUIREMENTS;
    memset(&r2, 0, sizeof r2);
    r2.sType = VK_STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2;
    r2.pNext = ded;
    vkGetBufferMemoryRequirements2(E.vh.device, &info, &r2);
    *req = r2.memoryRequirements;
}

static void engine_free(engine_allocation *e) {
    int i;
    for (i = 0; i < 2; i++)
        if (e->buffers[i] != VK_NULL_HANDLE) vkDestroyBuffer(E.vh.device, e->buffers[i], NULL);
    if (e->memory != VK_NULL_HANDLE) vkFreeMemory(E.vh.device, e->memory, NULL);
    memset(e, 0, sizeof *e);
}

/* What an engine (or VMA with an export pool) would do: exportable memory, with
 * `count` buffers of `size` bytes in one allocation (count 2: the second at the
 * next offset its alignment allows, at least 256), or one buffer in a dedicated
 * allocation. `*required` says whether the driver requires dedicated memory. */
static int engine_allocate(uint64_t size, int count, VkBool32 dedicated, engine_allocation *e,
                           VkBool32 *requires_dedicated) {
    VkMemoryRequirements req[2];
    VkMemoryDedicatedRequirements ded[2];
    VkExportMemoryAllocateInfo export_info;
    VkMemoryDedicatedAllocateInfo dedicated_info;
    VkMemoryAllocateInfo mai;
    uint32_t bits = 0xffffffffu, type;
    int i, ok = 0;

    memset(e, 0, sizeof *e);
    e->count = count;
    e->dedicated = dedicated;
    *requires_dedicated = VK_FALSE;
    for (i = 0; i < count; i++) {
        CHECK_VK(create_exportable_buffer(size, &e->buffers[i]));
        requirements(e->buffers[i], &req[i], &ded[i]);
        bits &= req[i].memoryTypeBits;
        if (ded[i].requiresDedicatedAllocation) *requires_dedicated = VK_TRUE;
    }
    if (!A.quiet)
        printf("  engine buffer of %s: memory requirement %" PRIu64 " B, alignment %" PRIu64
           ", dedicated required %u / preferred %u\n",
           human(size), (uint64_t)req[0].size, (uint64_t)req[0].alignment,
           ded[0].requiresDedicatedAllocation, ded[0].prefersDedicatedAllocation);
    if (*requires_dedicated && !dedicated) {
        ok = 1; /* the caller skips this variant */
        goto done;
    }
    e->offsets[0] = 0;
    e->allocation_size = req[0].size;
    if (count == 2) {
        VkDeviceSize align = req[1].alignment > 256 ? req[1].alignment : 256;
        e->offsets[1] = (req[0].size + align - 1) / align * align;
        e->allocation_size = e->offsets[1] + req[1].size;
    }
    type = vk_find_memory_type(&E.vk, bits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
    CHECK(type != UINT32_MAX, "no DEVICE_LOCAL memory type in memoryTypeBits 0x%x", bits);

    memset(&export_info, 0, sizeof export_info);
    export_info.sType = VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO;
    export_info.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
    memset(&dedicated_info, 0, sizeof dedicated_info);
    dedicated_info.sType = VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO;
    dedicated_info.buffer = e->buffers[0];
    if (dedicated) export_info.pNext = &dedicated_info;
    memset(&mai, 0, sizeof mai);
    mai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    mai.pNext = &export_info;
    mai.allocationSize = e->allocation_size;
    mai.memoryTypeIndex = type;
    CHECK_VK(vkAllocateMemory(E.vh.device, &mai, NULL, &e->memory));
    for (i = 0; i < count; i++)
        CHECK_VK(vkBindBufferMemory(E.vh.device, e->buffers[i], e->memory, e->offsets[i]));
    ok = 1;
done:
    if (!ok) engine_free(e);
    return ok;
}

static int wrap(const engine_allocation *e, int i, uint64_t size, vkcuda_buffer **out) {
    vkcuda_buffer_wrap_info wi;
    memset(&wi, 0, sizeof wi);
    wi.buffer = e->buffers[i];
    wi.memory = e->memory;
    wi.allocation_size = e->allocation_size;
    wi.offset = e->offsets[i];
    wi.size = size;
    wi.dedicated = e->dedicated;
    wi.export_handle_types = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT; /* what it was allocated with */
    return vkcuda_buffer_wrap(E.ctx, &wi, out);
}

static int test_wrap(uint64_t size, uint32_t seed, int count, VkBool32 dedicated) {
    engine_allocation e;
    vkcuda_buffer *bufs[2] = {NULL, NULL};
    vk_owned_buffer staging[2];
    vk_owned_buffer *stagings[2];
    VkBool32 requires_dedicated;
    int i, ok = 0;

    memset(staging, 0, sizeof staging);
    memset(&e, 0, sizeof e);
    if (!engine_allocate(size, count, dedicated, &e, &requires_dedicated)) goto done;
    if (e.memory == VK_NULL_HANDLE) {
        printf("  skipped: the driver requires a dedicated allocation for these buffers\n");
        ok = 1;
        goto done;
    }
    printf("  allocation of %" PRIu64 " B, %s, buffers at offsets", (uint64_t)e.allocation_size,
           dedicated ? "dedicated" : "not dedicated");
    for (i = 0; i < count; i++) printf(" %" PRIu64, (uint64_t)e.offsets[i]);
    printf("\n");
    if (!E.cuda) {
        /* Vulkan-only: wrap checks everything and makes no CUDA view. */
        CHECK_VKCUDA(wrap(&e, 0, size, &bufs[0]));
        if (!check_info(bufs[0], size, VKCUDA_ALLOCATOR_VULKAN, VK_TRUE, e.offsets[0], NULL)) goto done;
        ok = 1;
        goto done;
    }
    for (i = 0; i < count; i++) {
        CHECK_VKCUDA(wrap(&e, i, size, &bufs[i]));
        if (!check_info(bufs[i], size, VKCUDA_ALLOCATOR_VULKAN, VK_TRUE, e.offsets[i], NULL)) goto done;
        {
            VkBuffer vb = VK_NULL_HANDLE;
            CHECK_VKCUDA(vkcuda_buffer_get_vk_buffer(bufs[i], &vb));
            CHECK(vb == e.buffers[i], "the wrapped VkBuffer changed");
        }
        CHECK_VK(rig_staging(&E, size, &staging[i]));
        stagings[i] = &staging[i];
    }
    for (i = 0; i < count; i++) {
        uint64_t ptr;
        CHECK_VKCUDA(vkcuda_buffer_get_cuda_pointer(bufs[i], &ptr));
        CHECK_CU(cuda_fill_pattern(&E.kernels, E.stream, ptr, size, seed + (uint32_t)i));
    }
    CHECK_CU(cuStreamSynchronize(E.stream));
    if (!vulkan_readback(bufs, stagings, count, size)) goto done;
    ok = 1;
    for (i = 0; i < count; i++) {
        expectation x;
        char what[96];
        memset(&x, 0, sizeof x);
        x.seed = seed + (uint32_t)i;
        snprintf(what, sizeof what, "Vulkan copy of wrapped buffer %d (offset %" PRIu64 ")", i,
                 (uint64_t)e.offsets[i]);
        if (compare_words(what, staging[i].mapped, size, &x) != 0) ok = 0;
    }
done:
    for (i = 0; i < 2; i++) {
        vkcuda_buffer_destroy(bufs[i]); /* before the engine's buffer and memory */
        vk_owned_buffer_destroy(&E.vk, &staging[i]);
    }
    engine_free(&e);
    return ok;
}

/* ---- (d) create/destroy cycles ------------------------------------------------------ */

typedef enum cycle_kind { CYCLE_CUDA, CYCLE_VULKAN, CYCLE_WRAPPED } cycle_kind;
static const char *const cycle_names[] = {"CUDA-allocated", "Vulkan-allocated", "wrapped"};

typedef struct resources {
    vkcuda_live_objects live;
    int fds;
    size_t cuda_free, cuda_total; /* device memory: Vulkan's allocations count here too */
} resources;

static const char *live_text(const vkcuda_live_objects *l) {
    static char text[2][256];
    static int next;
    char *t = text[next++ & 1];
    snprintf(t, 256,
             "contexts %" PRId64 ", VkBuffers %" PRId64 ", VkDeviceMemory %" PRId64 ", VkImages %" PRId64
             ", VkSemaphores %" PRId64 ", CUDA allocations %" PRId64 ", CUDA external memories %" PRId64
             ", CUDA external semaphores %" PRId64,
             l->contexts, l->vk_buffers, l->vk_memories, l->vk_images, l->vk_semaphores, l->cuda_allocations,
             l->cuda_external_memories, l->cuda_external_semaphores);
    return t;
}

static int measure(resources *r) {
    int ok = 0;
    memset(r, 0, sizeof *r);
    CHECK_VKCUDA(vkcuda_live_objects_get(&r->live));
    r->fds = count_open_fds();
    if (E.cuda) CHECK_CU(cuMemGetInfo(&r->cuda_free, &r->cuda_total));
    ok = 1;
done:
    return ok;
}

static int one_cycle(cycle_kind kind, uint64_t size) {
    vkcuda_buffer *buf = NULL;
    engine_allocation e;
    VkBool32 req;
    int ok = 0;
    memset(&e, 0, sizeof e);
    if (kind == CYCLE_WRAPPED) {
        if (!engine_allocate(size, 1, VK_TRUE, &e, &req)) goto done;
        CHECK_VKCUDA(wrap(&e, 0, size, &buf));
    } else {
        vkcuda_buffer_create_info ci;
        memset(&ci, 0, sizeof ci);
        ci.allocator = kind == CYCLE_CUDA ? VKCUDA_ALLOCATOR_CUDA : VKCUDA_ALLOCATOR_VULKAN;
        ci.size = size;
        CHECK_VKCUDA(vkcuda_buffer_create(E.ctx, &ci, &buf));
    }
    if (!check_info(buf, size, kind == CYCLE_CUDA ? VKCUDA_ALLOCATOR_CUDA : VKCUDA_ALLOCATOR_VULKAN,
                    kind == CYCLE_WRAPPED ? VK_TRUE : VK_FALSE, 0, NULL))
        goto done;
    ok = 1;
done:
    vkcuda_buffer_destroy(buf);
    engine_free(&e);
    return ok;
}

static int test_cycles(cycle_kind kind, unsigned cycles, uint64_t size) {
    resources before_warmup, start, end;
    unsigned i;
    int ok = 0;
    long long free_diff;

    A.quiet = 1;
    if (!measure(&before_warmup)) goto done;
    if (!one_cycle(kind, size)) goto done; /* drivers open some fds lazily, on first use */
    if (!measure(&start)) goto done;
    for (i = 0; i < cycles; i++)
        if (!one_cycle(kind, size)) FAILF("cycle %u of %u failed", i + 1, cycles);
    if (!measure(&end)) goto done;
    free_diff = (long long)start.cuda_free - (long long)end.cuda_free;
    printf("  live objects at the start: %s\n", live_text(&start.live));
    printf("  live objects after:        %s\n", live_text(&end.live));
    printf("  open fds: %d before the warm-up cycle, %d at the start, %d after %u cycles\n",
           before_warmup.fds, start.fds, end.fds, cycles);
    if (E.cuda)
        printf("  cuMemGetInfo free: %zu B at the start, %zu B after (%+lld B; tolerance %llu B)\n",
               start.cuda_free, end.cuda_free, -free_diff, (unsigned long long)FREE_MEMORY_TOLERANCE);
    CHECK(memcmp(&end.live, &start.live, sizeof end.live) == 0, "the library holds other objects than at the start");
    CHECK(end.fds == start.fds, "%d fds open after the cycles, %d before: %d leaked", end.fds, start.fds,
          end.fds - start.fds);
    CHECK(!E.cuda || (free_diff <= (long long)FREE_MEMORY_TOLERANCE && free_diff >= -(long long)FREE_MEMORY_TOLERANCE),
          "CUDA free memory changed by %lld B over the cycles", -free_diff);
    ok = 1;
done:
    A.quiet = 0;
    return ok;
}

/* ---- arguments ------------------------------------------------------------------------ */

static int parse_size(const char *s, uint64_t *out) {
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s) return -1;
    switch (*end) {
    case 'K': case 'k': v *= 1024ull; end++; break;
    case 'M': case 'm': v *= MiB; end++; break;
    case 'G': case 'g': v *= 1024ull * MiB; end++; break;
    default: break;
    }
    if (*end == '+') {
        char *e2;
        unsigned long long extra = strtoull(end + 1, &e2, 10);
        if (e2 == end + 1) return -1;
        v += extra;
        end = e2;
    }
    if (*end != '\0' || v == 0) return -1;
    *out = v;
    return 0;
}

static void usage(void) {
    printf("usage: buffer_roundtrip [--cycles N] [--vulkan-only] [SIZE...]\n"
           "  SIZE: bytes, with an optional K/M/G suffix and +N (default: 4 1M+1 64M 1G)\n");
}

int main(int argc, char **argv) {
    static const uint64_t default_sizes[] = {4, MiB + 1, 64 * MiB, 1024 * MiB};
    uint64_t sizes[MAX_SIZES];
    unsigned nsizes = 0, cycles = 1000, s;
    int vulkan_only = 0, i, ok;
    double t0, start = now_s();
    char name[128];

    setvbuf(stdout, NULL, _IOLBF, 0);
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--vulkan-only") == 0) {
            vulkan_only = 1;
        } else if (strcmp(argv[i], "--cycles") == 0 && i + 1 < argc) {
            cycles = (unsigned)strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage();
            return 0;
        } else if (nsizes < MAX_SIZES && parse_size(argv[i], &sizes[nsizes]) == 0) {
            nsizes++;
        } else {
            usage();
            printf("buffer_roundtrip: FAIL: bad argument '%s'\n", argv[i]);
            return 1;
        }
    }
    if (nsizes == 0) {
        for (s = 0; s < sizeof default_sizes / sizeof default_sizes[0]; s++) sizes[s] = default_sizes[s];
        nsizes = s;
    }
    printf("buffer_roundtrip: vkcuda %s (header %u.%u.%u)\n", vkcuda_version_string(), VKCUDA_VERSION_MAJOR,
           VKCUDA_VERSION_MINOR, VKCUDA_VERSION_PATCH);
    if (vkcuda_version() != VKCUDA_VERSION) {
        printf("buffer_roundtrip: FAIL: the library is version 0x%x, the header 0x%x\n", vkcuda_version(),
               (unsigned)VKCUDA_VERSION);
        return 1;
    }
    rig_open(&E, "buffer_roundtrip", vulkan_only, NULL);
    if (!E.cuda) printf("Vulkan-only self-test: the CUDA steps are skipped, CUDA calls must fail cleanly\n");

    for (s = 0; s < nsizes; s++) {
        uint32_t seed = 0x1000u * (s + 1);
        snprintf(name, sizeof name, "(a) CUDA -> Vulkan, %s", human(sizes[s]));
        t0 = now_s();
        ok = test_cuda_to_vulkan(sizes[s], seed + 1);
        rig_record(&A.checks, name, ok, now_s() - t0);

        snprintf(name, sizeof name, "(b) Vulkan -> CUDA -> Vulkan, %s", human(sizes[s]));
        t0 = now_s();
        ok = test_vulkan_to_cuda(sizes[s], seed + 2);
        rig_record(&A.checks, name, ok, now_s() - t0);

        snprintf(name, sizeof name, "(c) wrap: two buffers in one allocation, %s", human(sizes[s]));
        t0 = now_s();
        ok = test_wrap(sizes[s], seed + 3, 2, VK_FALSE);
        rig_record(&A.checks, name, ok, now_s() - t0);

        snprintf(name, sizeof name, "(c) wrap: dedicated allocation, %s", human(sizes[s]));
        t0 = now_s();
        ok = test_wrap(sizes[s], seed + 5, 1, VK_TRUE);
        rig_record(&A.checks, name, ok, now_s() - t0);
    }
    if (cycles > 0) {
        cycle_kind k;
        for (k = CYCLE_CUDA; k <= CYCLE_WRAPPED; k = (cycle_kind)(k + 1)) {
            if (!E.cuda && k != CYCLE_VULKAN) continue;
            snprintf(name, sizeof name, "(d) %u create/destroy cycles, %s, 1 MiB", cycles, cycle_names[k]);
            t0 = now_s();
            ok = test_cycles(k, cycles, MiB);
            rig_record(&A.checks, name, ok, now_s() - t0);
        }
    }
    rig_close(&E);
    t0 = now_s();
    rig_record(&A.checks, "nothing left alive after destroying everything", rig_nothing_alive(), now_s() - t0);

    printf("buffer_roundtrip: %s: %u checks passed, %u failed; %llu words compared, %llu mismatched%s (%.1f s)\n",
           A.checks.failed == 0 && A.mismatches == 0 ? "PASS" : "FAIL", A.checks.passed, A.checks.failed,
           A.elements, A.mismatches, E.cuda ? "" : " [Vulkan-only self-test]", now_s() - start);
    return A.checks.failed == 0 && A.mismatches == 0 ? 0 : 1;
}
