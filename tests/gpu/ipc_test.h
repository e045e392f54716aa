/*
 * ipc_test.h: what ipc_producer.c and ipc_consumer.c (the two processes of the
 * cross-process GPU test) share: the demo's own messages around the library's (a hello
 * each way, a result at the end), the frame seed, and the socket helpers.
 */
#ifndef VKCUDA_IPC_TEST_H
#define VKCUDA_IPC_TEST_H

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "gpu_test.h" /* now_ns */

#define MS (1000ull * 1000ull)
#define SECOND (1000ull * MS)
#define EXIT_SKIP 77

/* ---- the demo's own messages (the library's travel in between) -------------------- */

#define HELLO_MAGIC "VKCIPC01"
#define RESULT_MAGIC "VKCIPCR1"
enum { MODE_CUDA = 0, MODE_VULKAN_ONLY = 1, MODE_SKIP = 2, MODE_READY = 3 };

/* Producer -> consumer first; the consumer answers with MODE_READY or MODE_SKIP. */
typedef struct hello {
    char magic[8];
    uint32_t mode;
    uint32_t reserved;
    uint64_t frames;
    uint64_t size;
    char note[224]; /* why, for MODE_SKIP */
} hello;

/* Consumer -> producer at the end. */
typedef struct result {
    char magic[8];
    uint64_t frames_checked;
    uint64_t words;
    uint64_t mismatches;
} result;

static inline uint32_t frame_seed(uint64_t frame) {
    return 0x51ed0000u ^ (uint32_t)frame;
}

static inline void sleep_ms(unsigned ms) {
    struct timespec t;
    t.tv_sec = ms / 1000;
    t.tv_nsec = (long)(ms % 1000) * 1000000L;
    nanosleep(&t, NULL);
}

/* ---- socket helpers ------------------------------------------------------------------ */

/* Writes all of `p`; 0, or -1 with errno. */
static inline int send_all(int fd, const void *p, size_t n) {
    const char *c = (const char *)p;
    while (n > 0) {
        ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
        if (k < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Reads exactly `n` bytes within `timeout_ns`: 0; -1 error (errno); -2 timeout; -3 closed. */
static inline int recv_all(int fd, void *p, size_t n, uint64_t timeout_ns) {
    char *c = (char *)p;
    uint64_t deadline = now_ns() + timeout_ns;
    while (n > 0) {
        struct pollfd pf;
        uint64_t now = now_ns();
        int r;
        ssize_t k;
        if (now >= deadline) return -2;
        pf.fd = fd;
        pf.events = POLLIN;
        pf.revents = 0;
        r = poll(&pf, 1, (int)((deadline - now + MS - 1) / MS));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) continue;
        k = recv(fd, c, n, 0);
        if (k < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            return -1;
        }
        if (k == 0) return -3;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

static inline const char *recv_error(int r) {
    static char text[128];
    if (r == -2) return "timed out";
    if (r == -3) return "the peer closed the connection";
    snprintf(text, sizeof text, "%s", strerror(errno));
    return text;
}

#endif /* VKCUDA_IPC_TEST_H */
