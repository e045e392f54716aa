/*
 * ipc_test.h: what ipc_producer.c and ipc_consumer.c (the two processes of the
 * cross-process GPU test) share: the demo's own messages around the library's (a hello
 * each way, a result at the end), the frame seed, the socket helpers, and the
 * one-command run (each starts the other). The rest is the rig's (rig.h).
 */
#ifndef VKCUDA_IPC_TEST_H
#define VKCUDA_IPC_TEST_H

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rig.h" /* now_ns, require_gpu */

extern char **environ;

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

/* ---- the command line both sides take -------------------------------------------- */

/* The consumer parses --frames, --size and --vulkan-only too (and passes them on to the
 * producer it starts); it uses path and timeout_ms only. */
typedef struct ipc_options {
    const char *path; /* SOCKET_PATH; NULL: start the peer (ipc_run_both) */
    uint64_t timeout_ms, frames, size;
    int vulkan_only;
} ipc_options;

/* Parses argv into `o` (which holds the defaults): -1 to go on, or the exit status (0
 * after --help, 1 after a bad argument), usage() printed. */
static inline int ipc_parse(const char *self, int argc, char **argv, ipc_options *o, void (*usage)(void)) {
    int i;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t *number = strcmp(a, "--frames") == 0       ? &o->frames
                           : strcmp(a, "--size") == 0       ? &o->size
                           : strcmp(a, "--timeout-ms") == 0 ? &o->timeout_ms
                                                            : NULL;
        if (number != NULL && v != NULL) {
            *number = strtoull(v, NULL, 10);
            i++;
        } else if (strcmp(a, "--vulkan-only") == 0) {
            o->vulkan_only = 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage();
            return 0;
        } else if (a[0] != '-' && o->path == NULL) {
            o->path = a;
        } else {
            usage();
            printf("%s: FAIL: bad argument '%s'\n", self, a);
            return 1;
        }
    }
    return -1;
}

/* ---- the one-command run: start the peer next to this executable ------------------- */

/* `name` next to this executable, in `out`; 0 when it is there and executable. */
static inline int ipc_sibling(const char *name, char *out, size_t size) {
    char self[4096];
    char *slash;
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return -1;
    self[n] = '\0';
    slash = strrchr(self, '/');
    if (slash == NULL) return -1;
    *slash = '\0';
    snprintf(out, size, "%s/%s", self, name);
    return access(out, X_OK);
}

/* The child's exit status, or -1 (it was killed after `timeout_s`). */
static inline int ipc_wait_child(pid_t pid, unsigned timeout_s) {
    uint64_t deadline = now_ns() + (uint64_t)timeout_s * SECOND;
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (r < 0 && errno != EINTR) return -1;
        if (now_ns() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        sleep_ms(20);
    }
}

/* Runs `peer` (next to this executable) on a fresh socket path with the arguments
 * `extra` (NULL-terminated), and this side as side(path, arg); 0 pass, 1 fail,
 * EXIT_SKIP when either side skipped (1 with VKCUDA_REQUIRE_GPU=1). */
static inline int ipc_run_both(const char *self, const char *peer, char *const *extra,
                               int (*side)(const char *path, void *arg), void *arg) {
    char dir[512], path[600], exe[4200];
    const char *tmp = getenv("TMPDIR");
    char *args[16];
    int n = 0, mine, theirs;
    pid_t pid;
    if (ipc_sibling(peer, exe, sizeof exe) != 0) {
        printf("%s: FAIL: no %s next to this executable (%s); or pass a socket path\n", self, peer, exe);
        return 1;
    }
    snprintf(dir, sizeof dir, "%s/vkcuda-ipc-XXXXXX", tmp != NULL && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        printf("%s: FAIL: mkdtemp %s: %s\n", self, dir, strerror(errno));
        return 1;
    }
    snprintf(path, sizeof path, "%s/socket", dir);
    args[n++] = exe;
    args[n++] = path;
    while (extra != NULL && *extra != NULL && n < 15) args[n++] = *extra++;
    args[n] = NULL;
    printf("%s: starting %s %s ...\n", self, exe, path);
    fflush(stdout);
    if (posix_spawn(&pid, exe, NULL, NULL, args, environ) != 0) {
        printf("%s: FAIL: posix_spawn %s: %s\n", self, exe, strerror(errno));
        rmdir(dir);
        return 1;
    }
    mine = side(path, arg);
    theirs = ipc_wait_child(pid, 60);
    unlink(path);
    rmdir(dir);
    printf("%s: the %s exited with %d\n", self, strcmp(peer, "ipc_consumer") == 0 ? "consumer" : "producer", theirs);
    if (mine == 1 || (theirs != 0 && theirs != EXIT_SKIP)) return 1;
    if (mine == EXIT_SKIP || theirs == EXIT_SKIP) return require_gpu() ? 1 : EXIT_SKIP;
    return 0;
}

#endif /* VKCUDA_IPC_TEST_H */
