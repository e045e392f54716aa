/*
 * The 0.1 names kept for one minor (VKCUDA_DEPRECATED, capi/src/deprecated.rs).
 * deprecated_matrix.sh compiles this with GCC and Clang as C99, C11, C23, C++14
 * and C++17 under -Wall -Wextra -Wpedantic -Werror:
 *   - as it is (new names only), it compiles without a warning;
 *   - with -DVKCUDA_OLD_NAMES (an engine written against 0.1) and
 *     -Wno-error=deprecated-declarations, it compiles, and each old name warns
 *     with the message that names its replacement.
 * CTest also links and runs it with the old names (deprecated_aliases): the old
 * symbols are exported and answer like the new ones.
 */
#include <stdio.h>
#include <string.h>
#include <vkcuda.h>

static int failures;

static void expect(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "FAIL %s: %s\n", what, vkcuda_last_error_message());
        failures++;
    }
}

int main(void)
{
    vkcuda_live_objects a, b;
    uint32_t n_old = 0, n_new = 0;
    int32_t version;
    vkcuda_result r;

    expect(vkcuda_live_objects_get(&b) == VKCUDA_SUCCESS, "vkcuda_live_objects_get");
    expect(vkcuda_device_extensions_enumerate(&n_new, NULL) == VKCUDA_SUCCESS,
           "vkcuda_device_extensions_enumerate");
#ifdef VKCUDA_OLD_NAMES
    expect(vkcuda_get_live_objects(&a) == VKCUDA_SUCCESS, "vkcuda_get_live_objects");
    expect(memcmp(&a, &b, sizeof a) == 0, "the alias counts what the new name counts");
    expect(vkcuda_enumerate_device_extensions(&n_old, NULL) == VKCUDA_SUCCESS,
           "vkcuda_enumerate_device_extensions");
    expect(n_old == n_new && n_old > 0, "the alias lists what the new name lists");
    /* A failure names the old name, as the caller wrote it. */
    r = vkcuda_cuda_driver_version(NULL);
    expect(r == VKCUDA_ERROR_NULL_POINTER, "vkcuda_cuda_driver_version(NULL)");
    expect(strncmp(vkcuda_last_error_message(), "vkcuda_cuda_driver_version: ", 28) == 0,
           "the message names the old name");
    /* Declared, hence deprecated too (not called: they need a device or context). */
    (void)&vkcuda_query_physical_device;
    (void)&vkcuda_enumerate_physical_devices;
    (void)&vkcuda_context_get_vulkan;
    (void)&vkcuda_context_get_cuda;
#else
    a = b;
    n_old = n_new;
    (void)a;
    (void)n_old;
    r = vkcuda_cuda_driver_get_version(NULL);
    expect(r == VKCUDA_ERROR_NULL_POINTER, "vkcuda_cuda_driver_get_version(NULL)");
#endif
    (void)version;
    if (failures == 0)
        printf("deprecated aliases: ok\n");
    return failures == 0 ? 0 : 1;
}
