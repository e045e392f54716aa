/*
 * Without vkcuda: N threads each creating and destroying a Vulkan instance and device
 * (with VK_KHR_external_memory_fd and timeline semaphores, as a standalone vkcuda
 * context has) and one exportable buffer per cycle, in raw Vulkan. It tells whether
 * the hang and crash that tests/threads.rs contexts_from_eight_threads saw on NVIDIA's
 * driver need the library at all, and which variation avoids them:
 *
 *   concurrent_devices [--threads N] [--cycles N] [--timeout S]
 *                      [--no-lock] [--reload-loader] [--keep-instance]
 *
 *   (default)        one create/destroy of an instance and device at a time across
 *                    threads (a global mutex, as vkcuda's lifecycle lock); the loader
 *                    loaded once
 *   --no-lock        no mutex: creation and destruction concurrently, which Vulkan allows
 *   --reload-loader  dlopen/dlclose libvulkan.so.1 around every cycle (what each vkcuda
 *                    standalone context did: an ash::Entry of its own)
 *   --keep-instance  one more instance alive for the whole run, so the loader never
 *                    unloads the driver between cycles
 *
 * Prints "concurrent_devices: PASS: ..." or, when the watchdog fires after --timeout
 * seconds, each thread's last step and the kernel stacks of the process's threads, and
 * exits 3. Build: cc -Wall -Wextra -Werror -O2 -pthread -I<vulkan headers>
 * concurrent_devices.c -ldl (scripts/lab/repro/concurrent-devices.sh does, on the GPU machine).
 */
#define _GNU_SOURCE
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan_core.h>

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64

static struct {
    unsigned threads, cycles, timeout_s;
    int lock, reload, keep;
} opt = {8, 20, 60, 1, 0, 0};

static pthread_mutex_t lifecycle = PTHREAD_MUTEX_INITIALIZER;
static void *shared_loader;
static PFN_vkGetInstanceProcAddr shared_gipa;

/* What each thread is doing, for the watchdog. */
static const char *volatile step_of[MAX_THREADS];
static volatile unsigned cycle_of[MAX_THREADS];
static unsigned finished;
static pthread_mutex_t done_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fail(unsigned t, const char *what, VkResult r) {
    fprintf(stderr, "concurrent_devices: FAIL: thread %u: %s returned %d\n", t, what, (int)r);
    _exit(1);
}

static void lock(void) {
    if (opt.lock) pthread_mutex_lock(&lifecycle);
}

static void unlock(void) {
    if (opt.lock) pthread_mutex_unlock(&lifecycle);
}

static PFN_vkGetInstanceProcAddr open_loader(void **handle) {
    void *h = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    PFN_vkGetInstanceProcAddr gipa;
    if (h == NULL) {
        fprintf(stderr, "concurrent_devices: FAIL: dlopen libvulkan.so.1: %s\n", dlerror());
        _exit(1);
    }
    gipa = (PFN_vkGetInstanceProcAddr)dlsym(h, "vkGetInstanceProcAddr");
    if (gipa == NULL) {
        fprintf(stderr, "concurrent_devices: FAIL: no vkGetInstanceProcAddr in libvulkan.so.1\n");
        _exit(1);
    }
    *handle = h;
    return gipa;
}

static VkResult make_instance(PFN_vkGetInstanceProcAddr gipa, VkInstance *out) {
    PFN_vkCreateInstance create = (PFN_vkCreateInstance)gipa(VK_NULL_HANDLE, "vkCreateInstance");
    VkApplicationInfo app;
    VkInstanceCreateInfo ci;
    memset(&app, 0, sizeof app);
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.pApplicationName = "concurrent_devices";
    app.apiVersion = VK_API_VERSION_1_3;
    memset(&ci, 0, sizeof ci);
    ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    ci.pApplicationInfo = &app;
    return create(&ci, NULL, out);
}

