// A C++ consumer of vkcuda: includes only <vkcuda.hpp>, links only vkcuda::vkcuda.
// Built with exceptions (C++17, C++20) and with -fno-exceptions; the same code runs
// in both error modes through get() below. On a Vulkan-only standalone context: a
// buffer with its info and an exported fd, an image, and the semaphore call that
// fails without VK_KHR_external_semaphore_fd. Exits 0 when everything behaved.
#include <vkcuda.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

namespace {

// The value of a fallible call: with exceptions a failure has thrown already;
// without, it is printed here and the program exits.
template <class T>
T get(vkcuda::Fallible<T> r, const char* what) {
#if VKCUDA_HPP_EXCEPTIONS
    static_cast<void>(what);
    return r;
#else
    if (!r.ok()) {
        std::printf("consumer (C++): %s failed: %s\n", what, r.error().what());
        std::exit(1);
    }
    return std::move(r).value();
#endif
}

int run() {
    std::printf("consumer (C++%ld, %s): vkcuda %s, version() == VKCUDA_VERSION: %s\n",
                static_cast<long>(__cplusplus / 100 % 100), VKCUDA_HPP_EXCEPTIONS ? "exceptions" : "no exceptions",
                std::string(vkcuda::version_string()).c_str(), vkcuda::version() == VKCUDA_VERSION ? "yes" : "NO");
    if (vkcuda::version() != VKCUDA_VERSION) return 1;

    vkcuda_standalone_create_info si{};
    si.flags = VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT;
    vkcuda::Context ctx = get(vkcuda::Context::create_standalone(si), "Context::create_standalone");
    vkcuda_buffer_create_info bi{};
    bi.size = 1 << 20;
    vkcuda::Buffer buf = get(vkcuda::Buffer::create(ctx, bi), "Buffer::create");
    vkcuda_buffer_info info = get(buf.info(), "Buffer::info");
    vkcuda::Fd fd = get(buf.export_fd(), "Buffer::export_fd");
    std::printf("consumer (C++): buffer of %llu bytes (allocation %llu), exported fd %d\n",
                static_cast<unsigned long long>(info.size), static_cast<unsigned long long>(info.allocation_size),
                fd.get());
    vkcuda_image_create_info ii{};
    ii.format = VK_FORMAT_R8G8B8A8_UNORM;
    ii.extent = {64, 64, 1};
    vkcuda::Image img = get(vkcuda::Image::create(ctx, ii), "Image::create");
    std::printf("consumer (C++): image %ux%u, usage %#x\n", get(img.info(), "Image::info").extent.width,
                get(img.info(), "Image::info").extent.height, get(img.info(), "Image::info").usage);

    // A timeline semaphore needs VK_KHR_external_semaphore_fd (lavapipe lacks it).
    vkcuda_result code = VKCUDA_SUCCESS;
#if VKCUDA_HPP_EXCEPTIONS
    try {
        vkcuda::Semaphore sem = vkcuda::Semaphore::create(ctx);
    } catch (const vkcuda::Error& e) {
        code = e.code();
        std::printf("consumer (C++): Semaphore::create threw: %s\n", e.what());
    }
#else
    auto sem = vkcuda::Semaphore::create(ctx);
    code = sem.code();
    if (!sem.ok()) std::printf("consumer (C++): Semaphore::create returned: %s\n", sem.error().what());
#endif
    if (code != VKCUDA_SUCCESS && code != VKCUDA_ERROR_EXTENSION_NOT_PRESENT) return 1;
    std::printf("consumer (C++): semaphore: %s\n", std::string(vkcuda::result_to_string(code)).c_str());
    return 0;
}

}  // namespace

int main() {
#if VKCUDA_HPP_EXCEPTIONS
    try {
        return run();
    } catch (const vkcuda::Error& e) {
        std::printf("consumer (C++): vkcuda::Error: %s\n", e.what());
        return 1;
    }
#else
    return run();
#endif
}
