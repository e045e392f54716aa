/*
 * engine_postfx_test: the GPU test program of what examples/cpp/engine_postfx.cpp
 * shows (that example is the short version to read; this one checks everything).
 * The shaders are the .comp files in tests/gpu/shaders/ (committed SPIR-V in tests/gpu/spirv/); the
 * kernel (postfx.cu, postfx_ptx.h) is the example's, in examples/cpp/.
 *
 * engine_postfx: what a C++ engine does with vkcuda. It owns its Vulkan instance
 * and device, renders every frame with a compute pass of its own into a shared
 * image, hands the image to a CUDA kernel for post-processing (a 3x3 blur and a
 * tone curve) into a second shared image, takes that back, and checks every pixel
 * of every frame against a host reference. The last frame is written as a PNG.
 *
 *   engine_postfx_test [--frames N] [--in-flight K] [--size WxH] [--out FILE] [--vulkan-only]
 *                 defaults: 1000 frames, 3 in flight, 512x288, engine_postfx.png
 *
 * The engine's side, in order:
 *   1. a Vulkan 1.2 instance (<vulkan/vulkan.h>, the loader linked);
 *   2. for every physical device, vkcuda::physical_device_query: the one whose UUID
 *      a CUDA device has is picked;
 *   3. a VkDevice with the extensions of vkcuda::device_extensions_enumerate that
 *      the device has, the timelineSemaphore feature, one compute queue;
 *   4. vkcuda::Context::create with those handles (the library borrows them).
 * Per frame slot (K of them, frames in flight): two vkcuda::Image (R8G8B8A8_UINT,
 * STORAGE: the scene and the result), their CUDA surface objects, a descriptor
 * set, a host-visible readback buffer, command buffers. One vkcuda::Semaphore
 * timeline paces everything; vkcuda::Semaphore::next_stage hands out the values:
 *   stage 1, Vulkan: acquire the scene from CUDA, render (shaders/render.comp),
 *            release it to CUDA                              (queue submit)
 *   stage 2, CUDA:   cuda_wait, postfx kernel (postfx.cu: scene -> result through
 *            surfaces), cuda_signal                           (CUDA stream)
 *   stage 3, Vulkan: acquire the result from CUDA into TRANSFER_SRC_OPTIMAL, copy
 *            it to the readback buffer, release it back to CUDA (queue submit)
 * The CPU waits only before reusing a slot (host_wait on its stage 3 value), then
 * checks that slot's frame. Stages are enqueued in frame order, so no CUDA wait is
 * ever enqueued before the Vulkan submit that signals its value.
 *
 * Everything is integer arithmetic (R8G8B8A8_UINT, no float rounding), so the
 * Vulkan render, the CUDA kernel and the host reference agree exactly.
 *
 * --vulkan-only (machines without CUDA, e.g. lavapipe in CI): the same engine
 * device and frame loop with a Vulkan-only context, a plain Vulkan timeline and
 * stage 2 done by a Vulkan compute pass that computes what the kernel computes
 * (shaders/postfx.comp), between the same acquire and release barriers.
 *
 * Without a CUDA GPU (and without --vulkan-only) it prints the rig's skip line and
 * exits 77, or 1 with VKCUDA_REQUIRE_GPU=1. PASS exits 0, FAIL 1.
 *
 * Uses include/vkcuda.hpp with exceptions: every vkcuda failure is a vkcuda::Error
 * with the library's message.
 */
#include <vkcuda.hpp>
#include <vulkan/vulkan.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "rig.h" /* extern "C": the skip line, require_gpu, cuda_util.h, vk_util.h */

#ifdef VKCUDA_HAVE_STB_IMAGE_WRITE
#include <stb_image_write.h>
#endif

#include "postfx_comp_spv.h"
#include "postfx_ptx.h"
#include "render_comp_spv.h"

