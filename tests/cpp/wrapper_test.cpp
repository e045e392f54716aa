// Unit tests of include/vkcuda.hpp on any Vulkan device with VK_KHR_external_memory_fd
// (lavapipe in CI), with Vulkan-only standalone contexts:
//   - the error types (Error, Result, Fallible) and the error mode this file was built in
//   - handles are move-only; moves leave the source empty; release/reset; Fd
//   - buffers: create, info, errors as vkcuda::Error / Result with code and message
//   - fd export/import between two contexts: who owns the fd (vkcuda::Fd) after a
//     failed and a successful import
//   - images: create, info, unsupported formats, the handoff barriers recorded and run
//     (the Vulkan loader, linked)
//   - semaphores: EXTENSION_NOT_PRESENT where the device lacks VK_KHR_external_semaphore_fd
//   - destroy order: a context destroyed before its objects
//   - cross-process descriptions and a buffer sent over a socketpair (when vkcuda.h has them)
//   - nothing leaked: live objects and open fds back to their start
// What the data paths carry (buffer and image round trips) is tested once, in the Rust
// suites (tests/buffer.rs, tests/handoff.rs) and the C examples; here each wrapper class
// has one success case and its error mapping.
// The same file is built with exceptions (C++17 and C++20) and with -fno-exceptions;
// it is linked with second_tu.cpp (the header in a second translation unit) and
// no_exceptions_tu.cpp (the header in the other error mode in the same program).
//
// Exits 0 when every check passed, 77 when there is no usable Vulkan device (CTest:
// skipped), 1 otherwise.
#include "harness.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cinttypes>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <vulkan/vulkan.h>

extern "C" {
#include "vk_util.h"
}

// The other translation units (see the file comment).
int second_tu_check();
int no_exceptions_tu_check();

namespace {

// ---- compile-time properties --------------------------------------------------------

template <class H>
constexpr bool move_only_v = !std::is_copy_constructible_v<H> && !std::is_copy_assignable_v<H> &&
                             std::is_nothrow_move_constructible_v<H> && std::is_nothrow_move_assignable_v<H> &&
                             std::is_nothrow_default_constructible_v<H>;
static_assert(move_only_v<vkcuda::Context>);
static_assert(move_only_v<vkcuda::Buffer>);
static_assert(move_only_v<vkcuda::Image>);
static_assert(move_only_v<vkcuda::Semaphore>);
static_assert(move_only_v<vkcuda::Fd>);
static_assert(std::is_base_of_v<std::runtime_error, vkcuda::Error>);
static_assert(std::is_nothrow_copy_constructible_v<vkcuda::Error>);
static_assert(std::is_same_v<vkcuda::Context::handle_type, vkcuda_context>);
#if VKCUDA_HPP_EXCEPTIONS
static_assert(std::is_same_v<vkcuda::Fallible<int>, int>);
static_assert(std::is_same_v<vkcuda::Fallible<void>, void>);
static_assert(std::is_same_v<decltype(vkcuda::Buffer::create(std::declval<const vkcuda::Context&>(), {})),
                             vkcuda::Buffer>);
#else
static_assert(std::is_same_v<vkcuda::Fallible<int>, vkcuda::Result<int>>);
static_assert(std::is_same_v<vkcuda::Fallible<void>, vkcuda::Result<void>>);
static_assert(std::is_same_v<decltype(vkcuda::Buffer::create(std::declval<const vkcuda::Context&>(), {})),
                             vkcuda::Result<vkcuda::Buffer>>);
#endif

// ---- helpers ------------------------------------------------------------------------

// A recording's first failure: with exceptions a failed call throws out of the
// recording (and the test); without, NOTE(rec, call) keeps the first error.
struct Recording {
    bool ok = true;
    std::string error;
    void note(const vkcuda::Result<void>& result) {
        if (!result.ok() && ok) {
            ok = false;
            error = result.error().what();
        }
    }
};
#if VKCUDA_HPP_EXCEPTIONS
#define NOTE(rec, expr) (expr)
#else
#define NOTE(rec, expr) (rec).note(expr)
#endif

int open_fd_count() {
    int n = 0;
    DIR* d = opendir("/proc/self/fd");
    if (d == nullptr) return -1;
    while (struct dirent* e = readdir(d))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n - 1;  // the directory's own fd
}

bool fd_is_open(int fd) { return fd >= 0 && fcntl(fd, F_GETFD) != -1; }

vkcuda_standalone_create_info vulkan_only() {
    vkcuda_standalone_create_info si{};
    si.flags = VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT;
    return si;
}

// The Vulkan side of a context for the tests: its functions, a command buffer, a fence.
class Gpu {
public:
    Gpu() = default;
    Gpu(const Gpu&) = delete;
    Gpu& operator=(const Gpu&) = delete;
    ~Gpu() {
        if (vk.device == VK_NULL_HANDLE) return;
        if (fence != VK_NULL_HANDLE) vkDestroyFence(vk.device, fence, nullptr);
        if (pool != VK_NULL_HANDLE) vkDestroyCommandPool(vk.device, pool, nullptr);
    }

    // A command pool, buffer and fence on the context's device; "" or why not.
    std::string init(const vkcuda_vulkan_handles& h) {
        handles = h;
        vk_device_init(&vk, h.physical_device, h.device);
        VkCommandPoolCreateInfo pci{};
        pci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
        pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
        pci.queueFamilyIndex = h.queue_family_index;
        if (VkResult r = vkCreateCommandPool(h.device, &pci, nullptr, &pool); r != VK_SUCCESS)
            return std::string("vkCreateCommandPool: ") + vk_result_name(r);
        VkCommandBufferAllocateInfo cai{};
        cai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
        cai.commandPool = pool;
        cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        cai.commandBufferCount = 1;
        if (VkResult r = vkAllocateCommandBuffers(h.device, &cai, &cmd); r != VK_SUCCESS)
            return std::string("vkAllocateCommandBuffers: ") + vk_result_name(r);
        VkFenceCreateInfo fci{};
        fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
        if (VkResult r = vkCreateFence(h.device, &fci, nullptr, &fence); r != VK_SUCCESS)
            return std::string("vkCreateFence: ") + vk_result_name(r);
        return "";
    }

