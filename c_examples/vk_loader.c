/* Vulkan function loading and helpers for the examples; see vk_loader.h. */
#include "vk_loader.h"

#include <stdio.h>
#include <string.h>

static PFN_vkVoidFunction device_function(const vk_functions *vk, const char *name,
                                          const char *fallback) {
    PFN_vkVoidFunction f = vk->vkGetDeviceProcAddr(vk->device, name);
    if (f == NULL && fallback != NULL) f = vk->vkGetDeviceProcAddr(vk->device, fallback);
    return f;
}

static const char *khr_name(const char *name) {
    if (strcmp(name, "vkWaitSemaphores") == 0) return "vkWaitSemaphoresKHR";
    if (strcmp(name, "vkSignalSemaphore") == 0) return "vkSignalSemaphoreKHR";
    if (strcmp(name, "vkGetSemaphoreCounterValue") == 0) return "vkGetSemaphoreCounterValueKHR";
    if (strcmp(name, "vkGetBufferMemoryRequirements2") == 0)
        return "vkGetBufferMemoryRequirements2KHR";
    return NULL;
}

int vk_load(vk_functions *vk, PFN_vkGetInstanceProcAddr gipa, VkInstance instance,
            VkPhysicalDevice physical_device, VkDevice device, char *why, size_t why_size) {
    memset(vk, 0, sizeof *vk);
    vk->instance = instance;
    vk->physical_device = physical_device;
    vk->device = device;
    if (gipa == NULL) {
        snprintf(why, why_size, "get_instance_proc_addr is NULL");
        return -1;
    }
#define VK_LOAD_INSTANCE(name)                                                         \
    vk->name = (PFN_##name)gipa(instance, #name);                                      \
    if (vk->name == NULL) {                                                            \
        snprintf(why, why_size, "vkGetInstanceProcAddr(%s) returned NULL", #name);     \
        return -1;                                                                     \
    }
    VK_INSTANCE_FUNCTIONS(VK_LOAD_INSTANCE)
#undef VK_LOAD_INSTANCE
#define VK_LOAD_DEVICE(name)                                                           \
    vk->name = (PFN_##name)device_function(vk, #name, khr_name(#name));                \
    if (vk->name == NULL) {                                                            \
        snprintf(why, why_size, "vkGetDeviceProcAddr(%s) returned NULL", #name);       \
        return -1;                                                                     \
    }
    VK_DEVICE_FUNCTIONS(VK_LOAD_DEVICE)
#undef VK_LOAD_DEVICE
    vk->vkGetPhysicalDeviceProperties(physical_device, &vk->properties);
    vk->vkGetPhysicalDeviceMemoryProperties(physical_device, &vk->memory);
    return 0;
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

uint32_t vk_find_memory_type(const vk_functions *vk, uint32_t type_bits,
                             VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) {
    uint32_t i, fallback = UINT32_MAX;
    for (i = 0; i < vk->memory.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = vk->memory.memoryTypes[i].propertyFlags;
        if (!(type_bits & (1u << i)) || (f & required) != required) continue;
        if ((f & preferred) == preferred) return i;
        if (fallback == UINT32_MAX) fallback = i;
    }
    return fallback;
}

VkResult vk_owned_buffer_create(const vk_functions *vk, VkDeviceSize size, VkBufferUsageFlags usage,
                                VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred,
                                vk_owned_buffer *out) {
    VkBufferCreateInfo bci;
    VkBufferMemoryRequirementsInfo2 rqi;
    VkMemoryRequirements2 req;
    VkMemoryAllocateInfo mai;
    uint32_t type;
    VkResult r;

    memset(out, 0, sizeof *out);
    memset(&bci, 0, sizeof bci);
    bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bci.size = size;
    bci.usage = usage;
    bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    r = vk->vkCreateBuffer(vk->device, &bci, NULL, &out->buffer);
    if (r != VK_SUCCESS) return r;
    memset(&rqi, 0, sizeof rqi);
    rqi.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_REQUIREMENTS_INFO_2;
    rqi.buffer = out->buffer;
    memset(&req, 0, sizeof req);
    req.sType = VK_STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2;
    vk->vkGetBufferMemoryRequirements2(vk->device, &rqi, &req);
    type = vk_find_memory_type(vk, req.memoryRequirements.memoryTypeBits, required, preferred);
    if (type == UINT32_MAX) {
        vk->vkDestroyBuffer(vk->device, out->buffer, NULL);
        out->buffer = VK_NULL_HANDLE;
        return VK_ERROR_FEATURE_NOT_PRESENT;
    }
    memset(&mai, 0, sizeof mai);
    mai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    mai.allocationSize = req.memoryRequirements.size;
    mai.memoryTypeIndex = type;
    r = vk->vkAllocateMemory(vk->device, &mai, NULL, &out->memory);
    if (r == VK_SUCCESS) r = vk->vkBindBufferMemory(vk->device, out->buffer, out->memory, 0);
    out->size = size;
    out->memory_flags = vk->memory.memoryTypes[type].propertyFlags;
    if (r == VK_SUCCESS && (out->memory_flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
        r = vk->vkMapMemory(vk->device, out->memory, 0, VK_WHOLE_SIZE, 0, &out->mapped);
    if (r != VK_SUCCESS) vk_owned_buffer_destroy(vk, out);
    return r;
}

void vk_owned_buffer_destroy(const vk_functions *vk, vk_owned_buffer *b) {
    if (b->mapped != NULL) vk->vkUnmapMemory(vk->device, b->memory);
    if (b->buffer != VK_NULL_HANDLE) vk->vkDestroyBuffer(vk->device, b->buffer, NULL);
    if (b->memory != VK_NULL_HANDLE) vk->vkFreeMemory(vk->device, b->memory, NULL);
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

VkResult vk_owned_buffer_invalidate(const vk_functions *vk, const vk_owned_buffer *b) {
    VkMappedMemoryRange range = whole_range(b);
    if (b->memory_flags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) return VK_SUCCESS;
    return vk->vkInvalidateMappedMemoryRanges(vk->device, 1, &range);
}

VkResult vk_owned_buffer_flush(const vk_functions *vk, const vk_owned_buffer *b) {
    VkMappedMemoryRange range = whole_range(b);
    if (b->memory_flags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) return VK_SUCCESS;
    return vk->vkFlushMappedMemoryRanges(vk->device, 1, &range);
}

void vk_cmd_barrier(const vk_functions *vk, VkCommandBuffer cmd, VkPipelineStageFlags src_stage,
                    VkAccessFlags src_access, VkPipelineStageFlags dst_stage,
                    VkAccessFlags dst_access) {
    VkMemoryBarrier mb;
    memset(&mb, 0, sizeof mb);
    mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    mb.srcAccessMask = src_access;
    mb.dstAccessMask = dst_access;
    vk->vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, &mb, 0, NULL, 0, NULL);
}
