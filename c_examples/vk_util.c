/* The examples' Vulkan helpers; see vk_util.h. */
#include "vk_util.h"

#include <stdio.h>
#include <string.h>

void vk_device_init(vk_device *d, VkPhysicalDevice physical_device, VkDevice device) {
    memset(d, 0, sizeof *d);
    d->physical_device = physical_device;
    d->device = device;
    vkGetPhysicalDeviceProperties(physical_device, &d->properties);
    vkGetPhysicalDeviceMemoryProperties(physical_device, &d->memory);
}

const char *vk_result_name(VkResult r) {
    static char other[32];
    switch (r) {
#define VK_RESULT_CASE(x) \
    case x:               \
        return #x;
        VK_RESULT_CASE(VK_SUCCESS)
        VK_RESULT_CASE(VK_NOT_READY)
        VK_RESULT_CASE(VK_TIMEOUT)
        VK_RESULT_CASE(VK_EVENT_SET)
        VK_RESULT_CASE(VK_EVENT_RESET)
        VK_RESULT_CASE(VK_INCOMPLETE)
        VK_RESULT_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
        VK_RESULT_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        VK_RESULT_CASE(VK_ERROR_INITIALIZATION_FAILED)
        VK_RESULT_CASE(VK_ERROR_DEVICE_LOST)
        VK_RESULT_CASE(VK_ERROR_MEMORY_MAP_FAILED)
        VK_RESULT_CASE(VK_ERROR_LAYER_NOT_PRESENT)
        VK_RESULT_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
        VK_RESULT_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
        VK_RESULT_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
        VK_RESULT_CASE(VK_ERROR_TOO_MANY_OBJECTS)
        VK_RESULT_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
        VK_RESULT_CASE(VK_ERROR_FRAGMENTED_POOL)
        VK_RESULT_CASE(VK_ERROR_UNKNOWN)
        VK_RESULT_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
        VK_RESULT_CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE)
        VK_RESULT_CASE(VK_ERROR_FRAGMENTATION)
        VK_RESULT_CASE(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
#undef VK_RESULT_CASE
    default:
        snprintf(other, sizeof other, "VkResult(%d)", (int)r);
        return other;
    }
}

uint32_t vk_find_memory_type(const vk_device *d, uint32_t type_bits,
                             VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) {
    uint32_t i, fallback = UINT32_MAX;
    for (i = 0; i < d->memory.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = d->memory.memoryTypes[i].propertyFlags;
        if (!(type_bits & (1u << i)) || (f & required) != required) continue;
        if ((f & preferred) == preferred) return i;
        if (fallback == UINT32_MAX) fallback = i;
    }
    return fallback;
}

VkResult vk_owned_buffer_create(const vk_device *d, VkDeviceSize size, VkBufferUsageFlags usage,
                                VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred,
                                vk_owned_buffer *out) {
    VkBufferCreateInfo bci;
    VkMemoryRequirements req;
    VkMemoryAllocateInfo mai;
    uint32_t type;
    VkResult r;

    memset(out, 0, sizeof *out);
    memset(&bci, 0, sizeof bci);
    bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bci.size = size;
    bci.usage = usage;
    bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    r = vkCreateBuffer(d->device, &bci, NULL, &out->buffer);
    if (r != VK_SUCCESS) return r;
    vkGetBufferMemoryRequirements(d->device, out->buffer, &req);
    type = vk_find_memory_type(d, req.memoryTypeBits, required, preferred);
    if (type == UINT32_MAX) {
        vkDestroyBuffer(d->device, out->buffer, NULL);
        out->buffer = VK_NULL_HANDLE;
        return VK_ERROR_FEATURE_NOT_PRESENT;
    }
    memset(&mai, 0, sizeof mai);
    mai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = type;
    r = vkAllocateMemory(d->device, &mai, NULL, &out->memory);
    if (r == VK_SUCCESS) r = vkBindBufferMemory(d->device, out->buffer, out->memory, 0);
    out->size = size;
    out->memory_flags = d->memory.memoryTypes[type].propertyFlags;
    if (r == VK_SUCCESS && (out->memory_flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
        r = vkMapMemory(d->device, out->memory, 0, VK_WHOLE_SIZE, 0, &out->mapped);
    if (r != VK_SUCCESS) vk_owned_buffer_destroy(d, out);
    return r;
}

void vk_owned_buffer_destroy(const vk_device *d, vk_owned_buffer *b) {
    if (b->mapped != NULL) vkUnmapMemory(d->device, b->memory);
    if (b->buffer != VK_NULL_HANDLE) vkDestroyBuffer(d->device, b->buffer, NULL);
    if (b->memory != VK_NULL_HANDLE) vkFreeMemory(d->device, b->memory, NULL);
    memset(b, 0, sizeof *b);
}

static VkMappedMemoryRange whole_range(const vk_owned_buffer *b) {
    VkMappedMemoryRange range;
    memset(&range, 0, sizeof range);
    range.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE;
    range.memory = b->memory;
    range.offset = 0;
    range.size = VK_WHOLE_SIZE;
    return range;
}

VkResult vk_owned_buffer_invalidate(const vk_device *d, const vk_owned_buffer *b) {
    VkMappedMemoryRange range = whole_range(b);
    if (b->memory_flags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) return VK_SUCCESS;
    return vkInvalidateMappedMemoryRanges(d->device, 1, &range);
}

VkResult vk_owned_buffer_flush(const vk_device *d, const vk_owned_buffer *b) {
    VkMappedMemoryRange range = whole_range(b);
    if (b->memory_flags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) return VK_SUCCESS;
    return vkFlushMappedMemoryRanges(d->device, 1, &range);
}

void vk_cmd_barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stage, VkAccessFlags src_access,
                    VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
    VkMemoryBarrier mb;
    memset(&mb, 0, sizeof mb);
    mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    mb.srcAccessMask = src_access;
    mb.dstAccessMask = dst_access;
    vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, &mb, 0, NULL, 0, NULL);
}
