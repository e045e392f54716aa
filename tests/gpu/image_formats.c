/*
 * image_formats: shared images of every format in the library's table, checked
 * texel by texel in both directions through CUDA surface objects and texture
 * objects, with mip levels and array layers, and one image of each other kind the
 * kernels address (2D, 1D, 1D layered, 3D, cube). Prints PASS/FAIL per case and a
 * summary. The same formats and shapes through the CUDA arrays (cuMemcpy3D), the
 * sizes (1x1 to 16384x16384) and the refusal of layered images with a partial mip
 * chain are tests/image.rs's; here is what only a kernel can check: that each
 * level's surface object and the texture object read and write the right texels.
 *
 *   image_formats [--vulkan-only] [--only SUBSTRING]
 *
 * For each case:
 *   surface, CUDA -> Vulkan   a kernel writes a byte pattern into every texel of
 *                             every level and layer through the level's surface
 *                             object; Vulkan acquires the image and copies every
 *                             level out; the host compares every byte.
 *   surface, Vulkan -> CUDA   Vulkan copies another pattern into every level and
 *                             releases the image; a kernel reads every texel
 *                             through the surfaces into a buffer; every byte compared.
 *   texture, Vulkan -> CUDA   (one per format, 64x32 with 3 levels) Vulkan uploads
 *                             values chosen per format; a mipmapped texture object
 *                             (all levels, point sampling, normalized coordinates)
 *                             is fetched at each level's texel centres with
 *                             tex2DLod: UNORM/SNORM/SRGB read as normalized floats
 *                             (sRGB not decoded), UINT/SINT as integers, SFLOAT as
 *                             floats; every channel compared.
 * Surfaces need VK_IMAGE_USAGE_STORAGE_BIT; a format the device cannot store
 * (on the H200: the sRGB ones and B8G8R8A8 but UNORM) gets its surface cases
 * reported as SKIP, its texture case
 * still runs. Synchronisation is by fences and cuStreamSynchronize.
 *
 * --vulkan-only: a Vulkan-only context; each case is Vulkan write -> release ->
 * acquire -> Vulkan read (a self-test of the Vulkan half, for lavapipe).
 * --only runs the cases whose name contains SUBSTRING.
 *
 * Without a CUDA driver (or a Vulkan device matching a CUDA device) it says why and
 * exits 77 (skipped), or 1 when VKCUDA_REQUIRE_GPU=1. Exit status 1 when any case fails.
 */
#define _POSIX_C_SOURCE 200809L
#include <vkcuda.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format_kernels_ptx.h"
#include "format_pattern.h" /* pattern_byte: what the kernels write */
#include "rig.h"

#define MAX_LEVELS 16

/* How the kernels address a surface (format_kernels.cu). */
enum { KIND_1D = 0, KIND_2D = 1, KIND_3D = 2, KIND_1D_LAYERED = 3, KIND_2D_LAYERED = 4 };

static struct {
    CUmodule module;
    CUfunction write_pattern[5], read_texels[5], fetch_float4, fetch_uint4;
    const char *only;
    unsigned passed, failed, skipped;
} A;

static example E; /* the device: rig.h */

