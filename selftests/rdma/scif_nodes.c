// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * scif_nodes: a helper of tools/vm/rdma-pair.test and rdma-hostile.test
 * (not a selftest of its own).  Prints the node list as scif_get_nodeIDs()
 * returns it:
 *
 *   self S nodes N: ID ID ...
 *
 * and with "connect NODE PORT" also tries a blocking scif_connect() to
 * NODE:PORT and prints "connect NODE:PORT: ok" or ": ERRNONAME".
 * With "window PORT ROFF LEN SECONDS" (tools/vm/rdma-hostile.test) it
 * listens on PORT, accepts one connection within SECONDS, registers LEN
 * bytes at offset ROFF on it, sends ROFF (8 bytes), prints "window PORT:
 * node N", and waits (at most SECONDS) until the connection ends:
 * "window PORT: ended ERRNONAME" (0 for an orderly close).
 * "unreg PORT ROFF LEN SECONDS" does the same, but unregisters the window
 * once the peer sends a byte (it holds a read key for it then), prints
 * "unreg PORT: unregistered ok|ERRNONAME keys K0 -> K1" (this host's
 * rma_keys before and after the call) and sends a byte back ("unreg PORT:
 * send RET ERRNONAME" if that does not return 1).
 * With "reads PORT SECONDS" (rdma-hostile.test, a hostile peer answering
 * our RMA) it listens on PORT, accepts one connection within SECONDS and
 * reads 8 bytes (inline across hosts), then 64 KiB (by RDMA), then 16
 * bytes (by the peer's read key, if it gave one) at offset 1 MiB of the
 * peer with scif_vreadfrom into a buffer of 0x77, and prints
 * "reads PORT LEN: ok|ERRNONAME untouched|written" for each.
 * With "hung PORT N LEN SECONDS" (rdma-hostile.test, a hung target: a
 * peer that takes our requests and never answers) it listens on PORT,
 * accepts one connection within SECONDS, prints "hung PORT: node N pid P"
 * (its own pid, for the SIGUSR1s below) and
 * forks N callers that each scif_vreadfrom LEN bytes (at most 1 MiB: one
 * request, inline up to 8000 bytes) at offset 1 MiB of the peer, printing
 * "hung PORT call I: pid P" for each; on
 * SIGUSR1 it forks one caller more (call N+1).  It reaps them, printing
 * "hung PORT call I: killed SIG" or "hung PORT call I: returned
 * ok|ERRNONAME" (a caller prints nothing itself), and once every caller
 * ended "hung PORT: K calls ended"; then, on the next SIGUSR1 (or after
 * SECONDS), it closes the connection and exits.
 * Exit 0, or 1 when a call fails in a way the test did not ask about.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <scif.h>

#include "../lib/scif_test.h"

/* read keys this host gave out and has not revoked */
#define RMA_KEYS "/sys/kernel/scif_rdma/rma_keys"

static const char *errname(int e) {
    switch (e) {
    case ENODEV:
        return "ENODEV";
    case ECONNREFUSED:
        return "ECONNREFUSED";
    case EINVAL:
        return "EINVAL";
    case ECONNRESET:
        return "ECONNRESET";
    default:
        return strerror(e);
    }
}

/*
 * Listen on @port and accept one connection within @seconds: 0 with the
 * listener in *@lst, the endpoint in *@ep and the peer in *@peer, or 1
 * (said on stderr or stdout, as "CMD PORT: no connection within N s").
 */
static int accept_one(const char *cmd, uint16_t port, int seconds, scif_epd_t *lst, scif_epd_t *ep,
                      struct scif_portID *peer) {
    struct pollfd p;

    *lst = scif_open();
    if (*lst == SCIF_OPEN_FAILED || scif_bind(*lst, port) < 0 || scif_listen(*lst, 1) < 0) {
        fprintf(stderr, "%s: listen: %s\n", cmd, strerror(errno));
        return 1;
    }
    p = (struct pollfd){.fd = scif_get_fd(*lst), .events = POLLIN};
    if (poll(&p, 1, seconds * 1000) != 1 || scif_accept(*lst, peer, ep, SCIF_ACCEPT_SYNC) < 0) {
        printf("%s %u: no connection within %d s\n", cmd, port, seconds);
        return 1;
    }
    return 0;
}

/*
 * Accept one connection on @port within @seconds, register @len bytes at
 * @roff on it and send @roff (8 bytes); "CMD PORT: node N".  0 or 1.
 */
static int window_open(const char *cmd, uint16_t port, off_t roff, size_t len, int seconds,
                       scif_epd_t *lst, scif_epd_t *ep, void **buf) {
    struct scif_portID peer;
    int64_t off64 = roff;

    if (accept_one(cmd, port, seconds, lst, ep, &peer))
        return 1;
    if (posix_memalign(buf, 4096, len)) {
        perror("window: posix_memalign");
        return 1;
    }
    memset(*buf, 0x5a, len);
    if (scif_register(*ep, *buf, len, roff, SCIF_PROT_READ | SCIF_PROT_WRITE, SCIF_MAP_FIXED) !=
        roff) {
        perror("window: scif_register");
        return 1;
    }
    /* the peer learns that the window is there (its offset, 8 bytes) */
    if (scif_send(*ep, &off64, sizeof(off64), SCIF_SEND_BLOCK) != sizeof(off64)) {
        perror("window: scif_send");
        return 1;
    }
    printf("%s %u: node %u\n", cmd, port, peer.node);
    fflush(stdout);
    return 0;
}

/*
 * Wait (at most @seconds) for a byte from the peer or the connection's
 * end: 1 if a byte came, 0 if the connection ended ("CMD PORT: ended
 * ERRNONAME"), -1 if neither came in time.
 */
static int window_wait(const char *cmd, uint16_t port, scif_epd_t ep, int seconds) {
    struct pollfd p = {.fd = scif_get_fd(ep), .events = POLLIN};
    char c;
    int ret;

    if (poll(&p, 1, seconds * 1000) != 1) {
        printf("%s %u: still connected after %d s\n", cmd, port, seconds);
        return -1;
    }
    ret = scif_recv(ep, &c, 1, 0);
    if (ret == 1)
        return 1;
    printf("%s %u: ended %s\n", cmd, port, ret < 0 ? errname(errno) : "0");
    return 0;
}

/* The "window" command: one registered window for a hostile peer to hit. */
static int window(uint16_t port, off_t roff, size_t len, int seconds) {
    scif_epd_t lst, ep;
    void *buf = NULL;
    int ret;

    if (window_open("window", port, roff, len, seconds, &lst, &ep, &buf))
        return 1;
    ret = window_wait("window", port, ep, seconds);
    if (ret < 0)
        return 1;
    if (ret == 1) /* a byte: as before the end */
        printf("window %u: ended 0\n", port);
    scif_close(ep);
    scif_close(lst);
    free(buf);
    return 0;
}

/*
 * The "unreg" command: a window as "window" does, unregistered once the
 * peer sends a byte (it holds a read key for it by then); prints "unreg
 * PORT: unregistered ok|ERRNONAME keys K0 -> K1" (rma_keys before and
 * after the call), sends a byte ("unreg PORT: send RET ERRNONAME" if that
 * does not return 1), then waits for the end as "window".
 */
static int unreg(uint16_t port, off_t roff, size_t len, int seconds) {
    scif_epd_t lst, ep;
    void *buf = NULL;
    long long k0, k1;
    char c = 1;
    int ret;

    if (window_open("unreg", port, roff, len, seconds, &lst, &ep, &buf) ||
        window_wait("unreg", port, ep, seconds) != 1)
        return 1;
    k0 = read_long(RMA_KEYS);
    ret = scif_unregister(ep, roff, len);
    k1 = read_long(RMA_KEYS);
    printf("unreg %u: unregistered %s keys %lld -> %lld\n", port, ret ? errname(errno) : "ok", k0,
           k1);
    fflush(stdout);
    errno = 0;
    ret = scif_send(ep, &c, 1, SCIF_SEND_BLOCK);
    if (ret != 1)
        printf("unreg %u: send %d %s\n", port, ret, errname(errno));
    if (window_wait("unreg", port, ep, seconds) < 0)
        return 1;
    scif_close(ep);
    scif_close(lst);
    free(buf);
    return 0;
}

/* The "reads" command: our RMA for a hostile peer to answer. */
static int reads(uint16_t port, int seconds) {
    /* the third by the peer's read key: its RDMA READ fails */
    static const size_t lens[] = {8, 65536, 16};
    scif_epd_t lst, ep;
    struct scif_portID peer;
    uint8_t *buf = malloc(65536);
    size_t i, j;
    int ret;

    if (!buf) {
        perror("reads: malloc");
        return 1;
    }
    if (accept_one("reads", port, seconds, &lst, &ep, &peer))
        return 1;
    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        memset(buf, 0x77, 65536);
        ret = scif_vreadfrom(ep, buf, lens[i], 1 << 20, SCIF_RMA_SYNC);
        for (j = 0; j < 65536 && buf[j] == 0x77; j++)
            ;
        printf("reads %u %zu: %s %s\n", port, lens[i], ret < 0 ? errname(errno) : "ok",
               j == 65536 ? "untouched" : "written");
        fflush(stdout);
    }
    scif_close(ep);
    scif_close(lst);
    free(buf);
    return 0;
}

static volatile sig_atomic_t usr1;

static void on_usr1(int sig) {
    (void)sig;
    usr1 = 1;
}

/* A caller of the "hung" command: its exit status is its errno, 0 if ok. */
static int hung_call(scif_epd_t ep, size_t len) {
    void *buf;

    if (posix_memalign(&buf, 4096, len))
        return ENOMEM;
    memset(buf, 0x77, len);
    if (scif_vreadfrom(ep, buf, len, 1 << 20, SCIF_RMA_SYNC) < 0)
        return errno;
    return 0;
}

/* The "hung" command: callers blocked by a peer that never answers. */
static int hung(uint16_t port, int ncalls, size_t len, int seconds) {
    scif_epd_t lst, ep;
    struct sigaction sa = {.sa_handler = on_usr1};
    pid_t pids[65], pid;
    struct scif_portID peer;
    int i, st, calls = 0, left = 0, ticks = 0;

    if (ncalls < 1 || ncalls > 64 || !len || len > 1 << 20 || sigaction(SIGUSR1, &sa, NULL)) {
        fprintf(stderr, "hung: 1..64 calls of 1 byte..1 MiB\n");
        return 1;
    }
    if (accept_one("hung", port, seconds, &lst, &ep, &peer))
        return 1;
    printf("hung %u: node %u pid %d\n", port, peer.node, (int)getpid());
    fflush(stdout);
    /* until the N+1 callers ended, or SECONDS of waiting in all */
    while (ticks < seconds * 10) {
        if (calls < ncalls || (usr1 && calls == ncalls)) {
            if (calls == ncalls)
                usr1 = 0; /* the next one closes */
            pid = fork();
            if (pid < 0) {
                perror("hung: fork");
                return 1;
            }
            if (!pid)
                _exit(hung_call(ep, len));
            pids[calls++] = pid;
            left++;
            printf("hung %u call %d: pid %d\n", port, calls, (int)pid);
            fflush(stdout);
            continue;
        }
        pid = waitpid(-1, &st, WNOHANG);
        if (pid <= 0) {
            if (!left && calls > ncalls)
                break;
            usleep(100000);
            ticks++;
            continue;
        }
        for (i = 0; i < calls && pids[i] != pid; i++)
            ;
        left--;
        if (WIFSIGNALED(st))
            printf("hung %u call %d: killed %d\n", port, i + 1, WTERMSIG(st));
        else
            printf("hung %u call %d: returned %s\n", port, i + 1,
                   WEXITSTATUS(st) ? errname(WEXITSTATUS(st)) : "ok");
        fflush(stdout);
        if (!left && calls > ncalls)
            break;
    }
    if (left) {
        printf("hung %u: %d of %d calls still running after %d s\n", port, left, calls, seconds);
        return 1;
    }
    printf("hung %u: %d calls ended\n", port, calls);
    fflush(stdout);
    for (ticks = 0; !usr1 && ticks < seconds * 10; ticks++)
        usleep(100000);
    scif_close(ep);
    scif_close(lst);
    return 0;
}

int main(int argc, char **argv) {
    uint16_t nodes[64], self = 0xffff;
    int n, i;

    n = scif_get_nodeIDs(nodes, 64, &self);
    if (n < 0) {
        perror("scif_get_nodeIDs");
        return 1;
    }
    printf("self %u nodes %d:", self, n);
    for (i = 0; i < n && i < 64; i++)
        printf(" %u", nodes[i]);
    printf("\n");
    if (argc == 4 && !strcmp(argv[1], "connect")) {
        struct scif_portID dst = {
            .node = (uint16_t)strtoul(argv[2], NULL, 10),
            .port = (uint16_t)strtoul(argv[3], NULL, 10),
        };
        scif_epd_t ep = scif_open();

        if (ep == SCIF_OPEN_FAILED) {
            perror("scif_open");
            return 1;
        }
        if (scif_connect(ep, &dst) < 0)
            printf("connect %u:%u: %s\n", dst.node, dst.port, errname(errno));
        else
            printf("connect %u:%u: ok\n", dst.node, dst.port);
        scif_close(ep);
    } else if (argc == 6 && !strcmp(argv[1], "window")) {
        return window((uint16_t)strtoul(argv[2], NULL, 0), (off_t)strtoull(argv[3], NULL, 0),
                      strtoull(argv[4], NULL, 0), atoi(argv[5]));
    } else if (argc == 6 && !strcmp(argv[1], "unreg")) {
        return unreg((uint16_t)strtoul(argv[2], NULL, 0), (off_t)strtoull(argv[3], NULL, 0),
                     strtoull(argv[4], NULL, 0), atoi(argv[5]));
    } else if (argc == 4 && !strcmp(argv[1], "reads")) {
        return reads((uint16_t)strtoul(argv[2], NULL, 0), atoi(argv[3]));
    } else if (argc == 6 && !strcmp(argv[1], "hung")) {
        return hung((uint16_t)strtoul(argv[2], NULL, 0), atoi(argv[3]), strtoul(argv[4], NULL, 0),
                    atoi(argv[5]));
    } else if (argc != 1) {
        fprintf(stderr,
                "usage: %s [connect NODE PORT | window|unreg PORT ROFF LEN SECONDS | reads "
                "PORT SECONDS | hung PORT N LEN SECONDS]\n",
                argv[0]);
        return 2;
    }
    return 0;
}
