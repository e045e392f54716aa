/*
 * vkcuda_info: what vkcuda sees on this machine. Prints the library version, the
 * CUDA driver, every Vulkan device with its interop support and matching CUDA
 * device, and whether a standalone context can be made (paired with CUDA, or else
 * Vulkan-only).
 *
 * Exit status: 0 when it ran (also without a GPU or a CUDA driver); 1 when the
 * library answered something impossible, or when VKCUDA_REQUIRE_GPU=1 is set and
 * no Vulkan device could be paired with a CUDA device.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <vkcuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef VK_API_VERSION_MAJOR
#define VK_API_VERSION_MAJOR(v) VK_VERSION_MAJOR(v)
#define VK_API_VERSION_MINOR(v) VK_VERSION_MINOR(v)
#define VK_API_VERSION_PATCH(v) VK_VERSION_PATCH(v)
#endif

static int g_errors = 0;

/* A real problem: the library answered something it must not. */
static void fail(const char *what)
{
    fprintf(stderr, "vkcuda_info: ERROR: %s\n", what);
    g_errors++;
}

static int is_known_result(vkcuda_result r)
{
    return strcmp(vkcuda_result_to_string(r), "VKCUDA_UNKNOWN_RESULT") != 0;
}

/* Prints "<RESULT_NAME>: <message>" for a failed call and checks that the failure
 * is one a correct call can get (a known code with a message, not a panic). */
static void print_failure(const char *call, vkcuda_result r)
{
    /* Copied first: the message is only valid until the next vkcuda call. */
    char msg[1024];
    const char *last = vkcuda_last_error_message();
    snprintf(msg, sizeof msg, "%s", last ? last : "");
    printf("%s: %s\n", vkcuda_result_to_string(r), msg);
    if (!is_known_result(r)) {
        fprintf(stderr, "vkcuda_info: %s returned unknown result %d\n", call, (int)r);
        fail("unknown result code");
    } else if (r == VKCUDA_ERROR_PANIC || r == VKCUDA_ERROR_NULL_POINTER) {
        fprintf(stderr, "vkcuda_info: %s returned %s for valid arguments\n", call,
                vkcuda_result_to_string(r));
        fail("unexpected result for valid arguments");
    } else if (msg[0] == '\0') {
        fprintf(stderr, "vkcuda_info: %s failed without a message\n", call);
        fail("failure without a message");
    }
}

static const char *yes_no(VkBool32 b)
{
    return b == VK_TRUE ? "yes" : "no";
}

static int is_bool(VkBool32 b)
{
    return b == VK_TRUE || b == VK_FALSE;
}

static void format_uuid(const uint8_t uuid[16], char out[37])
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    int i;
    for (i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            out[o++] = '-';
        }
        out[o++] = hex[uuid[i] >> 4];
        out[o++] = hex[uuid[i] & 0xF];
    }
    out[o] = '\0';
}

static void print_version(void)
{
    char header_version[32];
    const char *runtime = vkcuda_version_string();
    uint32_t packed = vkcuda_version();

    snprintf(header_version, sizeof header_version, "%d.%d.%d", VKCUDA_VERSION_MAJOR,
             VKCUDA_VERSION_MINOR, VKCUDA_VERSION_PATCH);
    printf("vkcuda %s (header %s)\n", runtime ? runtime : "(null)", header_version);
    if (packed != VKCUDA_VERSION) {
        fprintf(stderr, "vkcuda_info: vkcuda_version() = 0x%08lx, VKCUDA_VERSION = 0x%08lx\n",
                (unsigned long)packed, (unsigned long)VKCUDA_VERSION);
        fail("the library is not the version of the header");
    }
    if (runtime == NULL || strcmp(runtime, header_version) != 0) {
        fail("vkcuda_version_string() differs from the header's version");
    }
}