#define FORMAT(f) {f, #f}
static const struct {
    VkFormat format;
    const char *name;
} FORMATS[] = {
    FORMAT(VK_FORMAT_R8_UNORM), FORMAT(VK_FORMAT_R8_SNORM), FORMAT(VK_FORMAT_R8_UINT),
    FORMAT(VK_FORMAT_R8_SINT), FORMAT(VK_FORMAT_R8_SRGB), FORMAT(VK_FORMAT_R8G8_UNORM),
    FORMAT(VK_FORMAT_R8G8_SNORM), FORMAT(VK_FORMAT_R8G8_UINT), FORMAT(VK_FORMAT_R8G8_SINT),
    FORMAT(VK_FORMAT_R8G8_SRGB), FORMAT(VK_FORMAT_R8G8B8A8_UNORM), FORMAT(VK_FORMAT_R8G8B8A8_SNORM),
    FORMAT(VK_FORMAT_R8G8B8A8_UINT), FORMAT(VK_FORMAT_R8G8B8A8_SINT), FORMAT(VK_FORMAT_R8G8B8A8_SRGB),
    FORMAT(VK_FORMAT_B8G8R8A8_UNORM), FORMAT(VK_FORMAT_B8G8R8A8_SNORM), FORMAT(VK_FORMAT_B8G8R8A8_UINT),
    FORMAT(VK_FORMAT_B8G8R8A8_SINT), FORMAT(VK_FORMAT_B8G8R8A8_SRGB), FORMAT(VK_FORMAT_R16_UNORM),
    FORMAT(VK_FORMAT_R16_SNORM), FORMAT(VK_FORMAT_R16_UINT), FORMAT(VK_FORMAT_R16_SINT),
    FORMAT(VK_FORMAT_R16_SFLOAT), FORMAT(VK_FORMAT_R16G16_UNORM), FORMAT(VK_FORMAT_R16G16_SNORM),
    FORMAT(VK_FORMAT_R16G16_UINT), FORMAT(VK_FORMAT_R16G16_SINT), FORMAT(VK_FORMAT_R16G16_SFLOAT),
    FORMAT(VK_FORMAT_R16G16B16A16_UNORM), FORMAT(VK_FORMAT_R16G16B16A16_SNORM),
    FORMAT(VK_FORMAT_R16G16B16A16_UINT), FORMAT(VK_FORMAT_R16G16B16A16_SINT),
    FORMAT(VK_FORMAT_R16G16B16A16_SFLOAT), FORMAT(VK_FORMAT_R32_UINT), FORMAT(VK_FORMAT_R32_SINT),
    FORMAT(VK_FORMAT_R32_SFLOAT), FORMAT(VK_FORMAT_R32G32_UINT), FORMAT(VK_FORMAT_R32G32_SINT),
    FORMAT(VK_FORMAT_R32G32_SFLOAT), FORMAT(VK_FORMAT_R32G32B32A32_UINT),
    FORMAT(VK_FORMAT_R32G32B32A32_SINT), FORMAT(VK_FORMAT_R32G32B32A32_SFLOAT),
};
#define FORMAT_COUNT (sizeof FORMATS / sizeof FORMATS[0])

/* ---- reporting (the checks are rig.h's) -------------------- */

static int selected(const char *name) {
    return A.only == NULL || strstr(name, A.only) != NULL;
}

static void report(const char *name, const char *what, int result, double seconds, const char *detail) {
    const char *word = result > 0 ? "PASS" : result == 0 ? "FAIL" : "SKIP";
    if (result > 0)
        A.passed++;
    else if (result == 0)
        A.failed++;
    else
        A.skipped++;
    printf("%s %-66s %-27s (%.3f s)%s%s\n", word, name, what, seconds, detail[0] ? ": " : "", detail);
}

/* ---- Vulkan helpers ---------------------------------------------------------------- */

/* One level of an image and where it sits in a packed staging buffer. */
typedef struct level_layout {
    uint32_t w, h, d;  /* d: depth of 3D images, 1 otherwise */
    uint32_t layers;
    uint64_t offset, bytes;
} level_layout;

typedef struct layout {
    vkcuda_image_info info;
    uint32_t bpt, levels, kind;
    level_layout level[MAX_LEVELS];
    uint64_t total;
} layout;

static void describe(const vkcuda_image_info *info, layout *l) {
    uint32_t i;
    uint64_t offset = 0;
    memset(l, 0, sizeof *l);
    l->info = *info;
    l->bpt = info->format_info.bytes_per_texel;
    l->levels = info->mip_levels;
    if (info->image_type == VKCUDA_IMAGE_TYPE_3D)
        l->kind = KIND_3D;
    else if (info->image_type == VKCUDA_IMAGE_TYPE_1D)
        l->kind = info->array_layers > 1 ? KIND_1D_LAYERED : KIND_1D;
    else
        l->kind = info->array_layers > 1 ? KIND_2D_LAYERED : KIND_2D;
    for (i = 0; i < l->levels && i < MAX_LEVELS; i++) {
        level_layout *v = &l->level[i];
        v->w = info->extent.width >> i ? info->extent.width >> i : 1;
        v->h = info->extent.height >> i ? info->extent.height >> i : 1;
        v->d = info->extent.depth >> i ? info->extent.depth >> i : 1;
        v->layers = info->array_layers;
        v->offset = offset;
        v->bytes = (uint64_t)v->w * v->h * v->d * v->layers * l->bpt;
        offset += (v->bytes + 15) / 16 * 16;
    }
    l->total = offset;
}

static void copy_regions(const layout *l, VkBufferImageCopy *r) {
    uint32_t i;
    for (i = 0; i < l->levels; i++) {
        memset(&r[i], 0, sizeof r[i]);
        r[i].bufferOffset = l->level[i].offset;
        r[i].imageSubresource.aspectMask = VK_IMAGE_ASPECT_COLOR_BIT;
        r[i].imageSubresource.mipLevel = i;
        r[i].imageSubresource.layerCount = l->level[i].layers;
        r[i].imageExtent.width = l->level[i].w;
        r[i].imageExtent.height = l->level[i].h;
        r[i].imageExtent.depth = l->level[i].d;
    }
}

