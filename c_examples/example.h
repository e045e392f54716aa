/*
 * example.h: what every example shares, so that each example file shows its one idea
 * and nothing else.
 *
 * Result checks (one family; each prints the failing call and exits 1):
 *   CHECK(call)     a vkcuda call: prints its result name and the library's
 *                   vkcuda_last_error_message(), which says what failed and why
 *   CHECK_VK(call)  a Vulkan call (VkResult)
 *   CHECK_CU(call)  a CUDA driver API call (CUresult)
 *
 * Device setup, standing in for your engine: example_open() makes a standalone vkcuda
 * context (the library's own VkInstance, VkDevice and queue, paired with the CUDA
 * device of the same UUID), loads the Vulkan functions from it (vk_loader.h: nothing
 * links libvulkan), loads the CUDA driver API (cuda_driver.h: libcuda.so.1 by dlopen,
 * no CUDA toolkit), makes the context's CUDA context current, creates a CUDA stream,
 * loads the example kernels (kernels.cu, as PTX) and a command buffer. Without a CUDA
 * GPU it prints "SKIPPED: <name>: <why>" and exits 77 (CTest: skipped), or 1 when
 * VKCUDA_REQUIRE_GPU=1 is set.
 */
#ifndef VKCUDA_EXAMPLE_H
#define VKCUDA_EXAMPLE_H

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vkcuda.h>

#include "cuda_driver.h"
#include "vk_loader.h"

#define CHECK(call) example_check((call), #call, __FILE__, __LINE__)
#define CHECK_VK(call) example_check_vk((call), #call, __FILE__, __LINE__)
#define CHECK_CU(call) example_check_cu((call), #call, __FILE__, __LINE__)

void example_check(vkcuda_result r, const char *call, const char *file, int line);
void example_check_vk(VkResult r, const char *call, const char *file, int line);
void example_check_cu(CUresult r, const char *call, const char *file, int line);

typedef struct example {
    vkcuda_context *ctx;
    vkcuda_vulkan_handles vh; /* instance, physical device, device, queue and its family */
    vk_functions vk;          /* Vulkan functions (vk_loader.h) */
    int cuda;                 /* 0 for a Vulkan-only context */
    cuda_driver cu;           /* CUDA driver API (cuda_driver.h) */
    CUstream stream;
    cuda_kernels kernels;     /* fill_pattern and transform (kernels.cu) */
    VkCommandPool pool;
    VkCommandBuffer cmd; /* one command buffer, for example_record / example_run */
    VkFence fence;
} example;

/* flags: 0 (Vulkan + CUDA) or VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT (no CUDA at all). */
void example_open(example *ex, const char *name, uint32_t flags);
/* Waits for the GPU, then destroys everything example_open made. */
void example_close(example *ex);

/* Another command buffer from the example's pool. */
VkCommandBuffer example_command_buffer(example *ex);
/* Resets and begins recording `cmd`. */
void example_record(example *ex, VkCommandBuffer cmd);
/* Ends `cmd`, submits it and waits until the GPU has run it. */
void example_run(example *ex, VkCommandBuffer cmd);
/* Ends `cmd` and submits it as one stage of a timeline: the submit waits for
 * stage->wait_value on `timeline` and signals stage->signal_value. */
void example_submit_stage(example *ex, VkCommandBuffer cmd, VkSemaphore timeline,
                          const vkcuda_timeline_stage *stage);

/* The handoff barrier's description: this queue family, and the stages and accesses
 * before a release (or after an acquire). */
vkcuda_handoff_info example_handoff(const example *ex, VkPipelineStageFlags stage, VkAccessFlags access);
/* A host-visible buffer for copies to and from the GPU (TRANSFER_SRC | TRANSFER_DST),
 * mapped at ->mapped. */
vk_owned_buffer example_host_buffer(example *ex, VkDeviceSize size);

#endif /* VKCUDA_EXAMPLE_H */
