/*
 * present_window: CUDA animates the fractal in a ring of shared images and Vulkan
 * presents it in an X11 window, on the engine's own swapchain.
 *
 *   1. The engine (window.h, standing in for yours): an Xlib window, its instance,
 *      device and a swapchain made with TRANSFER_DST usage; vkcuda_context_create
 *      wraps the device.
 *   2. vkcuda_present_ring_create: 3 shared RGBA8 images and the timeline semaphore
 *      that paces them; vkcuda_present_ring_cmd_prepare hands them to CUDA once.
 *   3. Each frame: vkcuda_present_ring_cuda_begin (the stream waits until the slot's
 *      last frame is copied out), the mandelbrot kernel writes the slot through its
 *      surface, vkcuda_present_ring_cuda_end (the stream signals the timeline). The
 *      engine acquires a swapchain image; vkcuda_present_ring_cmd_present records the
 *      blit (RGBA -> BGRA, scaled to the window) and the transition to PRESENT_SRC,
 *      and says what the submit waits on and signals. 2 frames in flight; a resized
 *      window gets a new swapchain, the ring keeps its memory; a minimised one
 *      (extent 0) presents nothing while frames still pass through.
 *
 *   present_window [--frames N] [--vulkan-only] [--check]
 *
 * --vulkan-only: no CUDA; the host draws the same frames (fractal.h) and a Vulkan
 *   copy stands in for the kernel (vkcuda_present_ring_cmd_upload): what CI runs on
 *   lavapipe under Xvfb (tests/present/xvfb_window.sh).
 * --check: after each present, reads the window back (XGetImage) and compares every
 *   pixel with the host reference; halfway through, resizes the window to twice the
 *   ring's size (the blit scales: nearest sampling, so every pixel stays exact).
 */
#include "window.h" /* first: Xlib and the Vulkan Xlib surface before example.h */
#include "example.h"
#include "fractal.h"
#include "image_kernels_ptx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define W 256u
#define H 160u
#define MAX_ITER 256u
#define RING 3u      /* shared images: CUDA may run up to 3 frames ahead of the copies */
#define IN_FLIGHT 2u /* frames the engine records while the GPU runs earlier ones */

/* The view of frame k: the picture zooms in towards -0.745 + 0.11i. */
static void view(uint64_t k, float *x0, float *y0, float *step) {
    *step = 3.2f / W / (1.0f + 0.02f * (float)(k % 300));
    *x0 = -0.745f - *step * W / 2;
    *y0 = 0.11f + *step * H / 2;
}

/* --check: the window shows frame k, scaled to the window by nearest sampling. The
 * present reaches the X server a little after vkQueuePresentKHR: retried for 2 s. */
static void check_window(const window *win, uint64_t k) {
    float x0, y0, step;
    struct timespec pause = {0, 10 * 1000 * 1000};
    uint32_t x = 0, y = 0, want = 0, got = 0, c, tries;
    VkExtent2D e = win->extent;
    view(k, &x0, &y0, &step);
    for (tries = 0; tries < 200; tries++, nanosleep(&pause, NULL)) {
        XImage *im = XGetImage(win->display, win->xid, 0, 0, e.width, e.height, AllPlanes, ZPixmap);
        if (im == NULL) continue;
        for (y = 0, got = want; y < e.height && got == want; y++)
            for (x = 0; x < e.width && got == want; x++) {
                c = fractal_pixel(x0, y0, step, MAX_ITER, x * W / e.width, y * H / e.height);
                want = (c & 0xffu) << 16 | (c & 0xff00u) | (c >> 16 & 0xffu); /* 0xRRGGBB */
                got = (uint32_t)XGetPixel(im, (int)x, (int)y) & 0xffffffu;
            }
        XDestroyImage(im);
        if (got == want) return;
    }
    printf("present_window: FAIL: frame %llu: window pixel (%u, %u) of %ux%u is %06x, want %06x\n",
           (unsigned long long)k, x - 1, y - 1, e.width, e.height, got, want);
    exit(1);
}