static void layout_barrier(const layout *l, VkImageLayout from, VkImageLayout to) {
    VkImageMemoryBarrier b;
    memset(&b, 0, sizeof b);
    b.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER;
    b.srcAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    b.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    b.oldLayout = from;
    b.newLayout = to;
    b.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.image = l->info.image;
    b.subresourceRange.aspectMask = VK_IMAGE_ASPECT_COLOR_BIT;
    b.subresourceRange.levelCount = l->levels;
    b.subresourceRange.layerCount = l->info.array_layers;
    vkCmdPipelineBarrier(E.cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, NULL,
                         0, NULL, 1, &b);
}

/* Copies the staging buffer into every level (from `from`) and releases the image
 * to CUDA in GENERAL. */
static int vulkan_upload(vkcuda_image *image, const layout *l, VkImageLayout from, const vk_owned_buffer *staging) {
    VkBufferImageCopy regions[MAX_LEVELS];
    vkcuda_handoff_info h = example_handoff(&E, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
    int ok = 0;
    copy_regions(l, regions);
    CHECK_VK(vk_owned_buffer_flush(&E.vk, staging));
    CHECK_VK(rig_begin(E.cmd, RIG_ONCE));
    layout_barrier(l, from, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL);
    vkCmdCopyBufferToImage(E.cmd, staging->buffer, l->info.image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                           l->levels, regions);
    CHECK_VKCUDA(vkcuda_image_cmd_release_to_cuda(image, E.cmd, &h, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL));
    CHECK_VK(rig_submit_and_wait(&E, E.cmd));
    ok = 1;
done:
    return ok;
}

/* Acquires the image from CUDA into TRANSFER_SRC_OPTIMAL and copies every level
 * into the readback buffer. */
static int vulkan_download(vkcuda_image *image, const layout *l, const vk_owned_buffer *readback) {
    VkBufferImageCopy regions[MAX_LEVELS];
    vkcuda_handoff_info h = example_handoff(&E, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    int ok = 0;
    copy_regions(l, regions);
    CHECK_VK(rig_begin(E.cmd, RIG_ONCE));
    CHECK_VKCUDA(vkcuda_image_cmd_acquire_from_cuda(image, E.cmd, &h, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL));
    vkCmdCopyImageToBuffer(E.cmd, l->info.image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, readback->buffer,
                           l->levels, regions);
    vk_cmd_barrier(E.cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    CHECK_VK(rig_submit_and_wait(&E, E.cmd));
    CHECK_VK(vk_owned_buffer_invalidate(&E.vk, readback));
    ok = 1;
done:
    return ok;
}

static void fill_pattern(const layout *l, uint8_t *data, uint32_t seed) {
    uint32_t i;
    uint64_t k;
    for (i = 0; i < l->levels; i++)
        for (k = 0; k < l->level[i].bytes; k++) data[l->level[i].offset + k] = (uint8_t)pattern_byte(i, k, seed);
}

/* Compares level `i` (packed at `data`) with the pattern; prints the first mismatches. */
static uint64_t compare_level(const layout *l, uint32_t i, const uint8_t *data, uint32_t seed, uint64_t *bytes) {
    const level_layout *v = &l->level[i];
    uint64_t k, bad = 0;
    for (k = 0; k < v->bytes; k++) {
        uint8_t want = (uint8_t)pattern_byte(i, k, seed);
        if (data[k] != want) {
            if (bad < 3) {
                uint64_t t = k / l->bpt;
                printf("    level %u texel %llu (x %llu, y %llu, slice/layer %llu) byte %llu: 0x%02x, expected 0x%02x\n",
                       i, (unsigned long long)t, (unsigned long long)(t % v->w),
                       (unsigned long long)(t / v->w % v->h), (unsigned long long)(t / v->w / v->h),
                       (unsigned long long)(k % l->bpt), data[k], want);
            }
            bad++;
        }
    }
    *bytes += v->bytes;
    return bad;
}

/* ---- CUDA helpers ----------------------------------------------------------------- */

static int bpt_index(uint32_t bpt) {
    switch (bpt) {
    case 1: return 0;
    case 2: return 1;
    case 4: return 2;
    case 8: return 3;
    case 16: return 4;
    default: return -1;
    }
}

static CUresult launch3(CUfunction f, uint32_t w, uint32_t h, uint32_t d, void **params) {
    unsigned bx = w >= 16 ? 16 : w, by = h >= 16 ? 16 : h;
    return cuLaunchKernel(f, (w + bx - 1) / bx, (h + by - 1) / by, d, bx, by, 1, 0, E.stream, params, NULL);
}

/* Depth argument of the kernels: slices of 3D levels, layers otherwise. */
static uint32_t kernel_depth(const layout *l, uint32_t i) {
    return l->kind == KIND_3D ? l->level[i].d : l->level[i].layers;
}

/* A device buffer for kernel output, as a vkcuda buffer (CUDA pointer view). */
static int scratch(uint64_t bytes, vkcuda_buffer **buffer, uint64_t *pointer) {
    vkcuda_buffer_create_info bi;
    int ok = 0;
    memset(&bi, 0, sizeof bi);
    bi.size = bytes;
    bi.allocator = VKCUDA_ALLOCATOR_CUDA;
    CHECK_VKCUDA(vkcuda_buffer_create(E.ctx, &bi, buffer));
    CHECK_VKCUDA(vkcuda_buffer_get_cuda_pointer(*buffer, pointer));
    ok = 1;
done:
    return ok;
}

/* ---- the surface cases ------------------------------------------------------------- */

typedef struct shape {
    const char *name;
    vkcuda_image_type type;
    uint32_t w, h, d, levels, layers, flags;
} shape;

/* 1: made; 0: failed; -1: the device does not support it (reported as SKIP). */
static int create_image(VkFormat format, const shape *s, vkcuda_image **image, layout *l, const char *name) {
    vkcuda_image_create_info ci;
    vkcuda_image_info info;
    vkcuda_result r;
    int ok = 0;
    memset(&ci, 0, sizeof ci);
    ci.flags = s->flags;
    ci.image_type = s->type;
    ci.format = format;
    ci.extent.width = s->w;
    ci.extent.height = s->h;
    ci.extent.depth = s->d;
    ci.mip_levels = s->levels;
    ci.array_layers = s->layers;
    r = vkcuda_image_create(E.ctx, &ci, image);
    if (r == VKCUDA_ERROR_UNSUPPORTED) {
        report(name, "create", -1, 0.0, gpu_test_message());
        return -1;
    }
    CHECK_VKCUDA(r);
    CHECK_VKCUDA(vkcuda_image_get_info(*image, &info));
    if (info.mip_levels > MAX_LEVELS) FAILF("more than %d levels", MAX_LEVELS);
    describe(&info, l);
    ok = 1;
done:
    return ok;
}

/* Runs one image through both surface directions (or, Vulkan-only, through
 * Vulkan both ways). */
static void surface_case(VkFormat format, const char *format_name, const shape *s, uint32_t seed) {
    char name[160], detail[256];
    vkcuda_image *image = NULL;
    vkcuda_buffer *out = NULL;
    uint64_t out_ptr = 0;
    vk_owned_buffer staging, readback;
    layout l;
    uint64_t bad = 0, bytes = 0;
    uint32_t i;
    int kernel, result = 0;
    double t0 = now_s();
    uint8_t *host = NULL;

    snprintf(name, sizeof name, "%s %s", format_name, s->name);
    if (!selected(name)) return;
    memset(&staging, 0, sizeof staging);
    memset(&readback, 0, sizeof readback);
    detail[0] = '\0';
    switch (create_image(format, s, &image, &l, name)) {
    case 0: goto done;
    case -1: result = -2; goto done;
    default: break;
    }
    CHECK_VK(vk_owned_buffer_create(&E.vk, l.total, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, VK_MEMORY_PROPERTY_HOST_CACHED_BIT, &staging));
    CHECK_VK(vk_owned_buffer_create(&E.vk, l.total, VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, VK_MEMORY_PROPERTY_HOST_CACHED_BIT, &readback));
    kernel = bpt_index(l.bpt);
    if (kernel < 0) FAILF("unexpected texel size %u", l.bpt);

    if (!E.cuda) {
        fill_pattern(&l, (uint8_t *)staging.mapped, seed);
        if (!vulkan_upload(image, &l, VK_IMAGE_LAYOUT_UNDEFINED, &staging)) goto done;
        if (!vulkan_download(image, &l, &readback)) goto done;
        for (i = 0; i < l.levels; i++)
            bad += compare_level(&l, i, (const uint8_t *)readback.mapped + l.level[i].offset, seed, &bytes);
        snprintf(detail, sizeof detail, "%llu of %llu bytes differ", (unsigned long long)bad,
                 (unsigned long long)bytes);
        report(name, "Vulkan -> Vulkan", bad == 0, now_s() - t0, bad ? detail : "");
        result = -2; /* reported */
        goto done;
    }
    if (!(l.info.usage & VK_IMAGE_USAGE_STORAGE_BIT)) {
        snprintf(detail, sizeof detail, "the device has no storage images of this format (usage 0x%x)",
                 l.info.usage);
        report(name, "surface, both ways", -1, now_s() - t0, detail);
        result = -2;
        goto done;
    }

    /* CUDA -> Vulkan: the kernel writes every level (the image is new: UNDEFINED). */
    {
        vkcuda_handoff_info h = example_handoff(&E, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 0);
        CHECK_VK(rig_begin(E.cmd, RIG_ONCE));
        CHECK_VKCUDA(vkcuda_image_cmd_release_to_cuda(image, E.cmd, &h, VK_IMAGE_LAYOUT_UNDEFINED));
        CHECK_VK(rig_submit_and_wait(&E, E.cmd));
    }
    for (i = 0; i < l.levels; i++) {
        uint64_t surface = 0;
        int kind = (int)l.kind;
        uint32_t w = l.level[i].w, hh = l.level[i].h, d = kernel_depth(&l, i), level = i, sd = seed;
        void *params[7];
        params[0] = &surface;
        params[1] = &kind;
        params[2] = &w;
        params[3] = &hh;
        params[4] = &d;
        params[5] = &level;
        params[6] = &sd;
        CHECK_VKCUDA(vkcuda_image_get_surface_object(image, i, &surface));
        CHECK_CU(launch3(A.write_pattern[kernel], w, hh, d, params));
    }
    CHECK_CU(cuStreamSynchronize(E.stream));
    if (!vulkan_download(image, &l, &readback)) goto done;
    for (i = 0; i < l.levels; i++)
        bad += compare_level(&l, i, (const uint8_t *)readback.mapped + l.level[i].offset, seed, &bytes);
    snprintf(detail, sizeof detail, "%llu of %llu bytes differ", (unsigned long long)bad, (unsigned long long)bytes);
    report(name, "surface, CUDA -> Vulkan", bad == 0, now_s() - t0, bad ? detail : "");

    /* Vulkan -> CUDA: Vulkan copies another pattern in, the kernel reads every texel. */
    t0 = now_s();
    bad = bytes = 0;
    fill_pattern(&l, (uint8_t *)staging.mapped, seed + 1);
    if (!vulkan_upload(image, &l, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, &staging)) goto done;
    if (!scratch(l.level[0].bytes, &out, &out_ptr)) goto done;
    host = (uint8_t *)malloc((size_t)l.level[0].bytes);
    if (host == NULL) FAILF("out of host memory");
    for (i = 0; i < l.levels; i++) {
        uint64_t surface = 0;
        int kind = (int)l.kind;
        uint32_t w = l.level[i].w, hh = l.level[i].h, d = kernel_depth(&l, i);
        void *params[6];
        params[0] = &surface;
        params[1] = &kind;
        params[2] = &w;
        params[3] = &hh;
        params[4] = &d;
        params[5] = &out_ptr;
        CHECK_VKCUDA(vkcuda_image_get_surface_object(image, i, &surface));
        CHECK_CU(launch3(A.read_texels[kernel], w, hh, d, params));
        CHECK_CU(cuStreamSynchronize(E.stream));
        CHECK_CU(cuMemcpyDtoH(host, out_ptr, (size_t)l.level[i].bytes));
        bad += compare_level(&l, i, host, seed + 1, &bytes);
    }
    snprintf(detail, sizeof detail, "%llu of %llu bytes differ", (unsigned long long)bad, (unsigned long long)bytes);
    report(name, "surface, Vulkan -> CUDA", bad == 0, now_s() - t0, bad ? detail : "");
    /* Leave the image as CUDA had it (GENERAL, released) for destroy. */
    result = -2;
done:
    if (result == 0) report(name, "surface", 0, now_s() - t0, "see above");
    free(host);
    vkcuda_buffer_destroy(out);
    vkcuda_image_destroy(image);
    vk_owned_buffer_destroy(&E.vk, &staging);
    vk_owned_buffer_destroy(&E.vk, &readback);
}

/* ---- the texture cases ------------------------------------------------------------- */

static uint32_t value_hash(uint32_t level, uint64_t texel, uint32_t channel) {
    uint32_t x = (uint32_t)texel * 0x27d4eb2fu ^ (level + 1u) * 0x165667b1u ^ (channel + 1u) * 0x9e3779b9u;
    x ^= x >> 15;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    return x;
}

/* An exactly representable half: v = k / 2 for k in [-1000, 1000]. */
static uint16_t half_of(float v) {
    uint32_t bits, sign, exp, mant;
    memcpy(&bits, &v, 4);
    sign = bits >> 31;
    if ((bits & 0x7fffffffu) == 0) return (uint16_t)(sign << 15);
    exp = (bits >> 23) & 0xff;
    mant = bits & 0x7fffff;
    return (uint16_t)(sign << 15 | (exp - 127 + 15) << 10 | mant >> 13);
}

typedef struct expected {
    float f[4];
    uint32_t u[4];
} expected;

/* The value of channel c of texel t of level i, as bytes for Vulkan and as what a
 * texture fetch returns. */
static void texel_value(const vkcuda_format_info *fi, uint32_t i, uint64_t t, uint32_t c, uint8_t *bytes,
                        expected *e) {
    uint32_t b = fi->bytes_per_texel / fi->channels, bits = 8 * b, h = value_hash(i, t, c);
    uint32_t raw;
    switch (fi->numeric) {
    case VKCUDA_FORMAT_NUMERIC_SFLOAT: {
        float v = (float)((int)(h % 2001u) - 1000) * 0.5f;
        if (b == 2) {
            raw = half_of(v);
        } else {
            memcpy(&raw, &v, 4);
        }
        e->f[c] = v;
        break;
    }
    case VKCUDA_FORMAT_NUMERIC_UNORM:
    case VKCUDA_FORMAT_NUMERIC_SRGB: {
        uint32_t max = bits == 32 ? 0xffffffffu : (1u << bits) - 1u;
        raw = h & max;
        e->f[c] = (float)((double)raw / (double)max);
        break;
    }
    case VKCUDA_FORMAT_NUMERIC_SNORM: {
        int32_t smax = (int32_t)((1u << (bits - 1)) - 1u);
        int32_t v = (int32_t)(h & ((1u << bits) - 1u)) - (smax + 1); /* [-2^(b-1), 2^(b-1) - 1] */
        double f = (double)v / (double)smax;
        raw = (uint32_t)v;
        e->f[c] = (float)(f < -1.0 ? -1.0 : f);
        break;
    }
    case VKCUDA_FORMAT_NUMERIC_UINT:
        raw = bits == 32 ? h : h & ((1u << bits) - 1u);
        e->u[c] = raw;
        break;
    default: { /* SINT: sign-extended by the fetch */
        int32_t v = bits == 32 ? (int32_t)h : (int32_t)(h & ((1u << bits) - 1u)) - (int32_t)(1u << (bits - 1));
        raw = (uint32_t)v;
        e->u[c] = (uint32_t)v;
        break;
    }
    }
    memcpy(bytes, &raw, b); /* little-endian: the low bytes */
}

static void texture_case(VkFormat format, const char *format_name) {
    static const shape s = {"2D 64x32, 3 levels, texture", VKCUDA_IMAGE_TYPE_2D, 64, 32, 0, 3, 0, 0};
    char name[160], detail[256];
    vkcuda_image *image = NULL;
    vkcuda_buffer *out = NULL;
    uint64_t out_ptr = 0, texture = 0, texels = 0, bad = 0, t;
    vk_owned_buffer staging;
    vkcuda_texture_info ti;
    layout l;
    uint32_t i, c;
    int result = 0, as_float;
    double t0 = now_s();
    expected *want = NULL;
    uint8_t *got = NULL;

    snprintf(name, sizeof name, "%s %s", format_name, s.name);
    if (!selected(name) || !E.cuda) return;
    memset(&staging, 0, sizeof staging);
    detail[0] = '\0';
    switch (create_image(format, &s, &image, &l, name)) {
    case 0: goto done;
    case -1: result = -2; goto done;
    default: break;
    }
    CHECK_VK(vk_owned_buffer_create(&E.vk, l.total, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                                    0, &staging));
    want = (expected *)calloc((size_t)l.level[0].w * l.level[0].h, sizeof *want);
    got = (uint8_t *)malloc((size_t)l.level[0].w * l.level[0].h * 16);
    if (want == NULL || got == NULL) FAILF("out of host memory");
    as_float = l.info.format_info.numeric != VKCUDA_FORMAT_NUMERIC_UINT &&
               l.info.format_info.numeric != VKCUDA_FORMAT_NUMERIC_SINT;

    for (i = 0; i < l.levels; i++)
        for (t = 0; t < (uint64_t)l.level[i].w * l.level[i].h; t++)
            for (c = 0; c < l.info.format_info.channels; c++) {
                expected e;
                uint8_t *dst = (uint8_t *)staging.mapped + l.level[i].offset + t * l.bpt +
                               c * (l.bpt / l.info.format_info.channels);
                memset(&e, 0, sizeof e);
                texel_value(&l.info.format_info, i, t, c, dst, &e);
            }
    if (!vulkan_upload(image, &l, VK_IMAGE_LAYOUT_UNDEFINED, &staging)) goto done;

    memset(&ti, 0, sizeof ti);
    ti.flags = VKCUDA_TEXTURE_ALL_LEVELS_BIT | VKCUDA_TEXTURE_NORMALIZED_COORDINATES_BIT;
    ti.filter = VKCUDA_FILTER_POINT;
    ti.address_mode = VKCUDA_ADDRESS_MODE_CLAMP;
    ti.read_mode = (l.info.format_info.numeric == VKCUDA_FORMAT_NUMERIC_UNORM ||
                    l.info.format_info.numeric == VKCUDA_FORMAT_NUMERIC_SNORM ||
                    l.info.format_info.numeric == VKCUDA_FORMAT_NUMERIC_SRGB)
                       ? VKCUDA_READ_MODE_NORMALIZED_FLOAT
                       : VKCUDA_READ_MODE_ELEMENT_TYPE;
    CHECK_VKCUDA(vkcuda_image_create_texture_object(image, &ti, &texture));
    if (!scratch((uint64_t)l.level[0].w * l.level[0].h * 16, &out, &out_ptr)) goto done;

    for (i = 0; i < l.levels; i++) {
        uint32_t w = l.level[i].w, h = l.level[i].h;
        float lod = (float)i;
        void *params[5];
        params[0] = &texture;
        params[1] = &w;
        params[2] = &h;
        params[3] = &lod;
        params[4] = &out_ptr;
        CHECK_CU(launch3(as_float ? A.fetch_float4 : A.fetch_uint4, w, h, 1, params));
        CHECK_CU(cuStreamSynchronize(E.stream));
        CHECK_CU(cuMemcpyDtoH(got, out_ptr, (size_t)w * h * 16));
        for (t = 0; t < (uint64_t)w * h; t++) {
            expected e;
            uint8_t scratch_bytes[4];
            memset(&e, 0, sizeof e);
            for (c = 0; c < l.info.format_info.channels; c++) {
                int wrong;
                texel_value(&l.info.format_info, i, t, c, scratch_bytes, &e);
                if (as_float) {
                    float g;
                    memcpy(&g, got + 16 * t + 4 * c, 4);
                    wrong = !(fabs((double)g - (double)e.f[c]) <= 1e-6);
                    if (wrong && bad < 3)
                        printf("    level %u texel %llu channel %u: %.9g, expected %.9g\n", i,
                               (unsigned long long)t, c, g, e.f[c]);
                } else {
                    uint32_t g;
                    memcpy(&g, got + 16 * t + 4 * c, 4);
                    wrong = g != e.u[c];
                    if (wrong && bad < 3)
                        printf("    level %u texel %llu channel %u: 0x%08x, expected 0x%08x\n", i,
                               (unsigned long long)t, c, g, e.u[c]);
                }
                bad += (uint64_t)wrong;
                texels++;
            }
        }
    }
    snprintf(detail, sizeof detail, "%llu of %llu channel values differ", (unsigned long long)bad,
             (unsigned long long)texels);
    report(name, as_float ? "texture (float), Vk -> CUDA" : "texture (int), Vk -> CUDA", bad == 0, now_s() - t0,
           bad ? detail : "");
    result = -2;
done:
    if (result == 0) report(name, "texture", 0, now_s() - t0, "see above");
    free(want);
    free(got);
    vkcuda_buffer_destroy(out);
    vkcuda_image_destroy(image);
    vk_owned_buffer_destroy(&E.vk, &staging);
}

/* ---- setup ------------------------------------------------------------------------- */

static CUresult load_module(void) {
    static const char *sizes[5] = {"1", "2", "4", "8", "16"};
    char fname[64];
    CUresult r = rig_load_ptx(format_kernels_ptx, "format_kernels_ptx.h", &A.module);
    int k;
    for (k = 0; k < 5 && r == CUDA_SUCCESS; k++) {
        snprintf(fname, sizeof fname, "write_pattern_%s", sizes[k]);
        r = cuModuleGetFunction(&A.write_pattern[k], A.module, fname);
        if (r != CUDA_SUCCESS) break;
        snprintf(fname, sizeof fname, "read_texels_%s", sizes[k]);
        r = cuModuleGetFunction(&A.read_texels[k], A.module, fname);
    }
    if (r == CUDA_SUCCESS) r = cuModuleGetFunction(&A.fetch_float4, A.module, "fetch_float4");
    if (r == CUDA_SUCCESS) r = cuModuleGetFunction(&A.fetch_uint4, A.module, "fetch_uint4");
    return r;
}

static int setup(int vulkan_only) {
    int ok = 0;
    rig_open(&E, "image_formats", vulkan_only, NULL);
    if (E.cuda)
        CHECK_CU(load_module());
    else
        printf("Vulkan-only self-test: each case is Vulkan -> Vulkan through the handoff barriers\n");
    ok = 1;
done:
    return ok;
}

int main(int argc, char **argv) {
    static const shape per_format = {"2D 67x35, 7 levels, 2 layers", VKCUDA_IMAGE_TYPE_2D, 67, 35, 0, 7, 2, 0};
    static const struct {
        VkFormat format;
        const char *format_name;
        shape s;
    } shapes[] = {
        {VK_FORMAT_R8G8B8A8_UNORM, "VK_FORMAT_R8G8B8A8_UNORM",
         {"2D 256x256, full mip chain (9 levels)", VKCUDA_IMAGE_TYPE_2D, 256, 256, 0, 9, 0, 0}},
        {VK_FORMAT_R16_SFLOAT, "VK_FORMAT_R16_SFLOAT",
         {"1D 1000, 10 levels", VKCUDA_IMAGE_TYPE_1D, 1000, 0, 0, 10, 0, 0}},
        {VK_FORMAT_R32_UINT, "VK_FORMAT_R32_UINT",
         {"1D 1000, 10 levels, 4 layers", VKCUDA_IMAGE_TYPE_1D, 1000, 0, 0, 10, 4, 0}},
        {VK_FORMAT_R32G32B32A32_SFLOAT, "VK_FORMAT_R32G32B32A32_SFLOAT",
         {"3D 33x17x9, 6 levels", VKCUDA_IMAGE_TYPE_3D, 33, 17, 9, 6, 0, 0}},
        {VK_FORMAT_R8G8B8A8_UNORM, "VK_FORMAT_R8G8B8A8_UNORM",
         {"cube 64, 7 levels", VKCUDA_IMAGE_TYPE_2D, 64, 64, 0, 7, 6, VKCUDA_IMAGE_CREATE_CUBE_COMPATIBLE_BIT}},
    };
    int vulkan_only = 0, i;
    unsigned f, k;
    double start = now_s();

    setvbuf(stdout, NULL, _IOLBF, 0);
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--vulkan-only") == 0) {
            vulkan_only = 1;
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            A.only = argv[++i];
        } else {
            printf("usage: image_formats [--vulkan-only] [--only SUBSTRING]\n");
            return strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0 ? 0 : 1;
        }
    }
    printf("image_formats: vkcuda %s, %u formats\n", vkcuda_version_string(), (unsigned)FORMAT_COUNT);
    if (!setup(vulkan_only)) {
        rig_close_module(&E, A.module);
        printf("image_formats: FAIL: setup failed (see above)\n");
        return 1;
    }
    for (f = 0; f < FORMAT_COUNT; f++) {
        vkcuda_format_info fi;
        if (vkcuda_format_query(FORMATS[f].format, &fi) != VKCUDA_SUCCESS) {
            report(FORMATS[f].name, "format query", 0, 0.0, gpu_test_message());
            continue;
        }
        surface_case(FORMATS[f].format, FORMATS[f].name, &per_format, 0x100u + f);
        texture_case(FORMATS[f].format, FORMATS[f].name);
    }
    for (k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        surface_case(shapes[k].format, shapes[k].format_name, &shapes[k].s, 0x900u + k);
    rig_close_module(&E, A.module);
    printf("image_formats: %u passed, %u failed, %u skipped (%.1f s): %s\n", A.passed, A.failed, A.skipped,
           now_s() - start, A.failed == 0 && A.passed > 0 ? "PASS" : "FAIL");
    return A.failed == 0 && A.passed > 0 ? 0 : 1;
}
