/*
 * engine_postfx: what a C++ engine does with vkcuda (vkcuda.hpp). The engine owns its Vulkan
 * instance, device and queue (<vulkan/vulkan.h>, the system loader); CUDA is <cuda.h>. Each frame it uploads its scene into a shared image
 * (a stand-in for its render pass); a CUDA kernel post-processes that image into a second shared
 * image through surface objects (postfx.cu: a 3x3 blur and a tone curve); Vulkan takes the result
 * back and copies it out, as it would to present. One vkcuda::Semaphore timeline paces the three
 * stages, three frames in flight. The last frame is checked, every pixel, against the host's
 * post-processing of its scene and written as a PNG (stb_image_write). vkcuda failures throw
 * vkcuda::Error with the library's message; without a CUDA GPU: SKIP, exit status 77.
 *   engine_postfx [FILE.png]      (default engine_postfx.png)
 * tests/gpu/engine_postfx_test.cpp is this engine with a compute render pass, every frame checked.
 */
#include <cuda.h>
#include <vkcuda.hpp>
#include <vulkan/vulkan.h>

#include <stb_image_write.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

extern "C" {
#include "cuda_util.h"  // cuda_result_text
#include "vk_util.h"    // vk_owned_buffer: host-visible memory for the copies
}
#include "postfx_ptx.h"

namespace {
constexpr std::uint32_t W = 512, H = 288, kFrames = 100, kInFlight = 3;
constexpr VkDeviceSize kImageBytes = 4 * W * H;
constexpr VkImageLayout kCopySrc = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
constexpr VkImageLayout kCopyDst = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL;

void vk_check(VkResult r, const char* what) {
    if (r != VK_SUCCESS) throw std::runtime_error(std::string(what) + " -> " + vk_result_name(r));
}

struct Slot {                                             // one frame in flight
    vkcuda::Image scene, result;                          // shared with CUDA
    std::uint64_t scene_surface = 0, result_surface = 0;  // their CUsurfObjects (owned by the images)
    VkCommandBuffer upload = VK_NULL_HANDLE, readback = VK_NULL_HANDLE;
    vk_owned_buffer host{};                               // the scene to upload, then the result copied out
    std::uint64_t done = 0;                               // the timeline value of its last stage 3
};
}  // namespace

