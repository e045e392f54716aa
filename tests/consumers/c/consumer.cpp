// C++17 consumer of an installed vkcuda: the C header used from C++.
#include <vkcuda.h>

#include <cstdio>
#include <memory>
#include <string>

namespace {
struct ContextDeleter {
    void operator()(vkcuda_context *c) const noexcept { vkcuda_context_destroy(c); }
};
using ContextPtr = std::unique_ptr<vkcuda_context, ContextDeleter>;
}  // namespace

int main()
{
    const std::string version = vkcuda_version_string();
    const bool match = vkcuda_version() == VKCUDA_VERSION;
    std::printf("consumer (C++): vkcuda %s, vkcuda_version()==VKCUDA_VERSION: %s\n",
                version.c_str(), match ? "yes" : "NO");

    vkcuda_standalone_create_info info{};
    info.flags = VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT;
    vkcuda_context *raw = nullptr;
    const vkcuda_result r = vkcuda_context_create_standalone(&info, &raw);
    ContextPtr ctx(raw);
    std::printf("consumer (C++): Vulkan-only standalone context: %s\n",
                vkcuda_result_to_string(r));
    return match ? 0 : 1;
}
