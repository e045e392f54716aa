/*
 * cross_process.h: what cross_process_producer.c (the CUDA process) and
 * cross_process_consumer.c (the Vulkan process) agree on.
 *
 * The producer listens on a Unix socket; the consumer connects. The producer sends a
 * CUDA-allocated buffer and a timeline semaphore (vkcuda_buffer_send,
 * vkcuda_semaphore_send: a small description plus the fd, by SCM_RIGHTS; by default
 * only a peer of the same user is accepted). Then, for frame k, the timeline goes:
 *   2k    the consumer is done with frame k - 1 (0: nothing to wait for)
 *   2k+1  the producer's kernel has written frame k into the buffer
 *   2k+2  the consumer has copied frame k out
 * so one buffer is enough: each side waits on the GPU for the other's value.
 *
 * With --vulkan-only (no CUDA; lavapipe, which cannot export a semaphore either) the
 * producer sends a Vulkan-allocated buffer and no timeline, writes each frame with a
 * Vulkan copy, and the two processes take turns by one byte on the socket instead.
 */
#ifndef VKCUDA_EXAMPLES_CROSS_PROCESS_H
#define VKCUDA_EXAMPLES_CROSS_PROCESS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define CROSS_PROCESS_FRAMES 100
#define CROSS_PROCESS_SIZE ((uint64_t)1 << 20) /* bytes a frame */

/* The seed of frame k's pattern (fill_pattern in kernels.cu; pattern_word on the host). */
static inline uint32_t cross_process_seed(uint64_t frame) {
    return 0x51ed0000u ^ (uint32_t)frame;
}

/* A Unix stream socket bound to `path` and listening (listen != 0), or connected to
 * it; -1 (with a message) on failure. */
static inline int cross_process_socket(const char *path, int listen_on_it) {
    struct sockaddr_un addr;
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    if (s < 0 || strlen(path) >= sizeof addr.sun_path) {
        printf("cannot make a socket for %s\n", path);
        return -1;
    }
    memcpy(addr.sun_path, path, strlen(path) + 1);
    if (listen_on_it ? bind(s, (const struct sockaddr *)&addr, sizeof addr) != 0 || listen(s, 1) != 0
                     : connect(s, (const struct sockaddr *)&addr, sizeof addr) != 0) {
        perror(path);
        close(s);
        return -1;
    }
    return s;
}

/* --vulkan-only: tells the peer it is its turn (the frame is written, or copied out). */
static inline void cross_process_pass_turn(int conn) {
    if (write(conn, "k", 1) != 1) {
        perror("cross_process: write");
        exit(1);
    }
}

/* --vulkan-only: waits until the peer passes the turn; exits when it has gone. */
static inline void cross_process_wait_turn(int conn) {
    char turn;
    if (read(conn, &turn, 1) != 1) {
        printf("cross_process: FAIL: the peer closed the socket\n");
        exit(1);
    }
}

#endif /* VKCUDA_EXAMPLES_CROSS_PROCESS_H */
