// What examples/vma/vma_interop.cpp and tests/gpu/vma_wrap.cpp share: the
// "engine" (a standalone vkcuda context's device and queue, a command pool, one-shot
// submits), the few CUDA driver calls they make (<cuda.h>), a byte pattern and a
// check that counts mismatches.
// The VMA recipe itself is in the example, not here.
#ifndef VKCUDA_VMA_SUPPORT_HPP
#define VKCUDA_VMA_SUPPORT_HPP

#include <cuda.h>
#include <vulkan/vulkan.h>
#include <vk_mem_alloc.h>
#include <vkcuda.hpp>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>

namespace vma_support {

inline void check_vk(VkResult r, const char* what) {
    if (r != VK_SUCCESS) throw std::runtime_error(std::string(what) + " failed with VkResult " + std::to_string(r));
}

// The CUDA driver API calls used, each in the vkcuda context's CUcontext and synchronous.
struct Cuda {
    CUcontext ctx = nullptr;

    void load(CUcontext context) { ctx = context; }  // the library's context made cuInit
    void call(CUresult r, const char* what) const {
        if (r != CUDA_SUCCESS) throw std::runtime_error(std::string(what) + " failed with CUresult " + std::to_string(r));
    }
    void write(CUdeviceptr dst, const void* src, size_t n) const {
        call(cuCtxPushCurrent(ctx), "cuCtxPushCurrent");
        CUresult r = cuMemcpyHtoD(dst, src, n);
        CUcontext c;
        cuCtxPopCurrent(&c);
        call(r, "cuMemcpyHtoD");
    }
    void read(void* dst, CUdeviceptr src, size_t n) const {
        call(cuCtxPushCurrent(ctx), "cuCtxPushCurrent");
        CUresult r = cuMemcpyDtoH(dst, src, n);
        CUcontext c;
        cuCtxPopCurrent(&c);
        call(r, "cuMemcpyDtoH");
    }
    // A whole 2D array level: `row_bytes` by `rows`, tightly packed on the host.
    void array(void* host, CUarray array, size_t row_bytes, size_t rows, bool to_array) const {
        CUDA_MEMCPY2D m{};
        if (to_array) {
            m.srcMemoryType = CU_MEMORYTYPE_HOST, m.srcHost = host, m.srcPitch = row_bytes;
            m.dstMemoryType = CU_MEMORYTYPE_ARRAY, m.dstArray = array;
        } else {
            m.srcMemoryType = CU_MEMORYTYPE_ARRAY, m.srcArray = array;
            m.dstMemoryType = CU_MEMORYTYPE_HOST, m.dstHost = host, m.dstPitch = row_bytes;
        }
        m.WidthInBytes = row_bytes, m.Height = rows;
        call(cuCtxPushCurrent(ctx), "cuCtxPushCurrent");
        CUresult r = cuMemcpy2D(&m);
        CUcontext c;
        cuCtxPopCurrent(&c);
        call(r, "cuMemcpy2D");
    }
};

// The engine: the device of a standalone context, its queue, a command pool.
struct Engine {
    vkcuda::Context ctx;
    vkcuda_vulkan_handles vk{};
    VkCommandPool pool = VK_NULL_HANDLE;
    bool cuda = false;

    explicit Engine(bool vulkan_only) {
        vkcuda_standalone_create_info si{};
        si.flags = vulkan_only ? VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT : 0;
        ctx = vkcuda::Context::create_standalone(si);
        vk = ctx.vulkan_handles();
        cuda = !vulkan_only;
        VkCommandPoolCreateInfo pi{};
        pi.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
        pi.queueFamilyIndex = vk.queue_family_index;
        check_vk(vkCreateCommandPool(vk.device, &pi, nullptr, &pool), "vkCreateCommandPool");
    }
    ~Engine() {
        if (pool) vkDestroyCommandPool(vk.device, pool, nullptr);
    }
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Records with `record`, submits, waits.
    void run(const std::function<void(VkCommandBuffer)>& record) const {
        VkCommandBufferAllocateInfo ai{};
        ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
        ai.commandPool = pool, ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, ai.commandBufferCount = 1;
        VkCommandBuffer cmd;
        check_vk(vkAllocateCommandBuffers(vk.device, &ai, &cmd), "vkAllocateCommandBuffers");
        VkCommandBufferBeginInfo bi{};
        bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        check_vk(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
        record(cmd);
        check_vk(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
        VkFenceCreateInfo fi{};
        fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
        VkFence fence;
        check_vk(vkCreateFence(vk.device, &fi, nullptr, &fence), "vkCreateFence");
        VkSubmitInfo si{};
        si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
        si.commandBufferCount = 1, si.pCommandBuffers = &cmd;
        VkResult r = vkQueueSubmit(vk.queue, 1, &si, fence);
        if (r == VK_SUCCESS) r = vkWaitForFences(vk.device, 1, &fence, VK_TRUE, UINT64_MAX);
        vkDestroyFence(vk.device, fence, nullptr);
        vkFreeCommandBuffers(vk.device, pool, 1, &cmd);
        check_vk(r, "vkQueueSubmit / vkWaitForFences");
    }

    // A VMA allocator on the engine's device (the functions come from the loader
    // the program links; the standalone instance is Vulkan 1.2 or later).
    VmaAllocator allocator() const {
        VmaAllocatorCreateInfo ci{};
        ci.vulkanApiVersion = VK_API_VERSION_1_2;
        ci.instance = vk.instance, ci.physicalDevice = vk.physical_device, ci.device = vk.device;
        VmaAllocator a;
        check_vk(vmaCreateAllocator(&ci, &a), "vmaCreateAllocator");
        return a;
    }
};

// The byte pattern written and checked (depends on the position and a seed): for even
// seeds a ramp that compresses (as images do; an image whose memory the driver compresses
// where CUDA does not would read it wrong), for odd seeds bytes that do not compress and
// show any byte out of place.
inline std::uint8_t pattern(std::uint64_t i, std::uint32_t seed) {
    if (seed % 2 == 0) return static_cast<std::uint8_t>(static_cast<std::uint32_t>(i / 8) * 3 + seed);
    return static_cast<std::uint8_t>((static_cast<std::uint32_t>(i) * 2654435761u + seed) >> 13);
}
inline void fill(std::uint8_t* p, std::uint64_t n, std::uint32_t seed) {
    for (std::uint64_t i = 0; i < n; i++) p[i] = pattern(i, seed);
}
// How many of the n bytes differ from the pattern.
inline std::uint64_t mismatches(const std::uint8_t* p, std::uint64_t n, std::uint32_t seed) {
    std::uint64_t bad = 0;
    for (std::uint64_t i = 0; i < n; i++) bad += p[i] != pattern(i, seed);
    return bad;
}

}  // namespace vma_support

#endif
