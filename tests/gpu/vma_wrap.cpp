/*
 * vma_wrap: the VMA recipe of docs/GUIDE.md (section 10) for images, which the
 * example examples/vma/vma_interop.cpp (buffers: two sharing a block, one
 * dedicated, every byte both ways) leaves out. Images from a VulkanMemoryAllocator
 * pool whose blocks carry OPAQUE_FD export info (VmaPoolCreateInfo::pMemoryAllocateNext)
 * are wrapped (vkcuda_image_wrap) with the block, offset and dedicated flag VMA
 * reports: sub-allocated at offsets of a shared block and dedicated (VMA's
 * DEDICATED_MEMORY flag). Every byte is written by CUDA and read by Vulkan, then
 * written by Vulkan and read by CUDA. (Memory without export info is refused by the
 * library before any driver call: tests/buffer.rs, wrap_checks_sizes_before_anything_else.)
 *
 *   vma_wrap [--vulkan-only]
 *
 * --vulkan-only (lavapipe in CI): the same pool and wraps in a Vulkan-only context;
 * dedicated images are checked through a second Vulkan view imported from the
 * wrapped memory's fd; sub-allocated images must refuse export.
 * Without a CUDA GPU it prints the rig's skip line (exit 77; exit 1 with VKCUDA_REQUIRE_GPU=1).
 * Results are printed line by line as they come (unbuffered).
 */
#include "vma_support.hpp"
#include "rig.h" /* the skip line */

#include <cstdlib>
#include <cstring>
#include <vector>

using namespace vma_support;