int main(int argc, char** argv) try {
    const char* out = argc > 1 ? argv[1] : "engine_postfx.png";
    // 1. The engine's Vulkan 1.2 instance, and a physical device the library supports.
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO, nullptr, "engine_postfx", 1, nullptr, 0,
                          VK_API_VERSION_1_2};
    VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, nullptr, 0, &app, 0, nullptr, 0, nullptr};
    VkInstance instance;
    vk_check(vkCreateInstance(&ici, nullptr, &instance), "vkCreateInstance");
    std::uint32_t n = 0;
    vkEnumeratePhysicalDevices(instance, &n, nullptr);
    std::vector<VkPhysicalDevice> devices(n);
    vkEnumeratePhysicalDevices(instance, &n, devices.data());
    VkPhysicalDevice phys = VK_NULL_HANDLE;
    for (VkPhysicalDevice pd : devices)  // supported: both fd extensions, timelines, a CUDA device with its UUID
        if (phys == VK_NULL_HANDLE && vkcuda::physical_device_query(instance, pd, vkGetInstanceProcAddr).supported)
            phys = pd;
    if (phys == VK_NULL_HANDLE) {  // skipped (77), or a failure where VKCUDA_REQUIRE_GPU=1 asks for a GPU
        std::printf("SKIPPED: engine_postfx: no Vulkan device has a CUDA twin (vkcuda_info says why)\n");
        const char* require = std::getenv("VKCUDA_REQUIRE_GPU");
        return require != nullptr && std::string(require) == "1" ? 1 : 77;
    }

    // 2. The engine's device: a queue, the extensions the library asks for, timelineSemaphore.
    std::uint32_t family = 0, nf = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(phys, &nf, nullptr);
    std::vector<VkQueueFamilyProperties> families(nf);
    vkGetPhysicalDeviceQueueFamilyProperties(phys, &nf, families.data());
    while (!(families.at(family).queueFlags & VK_QUEUE_COMPUTE_BIT)) family++;
    std::vector<const char*> extensions = vkcuda::device_extensions_enumerate();
    VkPhysicalDeviceTimelineSemaphoreFeatures timelines{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES,
                                                        nullptr, VK_TRUE};
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, nullptr, 0, family, 1, &priority};
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &timelines, 0, 1, &qci, 0, nullptr,
                           static_cast<std::uint32_t>(extensions.size()), extensions.data(), nullptr};
    VkDevice device;
    vk_check(vkCreateDevice(phys, &dci, nullptr, &device), "vkCreateDevice");
    VkQueue queue;
    vkGetDeviceQueue(device, family, 0, &queue);
    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, nullptr,
                                VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, family};
    VkCommandPool pool;
    vk_check(vkCreateCommandPool(device, &pci, nullptr, &pool), "vkCreateCommandPool");
    vk_device vk{};  // for vk_owned_buffer
    vk_device_init(&vk, phys, device);

    // 3. Pair the device with CUDA. The library borrows the handles: its objects go first.
    std::uint64_t bad = 0;
    {
        vkcuda_context_create_info ci{};  // {} is every default; a field added later keeps this right
        ci.instance = instance;
        ci.physical_device = phys;
        ci.device = device;
        ci.get_instance_proc_addr = vkGetInstanceProcAddr;
        vkcuda::Context ctx = vkcuda::Context::create(ci);             // CUDA: the device's primary context
        vkcuda::Semaphore timeline = vkcuda::Semaphore::create(ctx);  // a timeline at 0
        VkSemaphore vk_timeline = timeline.vk_semaphore();             // for the engine's submits
        auto cu_check = [&](CUresult r, const char* what) {
            if (r != CUDA_SUCCESS) throw std::runtime_error(std::string(what) + " -> " + cuda_result_text(r));
        };
        CUstream stream;
        CUmodule module;
        CUfunction postfx;
        cu_check(cuCtxPushCurrent(ctx.cuda_info().cuda_context), "cuCtxPushCurrent");
        cu_check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
        cu_check(cuModuleLoadDataEx(&module, postfx_ptx, 0, nullptr, nullptr), "cuModuleLoadDataEx");
        cu_check(cuModuleGetFunction(&postfx, module, "postfx"), "cuModuleGetFunction");

        // 4. Per frame in flight: two shared images, command buffers, host memory. STORAGE lets
        //    CUDA make surfaces; R8G8B8A8_UINT keeps the kernel and the host check in integers.
        vkcuda_image_create_info ii{};
        ii.format = VK_FORMAT_R8G8B8A8_UINT;
        ii.extent = {W, H, 1};
        ii.usage = VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT;
        std::vector<Slot> slots(kInFlight);
        for (Slot& s : slots) {
            s.scene = vkcuda::Image::create(ctx, ii);
            s.result = vkcuda::Image::create(ctx, ii);
            s.scene_surface = s.scene.surface_object(0);
            s.result_surface = s.result.surface_object(0);
            VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, nullptr, pool,
                                            VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
            vk_check(vkAllocateCommandBuffers(device, &cai, &s.upload), "vkAllocateCommandBuffers");
            vk_check(vkAllocateCommandBuffers(device, &cai, &s.readback), "vkAllocateCommandBuffers");
            vk_check(vk_owned_buffer_create(&vk, 2 * kImageBytes,
                                            VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                            VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                            0, &s.host),
                     "vk_owned_buffer_create");
        }

        // The handoff barrier's description, and a submit that is one stage of the timeline.
        auto handoff = [&](VkPipelineStageFlags stage, VkAccessFlags access) {
            return vkcuda_handoff_info{0, family, stage, access};
        };
        const VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, nullptr, 0, nullptr};
        auto submit = [&](VkCommandBuffer cmd, const vkcuda_timeline_stage& stage) {  // wait, then signal
            vk_check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
            VkTimelineSemaphoreSubmitInfo ts{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO, nullptr, 1,
                                             &stage.wait_value, 1, &stage.signal_value};
            VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
            VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO, &ts, 1, &vk_timeline, &wait_stage, 1, &cmd, 1, &vk_timeline};
            vk_check(vkQueueSubmit(queue, 1, &si, VK_NULL_HANDLE), "vkQueueSubmit");
        };
        const vkcuda_handoff_info write = handoff(VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
        const vkcuda_handoff_info read = handoff(VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
        const VkBufferImageCopy scene_region{0, 0, 0, {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1}, {0, 0, 0}, {W, H, 1}};
        const VkBufferImageCopy result_region{kImageBytes, 0, 0, {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1}, {0, 0, 0},
                                              {W, H, 1}};

        // The images start on CUDA's side, released from UNDEFINED (nobody has written them), so
        // that every frame begins with an acquire.
        vk_check(vkBeginCommandBuffer(slots[0].upload, &begin), "vkBeginCommandBuffer");
        for (Slot& s : slots)
            for (vkcuda::Image* image : {&s.scene, &s.result})
                image->cmd_release_to_cuda(slots[0].upload, handoff(0, 0), VK_IMAGE_LAYOUT_UNDEFINED);
        submit(slots[0].upload, timeline.next_stage());

        // 5. The frame loop. The CPU waits only before it reuses a slot; the GPUs wait for each other.
        for (std::uint32_t f = 0; f < kFrames; f++) {
            Slot& s = slots[f % kInFlight];
            timeline.host_wait(s.done, 1000000000);  // the slot's previous frame (1 s, else vkcuda::Error)
            std::uint8_t* scene = static_cast<std::uint8_t*>(s.host.mapped);
            for (std::uint32_t p = 0; p < W * H; p++) {  // the engine's frame f: moving stripes, a gradient
                const std::uint32_t x = p % W, y = p / W;
                const std::uint32_t rgba[4] = {(x + 3 * f) & 255, ((x ^ y) + f) & 255, y * 255 / (H - 1), 255};
                std::copy(rgba, rgba + 4, scene + 4 * p);
            }

            // Stage 1, Vulkan: acquire the scene from CUDA, write frame f into it, release it to CUDA.
            vkcuda_timeline_stage st = timeline.next_stage();
            vk_check(vkBeginCommandBuffer(s.upload, &begin), "vkBeginCommandBuffer");
            s.scene.cmd_acquire_from_cuda(s.upload, write, kCopyDst);
            vkCmdCopyBufferToImage(s.upload, s.host.buffer, s.scene.vk_image(), kCopyDst, 1, &scene_region);
            s.scene.cmd_release_to_cuda(s.upload, write, kCopyDst);
            submit(s.upload, st);

            // Stage 2, CUDA: wait for stage 1 on the GPU (not the CPU), post-process, signal.
            st = timeline.next_stage();
            timeline.cuda_wait(st.wait_value, stream);
            std::uint32_t width = W, height = H;
            void* args[4] = {&s.scene_surface, &s.result_surface, &width, &height};
            cu_check(cuLaunchKernel(postfx, W / 16, H / 16, 1, 16, 16, 1, 0, stream, args, nullptr), "postfx");
            timeline.cuda_signal(st.signal_value, stream);

            // Stage 3, Vulkan: take the result back (GENERAL -> TRANSFER_SRC keeps what CUDA wrote),
            // copy it out, give it back to CUDA.
            st = timeline.next_stage();
            vk_check(vkBeginCommandBuffer(s.readback, &begin), "vkBeginCommandBuffer");
            s.result.cmd_acquire_from_cuda(s.readback, read, kCopySrc);
            vkCmdCopyImageToBuffer(s.readback, s.result.vk_image(), kCopySrc, s.host.buffer, 1, &result_region);
            s.result.cmd_release_to_cuda(s.readback, read, kCopySrc);
            vk_cmd_barrier(s.readback, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                           VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
            submit(s.readback, st);
            s.done = st.signal_value;
        }

        // 6. The last frame: CUDA's result against the host's post-processing of its scene.
        const Slot& last = slots[(kFrames - 1) % kInFlight];
        timeline.host_wait(last.done, 1000000000);
        const std::uint8_t* scene = static_cast<const std::uint8_t*>(last.host.mapped);
        const std::uint8_t* result = scene + kImageBytes;
        for (std::uint32_t p = 0; p < 4 * W * H; p++) {  // every channel of every pixel
            const int x = static_cast<int>(p / 4 % W), y = static_cast<int>(p / 4 / W), c = static_cast<int>(p % 4);
            std::uint32_t sum = 0;  // the 3x3 box blur, edges clamped, then the tone curve; alpha 255
            for (int j = y - 1; j <= y + 1; j++)
                for (int i = x - 1; i <= x + 1; i++)
                    sum += scene[4 * (std::clamp(j, 0, int{H} - 1) * int{W} + std::clamp(i, 0, int{W} - 1)) + c];
            const std::uint32_t v = (sum + 4) / 9;
            bad += result[p] != (c == 3 ? 255u : v * 510 / (v + 255));
        }
        std::printf("engine_postfx: %u frames, %u in flight; in the last, %llu of %u values differ from the host's\n",
                    kFrames, kInFlight, static_cast<unsigned long long>(bad), 4 * W * H);
        if (bad == 0 && stbi_write_png(out, W, H, 4, result, 4 * W) == 0) throw std::runtime_error("stbi_write_png");
        if (bad == 0) std::printf("wrote %s\n", out);

        // 7. In reverse: the GPUs idle, the engine's and CUDA's objects; then, as this scope ends,
        //    the shared objects (each releases CUDA's view before Vulkan's) and the context.
        cu_check(cuStreamSynchronize(stream), "cuStreamSynchronize");
        vk_check(vkDeviceWaitIdle(device), "vkDeviceWaitIdle");
        for (Slot& s : slots) vk_owned_buffer_destroy(&vk, &s.host);
        cuModuleUnload(module);
        cuStreamDestroy(stream);
        CUcontext popped;
        cuCtxPopCurrent(&popped);
    }
    vkDestroyCommandPool(device, pool, nullptr);
    vkDestroyDevice(device, nullptr);  // after everything the library made on it
    vkDestroyInstance(instance, nullptr);
    std::printf("engine_postfx: %s\n", bad == 0 ? "PASS" : "FAIL");
    return bad == 0 ? 0 : 1;
} catch (const std::exception& e) {  // vkcuda::Error too: the library's message, with the result name
    std::printf("engine_postfx: FAIL: %s\n", e.what());
    return 1;
}