namespace {

constexpr std::uint32_t kMaxSlots = 8;
constexpr std::uint32_t kGroup = 16;                           // local size of the shaders and kernel
constexpr std::uint64_t kWaitTimeoutNs = 10ull * 1000000000ull;  // a slot's host wait

// ---- failures and skips ---------------------------------------------------------

// Thrown when the machine cannot run the example (no Vulkan, no CUDA GPU).
struct Skip {
    std::string why;
};

std::string vk_failure(const char* call, VkResult r) { return std::string(call) + " -> " + vk_result_name(r); }

#define VK_CHECK(call)                                                        \
    do {                                                                      \
        VkResult r_ = (call);                                                 \
        if (r_ != VK_SUCCESS) throw std::runtime_error(vk_failure(#call, r_)); \
    } while (0)

std::string uuid_text(const std::uint8_t* u) {
    char s[40];
    std::snprintf(s, sizeof s, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
                  u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    return s;
}

// ---- the host reference (must equal shaders/render.comp and postfx.cu) ------------------

std::uint32_t tri(std::uint32_t t, std::uint32_t n) {
    std::uint32_t m = t % (2u * n);
    return m < n ? m : 2u * n - 1u - m;
}

std::uint32_t hash32(std::uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

// Frame f's scene, RGBA bytes (shaders/render.comp).
void render_reference(std::uint32_t f, std::uint32_t w, std::uint32_t h, std::vector<std::uint8_t>& rgba) {
    rgba.resize(std::size_t{4} * w * h);
    const std::int32_t cx = static_cast<std::int32_t>(tri(f * 3u, w)), cy = static_cast<std::int32_t>(tri(f * 2u, h));
    for (std::uint32_t y = 0; y < h; y++) {
        for (std::uint32_t x = 0; x < w; x++) {
            std::int32_t dx = static_cast<std::int32_t>(x) - cx, dy = static_cast<std::int32_t>(y) - cy;
            std::uint32_t d2 = static_cast<std::uint32_t>(dx * dx + dy * dy);
            std::uint32_t ring = ((d2 >> 5) + f * 4u) & 63u;
            std::uint32_t r = ring < 32u ? ring * 8u : (63u - ring) * 8u;
            std::uint32_t g = (((x + f) ^ (y * 2u)) & 255u) >> 1;
            std::uint32_t b = w > 1u ? (x * 255u) / (w - 1u) : 0u;
            if ((hash32(x * 7919u + y * 104729u + (f >> 3) * 15485863u) & 1023u) == 0u) r = g = b = 255u;
            std::uint8_t* p = &rgba[(std::size_t{y} * w + x) * 4];
            p[0] = static_cast<std::uint8_t>(r);
            p[1] = static_cast<std::uint8_t>(g);
            p[2] = static_cast<std::uint8_t>(b);
            p[3] = 255;
        }
    }
}

std::uint32_t tone(std::uint32_t v) { return (v * 510u) / (v + 255u); }

// The post-processing of a scene (postfx.cu, shaders/postfx.comp).
void postfx_reference(const std::vector<std::uint8_t>& scene, std::uint32_t w, std::uint32_t h,
                      std::vector<std::uint8_t>& out) {
    out.resize(scene.size());
    for (std::uint32_t y = 0; y < h; y++) {
        for (std::uint32_t x = 0; x < w; x++) {
            std::uint32_t sum[3] = {0, 0, 0};
            for (int j = -1; j <= 1; j++) {
                std::int32_t sy = std::clamp(static_cast<std::int32_t>(y) + j, 0, static_cast<std::int32_t>(h) - 1);
                for (int i = -1; i <= 1; i++) {
                    std::int32_t sx =
                        std::clamp(static_cast<std::int32_t>(x) + i, 0, static_cast<std::int32_t>(w) - 1);
                    const std::uint8_t* p = &scene[(static_cast<std::size_t>(sy) * w + static_cast<std::size_t>(sx)) * 4];
                    for (int c = 0; c < 3; c++) sum[c] += p[c];
                }
            }
            std::uint8_t* o = &out[(std::size_t{y} * w + x) * 4];
            for (int c = 0; c < 3; c++) o[c] = static_cast<std::uint8_t>(tone((sum[c] + 4u) / 9u));
            o[3] = 255;
        }
    }
}

// ---- the engine ------------------------------------------------------------------------

struct Options {
    std::uint32_t frames = 1000;
    std::uint32_t in_flight = 3;
    std::uint32_t width = 512;
    std::uint32_t height = 288;
    bool vulkan_only = false;
    std::string out = "engine_postfx.png";
};

struct PushConstants {
    std::uint32_t frame, width, height;
};

struct Slot {
    vkcuda::Image scene, result;  // shared with CUDA
    VkImageView scene_view = VK_NULL_HANDLE, result_view = VK_NULL_HANDLE;
    VkDescriptorSet set = VK_NULL_HANDLE;
    vk_owned_buffer readback{};
    VkCommandBuffer render_cmd = VK_NULL_HANDLE, postfx_cmd = VK_NULL_HANDLE, readback_cmd = VK_NULL_HANDLE;
    std::uint64_t scene_surface = 0, result_surface = 0;  // CUsurfObject
    std::int64_t frame = -1;                              // the frame in flight here, -1: none
    std::uint64_t done_value = 0;                         // its stage 3 signal
};

class Engine {
public:
    explicit Engine(const Options& o) : opt_(o) {}
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;
    ~Engine() { teardown(); }

    void create_device();
    void create_interop();
    void create_pipelines_and_slots();
    void run_frames();
    void unblock() noexcept;
    void teardown() noexcept;

    // Results.
    std::uint64_t frames_checked = 0, pixels = 0, mismatched_pixels = 0, last_checksum = 0;
    double loop_seconds = 0;
    std::vector<std::uint8_t> last_frame;

private:
    vkcuda_timeline_stage next_stage();
    void host_wait(std::uint64_t value);
    void submit(VkCommandBuffer cmd, const vkcuda_timeline_stage& st);
    void begin(VkCommandBuffer cmd);
    void check_slot(Slot& s);
    vkcuda_handoff_info handoff(VkPipelineStageFlags stage, VkAccessFlags access) const {
        return vkcuda_handoff_info{0, queue_family_, stage, access};
    }

    Options opt_;
    // The engine's Vulkan.
    VkInstance instance_ = VK_NULL_HANDLE;
    VkPhysicalDevice physical_ = VK_NULL_HANDLE;
    VkDevice device_ = VK_NULL_HANDLE;
    std::uint32_t queue_family_ = 0;
    VkQueue queue_ = VK_NULL_HANDLE;
    vkcuda_physical_device_support support_{};
    vk_device vk_{};  // for vk_owned_buffer (c_examples/vk_util.h)
    VkCommandPool pool_ = VK_NULL_HANDLE;
    VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
    VkPipelineLayout pipeline_layout_ = VK_NULL_HANDLE;
    VkPipeline render_pipeline_ = VK_NULL_HANDLE, postfx_pipeline_ = VK_NULL_HANDLE;
    VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
    VkSemaphore plain_timeline_ = VK_NULL_HANDLE;  // --vulkan-only
    std::uint64_t plain_next_ = 0;
    // vkcuda.
    vkcuda::Context ctx_;
    vkcuda::Semaphore timeline_;
    VkSemaphore vk_timeline_ = VK_NULL_HANDLE;
    std::vector<Slot> slots_;
    // CUDA.
    bool cuda_ = false;
    bool cu_pushed_ = false;
    CUstream stream_ = nullptr;
    CUmodule module_ = nullptr;
    CUfunction postfx_ = nullptr;
    // Host reference buffers.
    std::vector<std::uint8_t> scene_ref_, result_ref_;
};

void Engine::create_device() {
    std::uint32_t loader_version = VK_API_VERSION_1_0;
    VK_CHECK(vkEnumerateInstanceVersion(&loader_version));
    if (loader_version < VK_API_VERSION_1_2) throw Skip{"the Vulkan loader is older than 1.2"};
    VkApplicationInfo app{};
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.pApplicationName = "engine_postfx";
    app.pEngineName = "vkcuda example engine";
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo ici{};
    ici.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    ici.pApplicationInfo = &app;
    VK_CHECK(vkCreateInstance(&ici, nullptr, &instance_));

    // Which device: ask the library about each one.
    std::uint32_t n = 0;
    VK_CHECK(vkEnumeratePhysicalDevices(instance_, &n, nullptr));
    std::vector<VkPhysicalDevice> devices(n);
    VK_CHECK(vkEnumeratePhysicalDevices(instance_, &n, devices.data()));
    devices.resize(n);
    if (devices.empty()) throw Skip{"no Vulkan physical device"};
    bool any_cuda = false;
    for (std::uint32_t i = 0; i < n; i++) {
        vkcuda_physical_device_support s = vkcuda::physical_device_query(instance_, devices[i], vkGetInstanceProcAddr);
        const std::string twin = !s.cuda_available      ? "no CUDA driver"
                                 : s.cuda_device_found ? "CUDA device " + std::to_string(s.cuda_device_ordinal)
                                                       : "none with this UUID";
        std::printf("device %u: %s, UUID %s, Vulkan %u.%u, external_memory_fd %s, external_semaphore_fd %s, "
                    "timelineSemaphore %s, CUDA twin: %s\n",
                    i, s.device_name, uuid_text(s.device_uuid).c_str(), VK_API_VERSION_MAJOR(s.api_version),
                    VK_API_VERSION_MINOR(s.api_version), s.external_memory_fd ? "yes" : "no",
                    s.external_semaphore_fd ? "yes" : "no", s.timeline_semaphore ? "yes" : "no", twin.c_str());
        any_cuda = any_cuda || s.cuda_available;
        bool usable = opt_.vulkan_only ? (s.external_memory_fd && s.timeline_semaphore &&
                                          s.api_version >= VK_API_VERSION_1_2)
                                       : (s.supported && s.cuda_device_found);
        if (usable && physical_ == VK_NULL_HANDLE) {
            physical_ = devices[i];
            support_ = s;
        }
    }
    if (physical_ == VK_NULL_HANDLE) {
        if (opt_.vulkan_only) throw Skip{"no Vulkan device with VK_KHR_external_memory_fd and timeline semaphores"};
        if (!any_cuda) {
            std::string why = "no usable CUDA driver";
            try {
                static_cast<void>(vkcuda::cuda_driver_version());
            } catch (const vkcuda::Error& e) {
                why += std::string(": ") + e.what();
            }
            throw Skip{why};
        }
        throw Skip{"no Vulkan device is the twin of a CUDA device with all of external memory fd, external "
                   "semaphore fd and timeline semaphores"};
    }
    std::printf("using %s (UUID %s)%s\n", support_.device_name, uuid_text(support_.device_uuid).c_str(),
                opt_.vulkan_only ? ", Vulkan-only" : "");

    // The queue: the first family with compute.
    std::uint32_t nf = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(physical_, &nf, nullptr);
    std::vector<VkQueueFamilyProperties> families(nf);
    vkGetPhysicalDeviceQueueFamilyProperties(physical_, &nf, families.data());
    queue_family_ = UINT32_MAX;
    for (std::uint32_t i = 0; i < nf && queue_family_ == UINT32_MAX; i++)
        if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) queue_family_ = i;
    if (queue_family_ == UINT32_MAX) throw std::runtime_error("the device has no compute queue family");

    // The extensions: what the library asks for, as far as the device has it.
    std::uint32_t ne = 0;
    VK_CHECK(vkEnumerateDeviceExtensionProperties(physical_, nullptr, &ne, nullptr));
    std::vector<VkExtensionProperties> available(ne);
    VK_CHECK(vkEnumerateDeviceExtensionProperties(physical_, nullptr, &ne, available.data()));
    std::vector<const char*> enabled;
    for (const char* want : vkcuda::device_extensions_enumerate()) {
        bool has = std::any_of(available.begin(), available.begin() + ne, [&](const VkExtensionProperties& e) {
            return std::strcmp(e.extensionName, want) == 0;
        });
        std::printf("  %s %s\n", has ? "enabling" : "not on this device:", want);
        if (has) enabled.push_back(want);
    }
    VkPhysicalDeviceTimelineSemaphoreFeatures timeline{};
    timeline.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES;
    timeline.timelineSemaphore = VK_TRUE;
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo qci{};
    qci.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
    qci.queueFamilyIndex = queue_family_;
    qci.queueCount = 1;
    qci.pQueuePriorities = &priority;
    VkDeviceCreateInfo dci{};
    dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
    dci.pNext = &timeline;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    dci.enabledExtensionCount = static_cast<std::uint32_t>(enabled.size());
    dci.ppEnabledExtensionNames = enabled.data();
    VK_CHECK(vkCreateDevice(physical_, &dci, nullptr, &device_));
    vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
    vk_device_init(&vk_, physical_, device_);
    std::printf("engine device: queue family %u, %zu extension(s), timelineSemaphore on\n", queue_family_,
                enabled.size());
}

void Engine::create_interop() {
    vkcuda_context_create_info ci{};
    ci.flags = opt_.vulkan_only ? VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT : 0;
    ci.instance = instance_;
    ci.physical_device = physical_;
    ci.device = device_;
    ci.get_instance_proc_addr = vkGetInstanceProcAddr;
    ctx_ = vkcuda::Context::create(ci);
    std::printf("vkcuda %s: context created on the engine's device\n", std::string(vkcuda::version_string()).c_str());

    VkCommandPoolCreateInfo pci{};
    pci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = queue_family_;
    VK_CHECK(vkCreateCommandPool(device_, &pci, nullptr, &pool_));

    if (opt_.vulkan_only) {
        VkSemaphoreTypeCreateInfo ti{};
        ti.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO;
        ti.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
        VkSemaphoreCreateInfo sci{};
        sci.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO;
        sci.pNext = &ti;
        VK_CHECK(vkCreateSemaphore(device_, &sci, nullptr, &plain_timeline_));
        vk_timeline_ = plain_timeline_;
        std::printf("Vulkan-only: a plain timeline semaphore; stage 2 is shaders/postfx.comp on the queue\n");
        return;
    }

    cuda_ = true;
    vkcuda_cuda_info cinfo = ctx_.cuda_info();
    if (std::memcmp(cinfo.device_uuid, support_.device_uuid, 16) != 0)
        throw std::runtime_error("the context's CUDA device UUID " + uuid_text(cinfo.device_uuid) +
                                 " differs from the Vulkan device's");
    std::int32_t driver = vkcuda::cuda_driver_version();
    std::printf("CUDA device %d (%s context, UUID %s), driver API %d.%d\n", cinfo.device_ordinal,
                cinfo.primary ? "primary" : "borrowed", uuid_text(cinfo.device_uuid).c_str(), driver / 1000,
                driver % 1000 / 10);
    auto cu_check = [&](CUresult r, const char* what) {
        if (r != CUDA_SUCCESS) throw std::runtime_error(std::string(what) + " -> " + cuda_result_text(r));
    };
    cu_check(cuCtxPushCurrent(cinfo.cuda_context), "cuCtxPushCurrent");
    cu_pushed_ = true;
    cu_check(cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    static char info_log[8192], error_log[8192];
    CUjit_option options[4] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                               CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[4] = {info_log, reinterpret_cast<void*>(std::uintptr_t{sizeof info_log}), error_log,
                       reinterpret_cast<void*>(std::uintptr_t{sizeof error_log})};
    CUresult r = cuModuleLoadDataEx(&module_, postfx_ptx, 4, options, values);
    if (r != CUDA_SUCCESS) {
        module_ = nullptr;
        throw std::runtime_error(std::string("cuModuleLoadDataEx(postfx_ptx.h) -> ") + cuda_result_text(r) +
                                 "; JIT log: " + error_log);
    }
    cu_check(cuModuleGetFunction(&postfx_, module_, "postfx"), "cuModuleGetFunction(postfx)");
    std::printf("CUDA kernel postfx from the embedded postfx_ptx.h (%s)\n", POSTFX_PTX_ARCH);

    timeline_ = vkcuda::Semaphore::create(ctx_);  // a timeline at 0
    vk_timeline_ = timeline_.vk_semaphore();
}

void Engine::create_pipelines_and_slots() {
    // One set layout for both passes: binding 0 the scene, binding 1 the result.
    VkDescriptorSetLayoutBinding bindings[2]{};
    for (std::uint32_t i = 0; i < 2; i++) {
        bindings[i].binding = i;
        bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_IMAGE;
        bindings[i].descriptorCount = 1;
        bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo dsl{};
    dsl.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
    dsl.bindingCount = 2;
    dsl.pBindings = bindings;
    VK_CHECK(vkCreateDescriptorSetLayout(device_, &dsl, nullptr, &set_layout_));
    VkPushConstantRange pc{VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(PushConstants)};
    VkPipelineLayoutCreateInfo pli{};
    pli.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
    pli.setLayoutCount = 1;
    pli.pSetLayouts = &set_layout_;
    pli.pushConstantRangeCount = 1;
    pli.pPushConstantRanges = &pc;
    VK_CHECK(vkCreatePipelineLayout(device_, &pli, nullptr, &pipeline_layout_));
    auto make_pipeline = [&](const std::uint32_t* code, std::size_t bytes, VkPipeline* out) {
        VkShaderModuleCreateInfo smi{};
        smi.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
        smi.codeSize = bytes;
        smi.pCode = code;
        VkShaderModule module = VK_NULL_HANDLE;
        VK_CHECK(vkCreateShaderModule(device_, &smi, nullptr, &module));
        VkComputePipelineCreateInfo cpi{};
        cpi.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
        cpi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
        cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
        cpi.stage.module = module;
        cpi.stage.pName = "main";
        cpi.layout = pipeline_layout_;
        VkResult r = vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &cpi, nullptr, out);
        vkDestroyShaderModule(device_, module, nullptr);
        if (r != VK_SUCCESS) throw std::runtime_error(vk_failure("vkCreateComputePipelines", r));
    };
    make_pipeline(render_comp_spv, sizeof render_comp_spv, &render_pipeline_);
    make_pipeline(postfx_comp_spv, sizeof postfx_comp_spv, &postfx_pipeline_);

    const std::uint32_t k = opt_.in_flight;
    VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, 2 * k};
    VkDescriptorPoolCreateInfo dpi{};
    dpi.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
    dpi.maxSets = k;
    dpi.poolSizeCount = 1;
    dpi.pPoolSizes = &ps;
    VK_CHECK(vkCreateDescriptorPool(device_, &dpi, nullptr, &descriptor_pool_));

    slots_.resize(k);
    vkcuda_image_create_info ici{};
    ici.format = VK_FORMAT_R8G8B8A8_UINT;
    ici.extent = {opt_.width, opt_.height, 1};
    ici.usage = VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT;
    for (Slot& s : slots_) {
        s.scene = vkcuda::Image::create(ctx_, ici);
        s.result = vkcuda::Image::create(ctx_, ici);
        if (cuda_) {
            s.scene_surface = s.scene.surface_object(0);
            s.result_surface = s.result.surface_object(0);
        }
        auto view = [&](const vkcuda::Image& image, VkImageView* out) {
            VkImageViewCreateInfo vci{};
            vci.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO;
            vci.image = image.vk_image();
            vci.viewType = VK_IMAGE_VIEW_TYPE_2D;
            vci.format = VK_FORMAT_R8G8B8A8_UINT;
            vci.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
            VK_CHECK(vkCreateImageView(device_, &vci, nullptr, out));
        };
        view(s.scene, &s.scene_view);
        view(s.result, &s.result_view);
        VkDescriptorSetAllocateInfo dai{};
        dai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
        dai.descriptorPool = descriptor_pool_;
        dai.descriptorSetCount = 1;
        dai.pSetLayouts = &set_layout_;
        VK_CHECK(vkAllocateDescriptorSets(device_, &dai, &s.set));
        VkDescriptorImageInfo images[2] = {{VK_NULL_HANDLE, s.scene_view, VK_IMAGE_LAYOUT_GENERAL},
                                           {VK_NULL_HANDLE, s.result_view, VK_IMAGE_LAYOUT_GENERAL}};
        VkWriteDescriptorSet w{};
        w.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
        w.dstSet = s.set;
        w.dstBinding = 0;
        w.descriptorCount = 2;
        w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_IMAGE;
        w.pImageInfo = images;
        vkUpdateDescriptorSets(device_, 1, &w, 0, nullptr);
        VK_CHECK(vk_owned_buffer_create(&vk_, VkDeviceSize{4} * opt_.width * opt_.height,
                                        VK_BUFFER_USAGE_TRANSFER_DST_BIT, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                                        VK_MEMORY_PROPERTY_HOST_CACHED_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                        &s.readback));
        VkCommandBuffer cmds[3];
        VkCommandBufferAllocateInfo cai{};
        cai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
        cai.commandPool = pool_;
        cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        cai.commandBufferCount = 3;
        VK_CHECK(vkAllocateCommandBuffers(device_, &cai, cmds));
        s.render_cmd = cmds[0];
        s.postfx_cmd = cmds[1];
        s.readback_cmd = cmds[2];
    }

    // Both images of every slot start on CUDA's side: released from UNDEFINED (they
    // are new: nobody wrote them), so every frame begins with an acquire.
    VkCommandBuffer cmd = slots_[0].render_cmd;
    begin(cmd);
    for (Slot& s : slots_) {
        s.scene.cmd_release_to_cuda(cmd, handoff(0, 0), VK_IMAGE_LAYOUT_UNDEFINED);
        s.result.cmd_release_to_cuda(cmd, handoff(0, 0), VK_IMAGE_LAYOUT_UNDEFINED);
    }
    VK_CHECK(vkEndCommandBuffer(cmd));
    const vkcuda_timeline_stage st = next_stage();
    submit(cmd, st);
    host_wait(st.signal_value);
    std::printf("%u frame slots: scene and result images %ux%u R8G8B8A8_UINT (storage), %s\n", k, opt_.width,
                opt_.height, cuda_ ? "CUDA surfaces" : "no CUDA side");
}

vkcuda_timeline_stage Engine::next_stage() {
    if (cuda_) return timeline_.next_stage();
    vkcuda_timeline_stage st{plain_next_, plain_next_ + 1};
    plain_next_++;
    return st;
}

void Engine::host_wait(std::uint64_t value) {
    if (cuda_) {
        timeline_.host_wait(value, kWaitTimeoutNs);  // throws vkcuda::Error (TIMEOUT) after 10 s
        return;
    }
    VkSemaphoreWaitInfo wi{};
    wi.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO;
    wi.semaphoreCount = 1;
    wi.pSemaphores = &plain_timeline_;
    wi.pValues = &value;
    VK_CHECK(vkWaitSemaphores(device_, &wi, kWaitTimeoutNs));
}

void Engine::begin(VkCommandBuffer cmd) {
    VK_CHECK(vkResetCommandBuffer(cmd, 0));
    VkCommandBufferBeginInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    VK_CHECK(vkBeginCommandBuffer(cmd, &bi));
}

// One queue submit: waits for st.wait_value and signals st.signal_value on the timeline.
void Engine::submit(VkCommandBuffer cmd, const vkcuda_timeline_stage& st) {
    VkTimelineSemaphoreSubmitInfo ts{};
    ts.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO;
    ts.waitSemaphoreValueCount = 1;
    ts.pWaitSemaphoreValues = &st.wait_value;
    ts.signalSemaphoreValueCount = 1;
    ts.pSignalSemaphoreValues = &st.signal_value;
    VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    VkSubmitInfo si{};
    si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    si.pNext = &ts;
    si.waitSemaphoreCount = 1;
    si.pWaitSemaphores = &vk_timeline_;
    si.pWaitDstStageMask = &wait_stage;
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    si.signalSemaphoreCount = 1;
    si.pSignalSemaphores = &vk_timeline_;
    VK_CHECK(vkQueueSubmit(queue_, 1, &si, VK_NULL_HANDLE));
}

void Engine::run_frames() {
    const std::uint32_t w = opt_.width, h = opt_.height, k = opt_.in_flight;
    const std::uint32_t gx = (w + kGroup - 1) / kGroup, gy = (h + kGroup - 1) / kGroup;
    const auto t0 = std::chrono::steady_clock::now();
    for (std::uint32_t f = 0; f < opt_.frames; f++) {
        Slot& s = slots_[f % k];
        if (s.frame >= 0) {  // the slot's previous frame: wait for it, check it
            host_wait(s.done_value);
            check_slot(s);
        }
        const PushConstants push{f, w, h};

        // Stage 1, Vulkan: render the scene.
        vkcuda_timeline_stage st = next_stage();
        begin(s.render_cmd);
        s.scene.cmd_acquire_from_cuda(s.render_cmd, handoff(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                                            VK_ACCESS_SHADER_WRITE_BIT),
                                      VK_IMAGE_LAYOUT_GENERAL);
        vkCmdBindPipeline(s.render_cmd, VK_PIPELINE_BIND_POINT_COMPUTE, render_pipeline_);
        vkCmdBindDescriptorSets(s.render_cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_layout_, 0, 1, &s.set, 0,
                                nullptr);
        vkCmdPushConstants(s.render_cmd, pipeline_layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
        vkCmdDispatch(s.render_cmd, gx, gy, 1);
        s.scene.cmd_release_to_cuda(s.render_cmd, handoff(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                                          VK_ACCESS_SHADER_WRITE_BIT),
                                    VK_IMAGE_LAYOUT_GENERAL);
        VK_CHECK(vkEndCommandBuffer(s.render_cmd));
        submit(s.render_cmd, st);

        // Stage 2, CUDA (or its Vulkan twin): scene -> result.
        st = next_stage();
        if (cuda_) {
            timeline_.cuda_wait(st.wait_value, stream_);
            std::uint32_t width = w, height = h;
            void* params[4] = {&s.scene_surface, &s.result_surface, &width, &height};
            CUresult r = cuLaunchKernel(postfx_, gx, gy, 1, kGroup, kGroup, 1, 0, stream_, params, nullptr);
            if (r != CUDA_SUCCESS)
                throw std::runtime_error(std::string("cuLaunchKernel(postfx) -> ") + cuda_result_text(r));
            timeline_.cuda_signal(st.signal_value, stream_);
        } else {
            VkCommandBuffer c = s.postfx_cmd;
            begin(c);
            s.scene.cmd_acquire_from_cuda(c, handoff(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT),
                                          VK_IMAGE_LAYOUT_GENERAL);
            s.result.cmd_acquire_from_cuda(c, handoff(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                                      VK_ACCESS_SHADER_WRITE_BIT),
                                           VK_IMAGE_LAYOUT_GENERAL);
            vkCmdBindPipeline(c, VK_PIPELINE_BIND_POINT_COMPUTE, postfx_pipeline_);
            vkCmdBindDescriptorSets(c, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_layout_, 0, 1, &s.set, 0, nullptr);
            vkCmdPushConstants(c, pipeline_layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
            vkCmdDispatch(c, gx, gy, 1);
            s.result.cmd_release_to_cuda(c, handoff(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT),
                                         VK_IMAGE_LAYOUT_GENERAL);
            s.scene.cmd_release_to_cuda(c, handoff(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT),
                                        VK_IMAGE_LAYOUT_GENERAL);
            VK_CHECK(vkEndCommandBuffer(c));
            submit(c, st);
        }

        // Stage 3, Vulkan: take the result back, copy it out, give it back to CUDA.
        st = next_stage();
        VkCommandBuffer c = s.readback_cmd;
        begin(c);
        s.result.cmd_acquire_from_cuda(c, handoff(VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT),
                                       VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL);
        VkBufferImageCopy region{};
        region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
        region.imageExtent = {w, h, 1};
        vkCmdCopyImageToBuffer(c, s.result.vk_image(), VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, s.readback.buffer, 1,
                               &region);
        vk_cmd_barrier(c, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
        // From TRANSFER_SRC_OPTIMAL, the layout it is in: never UNDEFINED once written.
        s.result.cmd_release_to_cuda(c, handoff(VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT),
                                     VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL);
        VK_CHECK(vkEndCommandBuffer(c));
        submit(c, st);
        s.frame = f;
        s.done_value = st.signal_value;
    }
    // The last frames, oldest first.
    for (std::uint32_t i = 0; i < k; i++) {
        Slot& s = slots_[(opt_.frames + i) % k];
        if (s.frame < 0) continue;
        host_wait(s.done_value);
        check_slot(s);
    }
    loop_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Compares the slot's readback with the host reference of its frame.
void Engine::check_slot(Slot& s) {
    const std::uint32_t w = opt_.width, h = opt_.height, f = static_cast<std::uint32_t>(s.frame);
    VK_CHECK(vk_owned_buffer_invalidate(&vk_, &s.readback));
    render_reference(f, w, h, scene_ref_);
    postfx_reference(scene_ref_, w, h, result_ref_);
    const std::uint8_t* got = static_cast<const std::uint8_t*>(s.readback.mapped);
    std::uint64_t bad = 0, checksum = 1469598103934665603ull;
    for (std::size_t i = 0; i < std::size_t{w} * h; i++) {
        if (std::memcmp(got + 4 * i, &result_ref_[4 * i], 4) != 0) {
            if (mismatched_pixels + bad < 5)
                std::printf("  frame %u: pixel (%zu, %zu) is %u,%u,%u,%u, expected %u,%u,%u,%u\n", f, i % w, i / w,
                            got[4 * i], got[4 * i + 1], got[4 * i + 2], got[4 * i + 3], result_ref_[4 * i],
                            result_ref_[4 * i + 1], result_ref_[4 * i + 2], result_ref_[4 * i + 3]);
            bad++;
        }
        for (int c = 0; c < 4; c++) checksum = (checksum ^ got[4 * i + c]) * 1099511628211ull;
    }
    frames_checked++;
    pixels += std::uint64_t{w} * h;
    mismatched_pixels += bad;
    if (f + 1 == opt_.frames) {
        last_frame.assign(got, got + std::size_t{4} * w * h);
        last_checksum = checksum;
    }
    s.frame = -1;
}

// After a failure, queued work may wait for values nobody will signal: a host signal
// far ahead releases every waiter, so the teardown does not hang.
void Engine::unblock() noexcept {
    if (device_ == VK_NULL_HANDLE || vk_timeline_ == VK_NULL_HANDLE) return;
    std::uint64_t v = 0;
    if (vkGetSemaphoreCounterValue(device_, vk_timeline_, &v) != VK_SUCCESS) return;
    v += std::uint64_t{1} << 20;
    if (cuda_) {
        vkcuda_result r = vkcuda_semaphore_host_signal(timeline_.get(), v);
        static_cast<void>(r);
    } else {
        VkSemaphoreSignalInfo si{};
        si.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO;
        si.semaphore = vk_timeline_;
        si.value = v;
        static_cast<void>(vkSignalSemaphore(device_, &si));
    }
    std::printf("  unblocking the queue and the stream: host-signalled %" PRIu64 "\n", v);
}

// Everything in reverse: GPU work done, the engine's objects that use the shared
// images, the shared objects, CUDA, the vkcuda context, then the engine's device.
void Engine::teardown() noexcept {
    if (stream_ != nullptr) {
        CUresult r = cuStreamSynchronize(stream_);
        if (r != CUDA_SUCCESS) std::printf("  teardown: cuStreamSynchronize -> %s\n", cuda_result_text(r));
    }
    if (device_ != VK_NULL_HANDLE) {
        VkResult r = vkDeviceWaitIdle(device_);
        if (r != VK_SUCCESS) std::printf("  teardown: vkDeviceWaitIdle -> %s\n", vk_result_name(r));
    }
    for (Slot& s : slots_) {
        if (s.scene_view != VK_NULL_HANDLE) vkDestroyImageView(device_, s.scene_view, nullptr);
        if (s.result_view != VK_NULL_HANDLE) vkDestroyImageView(device_, s.result_view, nullptr);
        if (s.readback.buffer != VK_NULL_HANDLE) vk_owned_buffer_destroy(&vk_, &s.readback);
        s.scene.reset();  // the CUDA surface and array first, then the VkImage and memory
        s.result.reset();
    }
    slots_.clear();
    if (descriptor_pool_ != VK_NULL_HANDLE) vkDestroyDescriptorPool(device_, descriptor_pool_, nullptr);
    if (render_pipeline_ != VK_NULL_HANDLE) vkDestroyPipeline(device_, render_pipeline_, nullptr);
    if (postfx_pipeline_ != VK_NULL_HANDLE) vkDestroyPipeline(device_, postfx_pipeline_, nullptr);
    if (pipeline_layout_ != VK_NULL_HANDLE) vkDestroyPipelineLayout(device_, pipeline_layout_, nullptr);
    if (set_layout_ != VK_NULL_HANDLE) vkDestroyDescriptorSetLayout(device_, set_layout_, nullptr);
    if (pool_ != VK_NULL_HANDLE) vkDestroyCommandPool(device_, pool_, nullptr);
    if (plain_timeline_ != VK_NULL_HANDLE) vkDestroySemaphore(device_, plain_timeline_, nullptr);
    descriptor_pool_ = VK_NULL_HANDLE;
    render_pipeline_ = postfx_pipeline_ = VK_NULL_HANDLE;
    pipeline_layout_ = VK_NULL_HANDLE;
    set_layout_ = VK_NULL_HANDLE;
    pool_ = VK_NULL_HANDLE;
    plain_timeline_ = VK_NULL_HANDLE;
    timeline_.reset();
    vk_timeline_ = VK_NULL_HANDLE;
    if (cuda_) {
        if (stream_ != nullptr) cuStreamDestroy(stream_);
        if (module_ != nullptr) cuModuleUnload(module_);
        if (cu_pushed_) {
            CUcontext popped = nullptr;
            cuCtxPopCurrent(&popped);
        }
        stream_ = nullptr;
        module_ = nullptr;
        cu_pushed_ = false;
    }
    ctx_.reset();  // before the VkDevice it borrows
    if (device_ != VK_NULL_HANDLE) vkDestroyDevice(device_, nullptr);
    device_ = VK_NULL_HANDLE;
    if (instance_ != VK_NULL_HANDLE) vkDestroyInstance(instance_, nullptr);
    instance_ = VK_NULL_HANDLE;
}

void usage() {
    std::printf(
        "usage: engine_postfx [--frames N] [--in-flight K] [--size WxH] [--out FILE] [--vulkan-only]\n"
        "  defaults: 1000 frames, 3 in flight (1 to %u), 512x288 (16x16 to 4096x4096), engine_postfx.png\n",
        kMaxSlots);
}

bool parse(int argc, char** argv, Options& o) {
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
        if (a == "--vulkan-only") {
            o.vulkan_only = true;
        } else if (a == "--frames" && v != nullptr) {
            o.frames = static_cast<std::uint32_t>(std::strtoul(v, nullptr, 10));
            i++;
        } else if (a == "--in-flight" && v != nullptr) {
            o.in_flight = static_cast<std::uint32_t>(std::strtoul(v, nullptr, 10));
            i++;
        } else if (a == "--size" && v != nullptr) {
            unsigned w = 0, h = 0;
            if (std::sscanf(v, "%ux%u", &w, &h) != 2) return false;
            o.width = w;
            o.height = h;
            i++;
        } else if (a == "--out" && v != nullptr) {
            o.out = v;
            i++;
        } else {
            return false;
        }
    }
    return o.frames >= 1 && o.in_flight >= 1 && o.in_flight <= kMaxSlots && o.width >= 16 && o.height >= 16 &&
           o.width <= 4096 && o.height <= 4096;
}

}  // namespace

int main(int argc, char** argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    Options opt;
    if (argc > 1 && (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0)) {
        usage();
        return 0;
    }
    if (!parse(argc, argv, opt)) {
        usage();
        std::printf("engine_postfx: FAIL: bad arguments\n");
        return 1;
    }
    std::printf("engine_postfx: vkcuda %s (vkcuda.hpp, %s); %u frames, %u in flight, %ux%u%s\n",
                std::string(vkcuda::version_string()).c_str(), VKCUDA_HPP_EXCEPTIONS ? "exceptions" : "no exceptions",
                opt.frames, opt.in_flight, opt.width, opt.height, opt.vulkan_only ? ", --vulkan-only" : "");
    const auto start = std::chrono::steady_clock::now();
    std::string failure;
    bool ran = false;
    std::uint64_t frames_checked = 0, pixels = 0, mismatched = 0, checksum = 0;
    double loop_s = 0;
    std::vector<std::uint8_t> last;
    {
        Engine engine(opt);
        try {
            engine.create_device();
            engine.create_interop();
            engine.create_pipelines_and_slots();
            engine.run_frames();
            ran = true;
        } catch (const Skip& s) {
            engine.teardown();
            return rig_skip("engine_postfx", s.why.c_str());
        } catch (const vkcuda::Error& e) {
            failure = std::string("vkcuda::Error: ") + e.what();
        } catch (const std::exception& e) {
            failure = e.what();
        }
        if (!ran) {
            std::printf("  FAIL: %s\n", failure.c_str());
            engine.unblock();
        }
        frames_checked = engine.frames_checked;
        pixels = engine.pixels;
        mismatched = engine.mismatched_pixels;
        checksum = engine.last_checksum;
        loop_s = engine.loop_seconds;
        last = std::move(engine.last_frame);
    }  // the engine's teardown

    bool ok = ran && mismatched == 0 && frames_checked == opt.frames;
    if (ran)
        std::printf("frame loop: %" PRIu64 " frames checked, %" PRIu64 " pixels compared, %" PRIu64
                    " mismatched; %.1f s (%.2f ms a frame, host checks included); last frame FNV-1a %016" PRIx64 "\n",
                    frames_checked, pixels, mismatched, loop_s, loop_s * 1e3 / opt.frames, checksum);
    if (ok && !last.empty()) {
#ifdef VKCUDA_HAVE_STB_IMAGE_WRITE
        const int w = static_cast<int>(opt.width), h = static_cast<int>(opt.height);
        if (stbi_write_png(opt.out.c_str(), w, h, 4, last.data(), 4 * w) == 0) {
            std::printf("  FAIL: writing %s (stbi_write_png failed)\n", opt.out.c_str());
            ok = false;
        } else {
            std::printf("wrote %s (%ux%u RGBA, stb_image_write): frame %u after %s\n", opt.out.c_str(), opt.width,
                        opt.height, opt.frames - 1,
                        opt.vulkan_only ? "shaders/postfx.comp" : "the CUDA post-processing");
        }
#else
        std::printf("no PNG written: built without stb_image_write.h (apt-get install libstb-dev)\n");
#endif
    }
    vkcuda_live_objects live = vkcuda::live_objects();
    const vkcuda_live_objects zero{};
    if (std::memcmp(&live, &zero, sizeof live) != 0) {
        std::printf("  FAIL: left alive: %" PRId64 " contexts, %" PRId64 " images, %" PRId64 " memories, %" PRId64
                    " semaphores, %" PRId64 " CUDA external memories, %" PRId64 " CUDA external semaphores\n",
                    live.contexts, live.vk_images, live.vk_memories, live.vk_semaphores, live.cuda_external_memories,
                    live.cuda_external_semaphores);
        ok = false;
    }
    double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("engine_postfx: %s: %" PRIu64 " of %u frames checked, %" PRIu64 " of %" PRIu64
                " pixels match the host reference, nothing left alive: %s%s (%.1f s)\n",
                ok ? "PASS" : "FAIL", frames_checked, opt.frames, pixels - mismatched, pixels,
                std::memcmp(&live, &zero, sizeof live) == 0 ? "yes" : "no",
                opt.vulkan_only ? " [Vulkan-only: stage 2 by shaders/postfx.comp]" : " [CUDA post-processing]",
                total);
    return ok ? 0 : 1;
}
