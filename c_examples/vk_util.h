/*
 * Small Vulkan helpers the examples share: result names, memory types, buffers with
 * their own memory, a memory barrier. The Vulkan functions themselves are the loader's
 * (<vulkan/vulkan.h>, linked as Vulkan::Vulkan), as in any Vulkan program.
 */
#ifndef VKCUDA_EXAMPLES_VK_UTIL_H
#define VKCUDA_EXAMPLES_VK_UTIL_H

#include <vulkan/vulkan.h>

#include <stddef.h>
#include <stdint.h>

/* A device and what the helpers need to know about it. */
typedef struct vk_device {
    VkPhysicalDevice physical_device;
    VkDevice device;
    VkPhysicalDeviceProperties properties;
    VkPhysicalDeviceMemoryProperties memory;
} vk_device;

/* Fills `d` for `device`, made from `physical_device`. */
void vk_device_init(vk_device *d, VkPhysicalDevice physical_device, VkDevice device);

/* "VK_ERROR_OUT_OF_DEVICE_MEMORY" for `r` (the common codes; others as a number). */
const char *vk_result_name(VkResult r);

/* A memory type index in `type_bits` with all of `required` and, when one exists,
 * all of `preferred` as well; UINT32_MAX when none has `required`. */
uint32_t vk_find_memory_type(const vk_device *d, uint32_t type_bits,
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
VkResult vk_owned_buffer_create(const vk_device *d, VkDeviceSize size, VkBufferUsageFlags usage,
                                VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred,
                                vk_owned_buffer *out);
void vk_owned_buffer_destroy(const vk_device *d, vk_owned_buffer *b);
/* Makes device writes visible to the host (no-op on coherent memory). */
VkResult vk_owned_buffer_invalidate(const vk_device *d, const vk_owned_buffer *b);
/* Makes host writes visible to the device (no-op on coherent memory). */
VkResult vk_owned_buffer_flush(const vk_device *d, const vk_owned_buffer *b);

/* Full barriers for transfers and host access, recorded into `cmd`. */
void vk_cmd_barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stage, VkAccessFlags src_access,
                    VkPipelineStageFlags dst_stage, VkAccessFlags dst_access);

#endif /* VKCUDA_EXAMPLES_VK_UTIL_H */
