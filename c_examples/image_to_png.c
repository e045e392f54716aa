/*
 * image_to_png: a CUDA kernel draws into a shared VkImage through a surface object;
 * Vulkan copies the image out; the host checks every pixel and writes a PNG.
 *
 *   1. vkcuda_image_create: a VkImage (R8G8B8A8_UNORM, STORAGE so that CUDA can make
 *      a surface, TRANSFER_SRC for the copy) with dedicated exportable memory, seen
 *      by CUDA as a mipmapped array; vkcuda_image_get_surface_object gives level 0's
 *      CUsurfObject (owned by the image).
 *   2. The release barrier hands the new image to CUDA: old layout UNDEFINED (nobody
 *      has written it), new layout GENERAL, queue family VK_QUEUE_FAMILY_EXTERNAL.
 *   3. The mandelbrot kernel (image_kernels.cu, loaded from its PTX) writes every
 *      pixel with surf2Dwrite.
 *   4. The acquire barrier takes the image back into TRANSFER_SRC_OPTIMAL (from
 *      GENERAL, which keeps what CUDA wrote); vkCmdCopyImageToBuffer copies it into
 *      host-visible memory.
 *   5. Every pixel is compared with the host reference (fractal.h), and the picture
 *      is written with stb_image_write (libstb-dev).
 *
 *   image_to_png [--vulkan-only] [FILE]     default: image_to_png.png
 *
 * --vulkan-only: no CUDA (lavapipe): the host draws the reference and a Vulkan copy
 * puts it into the image before the same release (from TRANSFER_DST_OPTIMAL); the
 * acquire, the copy out and the checks are the same.
 */
#include "example.h"
#include "fractal.h"
#include "image_kernels_ptx.h"

#include <stb_image_write.h>
#include <stdio.h>
#include <string.h>

#define WIDTH 1280u
#define HEIGHT 720u
#define MAX_ITER 512u

