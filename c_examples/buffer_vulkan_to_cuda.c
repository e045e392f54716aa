/*
 * buffer_vulkan_to_cuda: Vulkan allocates a buffer and writes it, a CUDA kernel reads
 * it. The direction an engine uses to hand a rendered result (vertices, a G-buffer,
 * a point cloud) to CUDA without a copy.
 *
 *   1. vkcuda_buffer_create with the default allocator (Vulkan): exportable
 *      VkDeviceMemory (dedicated when the driver wants it), imported into CUDA with
 *      the whole allocation size; the CUDA pointer is info.cuda_pointer.
 *   2. Vulkan writes: the host fills a staging buffer, vkCmdCopyBuffer copies it into
 *      the shared buffer, and the release barrier (vkcuda_buffer_cmd_release_to_cuda:
 *      a queue-family transfer to VK_QUEUE_FAMILY_EXTERNAL) hands the buffer to CUDA.
 *      The fence wait stands in for a timeline semaphore (see frame_timeline.c).
 *   3. CUDA reads: the transform kernel (kernels.cu) computes x * 3 + 7 in place on
 *      every word, then cuMemcpyDtoH copies the buffer to the host.
 *   4. The host compares every word with what the kernel must have made of the
 *      words Vulkan wrote.
 */
#include "example.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define SIZE ((uint64_t)16 << 20) /* 16 MiB */
#define MUL 3u
#define ADD 7u

static uint32_t written_by_vulkan(uint64_t i) {
    return (uint32_t)i * 2654435761u;
}

int main(void) {
    example ex;
    example_open(&ex, "buffer_vulkan_to_cuda", 0);

    /* 1. The shared buffer, allocated by Vulkan (the default allocator). */
    vkcuda_buffer_create_info ci = {.size = SIZE}; /* usage: transfers and storage */
    vkcuda_buffer *shared;
    CHECK(vkcuda_buffer_create(ex.ctx, &ci, &shared));
    vkcuda_buffer_info info;
    CHECK(vkcuda_buffer_get_info(shared, &info));
    printf("Vulkan allocated %" PRIu64 " bytes (%s allocation of %" PRIu64 " bytes); CUDA pointer 0x%" PRIx64 "\n",
           info.size, info.dedicated ? "a dedicated" : "an", info.allocation_size, info.cuda_pointer);

    /* 2. Vulkan writes it, then releases it to CUDA. */
    vk_owned_buffer staging = example_host_buffer(&ex, SIZE);
    uint32_t *words = (uint32_t *)staging.mapped;
    for (uint64_t i = 0; i < SIZE / 4; i++) words[i] = written_by_vulkan(i);
    vkcuda_handoff_info release = example_handoff(&ex, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
    VkBufferCopy region = {0, 0, SIZE};
    example_record(ex.cmd);
    vkCmdCopyBuffer(ex.cmd, staging.buffer, info.buffer, 1, &region);
    CHECK(vkcuda_buffer_cmd_release_to_cuda(shared, ex.cmd, &release));
    example_run(&ex, ex.cmd);
    printf("Vulkan wrote %" PRIu64 " words with vkCmdCopyBuffer and released the buffer to CUDA\n", SIZE / 4);

    /* 3. A CUDA kernel reads (and rewrites) every word; the host copies the result out. */
    CHECK_CU(cuda_transform(&ex.kernels, ex.stream, info.cuda_pointer, SIZE, MUL, ADD));
    CHECK_CU(cuStreamSynchronize(ex.stream));
    uint32_t *result = (uint32_t *)malloc(SIZE);
    if (result == NULL) return 1;
    CHECK_CU(cuMemcpyDtoH(result, info.cuda_pointer, SIZE));

    /* 4. Every word: the kernel saw what Vulkan wrote. */
    uint64_t bad = 0;
    for (uint64_t i = 0; i < SIZE / 4; i++) {
        uint32_t want = transform_word(written_by_vulkan(i), MUL, ADD);
        if (result[i] != want) {
            if (bad < 5) printf("  word %" PRIu64 " is 0x%08x, expected 0x%08x\n", i, result[i], want);
            bad++;
        }
    }
    printf("CUDA computed %" PRIu64 " words from Vulkan's data; %" PRIu64 " are wrong\n", SIZE / 4, bad);

    free(result);
    vk_owned_buffer_destroy(&ex.vk, &staging);
    vkcuda_buffer_destroy(shared); /* CUDA's import first, then the VkBuffer and its memory */
    example_close(&ex);
    printf("buffer_vulkan_to_cuda: %s\n", bad == 0 ? "PASS" : "FAIL");
    return bad == 0 ? 0 : 1;
}