    // Records with `record(cmd)`, submits, waits. VK_SUCCESS or the failing result.
    template <class F>
    VkResult run(F&& record) {
        VkResult r = vkResetCommandBuffer(cmd, 0);
        VkCommandBufferBeginInfo bi{};
        bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        if (r == VK_SUCCESS) r = vkBeginCommandBuffer(cmd, &bi);
        if (r != VK_SUCCESS) return r;
        record(cmd);
        if ((r = vkEndCommandBuffer(cmd)) != VK_SUCCESS) return r;
        VkSubmitInfo si{};
        si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
        si.commandBufferCount = 1;
        si.pCommandBuffers = &cmd;
        if ((r = vkQueueSubmit(handles.queue, 1, &si, fence)) != VK_SUCCESS) return r;
        if ((r = vkWaitForFences(vk.device, 1, &fence, VK_TRUE, 30ull * 1000 * 1000 * 1000)) != VK_SUCCESS)
            return r;
        return vkResetFences(vk.device, 1, &fence);
    }

    vk_device vk{};
    vkcuda_vulkan_handles handles{};
    VkCommandPool pool = VK_NULL_HANDLE;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
};

// ---- the tests ------------------------------------------------------------------------

void test_versions() {
    CHECK(vkcuda::version() == VKCUDA_VERSION, "version() %u != VKCUDA_VERSION %u", vkcuda::version(),
          static_cast<unsigned>(VKCUDA_VERSION));
    std::string want = std::to_string(VKCUDA_VERSION_MAJOR) + "." + std::to_string(VKCUDA_VERSION_MINOR) + "." +
                       std::to_string(VKCUDA_VERSION_PATCH);
    CHECK(vkcuda::version_string() == want, "version_string() is %s, want %s",
          std::string(vkcuda::version_string()).c_str(), want.c_str());
    CHECK(vkcuda::result_to_string(VKCUDA_ERROR_TIMEOUT) == "VKCUDA_ERROR_TIMEOUT", "result_to_string");
    std::printf("    vkcuda %s, %s\n", std::string(vkcuda::version_string()).c_str(),
                VKCUDA_HPP_EXCEPTIONS ? "exceptions (Fallible<T> = T)" : "no exceptions (Fallible<T> = Result<T>)");
}

void test_error_types() {
    vkcuda::Error e(VKCUDA_ERROR_INVALID_ARGUMENT, "vkcuda_x: size must not be 0");
    CHECK(e.code() == VKCUDA_ERROR_INVALID_ARGUMENT, "code");
    CHECK(e.code_name() == "VKCUDA_ERROR_INVALID_ARGUMENT", "code_name");
    CHECK(e.message() == "vkcuda_x: size must not be 0", "message() is \"%s\"", std::string(e.message()).c_str());
    CHECK(std::string_view(e.what()) == "VKCUDA_ERROR_INVALID_ARGUMENT: vkcuda_x: size must not be 0", "what() is %s",
          e.what());
    vkcuda::Error copy = e;
    CHECK(copy.code() == e.code() && copy.message() == e.message(), "a copy differs");
    const std::runtime_error& base = e;
    CHECK(std::string_view(base.what()) == e.what(), "what() through std::runtime_error");
    vkcuda::Error bare(VKCUDA_ERROR_TIMEOUT, "");
    CHECK(std::string_view(bare.what()) == "VKCUDA_ERROR_TIMEOUT" && bare.message().empty(), "no message: %s",
          bare.what());

    vkcuda::Result<int> good(42);
    CHECK(good.ok() && static_cast<bool>(good) && good.value() == 42 && *good == 42, "Result<int> success");
    CHECK(good.code() == VKCUDA_SUCCESS && good.message().empty() && good.error().code() == VKCUDA_SUCCESS,
          "a success has code VKCUDA_SUCCESS and no message");
    vkcuda::Result<int> bad(e);
    CHECK(!bad.ok() && !bad && bad.code() == VKCUDA_ERROR_INVALID_ARGUMENT && bad.message() == e.message(),
          "Result<int> failure");
    vkcuda::Result<std::string> s(std::string("abc"));
    CHECK(s->size() == 3, "operator->");
    std::string moved = std::move(s).value();
    CHECK(moved == "abc", "value() &&");
    vkcuda::Result<void> v;
    CHECK(v.ok() && v.code() == VKCUDA_SUCCESS, "Result<void> success");
    vkcuda::Result<void> vbad(vkcuda::Error(VKCUDA_ERROR_TIMEOUT, "late"));
    CHECK(!vbad.ok() && vbad.code() == VKCUDA_ERROR_TIMEOUT && vbad.message() == "late", "Result<void> failure");
#if VKCUDA_HPP_EXCEPTIONS
    try {
        static_cast<void>(bad.value());
        harness::fail(__FILE__, __LINE__, "Result::value() of an error did not throw");
    } catch (const vkcuda::Error& thrown) {
        CHECK(thrown.code() == VKCUDA_ERROR_INVALID_ARGUMENT, "value() threw %s", thrown.what());
    }
#endif
    // An Error made from a real failure carries the library's message.
    vkcuda_format_info fi{};
    vkcuda_result r = vkcuda_format_query(VK_FORMAT_R8G8B8_UNORM, &fi);
    vkcuda::Error real(r);
    CHECK(real.code() == VKCUDA_ERROR_UNSUPPORTED && harness::contains(real.message(), "3 channels") &&
              real.message() == vkcuda::last_error_message(),
          "Error(code) took \"%s\"", real.what());
    EXPECT_ERROR(vkcuda::format_query(VK_FORMAT_R8G8B8_UNORM), VKCUDA_ERROR_UNSUPPORTED, "VK_FORMAT_R8G8B8A8_UNORM");
    GET(rgba, vkcuda::format_query(VK_FORMAT_R8G8B8A8_UINT));
    CHECK(rgba.channels == 4 && rgba.bytes_per_texel == 4 && rgba.numeric == VKCUDA_FORMAT_NUMERIC_UINT,
          "format_query(R8G8B8A8_UINT)");
}

void test_queries() {
    GET(names, vkcuda::device_extensions_enumerate());
    bool memory_fd = false;
    for (const char* n : names) {
        std::printf("    device extension: %s\n", n);
        if (std::string_view(n) == "VK_KHR_external_memory_fd") memory_fd = true;
    }
    CHECK(memory_fd, "VK_KHR_external_memory_fd is not among the %zu names", names.size());
    GET(devices, vkcuda::physical_devices_enumerate());
    REQUIRE(!devices.empty(), "no physical device");
    for (const auto& d : devices)
        std::printf("    device: %s, external_memory_fd %u, external_semaphore_fd %u, cuda %u\n", d.device_name,
                    d.external_memory_fd, d.external_semaphore_fd, d.cuda_available);
    GET(ctx, vkcuda::Context::create_standalone(vulkan_only()));
    GET(h, ctx.vulkan_handles());
    CHECK(h.instance != VK_NULL_HANDLE && h.device != VK_NULL_HANDLE && h.queue != VK_NULL_HANDLE &&
              h.get_instance_proc_addr != nullptr,
          "a standalone context's handles are incomplete");
    GET(sup, vkcuda::physical_device_query(h.instance, h.physical_device, h.get_instance_proc_addr));
    CHECK(sup.external_memory_fd == VK_TRUE && sup.timeline_semaphore == VK_TRUE, "query_physical_device");
    EXPECT_ERROR(ctx.cuda_info(), VKCUDA_ERROR_CUDA_UNAVAILABLE, "VULKAN_ONLY");
    EXPECT_ERROR(vkcuda::physical_device_query(h.instance, VK_NULL_HANDLE, h.get_instance_proc_addr),
                 VKCUDA_ERROR_NULL_POINTER, "physical_device");
}

void test_buffers_and_errors() {
    GET(ctx, vkcuda::Context::create_standalone(vulkan_only()));
    vkcuda_buffer_create_info bi{};
    bi.size = 4096 + 3;
    GET(buf, vkcuda::Buffer::create(ctx, bi));
    REQUIRE(static_cast<bool>(buf), "a created Buffer is empty");
    GET(info, buf.info());
    CHECK(info.size == bi.size && info.allocation_size >= info.size && info.buffer != VK_NULL_HANDLE &&
              info.memory != VK_NULL_HANDLE && info.allocator == VKCUDA_ALLOCATOR_VULKAN && info.wrapped == VK_FALSE,
          "info: size %" PRIu64 " allocation %" PRIu64, info.size, info.allocation_size);
    CHECK(buf.vk_buffer() == info.buffer, "vk_buffer() != info().buffer");
    EXPECT_ERROR(buf.cuda_pointer(), VKCUDA_ERROR_CUDA_UNAVAILABLE, "vkcuda_buffer_get_cuda_pointer");

    vkcuda_buffer_create_info zero{};
    EXPECT_ERROR(vkcuda::Buffer::create(ctx, zero), VKCUDA_ERROR_INVALID_ARGUMENT, "size must not be 0");
    vkcuda_buffer_create_info bad_allocator{};
    bad_allocator.size = 16;
    bad_allocator.allocator = static_cast<vkcuda_allocator>(7);
    EXPECT_ERROR(vkcuda::Buffer::create(ctx, bad_allocator), VKCUDA_ERROR_INVALID_ARGUMENT, "allocator");
    vkcuda_buffer_create_info flags{};
    flags.size = 16;
    flags.flags = 0x80;
    EXPECT_ERROR(vkcuda::Buffer::create(ctx, flags), VKCUDA_ERROR_INVALID_ARGUMENT, "flags");
    vkcuda::Context no_context;
    EXPECT_ERROR(vkcuda::Buffer::create(no_context, bi), VKCUDA_ERROR_NULL_POINTER, "context");
    vkcuda::Buffer empty;
    EXPECT_ERROR(empty.info(), VKCUDA_ERROR_NULL_POINTER, "buffer");
    CHECK(empty.vk_buffer() == VK_NULL_HANDLE, "an empty Buffer has a VkBuffer");
    // After an error, a successful call clears the message.
    GET(again, buf.info());
    CHECK(again.size == info.size && vkcuda::last_error_message().empty(), "the message after a success is \"%s\"",
          std::string(vkcuda::last_error_message()).c_str());
    // CUDA-allocated buffers need CUDA.
    vkcuda_buffer_create_info cuda_alloc{};
    cuda_alloc.size = 64;
    cuda_alloc.allocator = VKCUDA_ALLOCATOR_CUDA;
    EXPECT_ERROR(vkcuda::Buffer::create(ctx, cuda_alloc), VKCUDA_ERROR_CUDA_UNAVAILABLE, "");
}

void test_host_buffers() {
    GET(ctx, vkcuda::Context::create_standalone(vulkan_only()));
    GET(before, vkcuda::live_objects());
    {
        GET(hb, vkcuda::HostBuffer::create(ctx, 4096 + 3));
        GET(info, hb.info());
        CHECK(info.size == 4096 + 3 && info.buffer != VK_NULL_HANDLE && info.data != nullptr,
              "host buffer info: size %" PRIu64, info.size);
        GET(during, vkcuda::live_objects());
        CHECK(during.vk_buffers == before.vk_buffers + 1 && during.vk_memories == before.vk_memories + 1,
              "a HostBuffer is one VkBuffer and one VkDeviceMemory");
        GET(again, hb.info());
        CHECK(again.data == info.data, "the mapping moved between two info() calls");  // its bytes: tests/staging.rs
    }
    GET(after, vkcuda::live_objects());
    CHECK(after.vk_buffers == before.vk_buffers && after.vk_memories == before.vk_memories,
          "the destructor does not free the host buffer");
    EXPECT_ERROR(vkcuda::HostBuffer::create(ctx, 0), VKCUDA_ERROR_INVALID_ARGUMENT, "size must not be 0");
    vkcuda::Context no_context;
    EXPECT_ERROR(vkcuda::HostBuffer::create(no_context, 16), VKCUDA_ERROR_NULL_POINTER, "context");
    vkcuda::HostBuffer empty;
    EXPECT_ERROR(empty.info(), VKCUDA_ERROR_NULL_POINTER, "host_buffer");
}

void test_batches() {
    GET(ctx, vkcuda::Context::create_standalone(vulkan_only()));
    vkcuda_batch_create_info bi{};
    bi.count = 4;
    bi.format = VK_FORMAT_R8G8B8A8_UNORM;
    bi.width = 33;
    bi.height = 7;
    GET(batch, vkcuda::Batch::create(ctx, bi));
    GET(info, batch.info());
    CHECK(info.count == 4 && info.channels == 4 && info.dtype.bits == 8 && info.element_stride % 256 == 0 &&
              info.row_pitch >= 33 * 4 && info.memory != VK_NULL_HANDLE && info.cuda_pointer == 0,
          "batch info: stride %" PRIu64 " pitch %" PRIu64, info.element_stride, info.row_pitch);
    GET(last, batch.element(3));
    CHECK(last.image != VK_NULL_HANDLE && last.memory_offset == 3 * info.image_stride, "element 3");
    EXPECT_ERROR(batch.element(4), VKCUDA_ERROR_INVALID_ARGUMENT, "out of range");
    EXPECT_ERROR(batch.buffer(0), VKCUDA_ERROR_UNSUPPORTED, "images");
    EXPECT_ERROR(batch.export_dlpack(), VKCUDA_ERROR_CUDA_UNAVAILABLE, "");
    GET(fd, batch.export_fd());
    CHECK(fd.get() >= 0, "export_fd");
    vkcuda_batch_create_info forced = bi;
    forced.flags = VKCUDA_BATCH_CREATE_FORCE_COPY_BIT;
    GET(copy, vkcuda::Batch::create(ctx, forced));
    GET(cinfo, copy.info());
    CHECK(cinfo.path == VKCUDA_BATCH_PATH_COPY && cinfo.readout_size == 4 * cinfo.element_stride &&
              cinfo.whole_buffer != VK_NULL_HANDLE,
          "a forced copy batch: path %u", cinfo.path);
    GET(readout, copy.buffer(VKCUDA_BATCH_WHOLE));
    GET(rinfo, readout.info());
    CHECK(rinfo.buffer == cinfo.whole_buffer && rinfo.size == cinfo.readout_size, "the readout buffer");
    vkcuda_batch_create_info buffers{};
    buffers.kind = VKCUDA_BATCH_KIND_BUFFERS;
    buffers.count = 3;
    buffers.size = 100;
    GET(bb, vkcuda::Batch::create(ctx, buffers));
    GET(second, bb.buffer(1));
    GET(sinfo, second.info());
    CHECK(sinfo.size == 100 && sinfo.offset % 256 == 0 && sinfo.offset > 0, "buffer element 1");
    vkcuda_batch_create_info zero{};
    EXPECT_ERROR(vkcuda::Batch::create(ctx, zero), VKCUDA_ERROR_INVALID_ARGUMENT, "count must not be 0");
    vkcuda_handoff_info h{};
    EXPECT_ERROR(batch.cmd_release_to_cuda(VK_NULL_HANDLE, h, VK_IMAGE_LAYOUT_GENERAL), VKCUDA_ERROR_NULL_POINTER,
                 "command_buffer");
    EXPECT_ERROR(batch.cmd_acquire_from_cuda(VK_NULL_HANDLE, h, VK_IMAGE_LAYOUT_GENERAL), VKCUDA_ERROR_NULL_POINTER,
                 "command_buffer");
    EXPECT_ERROR(copy.cmd_acquire_readout_from_cuda(VK_NULL_HANDLE, h), VKCUDA_ERROR_NULL_POINTER, "command_buffer");
}

void test_moves() {
    GET(before, vkcuda::live_objects());
    GET(ctx, vkcuda::Context::create_standalone(vulkan_only()));
    vkcuda_buffer_create_info bi{};
    bi.size = 256;
    GET(a, vkcuda::Buffer::create(ctx, bi));
    VkBuffer vb = a.vk_buffer();
    vkcuda_buffer* raw = a.get();
    vkcuda::Buffer b = std::move(a);
    CHECK(!a && a.get() == nullptr && a.vk_buffer() == VK_NULL_HANDLE, "a moved-from Buffer is not empty");
    CHECK(b.get() == raw && b.vk_buffer() == vb, "the moved-to Buffer is not the original");
    EXPECT_ERROR(a.info(), VKCUDA_ERROR_NULL_POINTER, "must not be NULL");

    GET(c, vkcuda::Buffer::create(ctx, bi));
    GET(mid, vkcuda::live_objects());
    CHECK(mid.vk_buffers == before.vk_buffers + 2, "two buffers: %" PRId64 " -> %" PRId64, before.vk_buffers,
          mid.vk_buffers);
    c = std::move(b);  // destroys c's buffer, takes b's
    GET(after_assign, vkcuda::live_objects());
    CHECK(after_assign.vk_buffers == before.vk_buffers + 1, "move assignment did not destroy the old buffer");
    CHECK(!b && c.get() == raw, "move assignment");
    vkcuda::Buffer& alias = c;  // (through a reference: compilers warn about a visible self-move)
    c = std::move(alias);       // self-move keeps it
    CHECK(c.get() == raw, "self-move lost the handle");

    vkcuda_buffer* released = c.release();
    CHECK(!c && released == raw, "release()");
    vkcuda::Buffer adopted(released);
    CHECK(adopted.vk_buffer() == vb, "adopting a released handle");
    vkcuda::Buffer other;
    other.swap(adopted);
    CHECK(!adopted && other.get() == raw, "swap");
    other.reset();
    CHECK(!other, "reset()");

    vkcuda::Context ctx2 = std::move(ctx);
    CHECK(!ctx && static_cast<bool>(ctx2), "a moved-from Context is not empty");
    EXPECT_ERROR(ctx.vulkan_handles(), VKCUDA_ERROR_NULL_POINTER, "context");
    ctx2.reset();
    GET(end, vkcuda::live_objects());
    CHECK(end.vk_buffers == before.vk_buffers && end.contexts == before.contexts, "objects left: %" PRId64
          " buffers, %" PRId64 " contexts", end.vk_buffers - before.vk_buffers, end.contexts - before.contexts);

    // Fd
    int p[2];
    REQUIRE(pipe(p) == 0, "pipe");
    vkcuda::Fd f(p[0]);
    vkcuda::Fd g = std::move(f);
    CHECK(!f && f.get() == -1 && g.get() == p[0], "a moved-from Fd is not empty");
    vkcuda::Fd w(p[1]);
    w = std::move(g);  // closes p[1]
    CHECK(!fd_is_open(p[1]) && fd_is_open(p[0]) && w.get() == p[0], "Fd move assignment");
    int r = w.release();
    CHECK(r == p[0] && !w && fd_is_open(p[0]), "Fd::release");
    w.reset(r);
    w.reset();
    CHECK(!fd_is_open(p[0]), "Fd::reset did not close");
}

// A buffer of context A exported and imported into context B: the Fd stays the
// caller's after a failed import and is taken by a successful one.
void test_export_import() {
    GET(ctx_a, vkcuda::Context::create_standalone(vulkan_only()));
    GET(ctx_b, vkcuda::Context::create_standalone(vulkan_only()));
    const std::uint64_t size = (1u << 20) + 16;
    vkcuda_buffer_create_info bi{};
    bi.size = size;
    GET(src, vkcuda::Buffer::create(ctx_a, bi));
    GET(sinfo, src.info());

    int fds_before = open_fd_count();
    GET(fd, src.export_fd());
    REQUIRE(static_cast<bool>(fd) && fd_is_open(fd.get()), "export_fd gave %d", fd.get());
    CHECK(open_fd_count() == fds_before + 1, "export_fd: %d -> %d open fds", fds_before, open_fd_count());

    // A failed import leaves the fd with the caller.
    vkcuda_buffer_import_info bad{};
    int raw_fd = fd.get();
    EXPECT_ERROR(vkcuda::Buffer::import_fd(ctx_b, bad, std::move(fd)), VKCUDA_ERROR_INVALID_ARGUMENT, "size");
    CHECK(fd.get() == raw_fd && fd_is_open(raw_fd), "a failed import took the fd");

    vkcuda_buffer_import_info ii{};
    ii.allocator = sinfo.allocator;
    ii.allocation_size = sinfo.allocation_size;
    ii.offset = sinfo.offset;
    ii.size = sinfo.size;
    ii.dedicated = sinfo.dedicated;
    GET(dst, vkcuda::Buffer::import_fd(ctx_b, ii, std::move(fd)));
    CHECK(!fd && fd.get() == -1, "a successful import left the fd in the Fd");
    GET(dinfo, dst.info());
    CHECK(dinfo.size == size && dinfo.allocation_size == sinfo.allocation_size && dinfo.buffer != VK_NULL_HANDLE,
          "imported sizes");
}

void test_images() {
    GET(ctx, vkcuda::Context::create_standalone(vulkan_only()));
    GET(h, ctx.vulkan_handles());
    Gpu gpu;
    std::string why = gpu.init(h);
    REQUIRE(why.empty(), "Vulkan functions: %s", why.c_str());

    vkcuda_image_create_info ci{};
    ci.format = VK_FORMAT_R8G8B8A8_UINT;
    ci.extent = {64, 32, 1};
    ci.usage = VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT;
    GET(img, vkcuda::Image::create(ctx, ci));
    GET(info, img.info());
    CHECK(info.image != VK_NULL_HANDLE && info.image == img.vk_image() && info.memory != VK_NULL_HANDLE,
          "image handles");
    CHECK(info.extent.width == 64 && info.extent.height == 32 && info.extent.depth == 1 && info.mip_levels == 1 &&
              info.array_layers == 1 && info.format == VK_FORMAT_R8G8B8A8_UINT && info.usage == ci.usage &&
              info.allocation_size >= 64 * 32 * 4 && info.cuda_mipmapped_array == nullptr,
          "image info");
    CHECK(info.format_info.bytes_per_texel == 4 && info.format_info.numeric == VKCUDA_FORMAT_NUMERIC_UINT,
          "format_info");
    EXPECT_ERROR(img.cuda_mipmapped_array(), VKCUDA_ERROR_CUDA_UNAVAILABLE, "");
    EXPECT_ERROR(img.cuda_array(0), VKCUDA_ERROR_CUDA_UNAVAILABLE, "");
    EXPECT_ERROR(img.surface_object(0), VKCUDA_ERROR_CUDA_UNAVAILABLE, "");
    EXPECT_ERROR(img.create_texture_object(), VKCUDA_ERROR_CUDA_UNAVAILABLE, "");
    {
        GET(fd, img.export_fd());
        CHECK(fd_is_open(fd.get()), "image export_fd");
    }

    // Defaults: 0 usage is resolved; mip levels.
    vkcuda_image_create_info mips{};
    mips.format = VK_FORMAT_R16G16B16A16_SFLOAT;
    mips.extent = {32, 32, 1};
    mips.mip_levels = 6;
    GET(img2, vkcuda::Image::create(ctx, mips));
    GET(info2, img2.info());
    CHECK(info2.mip_levels == 6 && info2.usage != 0, "default usage %#x, %u levels", info2.usage, info2.mip_levels);

    vkcuda_image_create_info rgb = ci;
    rgb.format = VK_FORMAT_R8G8B8_UNORM;
    EXPECT_ERROR(vkcuda::Image::create(ctx, rgb), VKCUDA_ERROR_UNSUPPORTED, "3 channels");
    vkcuda_image_create_info no_width = ci;
    no_width.extent.width = 0;
    EXPECT_ERROR(vkcuda::Image::create(ctx, no_width), VKCUDA_ERROR_INVALID_ARGUMENT, "width");

    // The handoff barriers, recorded and run: the new image released to "CUDA" and
    // acquired back into GENERAL (what the texels do meanwhile: tests/handoff.rs).
    Recording rec;
    VkResult vr = gpu.run([&](VkCommandBuffer cmd) {
        vkcuda_handoff_info release{0, h.queue_family_index, VK_PIPELINE_STAGE_TRANSFER_BIT,
                                    VK_ACCESS_TRANSFER_WRITE_BIT};
        NOTE(rec, img.cmd_release_to_cuda(cmd, release, VK_IMAGE_LAYOUT_UNDEFINED));
        vkcuda_handoff_info acquire{0, h.queue_family_index, VK_PIPELINE_STAGE_TRANSFER_BIT,
                                    VK_ACCESS_TRANSFER_READ_BIT};
        NOTE(rec, img.cmd_acquire_from_cuda(cmd, acquire, VK_IMAGE_LAYOUT_GENERAL));
    });
    REQUIRE(rec.ok, "recording the handoff barriers: %s", rec.error.c_str());
    REQUIRE(vr == VK_SUCCESS, "handoff: %s", vk_result_name(vr));

    // Handoff errors: a NULL command buffer.
    vkcuda_handoff_info hi{0, h.queue_family_index, 0, 0};
    EXPECT_ERROR(img.cmd_release_to_cuda(VK_NULL_HANDLE, hi, VK_IMAGE_LAYOUT_GENERAL), VKCUDA_ERROR_NULL_POINTER,
                 "command_buffer");
}

void test_semaphores() {
    GET(ctx, vkcuda::Context::create_standalone(vulkan_only()));
    GET(h, ctx.vulkan_handles());
    GET(sup, vkcuda::physical_device_query(h.instance, h.physical_device, h.get_instance_proc_addr));
    if (sup.external_semaphore_fd) {
        std::printf("    %s has VK_KHR_external_semaphore_fd: a Vulkan-only timeline\n", sup.device_name);
        GET(sem, vkcuda::Semaphore::create(ctx));
        GET(vs, sem.vk_semaphore());
        CHECK(vs != VK_NULL_HANDLE, "vk_semaphore");
        GET(stage, sem.next_stage());
        CHECK(stage.signal_value > stage.wait_value, "next_stage");
        return;
    }
    EXPECT_ERROR(vkcuda::Semaphore::create(ctx), VKCUDA_ERROR_EXTENSION_NOT_PRESENT, "VK_KHR_external_semaphore_fd");
    vkcuda::Semaphore empty;
    EXPECT_ERROR(empty.next_stage(), VKCUDA_ERROR_NULL_POINTER, "semaphore");
    EXPECT_ERROR(empty.host_wait(1, 0), VKCUDA_ERROR_NULL_POINTER, "semaphore");
}

// A present ring on a Vulkan-only context: its handles, the producer's and the engine's
// book-keeping, refusals with their codes (the blits themselves: tests/present.rs).
void test_present_ring() {
    GET(ctx, vkcuda::Context::create_standalone(vulkan_only()));
    vkcuda_present_ring_create_info ri{};
    ri.format = VK_FORMAT_R8G8B8A8_UNORM;
    ri.width = 32;
    ri.height = 16;
    ri.image_count = 2;
    GET(ring, vkcuda::PresentRing::create(ctx, ri));
    GET(timeline, ring.vk_timeline());
    GET(first, ring.vk_image(0));
    GET(second, ring.vk_image(1));
    CHECK(timeline != VK_NULL_HANDLE && first != VK_NULL_HANDLE && second != first, "ring handles");
    EXPECT_ERROR(ring.vk_image(2), VKCUDA_ERROR_INVALID_ARGUMENT, "past the ring's 2 images");
    EXPECT_ERROR(ring.surface_object(0), VKCUDA_ERROR_CUDA_UNAVAILABLE, "VULKAN_ONLY");
    EXPECT_ERROR(ring.cuda_begin(nullptr), VKCUDA_ERROR_CUDA_UNAVAILABLE, "Vulkan-only");
    EXPECT_ERROR(ring.begin_write(), VKCUDA_ERROR_INVALID_STATE, "not prepared");
    vkcuda_present_ring_create_info none = ri;
    none.image_count = 0;
    EXPECT_ERROR(vkcuda::PresentRing::create(ctx, none), VKCUDA_ERROR_INVALID_ARGUMENT, "not 0");
    // Recorded, never submitted: the prepare, a frame begun and ended, a minimised
    // window's present (nothing recorded: the submit only passes the frame on).
    GET(h, ctx.vulkan_handles());
    Gpu gpu;
    std::string why = gpu.init(h);
    REQUIRE(why.empty(), "%s", why.c_str());
    VkResult vr = gpu.run([&](VkCommandBuffer cmd) {
        GET(prep, ring.cmd_prepare(cmd, h.queue_family_index));
        CHECK(prep.signal_count == 1 && prep.signal_values[0] == 1, "prepare signals 1");
    });
    REQUIRE(vr == VK_SUCCESS, "run: %s", vk_result_name(vr));
    GET(w, ring.begin_write());
    CHECK(w.frame == 1 && w.image_index == 0 && w.signal_value == 2, "write 1");
    EXPECT_ERROR(ring.end_write(2), VKCUDA_ERROR_INVALID_STATE, "frame 2");
    DO(ring.end_write(1));
    vkcuda_present_target t{};
    t.device = h.device;
    t.format = VK_FORMAT_B8G8R8A8_UNORM;
    GET(s, ring.cmd_present(VK_NULL_HANDLE, h.queue_family_index, t));
    CHECK(s.frame == 1 && s.recorded == 0 && s.wait_values[0] == 2 && s.signal_values[0] == 3, "minimised");
}

// A context destroyed before its objects: they keep it alive.
void test_destroy_order() {
    GET(before, vkcuda::live_objects());
    GET(ctx, vkcuda::Context::create_standalone(vulkan_only()));
    vkcuda_buffer_create_info bi{};
    bi.size = 1024;
    GET(buf, vkcuda::Buffer::create(ctx, bi));
    vkcuda_image_create_info ci{};
    ci.format = VK_FORMAT_R8G8B8A8_UNORM;
    ci.extent = {8, 8, 1};
    GET(img, vkcuda::Image::create(ctx, ci));
    ctx.reset();
    GET(mid, vkcuda::live_objects());
    CHECK(mid.contexts == before.contexts + 1, "the context went away under its objects");
    GET(info, buf.info());
    CHECK(info.size == 1024, "a buffer outliving its Context handle");
    GET(fd, buf.export_fd());
    CHECK(fd_is_open(fd.get()), "export after the Context handle went");
    buf.reset();
    GET(iinfo, img.info());
    CHECK(iinfo.extent.width == 8, "an image outliving its Context handle");
    img.reset();
    GET(end, vkcuda::live_objects());
    CHECK(end.contexts == before.contexts && end.vk_buffers == before.vk_buffers &&
              end.vk_images == before.vk_images && end.vk_memories == before.vk_memories,
          "after the last object: %" PRId64 " contexts, %" PRId64 " memories left", end.contexts - before.contexts,
          end.vk_memories - before.vk_memories);
}

// The wrappers of the batched handoffs, DLPack, video frames, CUDA graphs and the
// doctor, on a Vulkan-only context (lavapipe offers no multi-planar format: the
// frame part says SKIPPED there and checks the refusals instead).
void test_more_wrappers() {
    GET(ctx, vkcuda::Context::create_standalone(vulkan_only()));
    GET(h, ctx.vulkan_handles());
    Gpu gpu;
    std::string why = gpu.init(h);
    REQUIRE(why.empty(), "Vulkan functions: %s", why.c_str());

    vkcuda_buffer_create_info bi{};
    bi.size = 4096;
    GET(buf, vkcuda::Buffer::create(ctx, bi));
    vkcuda_image_create_info ci{};
    ci.format = VK_FORMAT_R8G8B8A8_UNORM;
    ci.extent = {16, 16, 1};
    ci.usage = VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT;
    GET(img, vkcuda::Image::create(ctx, ci));

    // Batched handoffs: one barrier for a buffer and an image, both ways.
    std::vector<vkcuda_handoff_resource> release{{buf.get(), nullptr, VK_IMAGE_LAYOUT_UNDEFINED},
                                                 {nullptr, img.get(), VK_IMAGE_LAYOUT_UNDEFINED}};
    std::vector<vkcuda_handoff_resource> acquire{{buf.get(), nullptr, VK_IMAGE_LAYOUT_UNDEFINED},
                                                 {nullptr, img.get(), VK_IMAGE_LAYOUT_GENERAL}};
    vkcuda_handoff_info hi{0, h.queue_family_index, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT};
    Recording rec;
    VkResult vr = gpu.run([&](VkCommandBuffer cmd) {
        NOTE(rec, vkcuda::handoff_cmd_release_to_cuda(release, cmd, hi));
        NOTE(rec, vkcuda::handoff_cmd_acquire_from_cuda(acquire.data(), static_cast<std::uint32_t>(acquire.size()), cmd,
                                                   hi));
    });
    CHECK(rec.ok, "recording the batched handoffs: %s", rec.error.c_str());
    CHECK(vr == VK_SUCCESS, "batched handoffs: %s", vk_result_name(vr));
    EXPECT_ERROR(vkcuda::handoff_cmd_release_to_cuda(release, VK_NULL_HANDLE, hi), VKCUDA_ERROR_NULL_POINTER,
                 "command_buffer");

    // DLPack needs the CUDA view.
    vkcuda_dlpack_info di{};
    di.dtype = {1, 8, 1};  // kDLUInt, 8 bits
    di.ndim = 1;
    di.shape[0] = 4096;
    EXPECT_ERROR(buf.export_dlpack(di), VKCUDA_ERROR_CUDA_UNAVAILABLE, "");

    // Video frames: a single-plane image is none.
    EXPECT_ERROR(img.plane_pointer(0), VKCUDA_ERROR_INVALID_ARGUMENT, "");
    EXPECT_ERROR(img.video_color(), VKCUDA_ERROR_INVALID_ARGUMENT, "");
    vkcuda_video_color bt709{0, 1, 1, 1, VK_FALSE, 0, 0};
    EXPECT_ERROR(img.set_video_color(bt709), VKCUDA_ERROR_INVALID_ARGUMENT, "");
    EXPECT_ERROR(img.ycbcr_conversion_info(), VKCUDA_ERROR_INVALID_ARGUMENT, "");
    vkcuda_image_create_info nv12{};
    nv12.flags = VKCUDA_IMAGE_CREATE_LINEAR_BIT;
    nv12.format = VK_FORMAT_G8_B8R8_2PLANE_420_UNORM;
    nv12.extent = {64, 32, 1};
    vkcuda_image* raw_frame = nullptr;
    if (vkcuda_image_create(ctx.get(), &nv12, &raw_frame) != VKCUDA_SUCCESS) {
        std::printf("    SKIPPED: NV12 video frame wrappers: the device offers no linear NV12 (%s)\n",
                    vkcuda_last_error_message());
    } else {
        vkcuda::Image frame(raw_frame);
        GET(luma, frame.plane_pointer(0));
        GET(chroma, frame.plane_pointer(1));
        CHECK(luma.width == 64 && luma.height == 32 && chroma.width == 32 && chroma.height == 16 &&
                  luma.row_pitch >= 64 && chroma.offset >= luma.size,
              "plane pointers");
        EXPECT_ERROR(frame.plane_pointer(2), VKCUDA_ERROR_INVALID_ARGUMENT, "");
        vkcuda_video_color full = bt709;
        full.full_range = VK_TRUE;
        DO(frame.set_video_color(full));
        GET(got, frame.video_color());
        CHECK(got.matrix_coefficients == 1 && got.full_range == VK_TRUE, "video_color() after set_video_color()");
        GET(conv, frame.ycbcr_conversion_info());
        CHECK(conv.sType == VK_STRUCTURE_TYPE_SAMPLER_YCBCR_CONVERSION_CREATE_INFO &&
                  conv.format == VK_FORMAT_G8_B8R8_2PLANE_420_UNORM &&
                  conv.ycbcrRange == VK_SAMPLER_YCBCR_RANGE_ITU_FULL,
              "ycbcr_conversion_info()");
    }

    // CUDA graphs: checked before any CUDA call (an empty Semaphore is NULL).
    vkcuda::Semaphore none;
    EXPECT_ERROR(none.cuda_graph_add_wait(nullptr, nullptr, 0, 1), VKCUDA_ERROR_NULL_POINTER, "semaphore");
    EXPECT_ERROR(none.cuda_graph_add_signal(nullptr, nullptr, 0, 1), VKCUDA_ERROR_NULL_POINTER, "semaphore");
    EXPECT_ERROR(none.cuda_graph_exec_set_wait(nullptr, nullptr, 1), VKCUDA_ERROR_NULL_POINTER, "semaphore");
    EXPECT_ERROR(none.cuda_graph_exec_set_signal(nullptr, nullptr, 1), VKCUDA_ERROR_NULL_POINTER, "semaphore");

    // The doctor: a report with checks, device pairs and JSON, released by the handle.
    GET(report, vkcuda::doctor_run());
    GET(summary, report.summary());
    CHECK(summary.check_count > 0 && summary.check_count == summary.pass_count + summary.warn_count +
                                                                  summary.fail_count,
          "doctor summary: %u checks", summary.check_count);
    GET(first, report.check(0));
    CHECK(first.name != nullptr && first.name[0] != '\0', "the first check has no name");
    EXPECT_ERROR(report.check(summary.check_count), VKCUDA_ERROR_INVALID_ARGUMENT, "");
    if (summary.device_pair_count > 0) {
        GET(pair, report.device_pair(0));
        (void)pair;
    }
    GET(json, report.json());
    CHECK(!json.empty() && json.front() == '{', "doctor JSON starts with %c", json.empty() ? '?' : json.front());

    // The deep self-test: more checks, the last one deep.total.
    GET(deep, vkcuda::doctor_run_deep());
    GET(deep_summary, deep.summary());
    CHECK(deep_summary.check_count > summary.check_count, "deep: %u checks", deep_summary.check_count);
    GET(last, deep.check(deep_summary.check_count - 1));
    CHECK(std::strcmp(last.name, "deep.total") == 0, "the last deep check is %s", last.name);
}

#if defined(VKCUDA_SHARE_DESCRIPTION_SIZE)
// Descriptions and a buffer sent over a socketpair into a second context.
void test_cross_process_api() {
    GET(ctx_a, vkcuda::Context::create_standalone(vulkan_only()));
    GET(ctx_b, vkcuda::Context::create_standalone(vulkan_only()));
    vkcuda_buffer_create_info bi{};
    bi.size = 65536;
    GET(src, vkcuda::Buffer::create(ctx_a, bi));
    GET(desc, src.describe());
    CHECK(desc.kind == VKCUDA_SHARE_KIND_BUFFER && desc.buffer.size == bi.size, "describe");
    GET(record, vkcuda::share_description_serialize(desc));
    static_assert(std::tuple_size_v<vkcuda::ShareRecord> == VKCUDA_SHARE_DESCRIPTION_SIZE);
    GET(parsed, vkcuda::share_description_parse(record.data(), record.size()));
    CHECK(parsed.kind == desc.kind && parsed.buffer.allocation_size == desc.buffer.allocation_size &&
              std::memcmp(parsed.device_uuid, desc.device_uuid, 16) == 0,
          "serialize/parse round trip");
#if defined(__cpp_lib_span)
    GET(parsed_span, vkcuda::share_description_parse(std::span<const std::uint8_t>(record)));
    CHECK(parsed_span.buffer.size == desc.buffer.size, "parse from a span");
#endif
    EXPECT_ERROR(vkcuda::share_description_parse(record.data(), record.size() - 1), VKCUDA_ERROR_INVALID_ARGUMENT,
                 "");

    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
    vkcuda::Fd end_a(sv[0]), end_b(sv[1]);
    int fds_before = open_fd_count();
    DO(src.send(end_a.get()));
    GET(dst, vkcuda::Buffer::receive(ctx_b, end_b.get()));
    GET(dinfo, dst.info());
    CHECK(dinfo.size == bi.size, "received size %" PRIu64, dinfo.size);
    // share_send / share_receive with an fd of our own.
    GET(fd, src.export_fd());
    DO(vkcuda::share_send(end_a.get(), desc, fd.get()));
    GET(msg, vkcuda::share_receive(end_b.get()));
    CHECK(msg.description.kind == VKCUDA_SHARE_KIND_BUFFER && fd_is_open(msg.fd.get()), "share_receive");
    GET(dst2, vkcuda::Buffer::import_description(ctx_b, msg.description, std::move(msg.fd)));
    CHECK(!msg.fd && static_cast<bool>(dst2), "import_description took the fd");
    fd.reset();
    dst2.reset();
    dst.reset();
    CHECK(open_fd_count() == fds_before, "open fds %d -> %d", fds_before, open_fd_count());
    // A closed peer.
    end_a.reset();
    EXPECT_ERROR(vkcuda::Buffer::receive(ctx_b, end_b.get()), VKCUDA_ERROR_INVALID_STATE, "");
}
#endif

}  // namespace

