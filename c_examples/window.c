/* The engine's window, instance, device and swapchain of the windowed examples; see window.h. */
#include "window.h"

#include "example.h"

#include <string.h>

void window_open(window *w, uint32_t width, uint32_t height) {
    const char *inst_ext[] = {VK_KHR_SURFACE_EXTENSION_NAME, VK_KHR_XLIB_SURFACE_EXTENSION_NAME};
    const char *lib_ext[4], *dev_ext[5] = {VK_KHR_SWAPCHAIN_EXTENSION_NAME};
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    VkXlibSurfaceCreateInfoKHR xsi = {.sType = VK_STRUCTURE_TYPE_XLIB_SURFACE_CREATE_INFO_KHR};
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    VkExtensionProperties props[512];
    uint32_t n = 1, m = 512, lib_n = 4, i, e;
    VkBool32 presents = VK_FALSE;
    float priority = 1.0f;

    memset(w, 0, sizeof *w);
    if ((w->display = XOpenDisplay(NULL)) == NULL)
        example_skip("no X display", "set DISPLAY, or run under Xvfb");
    w->xid = XCreateSimpleWindow(w->display, DefaultRootWindow(w->display), 0, 0, width, height, 0, 0, 0);
    XSelectInput(w->display, w->xid, StructureNotifyMask); /* ConfigureNotify: resizes */
    XMapWindow(w->display, w->xid);
    XSync(w->display, False);
    app.apiVersion = VK_API_VERSION_1_2; /* timeline semaphores are core in 1.2 */
    ici.pApplicationInfo = &app;
    ici.enabledExtensionCount = 2;
    ici.ppEnabledExtensionNames = inst_ext;
    CHECK_VK(vkCreateInstance(&ici, NULL, &w->instance));
    xsi.dpy = w->display;
    xsi.window = w->xid;
    CHECK_VK(vkCreateXlibSurfaceKHR(w->instance, &xsi, NULL, &w->surface));
    n = 1; /* the first device; its queue family 0 renders and presents */
    e = vkEnumeratePhysicalDevices(w->instance, &n, &w->physical_device);
    if (e != VK_SUCCESS && e != VK_INCOMPLETE) CHECK_VK((VkResult)e);
    CHECK_VK(vkGetPhysicalDeviceSurfaceSupportKHR(w->physical_device, 0, w->surface, &presents));
    if (!presents) example_skip("no presentation", "queue family 0 cannot present to the window");
    /* The library's extensions that the device has, and the swapchain's. */
    CHECK(vkcuda_device_extensions_enumerate(&lib_n, lib_ext));
    CHECK_VK(vkEnumerateDeviceExtensionProperties(w->physical_device, NULL, &m, props));
    for (n = 1, i = 0; i < lib_n; i++)
        for (e = 0; e < m; e++)
            if (strcmp(props[e].extensionName, lib_ext[i]) == 0) dev_ext[n++] = lib_ext[i];
    f12.timelineSemaphore = VK_TRUE;
    qci.queueCount = 1;
    qci.pQueuePriorities = &priority;
    dci.pNext = &f12;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    dci.enabledExtensionCount = n;
    dci.ppEnabledExtensionNames = dev_ext;
    CHECK_VK(vkCreateDevice(w->physical_device, &dci, NULL, &w->device));
    vkGetDeviceQueue(w->device, w->family, 0, &w->queue);
    w->format = VK_FORMAT_B8G8R8A8_UNORM; /* UNORM: the bytes as drawn, no sRGB encoding */
    window_swapchain(w);
}

void window_swapchain(window *w) {
    VkSurfaceCapabilitiesKHR caps;
    VkSwapchainCreateInfoKHR sci = {.sType = VK_STRUCTURE_TYPE_SWAPCHAIN_CREATE_INFO_KHR};
    VkSemaphoreCreateInfo semi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    VkSwapchainKHR old = w->swapchain;
    uint32_t i;
    CHECK_VK(vkDeviceWaitIdle(w->device));
    for (i = 0; i < w->image_count; i++) vkDestroySemaphore(w->device, w->rendered[i], NULL);
    CHECK_VK(vkGetPhysicalDeviceSurfaceCapabilitiesKHR(w->physical_device, w->surface, &caps));
    w->extent = caps.currentExtent;
    w->swapchain = VK_NULL_HANDLE;
    w->image_count = 0;
    if (w->extent.width != 0 && w->extent.height != 0) { /* else minimised: no swapchain */
        sci.surface = w->surface;
        sci.minImageCount = caps.minImageCount + 1;
        sci.imageFormat = w->format;
        sci.imageColorSpace = VK_COLOR_SPACE_SRGB_NONLINEAR_KHR;
        sci.imageExtent = w->extent;
        sci.imageArrayLayers = 1;
        sci.imageUsage = VK_IMAGE_USAGE_TRANSFER_DST_BIT; /* blitted into, not rendered to */
        sci.preTransform = caps.currentTransform;
        sci.compositeAlpha = VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR;
        sci.presentMode = VK_PRESENT_MODE_FIFO_KHR;
        sci.clipped = VK_TRUE;
        sci.oldSwapchain = old;
        CHECK_VK(vkCreateSwapchainKHR(w->device, &sci, NULL, &w->swapchain));
        w->image_count = WINDOW_MAX_IMAGES;
        CHECK_VK(vkGetSwapchainImagesKHR(w->device, w->swapchain, &w->image_count, w->images));
        for (i = 0; i < w->image_count; i++)
            CHECK_VK(vkCreateSemaphore(w->device, &semi, NULL, &w->rendered[i]));
    }
    vkDestroySwapchainKHR(w->device, old, NULL);
}

void window_submit(const window *w, VkCommandBuffer cmd, const vkcuda_present_submit *s, VkFence fence) {
    VkTimelineSemaphoreSubmitInfo ts = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO};
    CHECK_VK(vkEndCommandBuffer(cmd));
    ts.waitSemaphoreValueCount = si.waitSemaphoreCount = s->wait_count;
    ts.pWaitSemaphoreValues = s->wait_values;
    ts.signalSemaphoreValueCount = si.signalSemaphoreCount = s->signal_count;
    ts.pSignalSemaphoreValues = s->signal_values;
    si.pNext = &ts;
    si.pWaitSemaphores = s->wait_semaphores;
    si.pWaitDstStageMask = s->wait_stages;
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    si.pSignalSemaphores = s->signal_semaphores;
    CHECK_VK(vkQueueSubmit(w->queue, 1, &si, fence));
}

void window_events(window *w) {
    XEvent ev;
    while (XPending(w->display)) {
        XNextEvent(w->display, &ev);
        if (ev.type == ConfigureNotify && ((uint32_t)ev.xconfigure.width != w->extent.width ||
                                           (uint32_t)ev.xconfigure.height != w->extent.height))
            window_swapchain(w);
    }
}

void window_close(window *w) {
    uint32_t i;
    for (i = 0; i < w->image_count; i++) vkDestroySemaphore(w->device, w->rendered[i], NULL);
    vkDestroySwapchainKHR(w->device, w->swapchain, NULL);
    vkDestroyDevice(w->device, NULL);
    vkDestroySurfaceKHR(w->instance, w->surface, NULL);
    vkDestroyInstance(w->instance, NULL);
    XDestroyWindow(w->display, w->xid);
    XCloseDisplay(w->display);
    memset(w, 0, sizeof *w);
}
