/*
 * image_fractal: a CUDA kernel draws the Mandelbrot set into a shared image
 * through a surface object; Vulkan copies the image out to a host-visible buffer;
 * the program checks every pixel against a host reference and writes a PNG.
 *
 *   image_fractal [--vulkan-only] [--size WxH] [--iterations N] [--view CX CY WIDTH]
 *                 [--out FILE]
 *
 * The image is a vkcuda_image (VK_FORMAT_R8G8B8A8_UNORM, TRANSFER_SRC | STORAGE):
 * a VkImage with dedicated exportable memory that CUDA sees as a mipmapped array.
 * The handoff is the library's barriers: release to CUDA (old layout UNDEFINED: the
 * image is new and nobody has written it), the kernel writes through
 * vkcuda_image_get_surface_object, acquire back into TRANSFER_SRC_OPTIMAL (from
 * GENERAL, keeping what CUDA wrote), vkCmdCopyImageToBuffer. Synchronisation is by
 * fences and cuStreamSynchronize (frame_loop shows semaphores).
 *
 * The kernel (image_kernels.cu, embedded as PTX in image_kernels_ptx.h) is compiled
 * with -fmad=false, so the host reference here computes the same escape counts bit
 * for bit and every pixel must match.
 *
 * --vulkan-only: a Vulkan-only context; the host renders the reference, Vulkan
 * uploads it into the shared image, hands it over and back with the same barriers
 * and copies it out (a self-test of everything but CUDA, for lavapipe).
 *
 * Without a CUDA driver (or a Vulkan device matching a CUDA device) it says why and
 * exits 77 (skipped), or 1 when VKCUDA_REQUIRE_GPU=1. The PNG is written by stb_image_write
 * (libstb-dev); built without it, the checks run and no PNG is written.
 *
 * A GPU test program (tests/gpu): c_examples/image_to_png.c is the short example.
 */
#define _POSIX_C_SOURCE 200809L
#include <vkcuda.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fractal.h"
#include "image_kernels_ptx.h"
#include "rig.h"

#ifdef VKCUDA_HAVE_STB_IMAGE_WRITE
#include <stb_image_write.h>
#endif


static struct {
    CUmodule module;
    CUfunction mandelbrot;
} A;

static example E; /* the device: rig.h */

/* What to draw. */
typedef struct view {
    uint32_t width, height, max_iter;
    float x0, y0, step;
} view;

/* ---- the host reference (c_examples/fractal.h: must equal image_kernels.cu) -------- */

/* Pixel (x, y) as RGBA bytes in memory (R first), as the kernel stores it. */
static uint32_t reference_pixel(const view *v, uint32_t x, uint32_t y) {
    return fractal_pixel(v->x0, v->y0, v->step, v->max_iter, x, y);
}

static void render_reference(const view *v, uint8_t *rgba) {
    uint32_t x, y;
    for (y = 0; y < v->height; y++)
        for (x = 0; x < v->width; x++) {
            uint32_t c = reference_pixel(v, x, y);
            uint8_t *p = rgba + 4 * ((size_t)y * v->width + x);
            p[0] = (uint8_t)c;
            p[1] = (uint8_t)(c >> 8);
            p[2] = (uint8_t)(c >> 16);
            p[3] = (uint8_t)(c >> 24);
        }
}

/* ---- Vulkan helpers ------------------------------------------------------------------ */

static VkBufferImageCopy whole_image(uint32_t width, uint32_t height) {
    VkBufferImageCopy c;
    memset(&c, 0, sizeof c);
    c.imageSubresource.aspectMask = VK_IMAGE_ASPECT_COLOR_BIT;
    c.imageSubresource.layerCount = 1;
    c.imageExtent.width = width;
    c.imageExtent.height = height;
    c.imageExtent.depth = 1;
    return c;
}

static void image_barrier(VkImage image, VkImageLayout from, VkImageLayout to, VkAccessFlags src,
                          VkAccessFlags dst) {
    VkImageMemoryBarrier b;
    memset(&b, 0, sizeof b);
    b.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER;
    b.srcAccessMask = src;
    b.dstAccessMask = dst;
    b.oldLayout = from;
    b.newLayout = to;
    b.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.image = image;
    b.subresourceRange.aspectMask = VK_IMAGE_ASPECT_COLOR_BIT;
    b.subresourceRange.levelCount = 1;
    b.subresourceRange.layerCount = 1;
    vkCmdPipelineBarrier(E.cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0,
                         0, NULL, 0, NULL, 1, &b);
}