int main() {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    std::printf("vkcuda.hpp tests (C++ %ld, %s, %s)\n", static_cast<long>(__cplusplus),
#if defined(__clang__)
                "clang " __clang_version__,
#elif defined(__GNUC__)
                "gcc " __VERSION__,
#else
                "unknown compiler",
#endif
                VKCUDA_HPP_EXCEPTIONS ? "exceptions" : "no exceptions");

    // Skip (77) without a usable Vulkan device.
    {
        vkcuda_context* probe = nullptr;
        vkcuda_standalone_create_info si = vulkan_only();
        vkcuda_result r = vkcuda_context_create_standalone(&si, &probe);
        if (r != VKCUDA_SUCCESS) {
            std::printf("SKIPPED: wrapper_test: no Vulkan-only standalone context: %s: %s\n", vkcuda_result_to_string(r),
                        vkcuda_last_error_message());
            return r == VKCUDA_ERROR_VULKAN_UNAVAILABLE || r == VKCUDA_ERROR_EXTENSION_NOT_PRESENT ? 77 : 1;
        }
        vkcuda_context_destroy(probe);
    }

    const int fds_start = open_fd_count();
    harness::run_test("versions", test_versions);
    harness::run_test("Error, Result, Fallible", test_error_types);
    harness::run_test("queries before a context, context handles", test_queries);
    harness::run_test("buffers; errors with code and message", test_buffers_and_errors);
    harness::run_test("host (staging) buffers: info, mapping, counts, errors", test_host_buffers);
    harness::run_test("batches: info, elements, buffers, errors", test_batches);
    harness::run_test("moves, release, reset, swap; Fd", test_moves);
    harness::run_test("fd export/import between two contexts, Fd ownership", test_export_import);
    harness::run_test("images; handoff barriers", test_images);
    harness::run_test("semaphores", test_semaphores);
    harness::run_test("present rings", test_present_ring);
    harness::run_test("destroy order", test_destroy_order);
    harness::run_test("batched handoffs, DLPack, video frames, graphs, the doctor", test_more_wrappers);
#if defined(VKCUDA_SHARE_DESCRIPTION_SIZE)
    harness::run_test("cross-process: descriptions, send/receive over a socketpair", test_cross_process_api);
#endif
    harness::run_test("the header in a second translation unit", [] {
        CHECK(second_tu_check() == 0, "second_tu_check() failed");
    });
    harness::run_test("the other error mode in the same program", [] {
        CHECK(no_exceptions_tu_check() == 0, "no_exceptions_tu_check() failed");
    });
    harness::run_test("nothing left alive", [&] {
        GET(live, vkcuda::live_objects());
        CHECK(live.contexts == 0 && live.vk_buffers == 0 && live.vk_memories == 0 && live.vk_images == 0 &&
                  live.vk_semaphores == 0,
              "live: %" PRId64 " contexts, %" PRId64 " buffers, %" PRId64 " memories, %" PRId64 " images",
              live.contexts, live.vk_buffers, live.vk_memories, live.vk_images);
        CHECK(open_fd_count() == fds_start, "open fds: %d at the start, %d now", fds_start, open_fd_count());
    });

    std::printf("vkcuda.hpp tests: %s: %d checks, %d failed (%s)\n", harness::failures() == 0 ? "PASS" : "FAIL",
                harness::checks(), harness::failures(), VKCUDA_HPP_EXCEPTIONS ? "exceptions" : "no exceptions");
    return harness::failures() == 0 ? 0 : 1;
}
