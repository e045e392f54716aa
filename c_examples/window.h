/*
 * window.h: the engine's part of the windowed examples, standing in for yours: an Xlib
 * window, a VkInstance with VK_KHR_xlib_surface, a VkDevice with the library's
 * extensions (those the device has), VK_KHR_swapchain and timelineSemaphore, and a
 * swapchain whose images the examples blit into (TRANSFER_DST usage, B8G8R8A8_UNORM,
 * FIFO). Every call is checked with example.h's CHECK_VK; without an X display the
 * program is skipped (exit 77).
 *
 * Xlib rather than XCB: libX11 (Debian's libx11-dev) is what Mesa's and NVIDIA's
 * drivers pull in anyway, and XGetImage/XGetPixel read a window back as 0xRRGGBB in
 * two calls (the examples' --check).
 */
#ifndef VKCUDA_EXAMPLES_WINDOW_H
#define VKCUDA_EXAMPLES_WINDOW_H

#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <vulkan/vulkan.h>
#include <vulkan/vulkan_xlib.h> /* after Xlib.h, whatever included vulkan.h before */
#include <vkcuda.h>

#define WINDOW_MAX_IMAGES 8u

typedef struct window {
    Display *display;
    Window xid;
    VkInstance instance;
    VkPhysicalDevice physical_device;
    VkDevice device;
    uint32_t family; /* the queue family that renders and presents (0) */
    VkQueue queue;
    VkSurfaceKHR surface;
    VkSwapchainKHR swapchain; /* VK_NULL_HANDLE while the extent is 0 (minimised) */
    VkFormat format;          /* VK_FORMAT_B8G8R8A8_UNORM */
    VkExtent2D extent;
    uint32_t image_count;
    VkImage images[WINDOW_MAX_IMAGES];
    VkSemaphore rendered[WINDOW_MAX_IMAGES]; /* per image: the present waits on it */
} window;

/* Opens a `width` x `height` window and the engine's instance, device and queue. */
void window_open(window *w, uint32_t width, uint32_t height);
/* (Re)creates the swapchain at the window's current extent (none when it is 0),
 * after waiting for the device; the old one is passed as oldSwapchain. */
void window_swapchain(window *w);
/* Ends `cmd` and submits it with what a vkcuda_present_ring call returned: its waits
 * (the ring's timeline; the acquired image's semaphore) at their stages, its signals
 * (the timeline; the semaphore the present waits on), and the timeline values in a
 * VkTimelineSemaphoreSubmitInfo; `fence` may be VK_NULL_HANDLE. */
void window_submit(const window *w, VkCommandBuffer cmd, const vkcuda_present_submit *s, VkFence fence);
/* Handles the X events waiting: a new size recreates the swapchain. */
void window_events(window *w);
/* Destroys the swapchain, device, instance and window (the device must be idle). */
void window_close(window *w);

#endif /* VKCUDA_EXAMPLES_WINDOW_H */
