// vkcuda.hpp in no-exceptions mode (VKCUDA_NO_EXCEPTIONS), linked into a program
// whose other translation units may use the exceptions mode: the two modes live in
// different inline namespaces (vkcuda::with_exceptions, vkcuda::without_exceptions),
// so their definitions never collide. Returns 0 when everything behaved.
#ifndef VKCUDA_NO_EXCEPTIONS
#define VKCUDA_NO_EXCEPTIONS
#endif
#include <vkcuda.hpp>

#include <type_traits>

static_assert(VKCUDA_HPP_EXCEPTIONS == 0, "VKCUDA_NO_EXCEPTIONS did not select the no-exceptions mode");
static_assert(std::is_same_v<vkcuda::Fallible<vkcuda::Buffer>, vkcuda::Result<vkcuda::Buffer>>);

int no_exceptions_tu_check() {
    vkcuda::Context none;
    vkcuda_buffer_create_info bi{};
    bi.size = 16;
    vkcuda::Result<vkcuda::Buffer> b = vkcuda::Buffer::create(none, bi);  // a NULL context
    if (b.ok() || b.code() != VKCUDA_ERROR_NULL_POINTER || b.message().empty()) return 1;
    vkcuda::Result<std::uint32_t> v(vkcuda::version());
    if (!v.ok() || v.value() != VKCUDA_VERSION) return 2;
    vkcuda::Result<void> ok;
    return ok.ok() ? 0 : 3;
}