namespace {

const VkExportMemoryAllocateInfo kExport = {VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO, nullptr,
                                            VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
const VkExternalMemoryImageCreateInfo kExtImage = {VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMAGE_CREATE_INFO, nullptr,
                                                   VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
const VkImageUsageFlags kImageUsage =
    VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT | VK_IMAGE_USAGE_SAMPLED_BIT;

std::uint64_t g_checked = 0, g_wrong = 0;
int g_failures = 0;

// Every VMA allocation stays until the end, so that later ones land at other
// offsets of the same blocks; the vkcuda views are gone long before.
struct Kept {
    VkImage image;
    VmaAllocation allocation;
};
std::vector<Kept> g_kept;

void expect(bool ok, const std::string& what) {
    std::printf("  %s: %s\n", ok ? "ok" : "FAILED", what.c_str());
    if (!ok) g_failures++;
}

VkImageCreateInfo image_ci(VkFormat format, std::uint32_t w, std::uint32_t h) {
    VkImageCreateInfo ii{};
    ii.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO;
    ii.pNext = &kExtImage;
    ii.imageType = VK_IMAGE_TYPE_2D, ii.format = format, ii.extent = {w, h, 1};
    ii.mipLevels = 1, ii.arrayLayers = 1, ii.samples = VK_SAMPLE_COUNT_1_BIT;
    ii.tiling = VK_IMAGE_TILING_OPTIMAL, ii.usage = kImageUsage;
    ii.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
    return ii;
}

VmaPool pool_for(VmaAllocator vma, std::uint32_t type) {
    VmaPoolCreateInfo pi{};
    pi.memoryTypeIndex = type;
    pi.pMemoryAllocateNext = const_cast<VkExportMemoryAllocateInfo*>(&kExport);
    VmaPool pool;
    check_vk(vmaCreatePool(vma, &pi, &pool), "vmaCreatePool");
    return pool;
}

struct Placement {
    VkDeviceMemory memory;
    std::uint64_t block, offset;
    VkBool32 dedicated;
};

Placement placement(VmaAllocator vma, VmaAllocation a) {
    VmaAllocationInfo2 info;
    vmaGetAllocationInfo2(vma, a, &info);
    return {info.allocationInfo.deviceMemory, info.blockSize, info.allocationInfo.offset, info.dedicatedMemory};
}

// An allocation from `pool`: a dedicated block, or a place in a shared one.
VmaAllocationCreateInfo in_pool(VmaPool pool, bool dedicated) {
    VmaAllocationCreateInfo ai{};
    ai.pool = pool;
    ai.flags = dedicated ? VMA_ALLOCATION_CREATE_DEDICATED_MEMORY_BIT : 0;
    return ai;
}

struct Staging {
    VkBuffer buffer;
    VmaAllocation allocation;
    std::uint8_t* bytes;
};

void flush(VmaAllocator vma, const Staging& st) {
    check_vk(vmaFlushAllocation(vma, st.allocation, 0, VK_WHOLE_SIZE), "vmaFlushAllocation");
}
void invalidate(VmaAllocator vma, const Staging& st) {
    check_vk(vmaInvalidateAllocation(vma, st.allocation, 0, VK_WHOLE_SIZE), "vmaInvalidateAllocation");
}

void count(const char* what, std::uint64_t n, std::uint64_t bad) {
    g_checked += n, g_wrong += bad;
    std::printf("    %s: %llu bytes, %llu wrong\n", what, (unsigned long long)n, (unsigned long long)bad);
}

void barrier(VkCommandBuffer cmd, VkImage image, VkImageLayout from, VkImageLayout to) {
    VkImageMemoryBarrier b{};
    b.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER;
    b.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT;
    b.dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT;
    b.oldLayout = from, b.newLayout = to;
    b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.image = image, b.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, nullptr, 0,
                         nullptr, 1, &b);
}

void test_image(const Engine& e, const Cuda& cuda, VmaAllocator vma, VmaPool pool, const Staging& st, VkFormat format,
                std::uint32_t bpp, std::uint32_t w, std::uint32_t h, bool dedicated, std::uint32_t seed) {
    VkImageCreateInfo ci = image_ci(format, w, h);
    VmaAllocationCreateInfo ai = in_pool(pool, dedicated);
    VkImage image;
    VmaAllocation a;
    check_vk(vmaCreateImage(vma, &ci, &ai, &image, &a, nullptr), "vmaCreateImage");
    Placement p = placement(vma, a);
    std::uint64_t bytes = std::uint64_t(w) * h * bpp;
    std::printf("  image %ux%u format %d (%llu bytes) at offset %llu of a %llu-byte %s block\n", w, h, format,
                (unsigned long long)bytes, (unsigned long long)p.offset, (unsigned long long)p.block,
                p.dedicated ? "dedicated" : "shared");
    vkcuda_image_wrap_info wi{};
    wi.image = image, wi.memory = p.memory, wi.allocation_size = p.block;
    wi.offset = p.offset, wi.dedicated = p.dedicated, wi.export_handle_types = kExport.handleTypes;
    wi.description.image_type = VKCUDA_IMAGE_TYPE_2D, wi.description.format = format;
    wi.description.extent = {w, h, 1}, wi.description.mip_levels = 1, wi.description.array_layers = 1;
    wi.description.usage = kImageUsage;
    VkBufferImageCopy region{};
    region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
    region.imageExtent = {w, h, 1};
    {
        vkcuda::Image view = vkcuda::Image::wrap(e.ctx, wi);
        vkcuda_handoff_info hi{0, e.vk.queue_family_index, VK_PIPELINE_STAGE_TRANSFER_BIT, 0};
        e.run([&](VkCommandBuffer cmd) {
            view.cmd_release_to_cuda(cmd, {0, e.vk.queue_family_index, 0, 0}, VK_IMAGE_LAYOUT_UNDEFINED);
        });
        if (e.cuda) {
            std::vector<std::uint8_t> host(bytes);
            fill(host.data(), bytes, seed);
            cuda.array(host.data(), view.cuda_array(0), std::size_t(w) * bpp, h, true);
            e.run([&](VkCommandBuffer cmd) {
                hi.access_mask = VK_ACCESS_TRANSFER_READ_BIT;
                view.cmd_acquire_from_cuda(cmd, hi, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL);
                vkCmdCopyImageToBuffer(cmd, image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, st.buffer, 1, &region);
                hi.access_mask = VK_ACCESS_TRANSFER_READ_BIT;
                view.cmd_release_to_cuda(cmd, hi, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL);
            });
            invalidate(vma, st);
            count("CUDA -> Vulkan", bytes, mismatches(st.bytes, bytes, seed));
            fill(st.bytes, bytes, seed + 1);
            flush(vma, st);
            e.run([&](VkCommandBuffer cmd) {
                hi.access_mask = VK_ACCESS_TRANSFER_WRITE_BIT;
                view.cmd_acquire_from_cuda(cmd, hi, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL);
                vkCmdCopyBufferToImage(cmd, st.buffer, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &region);
                view.cmd_release_to_cuda(cmd, hi, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL);
            });
            std::memset(host.data(), 0, bytes);
            cuda.array(host.data(), view.cuda_array(0), std::size_t(w) * bpp, h, false);
            count("Vulkan -> CUDA", bytes, mismatches(host.data(), bytes, seed + 1));
        } else if (p.dedicated) {
            vkcuda_share_description d = view.describe();
            vkcuda::Image other = vkcuda::Image::import_description(e.ctx, d, view.export_fd());
            VkImage oi = other.info().image;
            fill(st.bytes, bytes, seed);
            flush(vma, st);
            e.run([&](VkCommandBuffer cmd) {
                barrier(cmd, image, VK_IMAGE_LAYOUT_GENERAL, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL);
                vkCmdCopyBufferToImage(cmd, st.buffer, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &region);
                barrier(cmd, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_IMAGE_LAYOUT_GENERAL);
            });
            std::memset(st.bytes, 0, bytes);
            flush(vma, st);
            e.run([&](VkCommandBuffer cmd) {
                barrier(cmd, oi, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_GENERAL);
                vkCmdCopyImageToBuffer(cmd, oi, VK_IMAGE_LAYOUT_GENERAL, st.buffer, 1, &region);
            });
            invalidate(vma, st);
            count("VMA image -> imported view", bytes, mismatches(st.bytes, bytes, seed));
        } else {
            vkcuda::Fallible<vkcuda::Fd> fd = vkcuda::Fd();
            bool refused = false;
            try {
                fd = view.export_fd();
            } catch (const vkcuda::Error& err) {
                refused = err.code() == VKCUDA_ERROR_UNSUPPORTED;
            }
            expect(refused, "an image sub-allocated in a shared block refuses export (UNSUPPORTED)");
        }
    }
    g_kept.push_back({image, a});
}

}  // namespace

int main(int argc, char** argv) {
    std::setvbuf(stdout, nullptr, _IONBF, 0);
    bool vulkan_only = argc > 1 && std::strcmp(argv[1], "--vulkan-only") == 0;
    try {
        Engine e(vulkan_only);
        Cuda cuda;
        if (e.cuda) cuda.load(e.ctx.cuda_info().cuda_context);
        std::printf("vma_wrap: %s\n", vulkan_only ? "Vulkan-only" : "CUDA + Vulkan");
        VmaAllocator vma = e.allocator();
        VmaAllocationCreateInfo prefer{};
        prefer.usage = VMA_MEMORY_USAGE_AUTO_PREFER_DEVICE;
        std::uint32_t image_type = 0;
        VkImageCreateInfo ii = image_ci(VK_FORMAT_R8G8B8A8_UNORM, 256, 256);
        check_vk(vmaFindMemoryTypeIndexForImageInfo(vma, &ii, &prefer, &image_type), "memory type (images)");
        VmaPool images = pool_for(vma, image_type);
        VkBufferCreateInfo si{};
        si.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
        si.size = 1920 * 1080 * 4, si.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
        VmaAllocationCreateInfo sa{};
        sa.usage = VMA_MEMORY_USAGE_AUTO;
        sa.flags = VMA_ALLOCATION_CREATE_HOST_ACCESS_RANDOM_BIT | VMA_ALLOCATION_CREATE_MAPPED_BIT;
        Staging st{};
        VmaAllocationInfo sinfo;
        check_vk(vmaCreateBuffer(vma, &si, &sa, &st.buffer, &st.allocation, &sinfo), "vmaCreateBuffer (staging)");
        st.bytes = static_cast<std::uint8_t*>(sinfo.pMappedData);

        std::uint32_t seed = 10;
        test_image(e, cuda, vma, images, st, VK_FORMAT_R8G8B8A8_UNORM, 4, 257, 129, false, seed++);
        test_image(e, cuda, vma, images, st, VK_FORMAT_R32_SFLOAT, 4, 640, 480, false, seed++);
        test_image(e, cuda, vma, images, st, VK_FORMAT_R8G8B8A8_UNORM, 4, 1920, 1080, true, seed++);
        test_image(e, cuda, vma, images, st, VK_FORMAT_R8_UNORM, 1, 333, 77, true, seed++);
        for (const Kept& k : g_kept) vmaDestroyImage(vma, k.image, k.allocation);

        vmaDestroyBuffer(vma, st.buffer, st.allocation);
        vmaDestroyPool(vma, images);
        vmaDestroyAllocator(vma);
        vkcuda_live_objects live = vkcuda::live_objects();
        expect(live.vk_buffers == 0 && live.vk_images == 0 && live.cuda_external_memories == 0,
               "the library holds nothing after the wrapped objects are gone");
        std::printf("vma_wrap: %llu bytes checked, %llu wrong, %d failed checks\n", (unsigned long long)g_checked,
                    (unsigned long long)g_wrong, g_failures);
        bool pass = g_wrong == 0 && g_failures == 0 && g_checked > 0;
        std::printf("vma_wrap: %s\n", pass ? "PASS" : "FAIL");
        return pass ? 0 : 1;
    } catch (const vkcuda::Error& err) {
        bool no_gpu = err.code() == VKCUDA_ERROR_CUDA_UNAVAILABLE || err.code() == VKCUDA_ERROR_DEVICE_MISMATCH;
        if (!vulkan_only && no_gpu) return rig_skip("vma_wrap", (std::string("no CUDA GPU here: ") + err.what()).c_str());
        std::printf("vma_wrap: FAIL: %s\n", err.what());
        return 1;
    } catch (const std::exception& err) {
        std::printf("vma_wrap: FAIL: %s\n", err.what());
        return 1;
    }
}
