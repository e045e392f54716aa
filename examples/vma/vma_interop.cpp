/*
 * vma_interop: buffers an engine allocates with VulkanMemoryAllocator, shared
 * with CUDA. VMA keeps external memory out of its default pools, so the recipe is
 * a custom pool whose every VkDeviceMemory carries VkExportMemoryAllocateInfo
 * (OPAQUE_FD) through VmaPoolCreateInfo::pMemoryAllocateNext. Buffers made from it
 * are handed to vkcuda_buffer_wrap with where VMA put them: the block, the offset
 * in it, whether it is a dedicated allocation, and the handle types the block was
 * exported with. CUDA then writes and reads them through its own pointer.
 *
 *   vma_interop [--vulkan-only]
 *
 * Three buffers: two sub-allocations that share one block (at different offsets)
 * and one dedicated allocation. For each, CUDA writes a pattern that Vulkan reads
 * back, then Vulkan writes one that CUDA reads; every byte is checked.
 *
 * --vulkan-only (no CUDA, e.g. lavapipe in CI): the same pool and wraps in a
 * Vulkan-only context; the "other side" is a second Vulkan buffer imported from
 * the wrapped buffer's fd (what a CUDA or Vulkan process at the other end of a
 * socket would do). Without a CUDA GPU (and without --vulkan-only) it prints the
 * SKIPPED line and exits 77, or 1 with VKCUDA_REQUIRE_GPU=1. PASS exits 0, FAIL 1.
 */
#include "vma_support.hpp"

#include <cstdlib>
#include <cstring>
#include <vector>

using namespace vma_support;

