/*
 * frame_timeline: a frame loop with Vulkan and CUDA taking turns on shared buffers,
 * paced by ONE timeline semaphore, with several frames in flight and no CPU wait
 * except to reuse a frame's slot.
 *
 * Each frame has three stages; vkcuda_semaphore_next_stage hands out each stage's
 * pair of values (wait for the previous stage's signal, signal the next value), so
 * the program never computes timeline values itself:
 *   1. Vulkan (queue submit): vkCmdFillBuffer writes the frame number into every word,
 *      then vkcuda_buffer_cmd_release_to_cuda hands the buffer to CUDA.
 *   2. CUDA (stream): vkcuda_semaphore_cuda_wait, the transform kernel (x = 2x + 1),
 *      vkcuda_semaphore_cuda_signal. The GPU waits, not the CPU.
 *   3. Vulkan (queue submit): vkcuda_buffer_cmd_acquire_from_cuda takes the buffer
 *      back; a copy into host-visible memory.
 * Frames use SLOTS slots in turn (a shared buffer, a readback buffer, two command
 * buffers each). Before reusing a slot the CPU waits (vkcuda_semaphore_host_wait) for
 * that slot's last stage 3 and checks every word of its frame: 2 * frame + 1.
 */
#include "example.h"

#include <inttypes.h>
#include <stdio.h>

#define FRAMES 60
#define SLOTS 3
#define SIZE ((uint64_t)4 << 20) /* 4 MiB a frame */
#define ONE_SECOND_NS 1000000000ull

typedef struct slot {
    vkcuda_buffer *shared;
    vkcuda_buffer_info info;
    vk_owned_buffer readback;
    VkCommandBuffer vulkan_write, vulkan_read;
    int64_t frame;       /* the frame in this slot, -1 for none */
    uint64_t done_value; /* the timeline value its stage 3 signals */
} slot;

/* Waits until the slot's frame is through stage 3, then checks it. */
static uint64_t retire(vkcuda_semaphore *timeline, slot *s) {
    const uint32_t *words = (const uint32_t *)s->readback.mapped;
    uint32_t want = 2 * (uint32_t)s->frame + 1;
    uint64_t i, bad = 0;
    if (s->frame < 0) return 0;
    CHECK(vkcuda_semaphore_host_wait(timeline, s->done_value, ONE_SECOND_NS));
    for (i = 0; i < SIZE / 4; i++) bad += words[i] != want;
    if (bad != 0) printf("  frame %" PRId64 ": %" PRIu64 " words are not %u\n", s->frame, bad, want);
    s->frame = -1;
    return bad;
}

int main(void) {
    example ex;
    slot slots[SLOTS];
    vkcuda_semaphore_create_info tci = {0}; /* a timeline starting at 0 */
    vkcuda_semaphore *timeline;
    VkSemaphore vk_timeline;
    vkcuda_handoff_info release, acquire;
    VkBufferCopy region = {0, 0, SIZE};
    uint64_t f, bad = 0, value;
    unsigned i;

    example_open(&ex, "frame_timeline", 0);
    CHECK(vkcuda_semaphore_create(ex.ctx, &tci, &timeline));
    CHECK(vkcuda_semaphore_get_vk_semaphore(timeline, &vk_timeline)); /* for the queue submits */
    release = example_handoff(&ex, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
    acquire = example_handoff(&ex, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);

    for (i = 0; i < SLOTS; i++) {
        vkcuda_buffer_create_info bci = {0};
        slot *s = &slots[i];
        bci.size = SIZE;
        CHECK(vkcuda_buffer_create(ex.ctx, &bci, &s->shared));
        CHECK(vkcuda_buffer_get_info(s->shared, &s->info));
        s->readback = example_host_buffer(&ex, SIZE);
        s->vulkan_write = example_command_buffer(&ex);
        s->vulkan_read = example_command_buffer(&ex);
        s->frame = -1;
    }

    for (f = 0; f < FRAMES; f++) {
        slot *s = &slots[f % SLOTS];
        vkcuda_timeline_stage write, compute, read;
        bad += retire(timeline, s); /* the only CPU wait: this slot's previous frame */

        /* Stage 1, Vulkan: write the frame, release the buffer to CUDA. */
        CHECK(vkcuda_semaphore_next_stage(timeline, &write));
        example_record(s->vulkan_write);
        vkCmdFillBuffer(s->vulkan_write, s->info.buffer, 0, SIZE, (uint32_t)f);
        CHECK(vkcuda_buffer_cmd_release_to_cuda(s->shared, s->vulkan_write, &release));
        example_submit_stage(&ex, s->vulkan_write, vk_timeline, &write);

        /* Stage 2, CUDA: wait on the GPU for stage 1, compute, signal. */
        CHECK(vkcuda_semaphore_next_stage(timeline, &compute));
        CHECK(vkcuda_semaphore_cuda_wait(timeline, compute.wait_value, ex.stream));
        CHECK_CU(cuda_transform(&ex.kernels, ex.stream, s->info.cuda_pointer, SIZE, 2, 1));
        CHECK(vkcuda_semaphore_cuda_signal(timeline, compute.signal_value, ex.stream));

        /* Stage 3, Vulkan: acquire the buffer back from CUDA, copy it out. */
        CHECK(vkcuda_semaphore_next_stage(timeline, &read));
        example_record(s->vulkan_read);
        CHECK(vkcuda_buffer_cmd_acquire_from_cuda(s->shared, s->vulkan_read, &acquire));
        vkCmdCopyBuffer(s->vulkan_read, s->info.buffer, s->readback.buffer, 1, &region);
        vk_cmd_barrier(s->vulkan_read, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
        example_submit_stage(&ex, s->vulkan_read, vk_timeline, &read);
        s->frame = (int64_t)f;
        s->done_value = read.signal_value;
    }
    for (i = 0; i < SLOTS; i++) bad += retire(timeline, &slots[(f + i) % SLOTS]); /* the last frames */

    CHECK(vkcuda_semaphore_get_value(timeline, &value));
    printf("%d frames of %" PRIu64 " bytes, %d in flight, 3 stages each: the timeline is at %" PRIu64
           "; %" PRIu64 " words wrong\n",
           FRAMES, SIZE, SLOTS, value, bad);

    CHECK_VK(vkDeviceWaitIdle(ex.vh.device)); /* nothing in flight uses them any more */
    for (i = 0; i < SLOTS; i++) {
        vkcuda_buffer_destroy(slots[i].shared);
        vk_owned_buffer_destroy(&ex.vk, &slots[i].readback);
    }
    vkcuda_semaphore_destroy(timeline);
    example_close(&ex);
    printf("frame_timeline: %s\n", bad == 0 ? "PASS" : "FAIL");
    return bad == 0 ? 0 : 1;
}
