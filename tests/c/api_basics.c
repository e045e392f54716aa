/*
 * api_basics: the C ABI as a C caller sees it, on any machine (lavapipe is enough):
 * versions, result names, and a buffer exported from one Vulkan-only context and
 * imported into another, without leaking an fd. Also run under valgrind (CTest label
 * "valgrind"). NULL arguments and destroy(NULL) are the misuse matrix's
 * (capi/tests/misuse/nulls.rs, outputs.rs, the null-ok rows).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <vkcuda.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int g_checks = 0;
static int g_failed = 0;

#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        g_checks++;                                                                        \
        if (!(cond)) {                                                                     \
            g_failed++;                                                                    \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fprintf(stderr, " (last error: \"%s\")\n", vkcuda_last_error_message());       \
        }                                                                                  \
    } while (0)

/* Checks a result; on mismatch prints both names and the message. */
#define CHECK_RESULT(expr, expected)                                                       \
    do {                                                                                   \
        vkcuda_result check_r_ = (expr);                                                   \
        CHECK(check_r_ == (expected), "%s returned %s, expected %s", #expr,               \
              vkcuda_result_to_string(check_r_), vkcuda_result_to_string(expected));       \
    } while (0)

/* A failed call must leave a message. */
#define CHECK_MESSAGE()                                                                    \
    CHECK(vkcuda_last_error_message() != NULL && vkcuda_last_error_message()[0] != '\0',   \
          "no error message after a failed call")

static char g_dummy;
#define NOT_NULL_HANDLE(type) ((type *)(void *)&g_dummy)

static int count_open_fds(void)
{
    int n = 0;
    struct dirent *e;
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL) {
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] != '.') {
            n++;
        }
    }
    closedir(d);
    return n; /* includes the directory's own fd, the same every time */
}

static void test_versions(void)
{
    char expected[32];
    uint32_t v = vkcuda_version();
    CHECK(v == VKCUDA_VERSION, "vkcuda_version() 0x%lx != VKCUDA_VERSION 0x%lx",
          (unsigned long)v, (unsigned long)VKCUDA_VERSION);
    CHECK(VKCUDA_VERSION ==
              VKCUDA_MAKE_VERSION(VKCUDA_VERSION_MAJOR, VKCUDA_VERSION_MINOR, VKCUDA_VERSION_PATCH),
          "VKCUDA_VERSION is not VKCUDA_MAKE_VERSION of the parts");
    CHECK((v >> 22) == VKCUDA_VERSION_MAJOR && ((v >> 12) & 0x3FF) == VKCUDA_VERSION_MINOR &&
              (v & 0xFFF) == VKCUDA_VERSION_PATCH,
          "vkcuda_version() 0x%lx does not unpack to the header's parts", (unsigned long)v);
    snprintf(expected, sizeof expected, "%d.%d.%d", VKCUDA_VERSION_MAJOR, VKCUDA_VERSION_MINOR,
             VKCUDA_VERSION_PATCH);
    CHECK(vkcuda_version_string() != NULL && strcmp(vkcuda_version_string(), expected) == 0,
          "vkcuda_version_string() is \"%s\", expected \"%s\"",
          vkcuda_version_string() ? vkcuda_version_string() : "(null)", expected);
}

static void test_result_names(void)
{
    static const struct {
        vkcuda_result code;
        const char *name;
    } names[] = {
        {VKCUDA_SUCCESS, "VKCUDA_SUCCESS"},
        {VKCUDA_ERROR_INVALID_ARGUMENT, "VKCUDA_ERROR_INVALID_ARGUMENT"},
        {VKCUDA_ERROR_NULL_POINTER, "VKCUDA_ERROR_NULL_POINTER"},
        {VKCUDA_ERROR_OUT_OF_MEMORY, "VKCUDA_ERROR_OUT_OF_MEMORY"},
        {VKCUDA_ERROR_CUDA_UNAVAILABLE, "VKCUDA_ERROR_CUDA_UNAVAILABLE"},
        {VKCUDA_ERROR_VULKAN_UNAVAILABLE, "VKCUDA_ERROR_VULKAN_UNAVAILABLE"},
        {VKCUDA_ERROR_VULKAN, "VKCUDA_ERROR_VULKAN"},
        {VKCUDA_ERROR_CUDA, "VKCUDA_ERROR_CUDA"},
        {VKCUDA_ERROR_EXTENSION_NOT_PRESENT, "VKCUDA_ERROR_EXTENSION_NOT_PRESENT"},
        {VKCUDA_ERROR_DEVICE_MISMATCH, "VKCUDA_ERROR_DEVICE_MISMATCH"},
        {VKCUDA_ERROR_UNSUPPORTED, "VKCUDA_ERROR_UNSUPPORTED"},
        {VKCUDA_ERROR_TIMEOUT, "VKCUDA_ERROR_TIMEOUT"},
        {VKCUDA_ERROR_PANIC, "VKCUDA_ERROR_PANIC"},
        {VKCUDA_ERROR_INVALID_STATE, "VKCUDA_ERROR_INVALID_STATE"},
        {VKCUDA_ERROR_PERMISSION_DENIED, "VKCUDA_ERROR_PERMISSION_DENIED"},
        {VKCUDA_ERROR_DEVICE_LOST, "VKCUDA_ERROR_DEVICE_LOST"},
    };
    static const int unknown[] = {1, 2, -16, -100, 12345, 0x7FFFFFFF, -0x7FFFFFFF};
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *s = vkcuda_result_to_string(names[i].code);
        CHECK(s != NULL && strcmp(s, names[i].name) == 0, "vkcuda_result_to_string(%d) is \"%s\"",
              (int)names[i].code, s ? s : "(null)");
    }
    for (i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        const char *s = vkcuda_result_to_string((vkcuda_result)unknown[i]);
        CHECK(s != NULL && strcmp(s, "VKCUDA_UNKNOWN_RESULT") == 0,
              "vkcuda_result_to_string(%d) is \"%s\"", unknown[i], s ? s : "(null)");
    }
}

