/*
 * vkcuda_info: what vkcuda sees on this machine. Prints the library version, the
 * CUDA driver, every Vulkan device with its interop support and the CUDA device with
 * its UUID (vkcuda_physical_devices_enumerate), and whether a standalone context can
 * be made (paired with CUDA, or else Vulkan-only).
 *
 * It also checks that what the library answers makes sense (known result codes with
 * a message, VkBool32 fields that are VK_TRUE or VK_FALSE, a version that is the
 * header's), so a broken install is seen here first.
 *
 * Exit status: 0 when it ran (also without a GPU or a CUDA driver); 1 when the
 * library answered something impossible, or when VKCUDA_REQUIRE_GPU=1 is set and no
 * Vulkan device could be paired with a CUDA device.
 */
#include <vkcuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_errors = 0;

/* A real problem: the library answered something it must not. */
static void fail(const char *what)
{
    fprintf(stderr, "vkcuda_info: ERROR: %s\n", what);
    g_errors++;
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
    const char *bad = NULL;
    if (strcmp(vkcuda_result_to_string(r), "VKCUDA_UNKNOWN_RESULT") == 0) bad = "an unknown result code";
    else if (r == VKCUDA_ERROR_PANIC || r == VKCUDA_ERROR_NULL_POINTER) bad = "PANIC or NULL_POINTER, valid arguments";
    else if (msg[0] == '\0') bad = "a failure without a message";
    if (bad != NULL) {
        fprintf(stderr, "vkcuda_info: %s returned %d\n", call, (int)r);
        fail(bad);
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

/* xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx */
static void format_uuid(const uint8_t u[16], char out[37])
{
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
             u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

static void print_version(void)
{
    char header_version[32];
    const char *runtime = vkcuda_version_string();

    snprintf(header_version, sizeof header_version, "%d.%d.%d", VKCUDA_VERSION_MAJOR, VKCUDA_VERSION_MINOR,
             VKCUDA_VERSION_PATCH);
    printf("vkcuda %s (header %s)\n", runtime ? runtime : "(null)", header_version);
    if (vkcuda_version() != VKCUDA_VERSION) {
        fprintf(stderr, "vkcuda_info: vkcuda_version() = 0x%08lx, VKCUDA_VERSION = 0x%08lx\n",
                (unsigned long)vkcuda_version(), (unsigned long)VKCUDA_VERSION);
        fail("the library is not the version of the header");
    }
    if (runtime == NULL || strcmp(runtime, header_version) != 0)
        fail("vkcuda_version_string() differs from the header's version");
}

static void print_cuda_driver(void)
{
    int32_t version = -1;
    vkcuda_result r = vkcuda_cuda_driver_get_version(&version);
    printf("CUDA driver: ");
    if (r != VKCUDA_SUCCESS) {
        print_failure("vkcuda_cuda_driver_get_version", r);
        return;
    }
    printf("%d.%d (%d)\n", (int)(version / 1000), (int)((version % 1000) / 10), (int)version);
    if (version <= 0) fail("vkcuda_cuda_driver_get_version succeeded with a version <= 0");
}

/* Returns how many devices have a CUDA device with their UUID. */
static int print_devices(void)
{
    uint32_t count = 0, written, i;
    int paired = 0;
    vkcuda_physical_device_support *devices;
    vkcuda_result r = vkcuda_physical_devices_enumerate(&count, NULL); /* how many */

    if (r != VKCUDA_SUCCESS) {
        printf("Vulkan devices: none: ");
        print_failure("vkcuda_physical_devices_enumerate", r);
        return 0;
    }
    printf("Vulkan devices: %lu\n", (unsigned long)count);
    devices = (vkcuda_physical_device_support *)calloc(count ? count : 1, sizeof *devices);
    if (devices == NULL) {
        fail("out of host memory");
        return 0;
    }
    written = count;
    r = vkcuda_physical_devices_enumerate(&written, devices); /* then each one */
    if (r != VKCUDA_SUCCESS) {
        print_failure("vkcuda_physical_devices_enumerate", r);
        written = 0;
    } else if (written > count) {
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
        if (!is_bool(d->external_memory_fd) || !is_bool(d->external_semaphore_fd) || !is_bool(d->timeline_semaphore) ||
            !is_bool(d->cuda_available) || !is_bool(d->cuda_device_found) || !is_bool(d->supported))
            fail("a VkBool32 field is neither VK_TRUE nor VK_FALSE");
        if ((d->cuda_device_found == VK_TRUE) != (d->cuda_device_ordinal >= 0) || d->cuda_device_ordinal < -1)
            fail("cuda_device_found and cuda_device_ordinal disagree");
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

/* The context's Vulkan side: the library's own device and queue. */
static void print_queue_family(const vkcuda_context *ctx)
{
    vkcuda_vulkan_handles handles;
    vkcuda_result r;

    memset(&handles, 0, sizeof handles);
    r = vkcuda_context_get_vulkan_handles(ctx, &handles);
    if (r != VKCUDA_SUCCESS) {
        print_failure("vkcuda_context_get_vulkan_handles", r);
        fail("vkcuda_context_get_vulkan_handles failed on a standalone context");
    } else if (handles.device == VK_NULL_HANDLE || handles.queue == VK_NULL_HANDLE)
        fail("a standalone context has no VkDevice or VkQueue");
    else
        printf("  Vulkan queue family %lu\n", (unsigned long)handles.queue_family_index);
}

/* Returns 1 when a CUDA-paired standalone context was made. */
static int try_standalone(void)
{
    vkcuda_standalone_create_info info;
    vkcuda_context *ctx = NULL;
    vkcuda_cuda_info cuda;
    vkcuda_result r;
    char uuid[37];

    memset(&info, 0, sizeof info);
    memset(&cuda, 0, sizeof cuda);
    printf("Standalone context (Vulkan + CUDA): ");
    r = vkcuda_context_create_standalone(&info, &ctx);
    if (r == VKCUDA_SUCCESS) {
        printf("created\n");
        r = vkcuda_context_get_cuda_info(ctx, &cuda);
        if (r != VKCUDA_SUCCESS) {
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
    if (ctx != NULL) fail("a failed create left a non-NULL context");

    printf("Standalone context (Vulkan only): ");
    info.flags = VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT;
    r = vkcuda_context_create_standalone(&info, &ctx);
    if (r != VKCUDA_SUCCESS) {
        printf("failed: ");
        print_failure("vkcuda_context_create_standalone", r);
        return 0;
    }
    printf("created\n");
    print_queue_family(ctx);
    if (vkcuda_context_get_cuda_info(ctx, &cuda) != VKCUDA_ERROR_CUDA_UNAVAILABLE)
        fail("vkcuda_context_get_cuda_info on a Vulkan-only context must answer VKCUDA_ERROR_CUDA_UNAVAILABLE");
    vkcuda_context_destroy(ctx);
    return 0;
}

int main(void)
{
    const char *require = getenv("VKCUDA_REQUIRE_GPU");
    int paired_devices, paired_context;

    print_version();
    print_cuda_driver();
    paired_devices = print_devices();
    paired_context = try_standalone();

    if (g_errors != 0) {
        printf("vkcuda_info: FAILED (%d error%s)\n", g_errors, g_errors == 1 ? "" : "s");
        return 1;
    }
    if (paired_context) {
        printf("vkcuda_info: OK, CUDA interop available\n");
        return 0;
    }
    if (require != NULL && strcmp(require, "1") == 0) {
        printf("vkcuda_info: FAILED: VKCUDA_REQUIRE_GPU=1 but no Vulkan device is paired with a CUDA device "
               "(%d matched by UUID)\n",
               paired_devices);
        return 1;
    }
    printf("vkcuda_info: OK, no CUDA-paired device (VKCUDA_REQUIRE_GPU=1 makes that an error)\n");
    return 0;
}
