/*
 * Vulkan entry points for the examples, loaded through the vkGetInstanceProcAddr a
 * vkcuda context hands out (vkcuda_vulkan_handles.get_instance_proc_addr), then
 * vkGetDeviceProcAddr for device functions: the examples never link libvulkan.
 * Also small helpers every example needs: memory types, buffers with their own
 * memory, one-shot command buffers, and result names.
 */
#ifndef VKCUDA_EXAMPLES_VK_LOADER_H
#define VKCUDA_EXAMPLES_VK_LOADER_H

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan_core.h>

#include <stddef.h>
#include <stdint.h>

/* X(name): instance-level functions, from vkGetInstanceProcAddr(instance, ...). */
#define VK_INSTANCE_FUNCTIONS(X)                                                       \
    X(vkGetDeviceProcAddr)                                                             \
    X(vkGetPhysicalDeviceProperties)                                                   \
    X(vkGetPhysicalDeviceMemoryProperties)

/* X(name): device-level functions, from vkGetDeviceProcAddr(device, ...). */
#define VK_DEVICE_FUNCTIONS(X)                                                         \
    X(vkDeviceWaitIdle)                                                                \
    X(vkQueueWaitIdle)                                                                 \
    X(vkQueueSubmit)                                                                   \
    X(vkCreateCommandPool)                                                             \
    X(vkDestroyCommandPool)                                                            \
    X(vkAllocateCommandBuffers)                                                        \
    X(vkFreeCommandBuffers)                                                            \
    X(vkResetCommandBuffer)                                                            \
    X(vkBeginCommandBuffer)                                                            \
    X(vkEndCommandBuffer)                                                              \
    X(vkCmdCopyBuffer)                                                                 \
    X(vkCmdCopyImageToBuffer)                                                          \
    X(vkCmdFillBuffer)                                                                 \
    X(vkCmdPipelineBarrier)                                                            \
    X(vkCreateFence)                                                                   \
    X(vkDestroyFence)                                                                  \
    X(vkWaitForFences)                                                                 \
    X(vkResetFences)                                                                   \
    X(vkCreateBuffer)                                                                  \
    X(vkDestroyBuffer)                                                                 \
    X(vkGetBufferMemoryRequirements2)                                                  \
    X(vkAllocateMemory)                                                                \
    X(vkFreeMemory)                                                                    \
    X(vkBindBufferMemory)                                                              \
    X(vkMapMemory)                                                                     \
    X(vkUnmapMemory)                                                                   \
    X(vkInvalidateMappedMemoryRanges)                                                  \
    X(vkFlushMappedMemoryRanges)                                                       \
    X(vkCreateSemaphore)                                                               \
    X(vkDestroySemaphore)                                                              \
    X(vkSignalSemaphore)                                                               \
    X(vkWaitSemaphores)                                                                \
    X(vkGetSemaphoreCounterValue)

#define VK_LOADER_MEMBER(name) PFN_##name name;
typedef struct vk_functions {
    VkInstance instance;
    VkPhysicalDevice physical_device;
    VkDevice device;
    VkPhysicalDeviceProperties properties;
    VkPhysicalDeviceMemoryProperties memory;
    VK_INSTANCE_FUNCTIONS(VK_LOADER_MEMBER)
    VK_DEVICE_FUNCTIONS(VK_LOADER_MEMBER)
} vk_functions;
#undef VK_LOADER_MEMBER

/* Loads every function above. The core 1.2 timeline functions fall back to their
 * KHR names. Returns 0, or -1 with the missing name in `why`. */
int vk_load(vk_functions *vk, PFN_vkGetInstanceProcAddr gipa, VkInstance instance,
            VkPhysicalDevice physical_device, VkDevice device, char *why, size_t why_size);

/* "VK_ERROR_OUT_OF_DEVICE_MEMORY" for `r` (the common codes; others as a number). */
const char *vk_result_name(VkResult r);

/* A memory type index in `type_bits` with all of `required` and, when one exists,
 * all of `preferred` as well; UINT32_MAX when none has `required`. */
uint32_t vk_find_memory_type(const vk_functions *vk, uint32_t type_bits,
                             VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred);

/* A buffer with its own (non-exported) memory, optionally mapped. */
typedef struct vk_owned_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    VkDeviceSize size;
    VkMemoryPropertyFlags memory_flags;
    void *mapped; /* NULL unless host-visible and mapped */
} vk_owned_buffer;

/* Creates a buffer of `size` bytes with `usage` on memory with `required` (and, if
 * possible, `preferred`) properties; maps it when host-visible. */
VkResult vk_owned_buffer_create(const vk_functions *vk, VkDeviceSize size, VkBufferUsageFlags usage,
                                VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred,
                                vk_owned_buffer *out);
void vk_owned_buffer_destroy(const vk_functions *vk, vk_owned_buffer *b);
/* Makes device writes visible to the host (no-op on coherent memory). */
VkResult vk_owned_buffer_invalidate(const vk_functions *vk, const vk_owned_buffer *b);
/* Makes host writes visible to the device (no-op on coherent memory). */
VkResult vk_owned_buffer_flush(const vk_functions *vk, const vk_owned_buffer *b);

/* Full barriers for transfers and host access, recorded into `cmd`. */
void vk_cmd_barrier(const vk_functions *vk, VkCommandBuffer cmd, VkPipelineStageFlags src_stage,
                    VkAccessFlags src_access, VkPipelineStageFlags dst_stage,
                    VkAccessFlags dst_access);

#endif /* VKCUDA_EXAMPLES_VK_LOADER_H */
