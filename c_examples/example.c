/* The setup and result checks every example shares; see example.h. */
#include "example.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FENCE_TIMEOUT_NS (30ull * 1000 * 1000 * 1000)

static const char *g_name = "example";

void example_check(vkcuda_result r, const char *call, const char *file, int line) {
    if (r == VKCUDA_SUCCESS) return;
    printf("%s: FAIL at %s:%d: %s -> %s: %s\n", g_name, file, line, call, vkcuda_result_to_string(r),
           vkcuda_last_error_message());
    exit(1);
}

void example_check_vk(VkResult r, const char *call, const char *file, int line) {
    if (r == VK_SUCCESS) return;
    printf("%s: FAIL at %s:%d: %s -> %s\n", g_name, file, line, call, vk_result_name(r));
    exit(1);
}

void example_check_cu(CUresult r, const char *call, const char *file, int line) {
    if (r == CUDA_SUCCESS) return;
    printf("%s: FAIL at %s:%d: %s -> %s\n", g_name, file, line, call, cuda_result_text(r));
    exit(1);
}

void example_set_name(const char *name) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    g_name = name;
}

/* No usable GPU: skipped (77), unless VKCUDA_REQUIRE_GPU=1 asks for one. */
void example_skip(const char *why, const char *detail) {
    const char *require = getenv("VKCUDA_REQUIRE_GPU");
    printf("SKIPPED: %s: %s: %s\n", g_name, why, detail);
    if (require != NULL && strcmp(require, "1") == 0) {
        printf("%s: FAIL: VKCUDA_REQUIRE_GPU=1 and there is no usable GPU\n", g_name);
        exit(1);
    }
    exit(77);
}

void example_open(example *ex, const char *name, uint32_t flags) {
    vkcuda_standalone_create_info si;
    VkCommandPoolCreateInfo pci;
    VkFenceCreateInfo fci;
    vkcuda_result r;

    setvbuf(stdout, NULL, _IOLBF, 0);
    g_name = name;
    memset(ex, 0, sizeof *ex);
    memset(&si, 0, sizeof si);
    si.flags = flags;
    r = vkcuda_context_create_standalone(&si, &ex->ctx);
    if (r == VKCUDA_ERROR_CUDA_UNAVAILABLE || r == VKCUDA_ERROR_VULKAN_UNAVAILABLE ||
        r == VKCUDA_ERROR_DEVICE_MISMATCH || r == VKCUDA_ERROR_EXTENSION_NOT_PRESENT)
        example_skip(vkcuda_result_to_string(r), vkcuda_last_error_message());
    CHECK(r);
    CHECK(vkcuda_context_get_vulkan_handles(ex->ctx, &ex->vh));
    vk_device_init(&ex->vk, ex->vh.physical_device, ex->vh.device);
    ex->cuda = !(flags & VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT);
    if (ex->cuda) {
        vkcuda_cuda_info ci;
        CHECK(vkcuda_context_get_cuda_info(ex->ctx, &ci));
        /* The context's CUDA context (the device's primary one) becomes current on this
         * thread, so that the stream and the kernels live in it. */
        CHECK_CU(cuCtxPushCurrent(ci.cuda_context));
        CHECK_CU(cuStreamCreate(&ex->stream, CU_STREAM_NON_BLOCKING));
        CHECK_CU(cuda_kernels_load(&ex->kernels));
        printf("%s: Vulkan device %s, paired with CUDA device %d\n", name, ex->vk.properties.deviceName,
               (int)ci.device_ordinal);
    } else {
        printf("%s: Vulkan device %s (Vulkan-only context)\n", name, ex->vk.properties.deviceName);
    }
    memset(&pci, 0, sizeof pci);
    pci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = ex->vh.queue_family_index;
    CHECK_VK(vkCreateCommandPool(ex->vh.device, &pci, NULL, &ex->pool));
    ex->cmd = example_command_buffer(ex);
    memset(&fci, 0, sizeof fci);
    fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    CHECK_VK(vkCreateFence(ex->vh.device, &fci, NULL, &ex->fence));
}

void example_close(example *ex) {
    if (ex->stream != NULL) CHECK_CU(cuStreamSynchronize(ex->stream));
    CHECK_VK(vkDeviceWaitIdle(ex->vh.device));
    vkDestroyFence(ex->vh.device, ex->fence, NULL);
    vkDestroyCommandPool(ex->vh.device, ex->pool, NULL);
    if (ex->cuda) {
        CUcontext popped;
        cuda_kernels_unload(&ex->kernels);
        cuStreamDestroy(ex->stream);
        cuCtxPopCurrent(&popped);
    }
    vkcuda_context_destroy(ex->ctx); /* the library's device and instance */
    memset(ex, 0, sizeof *ex);
}

VkCommandBuffer example_command_buffer(example *ex) {
    VkCommandBufferAllocateInfo cai;
    VkCommandBuffer cmd;
    memset(&cai, 0, sizeof cai);
    cai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    cai.commandPool = ex->pool;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    CHECK_VK(vkAllocateCommandBuffers(ex->vh.device, &cai, &cmd));
    return cmd;
}

void example_record(VkCommandBuffer cmd) {
    VkCommandBufferBeginInfo bi;
    CHECK_VK(vkResetCommandBuffer(cmd, 0));
    memset(&bi, 0, sizeof bi);
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    CHECK_VK(vkBeginCommandBuffer(cmd, &bi));
}

void example_run(example *ex, VkCommandBuffer cmd) {
    VkSubmitInfo si;
    CHECK_VK(vkEndCommandBuffer(cmd));
    memset(&si, 0, sizeof si);
    si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    CHECK_VK(vkQueueSubmit(ex->vh.queue, 1, &si, ex->fence));
    CHECK_VK(vkWaitForFences(ex->vh.device, 1, &ex->fence, VK_TRUE, FENCE_TIMEOUT_NS));
    CHECK_VK(vkResetFences(ex->vh.device, 1, &ex->fence));
}

void example_submit_stage(example *ex, VkCommandBuffer cmd, VkSemaphore timeline,
                          const vkcuda_timeline_stage *stage) {
    VkTimelineSemaphoreSubmitInfo ts;
    VkSubmitInfo si;
    VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    CHECK_VK(vkEndCommandBuffer(cmd));
    memset(&ts, 0, sizeof ts);
    ts.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO;
    ts.waitSemaphoreValueCount = 1;
    ts.pWaitSemaphoreValues = &stage->wait_value;
    ts.signalSemaphoreValueCount = 1;
    ts.pSignalSemaphoreValues = &stage->signal_value;
    memset(&si, 0, sizeof si);
    si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    si.pNext = &ts;
    si.waitSemaphoreCount = 1;
    si.pWaitSemaphores = &timeline;
    si.pWaitDstStageMask = &wait_stage;
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    si.signalSemaphoreCount = 1;
    si.pSignalSemaphores = &timeline;
    CHECK_VK(vkQueueSubmit(ex->vh.queue, 1, &si, VK_NULL_HANDLE));
}

vkcuda_handoff_info example_handoff(const example *ex, VkPipelineStageFlags stage, VkAccessFlags access) {
    vkcuda_handoff_info h;
    memset(&h, 0, sizeof h);
    h.queue_family_index = ex->vh.queue_family_index;
    h.stage_mask = stage;
    h.access_mask = access;
    return h;
}

vk_owned_buffer example_host_buffer(example *ex, VkDeviceSize size) {
    vk_owned_buffer b;
    CHECK_VK(vk_owned_buffer_create(&ex->vk, size,
                                    VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                    VK_MEMORY_PROPERTY_HOST_CACHED_BIT, &b));
    return b;
}
