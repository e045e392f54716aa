/* The GPU test programs' rig; see rig.h. The device is example_open()'s (example.c). */
#include "rig.h"

#include <inttypes.h>

void rig_open(example *e, const char *name, int vulkan_only, vkcuda_cuda_info *ci) {
    vkcuda_cuda_info own;
    int driver_version = 0;
    if (ci == NULL) ci = &own;
    /* example_open skips (77) without a usable GPU, or exits 1 with "<name>: FAIL at ...". */
    example_open(e, name, vulkan_only ? VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT : 0);
    printf("Vulkan device: %s (API %u.%u.%u), queue family %u\n", e->vk.properties.deviceName,
           VK_API_VERSION_MAJOR(e->vk.properties.apiVersion), VK_API_VERSION_MINOR(e->vk.properties.apiVersion),
           VK_API_VERSION_PATCH(e->vk.properties.apiVersion), e->vh.queue_family_index);
    memset(ci, 0, sizeof *ci);
    if (!e->cuda) return;
    if (vkcuda_context_get_cuda_info(e->ctx, ci) == VKCUDA_SUCCESS &&
        vkcuda_cuda_driver_get_version(&driver_version) == VKCUDA_SUCCESS)
        printf("CUDA device %d (%s context), driver API %d.%d; kernels: %s\n", ci->device_ordinal,
               ci->primary ? "primary" : "borrowed", driver_version / 1000, driver_version % 1000 / 10,
               e->kernels.source);
}

void rig_close(example *e) {
    if (e->ctx != NULL) example_close(e);
}

void rig_close_module(example *e, CUmodule module) {
    if (module != NULL) {
        cuStreamSynchronize(e->stream);
        cuModuleUnload(module);
    }
    rig_close(e);
}

VkResult rig_begin(VkCommandBuffer cmd, VkCommandBufferUsageFlags flags) {
    VkCommandBufferBeginInfo bi;
    VkResult r = vkResetCommandBuffer(cmd, 0);
    if (r != VK_SUCCESS) return r;
    memset(&bi, 0, sizeof bi);
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    bi.flags = flags;
    return vkBeginCommandBuffer(cmd, &bi);
}

VkResult rig_command_buffers(VkDevice device, VkCommandPool pool, uint32_t n, VkCommandBuffer *cmds) {
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = n};
    return vkAllocateCommandBuffers(device, &cai, cmds);
}

VkResult rig_fence(VkDevice device, VkFence *fence) {
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    return vkCreateFence(device, &fci, NULL, fence);
}

VkResult rig_timeline(VkDevice device, VkSemaphore *sem) {
    VkSemaphoreTypeCreateInfo ti = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                    .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
    VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &ti};
    return vkCreateSemaphore(device, &sci, NULL, sem);
}

VkResult rig_submit(VkQueue queue, VkCommandBuffer cmd, VkSemaphore timeline, uint64_t wait, uint64_t signal,
                    VkPipelineStageFlags wait_stage, VkFence fence) {
    VkTimelineSemaphoreSubmitInfo ts;
    VkSubmitInfo si;
    memset(&si, 0, sizeof si);
    si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    if (timeline != VK_NULL_HANDLE) {
        memset(&ts, 0, sizeof ts);
        ts.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO;
        ts.waitSemaphoreValueCount = 1;
        ts.pWaitSemaphoreValues = &wait;
        ts.signalSemaphoreValueCount = 1;
        ts.pSignalSemaphoreValues = &signal;
        si.pNext = &ts;
        si.waitSemaphoreCount = 1;
        si.pWaitSemaphores = &timeline;
        si.pWaitDstStageMask = &wait_stage;
        si.signalSemaphoreCount = 1;
        si.pSignalSemaphores = &timeline;
    }
    return vkQueueSubmit(queue, 1, &si, fence);
}

VkResult rig_submit_and_wait(example *e, VkCommandBuffer cmd) {
    VkResult r = vkEndCommandBuffer(cmd);
    if (r == VK_SUCCESS) r = rig_submit(e->vh.queue, cmd, VK_NULL_HANDLE, 0, 0, 0, e->fence);
    if (r == VK_SUCCESS) r = vkWaitForFences(e->vh.device, 1, &e->fence, VK_TRUE, RIG_FENCE_TIMEOUT_NS);
    if (r == VK_SUCCESS) r = vkResetFences(e->vh.device, 1, &e->fence);
    return r;
}

CUresult rig_load_ptx(const char *ptx, const char *what, CUmodule *module) {
    static char info_log[8192], error_log[8192];
    CUjit_option options[4] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                               CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[4];
    CUresult r;
    info_log[0] = error_log[0] = '\0';
    values[0] = info_log;
    values[1] = (void *)(uintptr_t)sizeof info_log;
    values[2] = error_log;
    values[3] = (void *)(uintptr_t)sizeof error_log;
    r = cuModuleLoadDataEx(module, ptx, 4, options, values);
    if (r != CUDA_SUCCESS) {
        printf("  cuModuleLoadDataEx(%s) failed: %s\n  JIT error log: %s\n", what, cuda_result_text(r),
               error_log);
        *module = NULL;
    }
    return r;
}

int rig_skip(const char *name, const char *why) {
    printf("SKIPPED: %s: %s\n", name, why);
    if (require_gpu()) {
        printf("%s: FAIL: VKCUDA_REQUIRE_GPU=1 and there is no usable GPU\n", name);
        return 1;
    }
    return 77;
}

void rig_record(rig_counts *c, const char *name, int ok, double seconds) {
    if (ok)
        c->passed++;
    else
        c->failed++;
    printf("%s %s (%.3f s)\n", ok ? "ok  " : "FAIL", name, seconds);
    fflush(stdout);
}

int rig_nothing_alive(void) {
    vkcuda_live_objects l, zero;
    memset(&zero, 0, sizeof zero);
    if (vkcuda_live_objects_get(&l) == VKCUDA_SUCCESS && memcmp(&l, &zero, sizeof l) == 0) return 1;
    printf("  live objects after destroying everything: contexts %" PRId64 ", VkBuffers %" PRId64
           ", VkDeviceMemory %" PRId64 ", VkImages %" PRId64 ", VkSemaphores %" PRId64
           ", CUDA allocations %" PRId64 ", CUDA external memories %" PRId64
           ", CUDA external semaphores %" PRId64 "\n",
           l.contexts, l.vk_buffers, l.vk_memories, l.vk_images, l.vk_semaphores, l.cuda_allocations,
           l.cuda_external_memories, l.cuda_external_semaphores);
    return 0;
}
