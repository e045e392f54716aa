/* c_examples/five_minutes.c: the whole API in one frame, and it runs. example.h stands in for
 * your engine (its instance, device, queue, a command buffer, a CUDA stream) and gives CHECK(),
 * which prints vkcuda_last_error_message(): what failed, with the VkResult/CUresult. */
#include "example.h"

#include <stdio.h>

int main(void) {
    example ex;
    example_open(&ex, "five_minutes", 0);
    VkInstance instance = ex.vh.instance; /* your engine's handles */
    VkPhysicalDevice phys = ex.vh.physical_device;
    VkDevice device = ex.vh.device;
    PFN_vkGetInstanceProcAddr gipa = vkGetInstanceProcAddr; /* the Vulkan loader's */
    VkCommandBuffer cmd = ex.cmd;
    CUstream stream = ex.stream;

    /* 1. Before creating your VkDevice: what to enable, and is this GPU usable? */
    const char *extensions[8];
    uint32_t n = 8;
    CHECK(vkcuda_device_extensions_enumerate(&n, extensions)); /* VK_KHR_external_{memory,semaphore}_fd */
    vkcuda_physical_device_support sup;
    CHECK(vkcuda_physical_device_query(instance, phys, gipa, &sup));
    printf("%s: enable %s and %u more, and timelineSemaphore; supported: %s\n", sup.device_name, extensions[0],
           n - 1, sup.supported ? "yes" : "no"); /* supported: both extensions, timelines, a CUDA twin */

    /* 2. Pair your device with CUDA (the primary context of the CUDA device with the same UUID). */
    vkcuda_context_create_info ci = {
        .instance = instance, .physical_device = phys, .device = device, .get_instance_proc_addr = gipa};
    vkcuda_context *ctx;
    CHECK(vkcuda_context_create(&ci, &ctx));

    /* 3. One allocation, two views. */
    vkcuda_buffer_create_info bi = {.size = 64 << 20}; /* Vulkan allocates; or .allocator = VKCUDA_ALLOCATOR_CUDA */
    vkcuda_buffer *buf;
    CHECK(vkcuda_buffer_create(ctx, &bi, &buf));
    vkcuda_buffer_info info;
    CHECK(vkcuda_buffer_get_info(buf, &info)); /* info.buffer (VkBuffer), info.memory, info.cuda_pointer */

    /* 4. One timeline for the frame: the library hands out the values. */
    vkcuda_semaphore_create_info si = {0}; /* timeline, starts at 0 */
    vkcuda_semaphore *tl;
    CHECK(vkcuda_semaphore_create(ctx, &si, &tl));
    VkSemaphore vk_tl;
    CHECK(vkcuda_semaphore_get_vk_semaphore(tl, &vk_tl));

    vkcuda_timeline_stage render, cuda_pass;
    CHECK(vkcuda_semaphore_next_stage(tl, &render)); /* your submit: wait render.wait_value, signal .signal_value */
    example_record(cmd);
    vkCmdFillBuffer(cmd, info.buffer, 0, VK_WHOLE_SIZE, 20); /* "render": every word is 20 */
    vkcuda_handoff_info h = {.queue_family_index = ex.vh.queue_family_index,
                             .stage_mask = VK_PIPELINE_STAGE_TRANSFER_BIT, .access_mask = VK_ACCESS_TRANSFER_WRITE_BIT};
    CHECK(vkcuda_buffer_cmd_release_to_cuda(buf, cmd, &h)); /* the queue-family release barrier, one call */
    example_submit_stage(&ex, cmd, vk_tl, &render);       /* vkQueueSubmit with VkTimelineSemaphoreSubmitInfo */
    CHECK(vkcuda_semaphore_next_stage(tl, &cuda_pass));
    CHECK(vkcuda_semaphore_cuda_wait(tl, cuda_pass.wait_value, stream)); /* no CPU wait */
    CHECK_CU(cuda_transform(&ex.kernels, stream, info.cuda_pointer, bi.size, 2, 2)); /* your kernel: 2x+2 */
    CHECK(vkcuda_semaphore_cuda_signal(tl, cuda_pass.signal_value, stream));
    /* The next Vulkan stage waits cuda_pass.signal_value and records vkcuda_buffer_cmd_acquire_from_cuda. */
    CHECK(vkcuda_semaphore_host_wait(tl, cuda_pass.signal_value, 1000000000)); /* only to bound frames in flight */

    uint32_t word = 0;
    CHECK_CU(cuMemcpyDtoH(&word, info.cuda_pointer + bi.size - 4, 4)); /* the last word, via CUDA */
    printf("Vulkan wrote 20, then CUDA computed 2 * 20 + 2 on the same memory: %u\n", word);

    /* 5. Images: a VkImage with dedicated exportable memory, a CUDA mipmapped array view. */
    vkcuda_image_create_info ii = {.format = VK_FORMAT_R8G8B8A8_UNORM, .extent = {1920, 1080, 1}};
    vkcuda_image *img;
    CHECK(vkcuda_image_create(ctx, &ii, &img));
    uint64_t surf;
    CHECK(vkcuda_image_get_surface_object(img, 0, &surf)); /* CUsurfObject of level 0, owned by img */
    /* Handoff as for buffers: vkcuda_image_cmd_release_to_cuda(img, cmd, &h, old_layout) -> GENERAL, EXTERNAL */

    /* 6. Once the GPU is done with them, tear down in any order; each handle releases CUDA's
     *    view, then Vulkan's. */
    CHECK_VK(vkDeviceWaitIdle(device));
    vkcuda_image_destroy(img);
    vkcuda_semaphore_destroy(tl);
    vkcuda_buffer_destroy(buf);
    vkcuda_context_destroy(ctx);
    example_close(&ex);
    printf("five_minutes: %s\n", word == 42 ? "PASS" : "FAIL");
    return word == 42 ? 0 : 1;
}
