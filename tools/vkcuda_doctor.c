/*
 * vkcuda_doctor: says whether Vulkan-CUDA interop will work on this machine, and
 * if not, why and what to do. It prints the checks of vkcuda_doctor_run: the
 * Vulkan loader, the ICD manifests and their libraries, NVIDIA's ICD, the CUDA
 * driver and its version, every Vulkan device against every CUDA device by UUID,
 * what each device supports, the NVIDIA container toolkit's setup inside a
 * container, and the open-file limit. With --deep it also runs the deep
 * self-test: every kind of shared resource made on this machine's GPU, a ramp,
 * constant tiles and random bytes pushed through each both ways and compared
 * byte for byte (deep.* checks, each with its time; deep.total with the whole run's).
 *
 *   vkcuda_doctor            text: the pairing table, then each check with its fix
 *   vkcuda_doctor --deep     also the deep self-test (seconds)
 *   vkcuda_doctor --json     the same as JSON (for CI systems and support tickets)
 *   vkcuda_doctor --root DIR read the container checks' files under DIR (tests)
 *
 * Exit status: 0 when interop will work (no check failed), 1 when a check
 * failed, 2 when the doctor itself could not run or the arguments are wrong.
 */
#include <stdio.h>
#include <string.h>

#include <vkcuda.h>

static void usage(FILE *to) {
    fprintf(to, "usage: vkcuda_doctor [--deep] [--json] [--root DIR]\n"
                "  Checks whether Vulkan-CUDA interop (vkcuda) will work here.\n"
                "  --deep also creates every kind of shared resource and compares every byte\n"
                "  written through it both ways (seconds).\n"
                "  Exit status 0: it will; 1: a check failed (each says how to fix it); 2: error.\n");
}

static const char *status_tag(vkcuda_doctor_status s) {
    switch (s) {
    case VKCUDA_DOCTOR_STATUS_PASS: return "PASS";
    case VKCUDA_DOCTOR_STATUS_WARN: return "WARN";
    case VKCUDA_DOCTOR_STATUS_FAIL: return "FAIL";
    default: return "????";
    }
}

static const char *type_name(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    default: return "other";
    }
}

static void format_uuid(const uint8_t u[16], char out[37]) {
    int i, n = 0;
    for (i = 0; i < 16; i++) {
        n += sprintf(out + n, "%02x", u[i]);
        if (i == 3 || i == 5 || i == 7 || i == 9) out[n++] = '-';
    }
    out[n] = 0;
}

static void print_pairs(const vkcuda_doctor_report *report, uint32_t count) {
    uint32_t i;
    char vu[37], cu[37];
    printf("Vulkan devices and their CUDA twins (same UUID):\n");
    if (count == 0) printf("  (no Vulkan or CUDA device seen)\n");
    for (i = 0; i < count; i++) {
        vkcuda_doctor_device_pair p;
        if (vkcuda_doctor_report_get_device_pair(report, i, &p) != VKCUDA_SUCCESS) {
            printf("  (row %u: %s)\n", i, vkcuda_last_error_message());
            continue;
        }
        format_uuid(p.vulkan_uuid, vu);
        format_uuid(p.cuda_uuid, cu);
        if (p.vulkan_index < 0)
            printf("  Vulkan -                                  <-> CUDA %d '%s' %s: no Vulkan device has this UUID\n",
                   p.cuda_ordinal, p.cuda_name, cu);
        else if (p.cuda_ordinal < 0)
            printf("  Vulkan %d '%s' (%s) %s <-> no CUDA device\n", p.vulkan_index, p.vulkan_name,
                   type_name(p.vulkan_device_type), vu);
        else
            printf("  Vulkan %d '%s' (%s) %s <-> CUDA %d '%s'%s\n", p.vulkan_index, p.vulkan_name,
                   type_name(p.vulkan_device_type), vu, p.cuda_ordinal, p.cuda_name,
                   p.ready ? ": ready for interop" : ": lacks something (see its checks)");
    }
}

int main(int argc, char **argv) {
    int json = 0, i;
    vkcuda_doctor_options options;
    vkcuda_doctor_report *report = NULL;
    vkcuda_doctor_summary summary;
    vkcuda_result r;

    memset(&options, 0, sizeof options);
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--deep") == 0) {
            options.flags |= VKCUDA_DOCTOR_RUN_DEEP_BIT;
        } else if (strcmp(argv[i], "--root") == 0 && i + 1 < argc) {
            options.root = argv[++i];
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }

    r = vkcuda_doctor_run(&options, &report);
    if (r != VKCUDA_SUCCESS) {
        fprintf(stderr, "vkcuda_doctor: %s: %s\n", vkcuda_result_to_string(r), vkcuda_last_error_message());
        return 2;
    }
    if (vkcuda_doctor_report_get_summary(report, &summary) != VKCUDA_SUCCESS) {
        fprintf(stderr, "vkcuda_doctor: %s\n", vkcuda_last_error_message());
        vkcuda_doctor_report_destroy(report);
        return 2;
    }

    if (json) {
        const char *text = NULL;
        if (vkcuda_doctor_report_get_json(report, &text) != VKCUDA_SUCCESS) {
            fprintf(stderr, "vkcuda_doctor: %s\n", vkcuda_last_error_message());
            vkcuda_doctor_report_destroy(report);
            return 2;
        }
        printf("%s\n", text);
    } else {
        printf("vkcuda doctor (vkcuda %s)\n\n", vkcuda_version_string());
        print_pairs(report, summary.device_pair_count);
        printf("\nChecks:\n");
        for (i = 0; i < (int)summary.check_count; i++) {
            vkcuda_doctor_check c;
            if (vkcuda_doctor_report_get_check(report, (uint32_t)i, &c) != VKCUDA_SUCCESS) {
                printf("  (check %d: %s)\n", i, vkcuda_last_error_message());
                continue;
            }
            printf("  [%s] %s: %s\n", status_tag(c.status), c.name, c.seen);
            if (c.fix[0]) printf("         fix: %s\n", c.fix);
        }
        printf("\n%u passed, %u warnings, %u failed: %s\n", summary.pass_count, summary.warn_count,
               summary.fail_count,
               summary.ready ? "interop will work here" : "interop will NOT work here until the failed checks are fixed");
    }
    vkcuda_doctor_report_destroy(report);
    return summary.ready ? 0 : 1;
}