/* ---- setup --------------------------------------------------------------------------- */

static CUresult load_module(void) {
    CUresult r = rig_load_ptx(image_kernels_ptx, "image_kernels_ptx.h", &A.module);
    if (r != CUDA_SUCCESS) return r;
    return cuModuleGetFunction(&A.mandelbrot, A.module, "mandelbrot");
}

static int setup(int vulkan_only) {
    int ok = 0;
    rig_open(&E, "image_fractal", vulkan_only, NULL);
    if (E.cuda)
        CHECK_CU(load_module());
    else
        printf("Vulkan-only self-test: the host draws the reference and Vulkan uploads it\n");
    ok = 1;
done:
    return ok;
}

/* ---- the picture ---------------------------------------------------------------------- */

static int draw(const view *v, const char *out_path) {
    vkcuda_image_create_info ci;
    vkcuda_image_info info;
    vkcuda_image *image = NULL;
    vkcuda_handoff_info h;
    vk_owned_buffer staging, readback;
    VkBufferImageCopy region = whole_image(v->width, v->height);
    const VkDeviceSize bytes = (VkDeviceSize)v->width * v->height * 4;
    uint8_t *reference = NULL;
    uint64_t x, y, bad = 0;
    double t0;
    int ok = 0;

    memset(&staging, 0, sizeof staging);
    memset(&readback, 0, sizeof readback);
    reference = (uint8_t *)malloc((size_t)bytes);
    if (reference == NULL) FAILF("out of host memory");
    t0 = now_s();
    render_reference(v, reference);
    printf("host reference: %.3f s\n", now_s() - t0);

    memset(&ci, 0, sizeof ci);
    ci.image_type = VKCUDA_IMAGE_TYPE_2D;
    ci.format = VK_FORMAT_R8G8B8A8_UNORM;
    ci.extent.width = v->width;
    ci.extent.height = v->height;
    ci.usage = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT | VK_IMAGE_USAGE_STORAGE_BIT;
    CHECK_VKCUDA(vkcuda_image_create(E.ctx, &ci, &image));
    CHECK_VKCUDA(vkcuda_image_get_info(image, &info));
    printf("shared image: %ux%u R8G8B8A8_UNORM, %llu bytes of dedicated memory, CUDA array flags 0x%x\n",
           info.extent.width, info.extent.height, (unsigned long long)info.allocation_size,
           info.cuda_array_flags);
    CHECK_VK(vk_owned_buffer_create(&E.vk, bytes, VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                    VK_MEMORY_PROPERTY_HOST_CACHED_BIT, &readback));

    /* Hand the new image to CUDA (its contents do not matter yet: UNDEFINED). */
    CHECK_VK(rig_begin(E.cmd, RIG_ONCE));
    if (E.cuda) {
        h = example_handoff(&E, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 0);
        CHECK_VKCUDA(vkcuda_image_cmd_release_to_cuda(image, E.cmd, &h, VK_IMAGE_LAYOUT_UNDEFINED));
    } else {
        /* Vulkan-only: the host's picture goes in through a copy, then the same release. */
        CHECK_VK(vk_owned_buffer_create(&E.vk, bytes, VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                                        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                        0, &staging));
        memcpy(staging.mapped, reference, (size_t)bytes);
        image_barrier(info.image, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 0,
                      VK_ACCESS_TRANSFER_WRITE_BIT);
        vkCmdCopyBufferToImage(E.cmd, staging.buffer, info.image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1,
                               &region);
        h = example_handoff(&E, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
        CHECK_VKCUDA(vkcuda_image_cmd_release_to_cuda(image, E.cmd, &h, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL));
    }
    CHECK_VK(rig_submit_and_wait(&E, E.cmd));

    if (E.cuda) {
        uint64_t surface = 0;
        view p = *v; /* the kernel's arguments */
        void *params[7];
        unsigned gx = (v->width + 15) / 16, gy = (v->height + 15) / 16;
        CHECK_VKCUDA(vkcuda_image_get_surface_object(image, 0, &surface));
        params[0] = &surface;
        params[1] = &p.width;
        params[2] = &p.height;
        params[3] = &p.x0;
        params[4] = &p.y0;
        params[5] = &p.step;
        params[6] = &p.max_iter;
        t0 = now_s();
        CHECK_CU(cuLaunchKernel(A.mandelbrot, gx, gy, 1, 16, 16, 1, 0, E.stream, params, NULL));
        CHECK_CU(cuStreamSynchronize(E.stream));
        printf("CUDA kernel (%u iterations at most): %.3f ms\n", v->max_iter, (now_s() - t0) * 1e3);
    }

    /* Take it back (GENERAL -> TRANSFER_SRC_OPTIMAL keeps CUDA's writes) and copy it out. */
    CHECK_VK(rig_begin(E.cmd, RIG_ONCE));
    h = example_handoff(&E, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    CHECK_VKCUDA(vkcuda_image_cmd_acquire_from_cuda(image, E.cmd, &h, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL));
    vkCmdCopyImageToBuffer(E.cmd, info.image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, readback.buffer, 1,
                           &region);
    vk_cmd_barrier(E.cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    CHECK_VK(rig_submit_and_wait(&E, E.cmd));
    CHECK_VK(vk_owned_buffer_invalidate(&E.vk, &readback));

    for (y = 0; y < v->height; y++)
        for (x = 0; x < v->width; x++) {
            size_t o = 4 * ((size_t)y * v->width + (size_t)x);
            const uint8_t *got = (const uint8_t *)readback.mapped + o, *want = reference + o;
            if (memcmp(got, want, 4) != 0) {
                if (bad < 5)
                    printf("  pixel (%llu, %llu) is %02x%02x%02x%02x, expected %02x%02x%02x%02x\n",
                           (unsigned long long)x, (unsigned long long)y, got[0], got[1], got[2], got[3],
                           want[0], want[1], want[2], want[3]);
                bad++;
            }
        }
    printf("%s %llu of %llu pixels match the host reference\n", bad == 0 ? "PASS" : "FAIL",
           (unsigned long long)((uint64_t)v->width * v->height - bad),
           (unsigned long long)((uint64_t)v->width * v->height));
    if (bad != 0) goto done;
#ifdef VKCUDA_HAVE_STB_IMAGE_WRITE
    if (!stbi_write_png(out_path, (int)v->width, (int)v->height, 4, readback.mapped, (int)(v->width * 4)))
        FAILF("writing %s (stbi_write_png failed)", out_path);
    printf("wrote %s (%ux%u RGBA, stb_image_write)\n", out_path, v->width, v->height);
#else
    printf("no PNG written to %s: built without stb_image_write.h (apt-get install libstb-dev)\n", out_path);
#endif
    ok = 1;
done:
    vkcuda_image_destroy(image);
    vk_owned_buffer_destroy(&E.vk, &staging);
    vk_owned_buffer_destroy(&E.vk, &readback);
    free(reference);
    return ok;
}

static void usage(void) {
    printf("usage: image_fractal [--vulkan-only] [--size WxH] [--iterations N] [--view CX CY WIDTH]\n"
           "                     [--out FILE]\n"
           "  defaults: --size 1280x720 --iterations 512 --view -0.7453 0.1127 0.0065\n"
           "            --out image_fractal.png\n");
}

int main(int argc, char **argv) {
    const char *out_path = "image_fractal.png";
    int vulkan_only = 0, i, ok;
    unsigned w = 1280, h = 720, iterations = 512;
    double cx = -0.7453, cy = 0.1127, span = 0.0065;
    view v;

    setvbuf(stdout, NULL, _IOLBF, 0);
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--vulkan-only") == 0) {
            vulkan_only = 1;
        } else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
            if (sscanf(argv[++i], "%ux%u", &w, &h) != 2 || w == 0 || h == 0 || w > 16384 || h > 16384) {
                usage();
                return 1;
            }
        } else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
            iterations = (unsigned)strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--view") == 0 && i + 3 < argc) {
            cx = strtod(argv[++i], NULL);
            cy = strtod(argv[++i], NULL);
            span = strtod(argv[++i], NULL);
        } else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
            out_path = argv[++i];
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage();
            return 0;
        } else {
            usage();
            printf("image_fractal: FAIL: bad argument '%s'\n", argv[i]);
            return 1;
        }
    }
    v.width = w;
    v.height = h;
    v.max_iter = iterations == 0 ? 1 : iterations;
    v.step = (float)(span / w);
    v.x0 = (float)(cx - span / 2);
    v.y0 = (float)(cy + span * h / w / 2);

    printf("image_fractal: vkcuda %s\n", vkcuda_version_string());
    if (!setup(vulkan_only)) {
        rig_close_module(&E, A.module);
        printf("image_fractal: FAIL: setup failed (see above)\n");
        return 1;
    }
    ok = draw(&v, out_path);
    rig_close_module(&E, A.module);
    printf("image_fractal: %s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
