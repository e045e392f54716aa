/*
 * cross_process_consumer: the Vulkan process of a two-process pipeline (the producer
 * is cross_process_producer.c, which starts this program; the protocol is in
 * cross_process.h). Its context is Vulkan-only: this process never touches CUDA.
 *
 *   cross_process_consumer SOCKET_PATH [--vulkan-only]
 *
 * It connects to the producer, receives the buffer and the timeline semaphore
 * (vkcuda_buffer_receive, vkcuda_semaphore_receive: each imports the fd that came
 * with the description into this process's own context), and for every frame k
 * submits one command buffer that waits on the GPU for the producer's value 2k+1,
 * acquires the buffer from the producer (VK_QUEUE_FAMILY_EXTERNAL), copies it into
 * host-visible memory, releases it back, and signals 2k+2. The host then checks every
 * word against what the producer's kernel writes for frame k.
 *
 * --vulkan-only (the producer's --vulkan-only passes it on): a buffer and no timeline;
 * the same command buffer, submitted when the producer passes the turn on the socket.
 */
#include "cross_process.h"
#include "example.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define TEN_SECONDS_NS 10000000000ull

int main(int argc, char **argv) {
    int vulkan_only = argc == 3 && strcmp(argv[2], "--vulkan-only") == 0;
    vkcuda_share_options opts = {0}; /* default timeout; only a producer of this user */
    vkcuda_buffer *buffer;
    vkcuda_semaphore *timeline = NULL; /* none with --vulkan-only */
    vkcuda_buffer_info info;
    VkSemaphore vk_timeline = VK_NULL_HANDLE;
    vkcuda_handoff_info read;
    vk_owned_buffer host;
    VkBufferCopy region = {0, 0, CROSS_PROCESS_SIZE};
    uint64_t k, i, bad = 0;
    int conn;
    example ex;

    if (argc != 2 && !vulkan_only) {
        printf("usage: cross_process_consumer SOCKET_PATH [--vulkan-only] (cross_process_producer starts it)\n");
        return 2;
    }
    example_open(&ex, "cross_process_consumer", VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT);
    conn = cross_process_socket(argv[1], 0);
    if (conn < 0) return 1;
    CHECK(vkcuda_buffer_receive(ex.ctx, conn, &opts, &buffer));
    if (!vulkan_only) {
        CHECK(vkcuda_semaphore_receive(ex.ctx, conn, &opts, &timeline));
        CHECK(vkcuda_semaphore_get_vk_semaphore(timeline, &vk_timeline));
    }
    CHECK(vkcuda_buffer_get_info(buffer, &info));
    printf("cross_process_consumer: received a %s-allocated buffer of %" PRIu64 " bytes%s\n",
           info.allocator == VKCUDA_ALLOCATOR_CUDA ? "CUDA" : "Vulkan", info.size, timeline ? " and a timeline" : "");
    host = example_host_buffer(&ex, CROSS_PROCESS_SIZE);
    read = example_handoff(&ex, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);

    for (k = 0; k < CROSS_PROCESS_FRAMES; k++) {
        vkcuda_timeline_stage copy = {2 * k + 1, 2 * k + 2};
        const uint32_t *words = (const uint32_t *)host.mapped;
        example_record(ex.cmd);
        CHECK(vkcuda_buffer_cmd_acquire_from_cuda(buffer, ex.cmd, &read));
        vkCmdCopyBuffer(ex.cmd, info.buffer, host.buffer, 1, &region);
        CHECK(vkcuda_buffer_cmd_release_to_cuda(buffer, ex.cmd, &read)); /* the producer writes it next */
        vk_cmd_barrier(ex.cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
        if (vulkan_only) {
            cross_process_wait_turn(conn); /* the producer has written frame k */
            example_run(&ex, ex.cmd);
            cross_process_pass_turn(conn); /* copied out: the producer may write frame k+1 */
        } else {
            example_submit_stage(&ex, ex.cmd, vk_timeline, &copy);
            CHECK(vkcuda_semaphore_host_wait(timeline, copy.signal_value, TEN_SECONDS_NS));
        }
        for (i = 0; i < CROSS_PROCESS_SIZE / 4; i++) bad += words[i] != pattern_word(i, cross_process_seed(k));
    }
    printf("cross_process_consumer: %d frames copied out by Vulkan, %" PRIu64 " words checked, %" PRIu64
           " wrong\n",
           CROSS_PROCESS_FRAMES, (uint64_t)CROSS_PROCESS_FRAMES * (CROSS_PROCESS_SIZE / 4), bad);

    close(conn);
    CHECK_VK(vkDeviceWaitIdle(ex.vh.device)); /* nothing in flight uses them any more */
    vk_owned_buffer_destroy(&ex.vk, &host);
    vkcuda_semaphore_destroy(timeline); /* NULL: nothing */
    vkcuda_buffer_destroy(buffer);
    example_close(&ex);
    printf("cross_process_consumer: %s\n", bad == 0 ? "PASS" : "FAIL");
    return bad == 0 ? 0 : 1;
}