/* One cycle: instance, device, an exportable 4 KiB buffer with its fd, all destroyed. */
static void cycle(unsigned t, PFN_vkGetInstanceProcAddr gipa) {
#define IFN(name) PFN_##name name = (PFN_##name)gipa(inst, #name)
#define DFN(name) PFN_##name name = (PFN_##name)vkGetDeviceProcAddr(dev, #name)
    VkInstance inst = VK_NULL_HANDLE;
    VkDevice dev = VK_NULL_HANDLE;
    VkPhysicalDevice phys[16];
    uint32_t nphys = 16, i, family = 0, nfam = 0;
    VkQueueFamilyProperties fams[32];
    VkResult r;
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci;
    VkPhysicalDeviceVulkan12Features v12;
    VkDeviceCreateInfo dci;
    const char *exts[] = {VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME};
    VkExternalMemoryBufferCreateInfo ebci;
    VkBufferCreateInfo bci;
    VkBuffer buf = VK_NULL_HANDLE;
    VkMemoryRequirements req;
    VkPhysicalDeviceMemoryProperties mp;
    VkExportMemoryAllocateInfo eai;
    VkMemoryAllocateInfo mai;
    VkDeviceMemory mem = VK_NULL_HANDLE;
    VkMemoryGetFdInfoKHR gfi;
    VkQueue queue;
    int fd = -1;

    step_of[t] = "lock for create";
    lock();
    step_of[t] = "vkCreateInstance";
    r = make_instance(gipa, &inst);
    if (r != VK_SUCCESS) fail(t, "vkCreateInstance", r);
    {
        IFN(vkEnumeratePhysicalDevices);
        IFN(vkGetPhysicalDeviceQueueFamilyProperties);
        IFN(vkCreateDevice);
        step_of[t] = "vkEnumeratePhysicalDevices";
        r = vkEnumeratePhysicalDevices(inst, &nphys, phys);
        if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || nphys == 0) fail(t, "vkEnumeratePhysicalDevices", r);
        nfam = 32;
        vkGetPhysicalDeviceQueueFamilyProperties(phys[0], &nfam, fams);
        for (i = 0; i < nfam; i++)
            if (fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
                family = i;
                break;
            }
        memset(&qci, 0, sizeof qci);
        qci.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
        qci.queueFamilyIndex = family;
        qci.queueCount = 1;
        qci.pQueuePriorities = &prio;
        memset(&v12, 0, sizeof v12);
        v12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
        v12.timelineSemaphore = VK_TRUE;
        memset(&dci, 0, sizeof dci);
        dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
        dci.pNext = &v12;
        dci.queueCreateInfoCount = 1;
        dci.pQueueCreateInfos = &qci;
        dci.enabledExtensionCount = 1;
        dci.ppEnabledExtensionNames = exts;
        step_of[t] = "vkCreateDevice";
        r = vkCreateDevice(phys[0], &dci, NULL, &dev);
        if (r != VK_SUCCESS) fail(t, "vkCreateDevice", r);
    }
    unlock();
    {
        IFN(vkGetDeviceProcAddr);
        IFN(vkGetPhysicalDeviceMemoryProperties);
        IFN(vkDestroyInstance);
        DFN(vkGetDeviceQueue);
        DFN(vkCreateBuffer);
        DFN(vkGetBufferMemoryRequirements);
        DFN(vkAllocateMemory);
        DFN(vkBindBufferMemory);
        DFN(vkGetMemoryFdKHR);
        DFN(vkDestroyBuffer);
        DFN(vkFreeMemory);
        DFN(vkDeviceWaitIdle);
        DFN(vkDestroyDevice);
        vkGetDeviceQueue(dev, family, 0, &queue);
        memset(&ebci, 0, sizeof ebci);
        ebci.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO;
        ebci.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
        memset(&bci, 0, sizeof bci);
        bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
        bci.pNext = &ebci;
        bci.size = 4096;
        bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                    VK_BUFFER_USAGE_TRANSFER_DST_BIT;
        step_of[t] = "vkCreateBuffer";
        r = vkCreateBuffer(dev, &bci, NULL, &buf);
        if (r != VK_SUCCESS) fail(t, "vkCreateBuffer", r);
        vkGetBufferMemoryRequirements(dev, buf, &req);
        vkGetPhysicalDeviceMemoryProperties(phys[0], &mp);
        memset(&eai, 0, sizeof eai);
        eai.sType = VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO;
        eai.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
        memset(&mai, 0, sizeof mai);
        mai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
        mai.pNext = &eai;
        mai.allocationSize = req.size;
        mai.memoryTypeIndex = UINT32_MAX;
        for (i = 0; i < mp.memoryTypeCount; i++)
            if ((req.memoryTypeBits & (1u << i)) &&
                (mp.memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)) {
                mai.memoryTypeIndex = i;
                break;
            }
        if (mai.memoryTypeIndex == UINT32_MAX) fail(t, "finding a device-local memory type", VK_ERROR_UNKNOWN);
        step_of[t] = "vkAllocateMemory";
        r = vkAllocateMemory(dev, &mai, NULL, &mem);
        if (r != VK_SUCCESS) fail(t, "vkAllocateMemory", r);
        r = vkBindBufferMemory(dev, buf, mem, 0);
        if (r != VK_SUCCESS) fail(t, "vkBindBufferMemory", r);
        memset(&gfi, 0, sizeof gfi);
        gfi.sType = VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR;
        gfi.memory = mem;
        gfi.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
        step_of[t] = "vkGetMemoryFdKHR";
        r = vkGetMemoryFdKHR(dev, &gfi, &fd);
        if (r != VK_SUCCESS) fail(t, "vkGetMemoryFdKHR", r);
        close(fd);
        step_of[t] = "vkDestroyBuffer";
        vkDestroyBuffer(dev, buf, NULL);
        vkFreeMemory(dev, mem, NULL);
        step_of[t] = "vkDeviceWaitIdle";
        vkDeviceWaitIdle(dev);
        step_of[t] = "lock for destroy";
        lock();
        step_of[t] = "vkDestroyDevice";
        vkDestroyDevice(dev, NULL);
        step_of[t] = "vkDestroyInstance";
        vkDestroyInstance(inst, NULL);
        unlock();
    }
