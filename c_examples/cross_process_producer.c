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
#include <sys/wait.h>

#define TEN_SECONDS_NS 10000000000ull

extern char **environ;

/* Starts cross_process_consumer (next to argv0) on `socket_path`; its pid. */
static pid_t start_consumer(const char *argv0, char *socket_path) {
    char program[4096];
    const char *slash = strrchr(argv0, '/');
    char *args[3];
    pid_t pid;
    snprintf(program, sizeof program, "%.*scross_process_consumer", slash ? (int)(slash - argv0 + 1) : 0, argv0);
    args[0] = program;
    args[1] = socket_path;
    args[2] = NULL;
    if (posix_spawnp(&pid, program, NULL, NULL, args, environ) != 0) {
        printf("cross_process_producer: FAIL: cannot start %s\n", program);
        exit(1);
    }
    return pid;
}

int main(int argc, char **argv) {
    char dir[] = "/tmp/vkcuda-cross-process.XXXXXX", path[256];
    vkcuda_buffer_create_info bi = {0};
    vkcuda_semaphore_create_info si = {0}; /* a timeline at 0 */
    vkcuda_share_options opts = {0};       /* default timeout; only peers of this user */
    vkcuda_buffer *buffer;
    vkcuda_semaphore *timeline;
    uint64_t cuda_pointer, k;
    pid_t consumer = -1;
    int listener, conn, status = 0, ok;
    struct pollfd pf = {0};
    example ex;

    example_open(&ex, "cross_process_producer", 0); /* no CUDA GPU: SKIP, before any socket */
    bi.allocator = VKCUDA_ALLOCATOR_CUDA;
    bi.size = CROSS_PROCESS_SIZE;
    CHECK(vkcuda_buffer_create(ex.ctx, &bi, &buffer));
    CHECK(vkcuda_buffer_get_cuda_pointer(buffer, &cuda_pointer));
    CHECK(vkcuda_semaphore_create(ex.ctx, &si, &timeline));

    /* The socket, and the consumer on it. */
    if (argc > 1) {
        snprintf(path, sizeof path, "%s", argv[1]);
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
    if (argc <= 1) consumer = start_consumer(argv[0], path);
    if (poll(&pf, 1, 30000) != 1 || (conn = accept(listener, NULL, NULL)) < 0) {
        printf("cross_process_producer: FAIL: no consumer connected within 30 s\n");
        return 1;
    }

    /* Send the buffer and the timeline: the consumer imports both into its own context. */
    CHECK(vkcuda_buffer_send(buffer, conn, &opts));
    CHECK(vkcuda_semaphore_send(timeline, conn, &opts));
    printf("cross_process_producer: sent a CUDA-allocated buffer of %" PRIu64 " bytes and a timeline\n",
           (uint64_t)CROSS_PROCESS_SIZE);

    for (k = 0; k < CROSS_PROCESS_FRAMES; k++) {
        /* Stay at most one frame ahead of the consumer: it has copied frame k - 2. */
        if (k >= 2) CHECK(vkcuda_semaphore_host_wait(timeline, 2 * k - 2, TEN_SECONDS_NS));
        CHECK(vkcuda_semaphore_cuda_wait(timeline, 2 * k, ex.stream)); /* the consumer copied frame k-1 */
        CHECK_CU(cuda_fill_pattern(&ex.kernels, ex.stream, cuda_pointer, CROSS_PROCESS_SIZE,
                                   cross_process_seed(k)));
        CHECK(vkcuda_semaphore_cuda_signal(timeline, 2 * k + 1, ex.stream)); /* frame k is written */
    }
    CHECK(vkcuda_semaphore_host_wait(timeline, 2 * CROSS_PROCESS_FRAMES, TEN_SECONDS_NS));
    printf("cross_process_producer: wrote %d frames; the consumer copied the last one\n", CROSS_PROCESS_FRAMES);

    if (consumer > 0 && waitpid(consumer, &status, 0) != consumer) status = -1;
    ok = consumer < 0 || (WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(conn);
    close(listener);
    unlink(path);
    if (argc <= 1) rmdir(dir);
    vkcuda_semaphore_destroy(timeline);
    vkcuda_buffer_destroy(buffer); /* the consumer's import keeps the memory alive on its side */
    example_close(&ex);
    printf("cross_process_producer: %s\n", ok ? "PASS" : "FAIL (see the consumer's output)");
    return ok ? 0 : 1;
}
