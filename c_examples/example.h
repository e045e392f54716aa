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
 * device of the same UUID), makes its CUDA context current, creates a CUDA stream,
 * loads the example kernels (kernels.cu, as PTX: cuda_util.h) and a command buffer.
 * Without a CUDA GPU it prints "SKIPPED: <name>: <why>" and exits 77 (CTest:
 * skipped), or 1 when VKCUDA_REQUIRE_GPU=1 is set.
 *
 * Vulkan and CUDA are called as in any program: <vulkan/vulkan.h> with the Vulkan
 * loader linked, <cuda.h> with libcuda (or cuda_shim.c, which says why).
 */
#ifndef VKCUDA_EXAMPLE_H
#define VKCUDA_EXAMPLE_H

#include <cuda.h>
#include <vkcuda.h>
#include <vulkan/vulkan.h>

#include "cuda_util.h"
#include "vk_util.h"

#define CHECK(call) example_check((call), #call, __FILE__, __LINE__)
#define CHECK_VK(call) example_check_vk((call), #call, __FILE__, __LINE__)
#define CHECK_CU(call) example_check_cu((call), #call, __FILE__, __LINE__)

void example_check(vkcuda_result r, const char *call, const char *file, int line);
void example_check_vk(VkResult r, const char *call, const char *file, int line);
void example_check_cu(CUresult r, const char *call, const char *file, int line);

typedef struct example {
    vkcuda_context *ctx;
    vkcuda_vulkan_handles vh; /* instance, physical device, device, queue and its family */
    vk_device vk;             /* the device's properties and memory types (vk_util.h) */
    int cuda;                 /* 0 for a Vulkan-only context */
    CUstream stream;
    cuda_kernels kernels;     /* fill_pattern and transform (kernels.cu; cuda_util.h) */
    VkCommandPool pool;
    VkCommandBuffer cmd; /* one command buffer, for example_record / example_run */
    VkFence fence;
} example;

/* flags: 0 (Vulkan + CUDA) or VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT (no CUDA at all). */
void example_open(example *ex, const char *name, uint32_t flags);
/* For a program that makes its own device (as an engine does) instead of example_open:
 * names it in the checks' messages, and says why it cannot run here ("SKIPPED: <name>:
 * <why>: <detail>", exit 77; 1 with VKCUDA_REQUIRE_GPU=1). */
void example_set_name(const char *name);
void example_skip(const char *why, const char *detail);
/* Waits for the GPU, then destroys everything example_open made. */
void example_close(example *ex);

/* Another command buffer from the example's pool. */
VkCommandBuffer example_command_buffer(example *ex);
/* Resets and begins recording `cmd`. */
void example_record(VkCommandBuffer cmd);
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