static vkcuda_result make_vulkan_only_context(vkcuda_context **ctx)
{
    vkcuda_standalone_create_info info;
    memset(&info, 0, sizeof info);
    info.flags = VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT;
    return vkcuda_context_create_standalone(&info, ctx);
}

/* A buffer made in context a, exported, imported into context b. */
static void test_export_import(void)
{
    vkcuda_context *a = NULL, *b = NULL;
    vkcuda_buffer *src = NULL, *dst = NULL, *bad = NULL;
    vkcuda_buffer_create_info binfo;
    vkcuda_buffer_info sinfo, dinfo;
    VkBuffer vk_buffer = VK_NULL_HANDLE;
    vkcuda_buffer_import_info iinfo;
    vkcuda_semaphore_create_info seminfo;
    vkcuda_semaphore *sem = NULL;
    vkcuda_cuda_info cuda;
    vkcuda_result r;
    uint64_t ptr = 0, value = 0;
    int32_t fd = -1, fd2 = -1;

    CHECK_RESULT(make_vulkan_only_context(&a), VKCUDA_SUCCESS);
    CHECK_RESULT(make_vulkan_only_context(&b), VKCUDA_SUCCESS);
    if (a == NULL || b == NULL) {
        fprintf(stderr, "api_basics: no Vulkan-only context (is a Vulkan driver such as "
                        "lavapipe, mesa-vulkan-drivers, installed?)\n");
        vkcuda_context_destroy(a);
        vkcuda_context_destroy(b);
        return;
    }
    CHECK_RESULT(vkcuda_context_get_cuda_info(a, &cuda), VKCUDA_ERROR_CUDA_UNAVAILABLE);
    CHECK_MESSAGE();

    memset(&binfo, 0, sizeof binfo);
    binfo.size = 65536;
    CHECK_RESULT(vkcuda_buffer_create(a, &binfo, &src), VKCUDA_SUCCESS);
    if (src == NULL) {
        goto out;
    }
    memset(&sinfo, 0, sizeof sinfo);
    CHECK_RESULT(vkcuda_buffer_get_info(src, &sinfo), VKCUDA_SUCCESS);
    CHECK(vkcuda_last_error_message()[0] == '\0', "the message is not empty after a success");
    CHECK(sinfo.size == 65536, "size %llu", (unsigned long long)sinfo.size);
    CHECK(sinfo.allocation_size >= sinfo.offset + sinfo.size, "allocation_size %llu",
          (unsigned long long)sinfo.allocation_size);
    CHECK(sinfo.buffer != VK_NULL_HANDLE && sinfo.memory != VK_NULL_HANDLE, "null Vulkan view");
    CHECK_RESULT(vkcuda_buffer_get_vk_buffer(src, &vk_buffer), VKCUDA_SUCCESS);
    CHECK(sinfo.buffer == vk_buffer, "get_vk_buffer != info.buffer");
    CHECK(sinfo.allocator == VKCUDA_ALLOCATOR_VULKAN, "allocator %d", (int)sinfo.allocator);
    CHECK(sinfo.cuda_pointer == 0, "a Vulkan-only buffer has a CUDA pointer");
    CHECK(sinfo.wrapped == VK_FALSE, "a created buffer says it is wrapped");
    CHECK(sinfo.dedicated == VK_FALSE || sinfo.dedicated == VK_TRUE, "dedicated %u",
          (unsigned)sinfo.dedicated);
    CHECK_RESULT(vkcuda_buffer_get_cuda_pointer(src, &ptr), VKCUDA_ERROR_CUDA_UNAVAILABLE);
    CHECK_MESSAGE();

    CHECK_RESULT(vkcuda_buffer_export_fd(src, &fd), VKCUDA_SUCCESS);
    CHECK(fd >= 0, "exported fd %d", (int)fd);
    memset(&iinfo, 0, sizeof iinfo);
    iinfo.allocator = sinfo.allocator;
    iinfo.allocation_size = sinfo.allocation_size;
    iinfo.offset = sinfo.offset;
    iinfo.size = sinfo.size;
    iinfo.dedicated = sinfo.dedicated;
    if (fd >= 0) {
        r = vkcuda_buffer_import_fd(b, &iinfo, fd, &dst);
        CHECK_RESULT(r, VKCUDA_SUCCESS);
        if (r != VKCUDA_SUCCESS) {
            close(fd); /* still ours after a failed import */
        }
        fd = -1;
    }
    if (dst != NULL) {
        memset(&dinfo, 0, sizeof dinfo);
        CHECK_RESULT(vkcuda_buffer_get_info(dst, &dinfo), VKCUDA_SUCCESS);
        CHECK(dinfo.size == sinfo.size, "imported size %llu", (unsigned long long)dinfo.size);
        CHECK(dinfo.allocation_size == sinfo.allocation_size, "imported allocation_size %llu",
              (unsigned long long)dinfo.allocation_size);
        CHECK(dinfo.buffer != VK_NULL_HANDLE, "imported buffer has no VkBuffer");
    }

    /* A failed import leaves the fd with the caller. */
    CHECK_RESULT(vkcuda_buffer_export_fd(src, &fd2), VKCUDA_SUCCESS);
    if (fd2 >= 0) {
        iinfo.size = 0;
        bad = NOT_NULL_HANDLE(vkcuda_buffer);
        r = vkcuda_buffer_import_fd(b, &iinfo, fd2, &bad);
        CHECK(r != VKCUDA_SUCCESS, "importing a zero-sized buffer succeeded");
        if (r == VKCUDA_SUCCESS) {
            vkcuda_buffer_destroy(bad);
        } else {
            CHECK_MESSAGE();
            CHECK(bad == NULL, "a failed import did not set *buffer to NULL");
            CHECK(fcntl(fd2, F_GETFD) != -1, "a failed import closed the caller's fd");
            close(fd2);
        }
        fd2 = -1;
    }
    bad = NOT_NULL_HANDLE(vkcuda_buffer);
    iinfo.size = sinfo.size;
    CHECK(vkcuda_buffer_import_fd(b, &iinfo, -1, &bad) != VKCUDA_SUCCESS,
          "importing fd -1 succeeded");
    CHECK(bad == NULL, "a failed import did not set *buffer to NULL");

    /* A semaphore, where the driver can export one (lavapipe can). */
    memset(&seminfo, 0, sizeof seminfo);
    r = vkcuda_semaphore_create(a, &seminfo, &sem);
    if (r == VKCUDA_SUCCESS) {
        CHECK_RESULT(vkcuda_semaphore_host_signal(sem, 1), VKCUDA_SUCCESS);
        CHECK_RESULT(vkcuda_semaphore_get_value(sem, &value), VKCUDA_SUCCESS);
        CHECK(value == 1, "timeline value %llu after signalling 1", (unsigned long long)value);
        CHECK_RESULT(vkcuda_semaphore_export_fd(sem, &fd), VKCUDA_SUCCESS);
        if (fd >= 0) {
            close(fd);
            fd = -1;
        }
        vkcuda_semaphore_destroy(sem);
    } else {
        CHECK(r == VKCUDA_ERROR_EXTENSION_NOT_PRESENT || r == VKCUDA_ERROR_UNSUPPORTED,
              "vkcuda_semaphore_create: %s", vkcuda_result_to_string(r));
        printf("api_basics: no exportable semaphore here (%s)\n", vkcuda_result_to_string(r));
    }

out:
    /* Contexts first: the buffers keep them alive, so any order is right. */
    vkcuda_context_destroy(b);
    vkcuda_context_destroy(a);
    vkcuda_buffer_destroy(dst);
    vkcuda_buffer_destroy(src);
}

int main(void)
{
    vkcuda_context *warm = NULL;
    int fds_before, fds_after;

    test_versions();
    test_result_names();

    /* The first context loads the Vulkan loader and driver, which may keep files
     * open for the life of the process; count after that. */
    if (make_vulkan_only_context(&warm) == VKCUDA_SUCCESS) {
        vkcuda_context_destroy(warm);
    }
    fds_before = count_open_fds();
    test_export_import();
    fds_after = count_open_fds();
    CHECK(fds_before >= 0 && fds_after == fds_before, "%d fds open before, %d after", fds_before,
          fds_after);

    if (g_failed == 0) {
        printf("api_basics: 100%% checks passed, 0 checks failed out of %d\n", g_checks);
        return 0;
    }
    printf("api_basics: %d%% checks passed, %d checks failed out of %d\n",
           (g_checks - g_failed) * 100 / g_checks, g_failed, g_checks);
    return 1;
}