namespace {

struct Shared {
    VkBuffer buffer = VK_NULL_HANDLE;
    VmaAllocation allocation = nullptr;
    vkcuda::Buffer view;  // the vkcuda object: the CUDA pointer of the same memory
    std::uint64_t size = 0;
};

// Every VkDeviceMemory of the pool is allocated with this in its pNext chain. VMA
// keeps the pointer, not a copy: it must outlive the pool.
const VkExportMemoryAllocateInfo kExport = {VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO, nullptr,
                                            VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
const VkExternalMemoryBufferCreateInfo kExternalBuffer = {VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
                                                          nullptr, VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
const VkBufferUsageFlags kUsage =
    VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;

VkBufferCreateInfo buffer_info(std::uint64_t size) {
    VkBufferCreateInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bi.pNext = &kExternalBuffer;  // the buffer may be bound to exportable memory
    bi.size = size, bi.usage = kUsage, bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    return bi;
}

// The pool: the memory type VMA would pick for such buffers, with export info.
VmaPool export_pool(VmaAllocator vma) {
    VkBufferCreateInfo bi = buffer_info(65536);
    VmaAllocationCreateInfo ai{};
    ai.usage = VMA_MEMORY_USAGE_AUTO_PREFER_DEVICE;
    std::uint32_t type = 0;
    check_vk(vmaFindMemoryTypeIndexForBufferInfo(vma, &bi, &ai, &type), "vmaFindMemoryTypeIndexForBufferInfo");
    VmaPoolCreateInfo pi{};
    pi.memoryTypeIndex = type;
    pi.pMemoryAllocateNext = const_cast<VkExportMemoryAllocateInfo*>(&kExport);
    VmaPool pool;
    check_vk(vmaCreatePool(vma, &pi, &pool), "vmaCreatePool");
    return pool;
}

// A buffer from the pool, wrapped: vkcuda is told where VMA put it.
Shared make(const Engine& e, VmaAllocator vma, VmaPool pool, std::uint64_t size, bool dedicated) {
    Shared s;
    s.size = size;
    VkBufferCreateInfo bi = buffer_info(size);
    VmaAllocationCreateInfo ai{};
    ai.pool = pool;
    ai.flags = dedicated ? VMA_ALLOCATION_CREATE_DEDICATED_MEMORY_BIT : 0;
    check_vk(vmaCreateBuffer(vma, &bi, &ai, &s.buffer, &s.allocation, nullptr), "vmaCreateBuffer");
    VmaAllocationInfo2 info;
    vmaGetAllocationInfo2(vma, s.allocation, &info);
    vkcuda_buffer_wrap_info wi{};
    wi.buffer = s.buffer;
    wi.memory = info.allocationInfo.deviceMemory;
    wi.allocation_size = info.blockSize;             // CUDA imports the whole block
    wi.offset = info.allocationInfo.offset;          // and maps the buffer's range of it
    wi.size = size;
    wi.dedicated = info.dedicatedMemory;             // CUDA needs the dedicated flag right
    wi.export_handle_types = kExport.handleTypes;    // what the pool's blocks carry
    s.view = vkcuda::Buffer::wrap(e.ctx, wi);
    std::printf("  %9llu bytes at offset %8llu of a %9llu-byte %s block\n", (unsigned long long)size,
                (unsigned long long)wi.offset, (unsigned long long)wi.allocation_size,
                wi.dedicated ? "dedicated" : "shared");
    return s;
}

// A mapped host buffer for the Vulkan side's reads and writes.
struct Staging {
    VkBuffer buffer = VK_NULL_HANDLE;
    VmaAllocation allocation = nullptr;
    std::uint8_t* bytes = nullptr;
};

Staging staging(VmaAllocator vma, std::uint64_t size) {
    VkBufferCreateInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bi.size = size, bi.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    VmaAllocationCreateInfo ai{};
    ai.usage = VMA_MEMORY_USAGE_AUTO;
    ai.flags = VMA_ALLOCATION_CREATE_HOST_ACCESS_RANDOM_BIT | VMA_ALLOCATION_CREATE_MAPPED_BIT;
    Staging s;
    VmaAllocationInfo info;
    check_vk(vmaCreateBuffer(vma, &bi, &ai, &s.buffer, &s.allocation, &info), "vmaCreateBuffer (staging)");
    s.bytes = static_cast<std::uint8_t*>(info.pMappedData);
    return s;
}

void copy(const Engine& e, VkBuffer from, VkBuffer to, std::uint64_t size) {
    e.run([&](VkCommandBuffer cmd) {
        VkBufferCopy region{0, 0, size};
        vkCmdCopyBuffer(cmd, from, to, 1, &region);
    });
}

// One buffer both ways; returns the mismatched bytes.
std::uint64_t round_trip(const Engine& e, const Cuda& cuda, VmaAllocator vma, const Staging& st, Shared& s) {
    vkcuda_handoff_info h{0, e.vk.queue_family_index, VK_PIPELINE_STAGE_TRANSFER_BIT, 0};
    std::vector<std::uint8_t> host(s.size);
    std::uint64_t bad = 0;
    if (e.cuda) {
        // CUDA writes through its pointer; Vulkan takes the buffer back and reads it.
        fill(host.data(), s.size, 1);
        cuda.write(s.view.cuda_pointer(), host.data(), s.size);
        e.run([&](VkCommandBuffer cmd) {
            h.access_mask = VK_ACCESS_TRANSFER_READ_BIT;
            s.view.cmd_acquire_from_cuda(cmd, h);
            VkBufferCopy region{0, 0, s.size};
            vkCmdCopyBuffer(cmd, s.buffer, st.buffer, 1, &region);
        });
        check_vk(vmaInvalidateAllocation(vma, st.allocation, 0, VK_WHOLE_SIZE), "vmaInvalidateAllocation");
        bad += mismatches(st.bytes, s.size, 1);
        // Vulkan writes and hands the buffer to CUDA; CUDA reads it.
        fill(st.bytes, s.size, 2);
        check_vk(vmaFlushAllocation(vma, st.allocation, 0, VK_WHOLE_SIZE), "vmaFlushAllocation");
        e.run([&](VkCommandBuffer cmd) {
            VkBufferCopy region{0, 0, s.size};
            vkCmdCopyBuffer(cmd, st.buffer, s.buffer, 1, &region);
            h.access_mask = VK_ACCESS_TRANSFER_WRITE_BIT;
            s.view.cmd_release_to_cuda(cmd, h);
        });
        cuda.read(host.data(), s.view.cuda_pointer(), s.size);
        bad += mismatches(host.data(), s.size, 2);
    } else {
        // The other side is an import of the wrapped memory's fd.
        vkcuda_buffer_info bi = s.view.info();
        vkcuda_buffer_import_info ii{};
        ii.allocator = VKCUDA_ALLOCATOR_VULKAN;
        ii.allocation_size = bi.allocation_size, ii.offset = bi.offset, ii.size = bi.size;
        ii.dedicated = bi.dedicated;
        vkcuda::Buffer other = vkcuda::Buffer::import_fd(e.ctx, ii, s.view.export_fd());
        fill(st.bytes, s.size, 3);
        check_vk(vmaFlushAllocation(vma, st.allocation, 0, VK_WHOLE_SIZE), "vmaFlushAllocation");
        copy(e, st.buffer, s.buffer, s.size);
        std::memset(st.bytes, 0, s.size);
        check_vk(vmaFlushAllocation(vma, st.allocation, 0, VK_WHOLE_SIZE), "vmaFlushAllocation");
        copy(e, other.info().buffer, st.buffer, s.size);
        check_vk(vmaInvalidateAllocation(vma, st.allocation, 0, VK_WHOLE_SIZE), "vmaInvalidateAllocation");
        bad += mismatches(st.bytes, s.size, 3);
    }
    return bad;
}

}  // namespace

int main(int argc, char** argv) {
    bool vulkan_only = argc > 1 && std::strcmp(argv[1], "--vulkan-only") == 0;
    try {
        Engine e(vulkan_only);
        Cuda cuda;
        if (e.cuda) cuda.load(e.ctx.cuda_info().cuda_context);
        VmaAllocator vma = e.allocator();
        VmaPool pool = export_pool(vma);
        std::printf("vma_interop: %s, a VMA pool with OPAQUE_FD export info\n",
                    vulkan_only ? "Vulkan-only" : "CUDA + Vulkan");
        std::vector<Shared> shared;
        shared.push_back(make(e, vma, pool, (1 << 20) + 3, false));
        shared.push_back(make(e, vma, pool, (3 << 20) + 5, false));  // the same block, another offset
        shared.push_back(make(e, vma, pool, 8 << 20, true));
        Staging st = staging(vma, 8 << 20);
        std::uint64_t bad = 0, checked = 0;
        for (Shared& s : shared) {
            e.run([&](VkCommandBuffer cmd) {  // new buffers start on CUDA's side
                vkcuda_handoff_info h{0, e.vk.queue_family_index, 0, 0};
                s.view.cmd_release_to_cuda(cmd, h);
            });
            bad += round_trip(e, cuda, vma, st, s);
            checked += (e.cuda ? 2 : 1) * s.size;
        }
        // The vkcuda objects go before the memory VMA owns, then the pool.
        for (Shared& s : shared) {
            s.view.reset();
            vmaDestroyBuffer(vma, s.buffer, s.allocation);
        }
        vmaDestroyBuffer(vma, st.buffer, st.allocation);
        vmaDestroyPool(vma, pool);
        vmaDestroyAllocator(vma);
        std::printf("vma_interop: %llu bytes checked, %llu wrong\n", (unsigned long long)checked,
                    (unsigned long long)bad);
        std::printf("vma_interop: %s\n", bad == 0 ? "PASS" : "FAIL");
        return bad == 0 ? 0 : 1;
    } catch (const vkcuda::Error& err) {
        bool no_gpu = err.code() == VKCUDA_ERROR_CUDA_UNAVAILABLE || err.code() == VKCUDA_ERROR_DEVICE_MISMATCH;
        const char* require = std::getenv("VKCUDA_REQUIRE_GPU");
        if (!vulkan_only && no_gpu && !(require && std::strcmp(require, "1") == 0)) {
            std::printf("SKIPPED: vma_interop: no CUDA GPU here (%s); --vulkan-only runs without one\n", err.what());
            return 77;
        }
        std::printf("vma_interop: FAIL: %s\n", err.what());
        return 1;
    } catch (const std::exception& err) {
        std::printf("vma_interop: FAIL: %s\n", err.what());
        return 1;
    }
}