#undef IFN
#undef DFN
}

static void *thread_main(void *arg) {
    unsigned t = (unsigned)(size_t)arg, c;
    for (c = 0; c < opt.cycles; c++) {
        void *h = NULL;
        PFN_vkGetInstanceProcAddr gipa = shared_gipa;
        cycle_of[t] = c;
        if (opt.reload) {
            step_of[t] = "dlopen";
            gipa = open_loader(&h);
        }
        cycle(t, gipa);
        if (opt.reload) {
            step_of[t] = "dlclose";
            dlclose(h);
        }
    }
    step_of[t] = "done";
    pthread_mutex_lock(&done_mu);
    finished++;
    pthread_cond_signal(&done_cv);
    pthread_mutex_unlock(&done_mu);
    return NULL;
}

static void print_file(const char *path) {
    char buf[4096];
    size_t n;
    FILE *f = fopen(path, "r");
    if (f == NULL) return;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, n, stdout);
    fclose(f);
}

/* Each thread's last step, then every task's name, wait channel and kernel stack. */
static void dump(void) {
    unsigned t;
    DIR *d;
    struct dirent *e;
    printf("concurrent_devices: HANG: %u of %u threads finished after %u s\n", finished, opt.threads,
           opt.timeout_s);
    for (t = 0; t < opt.threads; t++) printf("  thread %u: cycle %u, %s\n", t, cycle_of[t], step_of[t]);
    d = opendir("/proc/self/task");
    while (d != NULL && (e = readdir(d)) != NULL) {
        char path[300];
        if (e->d_name[0] == '.') continue;
        printf("---- task %s: ", e->d_name);
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        print_file(path);
        printf("wchan: ");
        snprintf(path, sizeof path, "/proc/self/task/%s/wchan", e->d_name);
        print_file(path);
        printf("\n");
        snprintf(path, sizeof path, "/proc/self/task/%s/stack", e->d_name);
        print_file(path);
    }
    if (d != NULL) closedir(d);
    fflush(stdout);
}

