/*
 * Compiles vkcuda.h with -Wall -Wextra -Wpedantic -Werror, once as C99
 * (header_check_c) and once as C++17 (header_check_cxx, from a copy of this file),
 * checks a few layout facts at compile time and that the program links and runs.
 */
#include <vkcuda.h>

#include <stdio.h>

#define VKCUDA_CHECK_LAYOUT(name, cond) typedef char vkcuda_check_##name[(cond) ? 1 : -1]

/* The enums are 32 bits wide (their _MAX_ENUM sentinels make sure of it). */
VKCUDA_CHECK_LAYOUT(result_size, sizeof(vkcuda_result) == 4);
VKCUDA_CHECK_LAYOUT(allocator_size, sizeof(vkcuda_allocator) == 4);
VKCUDA_CHECK_LAYOUT(semaphore_type_size, sizeof(vkcuda_semaphore_type) == 4);
/* Flags come first in every create-info struct. */
VKCUDA_CHECK_LAYOUT(buffer_flags_first, offsetof(vkcuda_buffer_create_info, flags) == 0);
VKCUDA_CHECK_LAYOUT(semaphore_flags_first, offsetof(vkcuda_semaphore_create_info, flags) == 0);
VKCUDA_CHECK_LAYOUT(context_flags_first, offsetof(vkcuda_context_create_info, flags) == 0);
VKCUDA_CHECK_LAYOUT(success_is_zero, VKCUDA_SUCCESS == 0);
VKCUDA_CHECK_LAYOUT(version_packing,
                    VKCUDA_MAKE_VERSION(1, 2, 3) == ((1u << 22) | (2u << 12) | 3u));

/* The prototypes, as function pointers: a changed signature fails to compile. */
static vkcuda_result (*const check_buffer_create)(const vkcuda_context *,
                                                  const vkcuda_buffer_create_info *,
                                                  vkcuda_buffer **) = vkcuda_buffer_create;
static vkcuda_result (*const check_import_fd)(const vkcuda_context *,
                                              const vkcuda_buffer_import_info *, int32_t,
                                              vkcuda_buffer **) = vkcuda_buffer_import_fd;
static void (*const check_context_destroy)(vkcuda_context *) = vkcuda_context_destroy;
static vkcuda_result (*const check_host_wait)(const vkcuda_semaphore *, uint64_t,
                                              uint64_t) = vkcuda_semaphore_host_wait;

int main(void)
{
#ifdef __cplusplus
    const char *lang = "C++";
#else
    const char *lang = "C";
#endif
    (void)check_buffer_create;
    (void)check_import_fd;
    (void)check_context_destroy;
    (void)check_host_wait;
    if (vkcuda_version() != VKCUDA_VERSION) {
        fprintf(stderr, "header_check (%s): vkcuda_version() 0x%lx != VKCUDA_VERSION 0x%lx\n", lang,
                (unsigned long)vkcuda_version(), (unsigned long)VKCUDA_VERSION);
        return 1;
    }
    printf("header_check (%s): vkcuda.h compiles, vkcuda %s links and matches\n", lang,
           vkcuda_version_string());
    return 0;
}