int main(int argc, char **argv) {
    int vulkan_only = argc > 1 && strcmp(argv[1], "--vulkan-only") == 0;
    const char *out = argc > 1 + vulkan_only ? argv[1 + vulkan_only] : "image_to_png.png";
    /* The view: a window 0.0065 wide centred on -0.7453 + 0.1127i. */
    float step = 0.0065f / WIDTH, x0 = -0.7453f - 0.0065f / 2, y0 = 0.1127f + step * HEIGHT / 2;
    uint32_t width = WIDTH, height = HEIGHT, max_iter = MAX_ITER, x, y;
    example ex;
    vkcuda_image_create_info ci = {0};
    vkcuda_image *image;
    VkImage vk_image;
    uint64_t surface;
    vkcuda_handoff_info h;
    vk_owned_buffer host, staging = {0};
    VkBufferImageCopy region = {0};
    CUmodule module = NULL;
    CUfunction mandelbrot;
    void *params[7];
    const uint32_t *pixels;
    uint64_t bad = 0;

    example_open(&ex, "image_to_png", vulkan_only ? VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT : 0);

    /* 1. The shared image and its CUDA surface. */
    ci.format = VK_FORMAT_R8G8B8A8_UNORM;
    ci.extent.width = WIDTH;
    ci.extent.height = HEIGHT;
    ci.usage = VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT;
    CHECK(vkcuda_image_create(ex.ctx, &ci, &image));
    CHECK(vkcuda_image_get_vk_image(image, &vk_image));
    region.imageSubresource.aspectMask = VK_IMAGE_ASPECT_COLOR_BIT;
    region.imageSubresource.layerCount = 1;
    region.imageExtent.width = WIDTH;
    region.imageExtent.height = HEIGHT;
    region.imageExtent.depth = 1;

    /* 2. Vulkan hands it to CUDA (--vulkan-only: after copying the host's picture in). */
    h = example_handoff(&ex, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 0);
    example_record(ex.cmd);
    if (!vulkan_only) {
        CHECK(vkcuda_image_cmd_release_to_cuda(image, ex.cmd, &h, VK_IMAGE_LAYOUT_UNDEFINED));
    } else {
        VkImageMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
        b.dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
        b.oldLayout = VK_IMAGE_LAYOUT_UNDEFINED;
        b.newLayout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL;
        b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
        b.image = vk_image;
        b.subresourceRange.aspectMask = VK_IMAGE_ASPECT_COLOR_BIT;
        b.subresourceRange.levelCount = b.subresourceRange.layerCount = 1;
        staging = example_host_buffer(&ex, (VkDeviceSize)WIDTH * HEIGHT * 4);
        for (y = 0; y < HEIGHT; y++)
            for (x = 0; x < WIDTH; x++)
                ((uint32_t *)staging.mapped)[y * WIDTH + x] = fractal_pixel(x0, y0, step, MAX_ITER, x, y);
        vkCmdPipelineBarrier(ex.cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, NULL,
                             0, NULL, 1, &b);
        vkCmdCopyBufferToImage(ex.cmd, staging.buffer, vk_image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &region);
        h = example_handoff(&ex, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
        CHECK(vkcuda_image_cmd_release_to_cuda(image, ex.cmd, &h, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL));
    }
    example_run(&ex, ex.cmd);

    /* 3. CUDA draws through the surface: one thread a pixel, 16x16 blocks. */
    if (!vulkan_only) {
        CHECK(vkcuda_image_get_surface_object(image, 0, &surface));
        CHECK_CU(cuModuleLoadDataEx(&module, image_kernels_ptx, 0, NULL, NULL));
        CHECK_CU(cuModuleGetFunction(&mandelbrot, module, "mandelbrot"));
        params[0] = &surface;
        params[1] = &width;
        params[2] = &height;
        params[3] = &x0;
        params[4] = &y0;
        params[5] = &step;
        params[6] = &max_iter;
        CHECK_CU(cuLaunchKernel(mandelbrot, (WIDTH + 15) / 16, (HEIGHT + 15) / 16, 1, 16, 16, 1, 0, ex.stream,
                                params, NULL));
        CHECK_CU(cuStreamSynchronize(ex.stream));
        printf("CUDA drew %ux%u pixels into the VkImage through surface object 0x%llx\n", WIDTH, HEIGHT,
               (unsigned long long)surface);
    }

    /* 4. Vulkan takes it back and copies it out. */
    host = example_host_buffer(&ex, (VkDeviceSize)WIDTH * HEIGHT * 4);
    h = example_handoff(&ex, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    example_record(ex.cmd);
    CHECK(vkcuda_image_cmd_acquire_from_cuda(image, ex.cmd, &h, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL));
    vkCmdCopyImageToBuffer(ex.cmd, vk_image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, host.buffer, 1, &region);
    vk_cmd_barrier(ex.cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    example_run(&ex, ex.cmd);

    /* 5. Every pixel against the host reference (a little-endian host reads RGBA as
     * 0xAABBGGRR, the reference's packing), then the PNG. */
    pixels = (const uint32_t *)host.mapped;
    for (y = 0; y < HEIGHT; y++)
        for (x = 0; x < WIDTH; x++)
            bad += pixels[y * WIDTH + x] != fractal_pixel(x0, y0, step, MAX_ITER, x, y);
    printf("%u pixels read back by Vulkan, %llu differ from the host reference\n", WIDTH * HEIGHT,
           (unsigned long long)bad);
    if (bad == 0 && !stbi_write_png(out, WIDTH, HEIGHT, 4, host.mapped, WIDTH * 4)) {
        printf("image_to_png: FAIL: stbi_write_png(%s) failed\n", out);
        return 1;
    }
    if (bad == 0) printf("wrote %s\n", out);

    if (vulkan_only)
        vk_owned_buffer_destroy(&ex.vk, &staging);
    else
        CHECK_CU(cuModuleUnload(module));
    vk_owned_buffer_destroy(&ex.vk, &host);
    vkcuda_image_destroy(image); /* the surface object and CUDA array, then the VkImage */
    example_close(&ex);
    printf("image_to_png: %s\n", bad == 0 ? "PASS" : "FAIL");
    return bad == 0 ? 0 : 1;
}
