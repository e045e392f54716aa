// A very small test harness for the vkcuda.hpp tests, written so that the same test
// code runs in both error modes of the header:
//   GET(var, expr)   var = the value of a fallible call; on an error: a failure
//                    naming the call, the code and the message, and the test
//                    function returns
//   DO(expr)         the same for calls without a value
//   EXPECT_ERROR(expr, code, text)
//                    the call fails with `code` and a message containing `text`:
//                    caught as vkcuda::Error with exceptions, read from the
//                    vkcuda::Result without
//   CHECK(cond, ...) a failure with a printf-style explanation (the test goes on)
//   REQUIRE(cond, ...) the same, and the test function returns
// With exceptions an unexpected vkcuda::Error escaping a test is reported by
// run_test() as a failure of that test.
#ifndef VKCUDA_TESTS_CPP_HARNESS_HPP
#define VKCUDA_TESTS_CPP_HARNESS_HPP

#include <vkcuda.hpp>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace harness {

inline int& failures() {
    static int n = 0;
    return n;
}
inline int& checks() {
    static int n = 0;
    return n;
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
inline void
fail(const char* file, int line, const char* fmt, ...) {
    std::va_list ap;
    std::printf("    FAIL %s:%d: ", file, line);
    va_start(ap, fmt);
    std::vprintf(fmt, ap);
    va_end(ap);
    std::printf("\n");
    std::fflush(stdout);
    failures()++;
}

inline bool contains(std::string_view haystack, std::string_view needle) {
    return haystack.find(needle) != std::string_view::npos;
}

// Runs one test function, counting it as failed when it added failures.
template <class F>
void run_test(const char* name, F&& f) {
    int before = failures();
    std::printf("  %s\n", name);
    std::fflush(stdout);
#if VKCUDA_HPP_EXCEPTIONS
    try {
        f();
    } catch (const vkcuda::Error& e) {
        fail(__FILE__, __LINE__, "unexpected vkcuda::Error: %s", e.what());
    } catch (const std::exception& e) {
        fail(__FILE__, __LINE__, "unexpected exception: %s", e.what());
    }
#else
    f();
#endif
    std::printf("  %s %s\n", failures() == before ? "ok  " : "FAIL", name);
    std::fflush(stdout);
}

}  // namespace harness

#define CHECK(cond, ...)                                                 \
    do {                                                                 \
        harness::checks()++;                                             \
        if (!(cond)) harness::fail(__FILE__, __LINE__, __VA_ARGS__);     \
    } while (0)
#define REQUIRE(cond, ...)                                               \
    do {                                                                 \
        harness::checks()++;                                             \
        if (!(cond)) {                                                   \
            harness::fail(__FILE__, __LINE__, __VA_ARGS__);              \
            return;                                                      \
        }                                                                \
    } while (0)

#if VKCUDA_HPP_EXCEPTIONS
#define GET(var, expr) auto var = (expr)
#define DO(expr) (expr)
#define EXPECT_ERROR(expr, want, text)                                                              \
    do {                                                                                            \
        harness::checks()++;                                                                        \
        try {                                                                                       \
            static_cast<void>(expr);                                                                \
            harness::fail(__FILE__, __LINE__, "%s succeeded, expected %s", #expr,                   \
                          vkcuda_result_to_string(want));                                           \
        } catch (const vkcuda::Error& e_) {                                                         \
            if (e_.code() != (want) || !harness::contains(e_.message(), text) ||                    \
                std::string_view(e_.what()).substr(0, e_.code_name().size()) != e_.code_name())     \
                harness::fail(__FILE__, __LINE__, "%s threw \"%s\", expected %s with \"%s\"", #expr, \
                              e_.what(), vkcuda_result_to_string(want), text);                      \
            else                                                                                    \
                std::printf("    as expected: %s\n", e_.what());                                    \
        }                                                                                           \
    } while (0)
#else
#define HARNESS_CAT2(a, b) a##b
#define HARNESS_CAT(a, b) HARNESS_CAT2(a, b)
#define GET(var, expr)                                                                              \
    auto HARNESS_CAT(var, _result) = (expr);                                                        \
    if (!HARNESS_CAT(var, _result).ok()) {                                                          \
        harness::fail(__FILE__, __LINE__, "%s -> %s", #expr, HARNESS_CAT(var, _result).error().what()); \
        return;                                                                                     \
    }                                                                                               \
    auto var = std::move(HARNESS_CAT(var, _result)).value()
#define DO(expr)                                                                                    \
    do {                                                                                            \
        auto r_ = (expr);                                                                           \
        if (!r_.ok()) {                                                                             \
            harness::fail(__FILE__, __LINE__, "%s -> %s", #expr, r_.error().what());                \
            return;                                                                                 \
        }                                                                                           \
    } while (0)
#define EXPECT_ERROR(expr, want, text)                                                              \
    do {                                                                                            \
        harness::checks()++;                                                                        \
        auto r_ = (expr);                                                                           \
        if (r_.ok())                                                                                \
            harness::fail(__FILE__, __LINE__, "%s succeeded, expected %s", #expr,                   \
                          vkcuda_result_to_string(want));                                           \
        else if (r_.code() != (want) || r_.error().code() != (want) ||                              \
                 !harness::contains(r_.message(), text))                                            \
            harness::fail(__FILE__, __LINE__, "%s gave \"%s\", expected %s with \"%s\"", #expr,     \
                          r_.error().what(), vkcuda_result_to_string(want), text);                  \
        else                                                                                        \
            std::printf("    as expected: %s\n", r_.error().what());                                \
    } while (0)
#endif

#endif  // VKCUDA_TESTS_CPP_HARNESS_HPP