static void print_cuda_driver(void)
{
    int32_t version = -1;
    vkcuda_result r = vkcuda_cuda_driver_get_version(&version);
    printf("CUDA driver: ");
    if (r == VKCUDA_SUCCESS) {
        printf("%d.%d (%d)\n", (int)(version / 1000), (int)((version % 1000) / 10), (int)version);
        if (version <= 0) {
            fail("vkcuda_cuda_driver_get_version succeeded with a version <= 0");
        }
    } else {
        printf("not available: ");
        print_failure("vkcuda_cuda_driver_get_version", r);
    }
}

/* Returns how many devices have a CUDA device with their UUID. */
static int print_devices(void)
{
    uint32_t count = 0, written, i;
    int paired = 0;
    vkcuda_physical_device_support *devices;
    vkcuda_result r = vkcuda_physical_devices_enumerate(&count, NULL);

    if (r != VKCUDA_SUCCESS) {
        printf("Vulkan devices: not available: ");
        print_failure("vkcuda_physical_devices_enumerate", r);
        return 0;
    }
    printf("Vulkan devices: %lu\n", (unsigned long)count);
    if (count == 0) {
        return 0;
    }
    devices = (vkcuda_physical_device_support *)calloc(count, sizeof *devices);
    if (devices == NULL) {
        fail("out of host memory");
        return 0;
    }
    written = count;
    r = vkcuda_physical_devices_enumerate(&written, devices);
    if (r != VKCUDA_SUCCESS) {
        printf("Vulkan devices: listing failed: ");
        print_failure("vkcuda_physical_devices_enumerate", r);
        free(devices);
        return 0;
    }
    if (written > count) {
        fail("vkcuda_physical_devices_enumerate wrote more devices than asked for");
        written = count;
    }
    for (i = 0; i < written; i++) {
        const vkcuda_physical_device_support *d = &devices[i];
        char uuid[37];
        uint32_t v = d->api_version;

        if (memchr(d->device_name, '\0', sizeof d->device_name) == NULL) {
            fail("device_name is not NUL-terminated");
            continue;
        }
        if (!is_bool(d->external_memory_fd) || !is_bool(d->external_semaphore_fd) ||
            !is_bool(d->timeline_semaphore) || !is_bool(d->cuda_available) ||
            !is_bool(d->cuda_device_found) || !is_bool(d->supported)) {
            fail("a VkBool32 field is neither VK_TRUE nor VK_FALSE");
        }
        if ((d->cuda_device_found == VK_TRUE) != (d->cuda_device_ordinal >= 0) ||
            d->cuda_device_ordinal < -1) {
            fail("cuda_device_found and cuda_device_ordinal disagree");
        }
        format_uuid(d->device_uuid, uuid);
        printf("  [%lu] %s\n", (unsigned long)i, d->device_name);
        printf("      UUID                   %s\n", uuid);
        printf("      API version            %u.%u.%u\n", (unsigned)VK_API_VERSION_MAJOR(v),
               (unsigned)VK_API_VERSION_MINOR(v), (unsigned)VK_API_VERSION_PATCH(v));
        printf("      external_memory_fd     %s\n", yes_no(d->external_memory_fd));
        printf("      external_semaphore_fd  %s\n", yes_no(d->external_semaphore_fd));
        printf("      timeline_semaphore     %s\n", yes_no(d->timeline_semaphore));
        printf("      CUDA driver            %s\n", d->cuda_available == VK_TRUE ? "loaded" : "not loaded");
        if (d->cuda_device_found == VK_TRUE) {
            printf("      CUDA device            %d\n", (int)d->cuda_device_ordinal);
            paired++;
        } else {
            printf("      CUDA device            none\n");
        }
        printf("      interop supported      %s\n", yes_no(d->supported));
    }
    free(devices);
    return paired;
}

