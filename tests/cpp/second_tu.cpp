// vkcuda.hpp in a second translation unit of the test program: every function of
// the header is inline, so using the same ones here and in wrapper_test.cpp must
// link without duplicate symbols. Returns 0 when everything behaved.
#include <vkcuda.hpp>

int second_tu_check() {
    vkcuda::Result<int> r(vkcuda::Error(VKCUDA_ERROR_TIMEOUT, "second"));
    if (r.ok() || r.code() != VKCUDA_ERROR_TIMEOUT || r.message() != "second") return 1;
    vkcuda::Buffer empty;
    vkcuda::Fd fd;
    if (empty || fd || empty.vk_buffer() != VK_NULL_HANDLE) return 2;
#if VKCUDA_HPP_EXCEPTIONS
    try {
        static_cast<void>(empty.info());  // a NULL buffer
        return 3;
    } catch (const vkcuda::Error& e) {
        return e.code() == VKCUDA_ERROR_NULL_POINTER ? 0 : 4;
    }
#else
    auto info = empty.info();  // a NULL buffer
    return info.code() == VKCUDA_ERROR_NULL_POINTER ? 0 : 4;
#endif
}
