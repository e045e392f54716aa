/*
 * cross_process_producer: the CUDA process of a two-process pipeline (the consumer is
 * cross_process_consumer.c; the protocol is in cross_process.h). It makes a
 * CUDA-allocated buffer and a timeline semaphore, sends both to the consumer over a
 * Unix socket, and writes CROSS_PROCESS_FRAMES frames into the buffer with a CUDA
 * kernel, each one after the consumer's Vulkan submit has copied the one before:
 * the two processes take turns on the GPU through the shared timeline.
 *
 *   cross_process_producer              listens on a socket in a new private
 *                                       directory and starts the consumer on it
 *                                       (from this program's directory)
 *   cross_process_producer SOCKET_PATH  listens there; start the consumer yourself:
 *                                       cross_process_consumer SOCKET_PATH
 *   cross_process_producer --vulkan-only [SOCKET_PATH]
 *                                       the same without CUDA (lavapipe): a
 *                                       Vulkan-allocated buffer, each frame written by
 *                                       a Vulkan copy, turns taken on the socket
 *                                       (cross_process.h); the consumer takes
 *                                       --vulkan-only after SOCKET_PATH too
 *
 * The consumer checks every word of every frame and says PASS or FAIL; so does this
 * program, from the consumer's exit status (when it started the consumer).
 */
#include "cross_process.h"
#include "example.h"

#include <inttypes.h>
#include <poll.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define TEN_SECONDS_NS 10000000000ull

extern char **environ;

/* Starts cross_process_consumer (next to argv0) on `socket_path`; its pid. */
static pid_t start_consumer(const char *argv0, char *socket_path, int vulkan_only) {
    char program[4096], flag[] = "--vulkan-only";
    const char *slash = strrchr(argv0, '/');
    char *args[4] = {program, socket_path, vulkan_only ? flag : NULL, NULL};
    pid_t pid;
    snprintf(program, sizeof program, "%.*scross_process_consumer", slash ? (int)(slash - argv0 + 1) : 0, argv0);
    if (posix_spawnp(&pid, program, NULL, NULL, args, environ) != 0) {
        printf("cross_process_producer: FAIL: cannot start %s\n", program);
        exit(1);
    }
    return pid;
}

/* --vulkan-only: the host writes frame k (what the kernel writes) into `staging`, and a
 * Vulkan copy puts it into the shared buffer between the handoff barriers: to this
 * queue, the consumer's process is as external as CUDA is (VK_QUEUE_FAMILY_EXTERNAL). */