static void print_queue_family(const vkcuda_context *ctx)
{
    vkcuda_vulkan_handles handles;
    vkcuda_result r;

    memset(&handles, 0, sizeof handles);
    r = vkcuda_context_get_vulkan_handles(ctx, &handles);
    if (r != VKCUDA_SUCCESS) {
        printf("  vkcuda_context_get_vulkan_handles failed: ");
        print_failure("vkcuda_context_get_vulkan_handles", r);
        fail("vkcuda_context_get_vulkan_handles failed on a standalone context");
        return;
    }
    if (handles.device == VK_NULL_HANDLE || handles.queue == VK_NULL_HANDLE) {
        fail("a standalone context has no VkDevice or VkQueue");
    }
    printf("  Vulkan queue family %lu\n", (unsigned long)handles.queue_family_index);
}

/* Returns 1 when a CUDA-paired standalone context was made. */
static int try_standalone(void)
{
    vkcuda_standalone_create_info info;
    vkcuda_context *ctx = NULL;
    vkcuda_cuda_info cuda;
    vkcuda_result r;

    printf("Standalone context (Vulkan + CUDA): ");
    r = vkcuda_context_create_standalone(NULL, &ctx);
    if (r == VKCUDA_SUCCESS) {
        char uuid[37];
        printf("created\n");
        memset(&cuda, 0, sizeof cuda);
        r = vkcuda_context_get_cuda_info(ctx, &cuda);
        if (r != VKCUDA_SUCCESS) {
            printf("  vkcuda_context_get_cuda_info failed: ");
            print_failure("vkcuda_context_get_cuda_info", r);
            fail("a CUDA-paired context has no CUDA side");
        } else {
            format_uuid(cuda.device_uuid, uuid);
            printf("  CUDA device %d (ordinal %d, %s context), UUID %s\n", (int)cuda.cuda_device,
                   (int)cuda.device_ordinal, cuda.primary == VK_TRUE ? "primary" : "own", uuid);
        }
        print_queue_family(ctx);
        vkcuda_context_destroy(ctx);
        return 1;
    }
    printf("failed: ");
    print_failure("vkcuda_context_create_standalone", r);
    if (ctx != NULL) {
        fail("a failed create left a non-NULL context");
    }

    printf("Standalone context (Vulkan only): ");
    memset(&info, 0, sizeof info);
    info.flags = VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT;
    ctx = NULL;
    r = vkcuda_context_create_standalone(&info, &ctx);
    if (r != VKCUDA_SUCCESS) {
        printf("failed: ");
        print_failure("vkcuda_context_create_standalone", r);
        return 0;
    }
    printf("created\n");
    print_queue_family(ctx);
    memset(&cuda, 0, sizeof cuda);
    r = vkcuda_context_get_cuda_info(ctx, &cuda);
    if (r != VKCUDA_ERROR_CUDA_UNAVAILABLE) {
        fprintf(stderr, "vkcuda_info: vkcuda_context_get_cuda_info on a Vulkan-only context: %s\n",
                vkcuda_result_to_string(r));
        fail("a Vulkan-only context must answer VKCUDA_ERROR_CUDA_UNAVAILABLE");
    }
    vkcuda_context_destroy(ctx);
    return 0;
}

int main(void)
{
    const char *require = getenv("VKCUDA_REQUIRE_GPU");
    int require_gpu = require != NULL && strcmp(require, "1") == 0;
    int paired_devices, paired_context;

    print_version();
    print_cuda_driver();
    paired_devices = print_devices();
    paired_context = try_standalone();

    if (g_errors != 0) {
        printf("vkcuda_info: FAILED (%d error%s)\n", g_errors, g_errors == 1 ? "" : "s");
        return 1;
    }
    if (!paired_context) {
        if (require_gpu) {
            printf("vkcuda_info: FAILED: VKCUDA_REQUIRE_GPU=1 but no Vulkan device is paired "
                   "with a CUDA device (%d matched by UUID)\n",
                   paired_devices);
            return 1;
        }
        printf("vkcuda_info: OK, no CUDA-paired device (VKCUDA_REQUIRE_GPU=1 makes that an "
               "error)\n");
        return 0;
    }
    printf("vkcuda_info: OK, CUDA interop available\n");
    return 0;
}
