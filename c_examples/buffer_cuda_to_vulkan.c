/*
 * buffer_cuda_to_vulkan: CUDA allocates a buffer, a CUDA kernel writes it, Vulkan
 * reads it. No copy between the two APIs: one allocation, two views.
 *
 *   1. vkcuda_buffer_create with VKCUDA_ALLOCATOR_CUDA: the library allocates with
 *      cuMemCreate (exportable as a POSIX fd), rounded up to CUDA's allocation
 *      granularity, and imports that memory into Vulkan as a VkBuffer.
 *   2. CUDA writes: the fill_pattern kernel (kernels.cu) writes word i of the buffer
 *      through the CUDA pointer; the stream is synchronised (a timeline semaphore would
 *      do this without a CPU wait: see frame_timeline.c).
 *   3. Vulkan reads: the acquire barrier (vkcuda_buffer_cmd_acquire_from_cuda: a
 *      queue-family transfer from VK_QUEUE_FAMILY_EXTERNAL) makes CUDA's writes
 *      visible to this queue; then an ordinary vkCmdCopyBuffer into host-visible memory.
 *   4. The host compares every word with what the kernel computes (pattern_word).
 */
#include "example.h"

#include <inttypes.h>
#include <stdio.h>

#define SIZE ((uint64_t)16 << 20) /* 16 MiB */
#define SEED 0xc0ffeeu

int main(void) {
    example ex;
    example_open(&ex, "buffer_cuda_to_vulkan", 0);

    /* 1. The shared buffer, allocated by CUDA. */
    vkcuda_buffer_create_info ci = {
        .allocator = VKCUDA_ALLOCATOR_CUDA, .size = SIZE, .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT};
    vkcuda_buffer *shared;
    CHECK(vkcuda_buffer_create(ex.ctx, &ci, &shared));
    vkcuda_buffer_info info;
    CHECK(vkcuda_buffer_get_info(shared, &info));
    printf("CUDA allocated %" PRIu64 " bytes (allocation %" PRIu64 " bytes); CUDA pointer 0x%" PRIx64 "\n",
           info.size, info.allocation_size, info.cuda_pointer);

    /* 2. A CUDA kernel writes it. */
    CHECK_CU(cuda_fill_pattern(&ex.kernels, ex.stream, info.cuda_pointer, SIZE, SEED));
    CHECK_CU(cuStreamSynchronize(ex.stream));
    printf("the fill_pattern kernel wrote %" PRIu64 " words through the CUDA pointer\n", SIZE / 4);

    /* 3. Vulkan takes it over from CUDA and copies it out. */
    vk_owned_buffer host = example_host_buffer(&ex, SIZE);
    vkcuda_handoff_info acquire = example_handoff(&ex, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    VkBufferCopy region = {0, 0, SIZE};
    example_record(ex.cmd);
    CHECK(vkcuda_buffer_cmd_acquire_from_cuda(shared, ex.cmd, &acquire));
    vkCmdCopyBuffer(ex.cmd, info.buffer, host.buffer, 1, &region);
    vk_cmd_barrier(ex.cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    example_run(&ex, ex.cmd);

    /* 4. Every word, as Vulkan read it, against the kernel's formula. */
    const uint32_t *words = (const uint32_t *)host.mapped;
    uint64_t bad = 0;
    for (uint64_t i = 0; i < SIZE / 4; i++) {
        if (words[i] != pattern_word(i, SEED)) {
            if (bad < 5)
                printf("  word %" PRIu64 " is 0x%08x, expected 0x%08x\n", i, words[i], pattern_word(i, SEED));
            bad++;
        }
    }
    printf("Vulkan read %" PRIu64 " words; %" PRIu64 " differ from what CUDA wrote\n", SIZE / 4, bad);

    vk_owned_buffer_destroy(&ex.vk, &host);
    vkcuda_buffer_destroy(shared); /* CUDA's mapping and allocation, then the VkBuffer and its memory */
    example_close(&ex);
    printf("buffer_cuda_to_vulkan: %s\n", bad == 0 ? "PASS" : "FAIL");
    return bad == 0 ? 0 : 1;
}