int main(int argc, char **argv) {
    pthread_t th[MAX_THREADS];
    unsigned t;
    int i, timed_out = 0;
    double t0;
    struct timespec deadline;
    VkInstance keeper = VK_NULL_HANDLE;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--threads") == 0 && v) {
            opt.threads = (unsigned)strtoul(v, NULL, 10);
            i++;
        } else if (strcmp(a, "--cycles") == 0 && v) {
            opt.cycles = (unsigned)strtoul(v, NULL, 10);
            i++;
        } else if (strcmp(a, "--timeout") == 0 && v) {
            opt.timeout_s = (unsigned)strtoul(v, NULL, 10);
            i++;
        } else if (strcmp(a, "--no-lock") == 0) {
            opt.lock = 0;
        } else if (strcmp(a, "--reload-loader") == 0) {
            opt.reload = 1;
        } else if (strcmp(a, "--keep-instance") == 0) {
            opt.keep = 1;
        } else {
            fprintf(stderr,
                    "usage: concurrent_devices [--threads N] [--cycles N] [--timeout S] [--no-lock] "
                    "[--reload-loader] [--keep-instance]\n");
            return 2;
        }
    }
    if (opt.threads == 0 || opt.threads > MAX_THREADS || opt.cycles == 0) {
        fprintf(stderr, "concurrent_devices: --threads must be 1..%d, --cycles at least 1\n", MAX_THREADS);
        return 2;
    }
    shared_gipa = open_loader(&shared_loader);
    if (opt.keep) {
        VkResult r = make_instance(shared_gipa, &keeper);
        if (r != VK_SUCCESS) fail(0, "vkCreateInstance (the kept one)", r);
    }
    if (opt.reload) {
        /* Only the threads' own dlopen handles keep the loader loaded. */
        if (!opt.keep) {
            dlclose(shared_loader);
            shared_loader = NULL;
        }
    }
    printf("concurrent_devices: %u threads x %u cycles; lock %s, loader %s, kept instance %s\n", opt.threads,
           opt.cycles, opt.lock ? "on" : "off", opt.reload ? "reloaded per cycle" : "loaded once",
           opt.keep ? "yes" : "no");
    fflush(stdout);
    t0 = now_s();
    for (t = 0; t < opt.threads; t++) {
        step_of[t] = "start";
        if (pthread_create(&th[t], NULL, thread_main, (void *)(size_t)t) != 0) {
            fprintf(stderr, "concurrent_devices: FAIL: pthread_create\n");
            return 1;
        }
    }
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += opt.timeout_s;
    pthread_mutex_lock(&done_mu);
    while (finished < opt.threads && !timed_out)
        if (pthread_cond_timedwait(&done_cv, &done_mu, &deadline) == ETIMEDOUT) timed_out = 1;
    pthread_mutex_unlock(&done_mu);
    if (timed_out) {
        dump();
        _exit(3);
    }
    for (t = 0; t < opt.threads; t++) pthread_join(th[t], NULL);
    printf("concurrent_devices: PASS: %u threads x %u cycles in %.1f s\n", opt.threads, opt.cycles, now_s() - t0);
    if (keeper != VK_NULL_HANDLE) {
        PFN_vkDestroyInstance destroy = (PFN_vkDestroyInstance)shared_gipa(keeper, "vkDestroyInstance");
        destroy(keeper, NULL);
    }
    return 0;
}