int main(int argc, char **argv) {
    uint64_t frames = 600, k, checked = 0, checked_2x = 0;
    int vulkan_only = 0, check = 0, i;
    window win;
    vkcuda_context_create_info cci = {0};
    vkcuda_context *ctx;
    vkcuda_result cr;
    vkcuda_present_ring_create_info ri = {0};
    vkcuda_present_ring *ring;
    vkcuda_present_submit s;
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, .flags = VK_FENCE_CREATE_SIGNALED_BIT};
    VkSemaphoreCreateInfo semi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    VkCommandPool pool;
    VkCommandBuffer cmd[IN_FLIGHT + RING]; /* the frames', then the --vulkan-only uploads' */
    VkFence fence[IN_FLIGHT];
    VkSemaphore acquired[IN_FLIGHT];
    vk_device vd;
    vk_owned_buffer staging[RING];
    CUstream stream = NULL;
    CUmodule module = NULL;
    CUfunction mandelbrot = NULL;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--vulkan-only") == 0) vulkan_only = 1;
        else if (strcmp(argv[i], "--check") == 0) check = 1;
        else if (strcmp(argv[i], "--frames") == 0 && i + 1 < argc) frames = strtoull(argv[++i], NULL, 10);
    }
    example_set_name("present_window");
    /* 1. The engine's window and device, wrapped (no CUDA: skipped, or --vulkan-only). */
    window_open(&win, W, H);
    vk_device_init(&vd, win.physical_device, win.device);
    cci.flags = vulkan_only ? VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT : 0;
    cci.instance = win.instance;
    cci.physical_device = win.physical_device;
    cci.device = win.device;
    cci.get_instance_proc_addr = vkGetInstanceProcAddr;
    cr = vkcuda_context_create(&cci, &ctx);
    if (cr == VKCUDA_ERROR_CUDA_UNAVAILABLE || cr == VKCUDA_ERROR_DEVICE_MISMATCH)
        example_skip(vkcuda_result_to_string(cr), vkcuda_last_error_message());
    CHECK(cr);
    if (!vulkan_only) {
        vkcuda_cuda_info info;
        CHECK(vkcuda_context_get_cuda_info(ctx, &info));
        CHECK_CU(cuCtxPushCurrent(info.cuda_context));
        CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
        CHECK_CU(cuModuleLoadDataEx(&module, image_kernels_ptx, 0, NULL, NULL));
        CHECK_CU(cuModuleGetFunction(&mandelbrot, module, "mandelbrot"));
    }
    /* 2. The ring, handed to CUDA once: the prepare submit signals the timeline to 1. */
    ri.format = VK_FORMAT_R8G8B8A8_UNORM;
    ri.width = W;
    ri.height = H;
    ri.image_count = RING;
    CHECK(vkcuda_present_ring_create(ctx, &ri, &ring));
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = win.family;
    CHECK_VK(vkCreateCommandPool(win.device, &pci, NULL, &pool));
    cai.commandPool = pool;
    cai.commandBufferCount = IN_FLIGHT + RING;
    CHECK_VK(vkAllocateCommandBuffers(win.device, &cai, cmd));
    for (i = 0; i < (int)IN_FLIGHT; i++) {
        CHECK_VK(vkCreateFence(win.device, &fci, NULL, &fence[i]));
        CHECK_VK(vkCreateSemaphore(win.device, &semi, NULL, &acquired[i]));
    }
    for (i = 0; vulkan_only && i < (int)RING; i++)
        CHECK_VK(vk_owned_buffer_create(&vd, (VkDeviceSize)W * H * 4, VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                                        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                        0, &staging[i]));
    example_record(cmd[0]);
    CHECK(vkcuda_present_ring_cmd_prepare(ring, cmd[0], win.family, &s));
    window_submit(&win, cmd[0], &s, VK_NULL_HANDLE);
    CHECK_VK(vkQueueWaitIdle(win.queue));

    /* 3. The frames. */
    for (k = 1; k <= frames; k++) {
        uint32_t f = (uint32_t)(k % IN_FLIGHT), index = 0, x, y;
        vkcuda_present_write w;
        vkcuda_present_target t = {0};
        VkResult r = VK_ERROR_OUT_OF_DATE_KHR;
        float x0, y0, step;
        view(k, &x0, &y0, &step);
        if (!vulkan_only) { /* CUDA draws frame k into its slot, on the stream: no host wait */
            uint64_t surface;
            uint32_t width = W, height = H, max_iter = MAX_ITER;
            void *args[] = {&surface, &width, &height, &x0, &y0, &step, &max_iter};
            CHECK(vkcuda_present_ring_cuda_begin(ring, stream, &w));
            CHECK(vkcuda_present_ring_get_surface_object(ring, w.image_index, &surface));
            CHECK_CU(cuLaunchKernel(mandelbrot, (W + 15) / 16, (H + 15) / 16, 1, 16, 16, 1, 0, stream, args, NULL));
            CHECK(vkcuda_present_ring_cuda_end(ring, w.frame, stream));
        } else { /* the host draws it; a Vulkan copy stands in for the kernel */
            VkSemaphoreWaitInfo wait = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
            vkcuda_present_submit up = {0};
            uint32_t *px;
            CHECK(vkcuda_present_ring_begin_write(ring, &w));
            CHECK(vkcuda_present_ring_get_vk_timeline(ring, &up.wait_semaphores[0]));
            wait.semaphoreCount = 1; /* the slot's staging buffer: its last copy has run */
            wait.pSemaphores = up.wait_semaphores;
            wait.pValues = &w.free_value;
            CHECK_VK(vkWaitSemaphores(win.device, &wait, UINT64_MAX));
            px = staging[w.image_index].mapped;
            for (y = 0; y < H; y++)
                for (x = 0; x < W; x++) px[y * W + x] = fractal_pixel(x0, y0, step, MAX_ITER, x, y);
            example_record(cmd[IN_FLIGHT + w.image_index]);
            CHECK(vkcuda_present_ring_cmd_upload(ring, cmd[IN_FLIGHT + w.image_index], win.family, &w,
                                                 staging[w.image_index].buffer, 0));
            up.wait_count = up.signal_count = 1; /* waits for order_value, signals signal_value */
            up.wait_values[0] = w.order_value;
            up.wait_stages[0] = VK_PIPELINE_STAGE_TRANSFER_BIT;
            up.signal_semaphores[0] = up.wait_semaphores[0];
            up.signal_values[0] = w.signal_value;
            window_submit(&win, cmd[IN_FLIGHT + w.image_index], &up, VK_NULL_HANDLE);
        }
        /* The engine's frame: a resized window first gets its new swapchain. */
        window_events(&win);
        CHECK_VK(vkWaitForFences(win.device, 1, &fence[f], VK_TRUE, UINT64_MAX));
        if (win.swapchain != VK_NULL_HANDLE)
            r = vkAcquireNextImageKHR(win.device, win.swapchain, UINT64_MAX, acquired[f], VK_NULL_HANDLE, &index);
        if (r != VK_SUCCESS && r != VK_SUBOPTIMAL_KHR && r != VK_ERROR_OUT_OF_DATE_KHR) CHECK_VK(r);
        t.device = win.device;
        t.format = win.format;
        t.filter = VK_FILTER_NEAREST; /* exact pixels for --check; VK_FILTER_LINEAR is smoother */
        if (r == VK_SUCCESS || r == VK_SUBOPTIMAL_KHR) { /* else: extent 0, nothing recorded */
            t.image = win.images[index];
            t.width = win.extent.width;
            t.height = win.extent.height;
            t.acquired = acquired[f];
            t.rendered = win.rendered[index];
        }
        CHECK_VK(vkResetFences(win.device, 1, &fence[f]));
        example_record(cmd[f]);
        CHECK(vkcuda_present_ring_cmd_present(ring, cmd[f], win.family, &t, &s));
        window_submit(&win, cmd[f], &s, fence[f]);
        if (s.recorded) {
            VkPresentInfoKHR pi = {.sType = VK_STRUCTURE_TYPE_PRESENT_INFO_KHR};
            pi.waitSemaphoreCount = 1;
            pi.pWaitSemaphores = &win.rendered[index];
            pi.swapchainCount = 1;
            pi.pSwapchains = &win.swapchain;
            pi.pImageIndices = &index;
            r = vkQueuePresentKHR(win.queue, &pi);
            if (r != VK_SUCCESS && r != VK_SUBOPTIMAL_KHR && r != VK_ERROR_OUT_OF_DATE_KHR) CHECK_VK(r);
            if (check && r == VK_SUCCESS) {
                check_window(&win, k);
                checked++;
                checked_2x += win.extent.width == 2 * W && win.extent.height == 2 * H;
            }
        }
        if (r == VK_ERROR_OUT_OF_DATE_KHR || r == VK_SUBOPTIMAL_KHR) window_swapchain(&win);
        if (check && k == frames / 2) { /* as a user dragging the window to twice its size */
            XResizeWindow(win.display, win.xid, 2 * W, 2 * H);
            XSync(win.display, False);
        }
    }
    CHECK_VK(vkDeviceWaitIdle(win.device));
    if (stream != NULL) CHECK_CU(cuStreamSynchronize(stream));
    printf("present_window: %llu frames presented%s; checked pixel by pixel in the window: %llu at "
           "%ux%u, %llu at %ux%u after the resize\n", (unsigned long long)frames,
           vulkan_only ? " (Vulkan-only: drawn by the host)" : "", (unsigned long long)(checked - checked_2x),
           W, H, (unsigned long long)checked_2x, 2 * W, 2 * H);
    /* The ring before its context, the context before the engine's device. */
    vkcuda_present_ring_destroy(ring);
    vkcuda_context_destroy(ctx);
    if (!vulkan_only) CHECK_CU(cuModuleUnload(module)), CHECK_CU(cuStreamDestroy(stream));
    for (i = 0; vulkan_only && i < (int)RING; i++) vk_owned_buffer_destroy(&vd, &staging[i]);
    for (i = 0; i < (int)IN_FLIGHT; i++) {
        vkDestroyFence(win.device, fence[i], NULL);
        vkDestroySemaphore(win.device, acquired[i], NULL);
    }
    vkDestroyCommandPool(win.device, pool, NULL);
    window_close(&win);
    /* --check passes only if frames were seen in the window both before and after the resize. */
    return !check || (checked_2x > 0 && checked > checked_2x) ? 0 : 1;
}