static void vulkan_write_frame(example *ex, vkcuda_buffer *buffer, const vk_owned_buffer *staging, uint64_t k) {
    vkcuda_handoff_info write = example_handoff(ex, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
    VkBufferCopy region = {0, 0, CROSS_PROCESS_SIZE};
    vkcuda_buffer_info info;
    uint64_t i;
    for (i = 0; i < CROSS_PROCESS_SIZE / 4; i++)
        ((uint32_t *)staging->mapped)[i] = pattern_word(i, cross_process_seed(k));
    CHECK(vkcuda_buffer_get_info(buffer, &info));
    example_record(ex->cmd);
    CHECK(vkcuda_buffer_cmd_acquire_from_cuda(buffer, ex->cmd, &write));
    vkCmdCopyBuffer(ex->cmd, staging->buffer, info.buffer, 1, &region);
    CHECK(vkcuda_buffer_cmd_release_to_cuda(buffer, ex->cmd, &write));
    example_run(ex, ex->cmd);
}

int main(int argc, char **argv) {
    int vulkan_only = argc > 1 && strcmp(argv[1], "--vulkan-only") == 0;
    const char *given = argc > 1 + vulkan_only ? argv[1 + vulkan_only] : NULL; /* SOCKET_PATH */
    char dir[] = "/tmp/vkcuda-cross-process.XXXXXX", path[256];
    vkcuda_buffer_create_info bi = {0};
    vkcuda_semaphore_create_info si = {0}; /* a timeline at 0 */
    vkcuda_share_options opts = {0};       /* default timeout; only peers of this user */
    vkcuda_buffer *buffer;
    vkcuda_semaphore *timeline = NULL;     /* none with --vulkan-only */
    vk_owned_buffer staging = {0};         /* --vulkan-only: the host's frame */
    uint64_t cuda_pointer = 0, k;
    pid_t consumer = -1;
    int listener, conn, status = 0, ok;
    struct pollfd pf = {0};
    example ex;

    /* No CUDA GPU: SKIP, before any socket (--vulkan-only needs none). */
    example_open(&ex, "cross_process_producer", vulkan_only ? VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT : 0);
    bi.allocator = vulkan_only ? VKCUDA_ALLOCATOR_VULKAN : VKCUDA_ALLOCATOR_CUDA;
    bi.size = CROSS_PROCESS_SIZE;
    CHECK(vkcuda_buffer_create(ex.ctx, &bi, &buffer));
    if (vulkan_only) {
        staging = example_host_buffer(&ex, CROSS_PROCESS_SIZE);
    } else {
        CHECK(vkcuda_buffer_get_cuda_pointer(buffer, &cuda_pointer));
        CHECK(vkcuda_semaphore_create(ex.ctx, &si, &timeline));
    }

    /* The socket, and the consumer on it. */
    if (given != NULL) {
        snprintf(path, sizeof path, "%s", given);
    } else if (mkdtemp(dir) != NULL) {
        snprintf(path, sizeof path, "%s/socket", dir);
    } else {
        perror("mkdtemp");
        return 1;
    }
    listener = cross_process_socket(path, 1);
    if (listener < 0) return 1;
    pf.fd = listener;
    pf.events = POLLIN;
    printf("cross_process_producer: listening on %s\n", path);
    if (given == NULL) consumer = start_consumer(argv[0], path, vulkan_only);
    if (poll(&pf, 1, 30000) != 1 || (conn = accept(listener, NULL, NULL)) < 0) {
        printf("cross_process_producer: FAIL: no consumer connected within 30 s\n");
        return 1;
    }

    /* Send the buffer and the timeline: the consumer imports both into its own context. */
    CHECK(vkcuda_buffer_send(buffer, conn, &opts));
    if (timeline != NULL) CHECK(vkcuda_semaphore_send(timeline, conn, &opts));
    printf("cross_process_producer: sent a %s-allocated buffer of %" PRIu64 " bytes%s\n",
           vulkan_only ? "Vulkan" : "CUDA", (uint64_t)CROSS_PROCESS_SIZE, timeline ? " and a timeline" : "");

    for (k = 0; k < CROSS_PROCESS_FRAMES; k++) {
        if (vulkan_only) {
            vulkan_write_frame(&ex, buffer, &staging, k);
            cross_process_pass_turn(conn); /* frame k is written */
            cross_process_wait_turn(conn); /* the consumer copied it out */
        } else {
            /* Stay at most one frame ahead of the consumer: it has copied frame k - 2. */
            if (k >= 2) CHECK(vkcuda_semaphore_host_wait(timeline, 2 * k - 2, TEN_SECONDS_NS));
            CHECK(vkcuda_semaphore_cuda_wait(timeline, 2 * k, ex.stream)); /* the consumer copied frame k-1 */
            CHECK_CU(cuda_fill_pattern(&ex.kernels, ex.stream, cuda_pointer, CROSS_PROCESS_SIZE,
                                       cross_process_seed(k)));
            CHECK(vkcuda_semaphore_cuda_signal(timeline, 2 * k + 1, ex.stream)); /* frame k is written */
        }
    }
    if (timeline != NULL) CHECK(vkcuda_semaphore_host_wait(timeline, 2 * CROSS_PROCESS_FRAMES, TEN_SECONDS_NS));
    printf("cross_process_producer: wrote %d frames; the consumer copied the last one\n", CROSS_PROCESS_FRAMES);

    if (consumer > 0 && waitpid(consumer, &status, 0) != consumer) status = -1;
    ok = consumer < 0 || (WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(conn);
    close(listener);
    unlink(path);
    if (given == NULL) rmdir(dir);
    if (vulkan_only) vk_owned_buffer_destroy(&ex.vk, &staging);
    vkcuda_semaphore_destroy(timeline); /* NULL: nothing */
    vkcuda_buffer_destroy(buffer); /* the consumer's import keeps the memory alive on its side */
    example_close(&ex);
    printf("cross_process_producer: %s\n", ok ? "PASS" : "FAIL (see the consumer's output)");
    return ok ? 0 : 1;
}
