// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * msg_test: scif_send / scif_recv semantics and errnos, and byte-stream
 * integrity: random message sizes up to 1 MiB on several connections at
 * once (one sender and one receiver thread each), node 0 loopback and
 * between nodes, checked byte for byte; several threads sharing one
 * endpoint; partial (non-blocking) sends and receives.
 */
#include <sys/mman.h>

#include "scif_test.h"

#define MIB (1 << 20)

static int t_unconnected(void) {
    int epd = scif_open();
    char buf[8] = {0};

    CHECK_OK(epd);
    CHECK_ERR(scif_send(epd, buf, 8, 0), ENOTCONN);
    CHECK_ERR(scif_recv(epd, buf, 8, 0), ENOTCONN);
    CHECK_ERR(scif_send(epd, buf, 8, SCIF_SEND_BLOCK), ENOTCONN);
    CHECK_ERR(scif_recv(epd, buf, 8, SCIF_RECV_BLOCK), ENOTCONN);
    CHECK_OK(scif_bind(epd, 0));
    CHECK_ERR(scif_send(epd, buf, 8, 0), ENOTCONN);
    CHECK_OK(scif_listen(epd, 2));
    CHECK_ERR(scif_recv(epd, buf, 8, 0), ENOTCONN);
    return KSFT_PASS;
}

static int t_einval(void) {
    int s, c;
    char buf[8] = {0};

    CHECK(connect_pair(0, 0, &s, &c) == 0, "connect_pair");
    CHECK_ERR(scif_send(c, buf, -1, 0), EINVAL);
    CHECK_ERR(scif_recv(s, buf, -1, 0), EINVAL);
    CHECK_ERR(scif_send(c, buf, 8, 0x40), EINVAL);
    CHECK_ERR(scif_recv(s, buf, 8, 0x40), EINVAL);
    return KSFT_PASS;
}

static int t_efault(void) {
    int s, c, r;
    char buf[16] = "0123456789abcdef";
    char *page;

    CHECK(connect_pair(0, 0, &s, &c) == 0, "connect_pair");
    CHECK_ERR(scif_send(c, (void *)8, 16, SCIF_SEND_BLOCK), EFAULT);
    /* A pointer into a page mapped without access. */
    page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(page != MAP_FAILED, "mmap");
    CHECK_ERR(scif_send(c, page, 16, SCIF_SEND_BLOCK), EFAULT);
    /* Queue real data; receiving it into a bad buffer faults. */
    CHECK(send_all(c, buf, 16) == 0, "send: %s", strerror(errno));
    CHECK_ERR(scif_recv(s, (void *)8, 16, SCIF_RECV_BLOCK), EFAULT);
    CHECK_ERR(scif_recv(s, page, 16, SCIF_RECV_BLOCK), EFAULT);
    /* The connection still works afterwards. */
    CHECK(send_all(c, buf, 16) == 0, "send after EFAULT: %s", strerror(errno));
    r = scif_recv(s, buf, 16, SCIF_RECV_BLOCK);
    CHECK(r == 16, "recv after EFAULT returned %d (%s)", r, strerror(errno));
    return KSFT_PASS;
}

static int t_zero_len(void) {
    int s, c;
    char buf[4] = "abc";

    CHECK(connect_pair(0, 0, &s, &c) == 0, "connect_pair");
    CHECK(scif_send(c, buf, 0, 0) == 0, "send 0 bytes");
    CHECK(scif_send(c, buf, 0, SCIF_SEND_BLOCK) == 0, "blocking send 0 bytes");
    CHECK(scif_recv(s, buf, 0, SCIF_RECV_BLOCK) == 0, "blocking recv 0 bytes");
    return KSFT_PASS;
}

/* Without SCIF_RECV_BLOCK a receive returns what is there now. */
static int t_recv_partial(void) {
    int s, c, r;
    char buf[100];

    CHECK(connect_pair(0, 0, &s, &c) == 0, "connect_pair");
    errno = 0;
    r = scif_recv(s, buf, sizeof(buf), 0);
    CHECK(r == 0 || (r == -1 && errno == EAGAIN), "recv with nothing queued: %d (%s)", r,
          strerror(errno));
    CHECK(send_all(c, "0123456789", 10) == 0, "send");
    /* The bytes are queued once the blocking send returned. */
    r = scif_recv(s, buf, sizeof(buf), 0);
    CHECK(r == 10, "non-blocking recv returned %d, 10 queued", r);
    CHECK(!memcmp(buf, "0123456789", 10), "data");
    return KSFT_PASS;
}

/* Without SCIF_SEND_BLOCK a send moves what fits; the rest follows later. */
static int t_send_partial(void) {
    const int len = 16 * MIB;
    unsigned char *buf = malloc(len), *in = malloc(len);
    int s, c, sent, r, got = 0, i;

    CHECK(buf && in, "malloc");
    for (i = 0; i < len; i++)
        buf[i] = (unsigned char)(i * 31 + 7);
    CHECK(connect_pair(0, 0, &s, &c) == 0, "connect_pair");
    sent = scif_send(c, buf, len, 0);
    CHECK(sent > 0 && sent < len, "non-blocking send of 16 MiB moved %d bytes", sent);
    errno = 0;
    r = scif_send(c, buf + sent, len - sent, 0);
    CHECK(r == 0 || (r == -1 && errno == EAGAIN), "send into a full ring: %d (%s)", r,
          strerror(errno));
    while (got < sent) {
        r = scif_recv(s, in + got, sent - got, SCIF_RECV_BLOCK);
        CHECK(r > 0, "recv: %d %s", r, strerror(errno));
        got += r;
    }
    CHECK(!memcmp(in, buf, sent), "partial send data differs");
    return KSFT_PASS;
}

/*
 * The per-endpoint queue is Intel's SCIF_ENDPT_QP_SIZE (4 KiB) unless the
 * module was loaded with ring_size: a non-blocking send into an empty
 * queue takes exactly that much.
 */
static int t_queue_size(void) {
    const char *params = getenv("SCIF_VM_PARAMS");
    unsigned char *buf = calloc(1, 65536);
    unsigned long ring = 0;
    FILE *f = fopen("/sys/module/scif/parameters/ring_size", "r");
    int s, c, sent;

    CHECK(buf, "calloc");
    CHECK(f && fscanf(f, "%lu", &ring) == 1, "read /sys/module/scif/parameters/ring_size");
    fclose(f);
    if (!params || !strstr(params, "ring_size"))
        CHECK(ring == 4096, "default ring_size is %lu, not 4096", ring);
    CHECK(connect_pair(0, 0, &s, &c) == 0, "connect_pair");
    sent = scif_send(c, buf, 65536, 0);
    CHECK(sent == (int)(ring < 65536 ? ring : 65536),
          "non-blocking send of 64 KiB into an empty queue moved %d bytes (ring_size %lu)", sent,
          ring);
    return KSFT_PASS;
}

/* The peer reads what was queued before close, then gets ECONNRESET. */
static int t_close_drain(void) {
    int s, c, r;
    char buf[300], msg[300];

    for (r = 0; r < 300; r++)
        msg[r] = (char)r;
    CHECK(connect_pair(0, 0, &s, &c) == 0, "connect_pair");
    CHECK(send_all(c, msg, 300) == 0, "send");
    CHECK_OK(scif_close(c));
    r = scif_recv(s, buf, 100, SCIF_RECV_BLOCK);
    CHECK(r == 100, "first recv after peer close: %d (%s)", r, strerror(errno));
    r = scif_recv(s, buf + 100, 300, 0);
    CHECK(r == 200, "draining recv returned %d", r);
    CHECK(!memcmp(buf, msg, 300), "queued data garbled");
    CHECK_ERR(scif_recv(s, buf, 10, 0), ECONNRESET);
    CHECK_ERR(scif_recv(s, buf, 10, SCIF_RECV_BLOCK), ECONNRESET);
    CHECK_ERR(scif_send(s, buf, 10, 0), ECONNRESET);
    CHECK_ERR(scif_send(s, buf, 10, SCIF_SEND_BLOCK), ECONNRESET);
    return KSFT_PASS;
}

/* A blocking receive waits while the peer sends in pieces; all bytes arrive in order. */
static int t_block_pieces(void) {
    int s, c, i;
    char buf[4000], in[4000];

    for (i = 0; i < 4000; i++)
        buf[i] = (char)(i ^ (i >> 8));
    CHECK(connect_pair(0, 0, &s, &c) == 0, "connect_pair");
    for (i = 0; i < 4000; i += 400)
        CHECK(send_all(c, buf + i, 400) == 0, "send piece");
    CHECK(recv_all(s, in, 4000) == 0, "blocking recv of 10 pieces");
    CHECK(!memcmp(buf, in, 4000), "data");
    return KSFT_PASS;
}

/* ---- byte-stream integrity ---- */

struct stream {
    int epd;
    uint64_t seed;
    long total;  /* bytes to move */
    long done;   /* bytes moved */
    long bad_at; /* first differing offset, or -1 */
    int err;
};

/* Message sizes: random in [1, 1 MiB] (a quarter of them above 64 KiB). */
static int next_size(struct prng *p, long left) {
    uint64_t r = prng_next(p);
    long len = (long)(r % 4 == 0 ? (r >> 8) % MIB + 1 : (r >> 8) % 65536 + 1);

    return (int)(len < left ? len : left);
}

/* Sender and receiver pick their sizes independently: it is a byte stream. */
static void *sender(void *arg) {
    struct stream *st = arg;
    struct prng sizes;
    unsigned char *buf = malloc(MIB);

    prng_init(&sizes, st->seed ^ 0x5555);
    if (!buf)
        st->err = ENOMEM;
    while (buf && st->done < st->total) {
        int len = next_size(&sizes, st->total - st->done);

        pattern_fill(buf, (size_t)len, st->seed, (uint64_t)st->done);
        if (scif_send(st->epd, buf, len, SCIF_SEND_BLOCK) != len) {
            st->err = errno;
            break;
        }
        st->done += len;
    }
    free(buf);
    return NULL;
}

static void *receiver(void *arg) {
    struct stream *st = arg;
    struct prng sizes;
    unsigned char *buf = malloc(MIB);

    prng_init(&sizes, st->seed ^ 0xaaaa);
    st->bad_at = -1;
    if (!buf)
        st->err = ENOMEM;
    while (buf && st->done < st->total) {
        int len = next_size(&sizes, st->total - st->done);

        if (scif_recv(st->epd, buf, len, SCIF_RECV_BLOCK) != len) {
            st->err = errno;
            break;
        }
        /* Record the first difference but keep draining, so the sender finishes. */
        if (st->bad_at < 0) {
            long long i = pattern_check(buf, (size_t)len, st->seed, (uint64_t)st->done);

            if (i >= 0)
                st->bad_at = st->done + (long)i;
        }
        st->done += len;
    }
    free(buf);
    return NULL;
}

/*
 * @nconn connections between @snode and @cnode, each carrying @total bytes in
 * both directions at once (4 threads per connection).
 */
static int integrity(int snode, int cnode, int nconn, long total) {
    struct stream st[4][4];
    pthread_t th[4][4];
    int i, j;

    if (snode)
        REQUIRE_NODE(snode);
    if (cnode)
        REQUIRE_NODE(cnode);
    memset(st, 0, sizeof(st));
    for (i = 0; i < nconn; i++) {
        int s, c;

        CHECK(connect_pair(snode, cnode, &s, &c) == 0, "connect_pair %d", i);
        /* [0] c->s sender, [1] c->s receiver, [2] s->c sender, [3] s->c receiver */
        st[i][0].epd = c;
        st[i][1].epd = s;
        st[i][2].epd = s;
        st[i][3].epd = c;
        for (j = 0; j < 4; j++) {
            st[i][j].seed = (uint64_t)(i * 2 + j / 2 + 1) * 1000003u + (uint64_t)getpid();
            st[i][j].total = total;
        }
    }
    for (i = 0; i < nconn; i++)
        for (j = 0; j < 4; j++)
            CHECK(pthread_create(&th[i][j], NULL, j % 2 ? receiver : sender, &st[i][j]) == 0,
                  "pthread_create");
    for (i = 0; i < nconn; i++)
        for (j = 0; j < 4; j++)
            pthread_join(th[i][j], NULL);
    for (i = 0; i < nconn; i++) {
        for (j = 0; j < 4; j++) {
            const char *what = j % 2 ? "receiver" : "sender";

            CHECK(!st[i][j].err, "connection %d %s %d: %s", i, what, j, strerror(st[i][j].err));
            CHECK(j % 2 == 0 || st[i][j].bad_at < 0, "connection %d dir %d: byte %ld differs", i,
                  j / 2, st[i][j].bad_at);
            CHECK(st[i][j].done == total, "connection %d %s moved %ld of %ld bytes", i, what,
                  st[i][j].done, total);
        }
    }
    return KSFT_PASS;
}

static int t_integrity_0_0(void) {
    return integrity(0, 0, 3, 24L * MIB);
}
static int t_integrity_0_1(void) {
    return integrity(1, 0, 3, 24L * MIB);
}
static int t_integrity_2_1(void) {
    return integrity(2, 1, 2, 16L * MIB);
}

/* ---- several threads on one endpoint ---- */

struct shared_send {
    int epd;
    int id;
    int msgs;
    int err;
};

#define SHARED_THREADS 6
#define SHARED_MSG 3000

static void *shared_sender(void *arg) {
    struct shared_send *ss = arg;
    unsigned char buf[SHARED_MSG];
    int i;

    memset(buf, ss->id + 1, sizeof(buf));
    for (i = 0; i < ss->msgs; i++) {
        if (scif_send(ss->epd, buf, sizeof(buf), SCIF_SEND_BLOCK) != (int)sizeof(buf)) {
            ss->err = errno;
            break;
        }
    }
    return NULL;
}

static int t_shared_endpoint(void) {
    struct shared_send ss[SHARED_THREADS];
    pthread_t th[SHARED_THREADS];
    long counts[SHARED_THREADS + 1] = {0}, total = 0, want;
    unsigned char *buf = malloc(65536);
    int s, c, i, r;

    CHECK(buf, "malloc");
    CHECK(connect_pair(0, 1 <= max_node() ? 1 : 0, &s, &c) == 0, "connect_pair");
    for (i = 0; i < SHARED_THREADS; i++) {
        ss[i].epd = c;
        ss[i].id = i;
        ss[i].msgs = 200;
        ss[i].err = 0;
        CHECK(pthread_create(&th[i], NULL, shared_sender, &ss[i]) == 0, "pthread_create");
    }
    want = (long)SHARED_THREADS * 200 * SHARED_MSG;
    /* Each byte names its sender; whatever the interleaving, the counts must add up. */
    while (total < want) {
        r = scif_recv(s, buf, 65536 < want - total ? 65536 : (int)(want - total), SCIF_RECV_BLOCK);
        CHECK(r > 0, "recv: %d (%s)", r, strerror(errno));
        for (i = 0; i < r; i++) {
            CHECK(buf[i] >= 1 && buf[i] <= SHARED_THREADS, "stray byte %u", buf[i]);
            counts[buf[i]]++;
        }
        total += r;
    }
    for (i = 0; i < SHARED_THREADS; i++) {
        pthread_join(th[i], NULL);
        CHECK(!ss[i].err, "thread %d: %s", i, strerror(ss[i].err));
        CHECK(counts[i + 1] == 200L * SHARED_MSG, "thread %d delivered %ld bytes", i,
              counts[i + 1]);
    }
    r = scif_recv(s, buf, 1, 0);
    CHECK(r == 0 || (r < 0 && errno == EAGAIN), "extra data after the expected bytes");
    return KSFT_PASS;
}

static const struct scif_test tests[] = {
    {"send/recv on an unconnected endpoint: ENOTCONN", t_unconnected, 0},
    {"send/recv with negative length or unknown flags: EINVAL", t_einval, 0},
    {"send/recv with a bad user pointer: EFAULT, connection survives", t_efault, 0},
    {"send/recv of 0 bytes return 0", t_zero_len, 0},
    {"recv without SCIF_RECV_BLOCK returns what is queued", t_recv_partial, 0},
    {"send without SCIF_SEND_BLOCK moves what fits", t_send_partial, 0},
    {"queue size: 4 KiB by default (ring_size), a non-blocking send takes that much", t_queue_size,
     0},
    {"peer close: queued data is read first, then ECONNRESET", t_close_drain, 0},
    {"blocking recv collects bytes sent in pieces", t_block_pieces, 0},
    {"byte stream, random sizes to 1 MiB, 3 connections both ways, node 0 <-> 0", t_integrity_0_0,
     300},
    {"byte stream, random sizes to 1 MiB, 3 connections both ways, node 0 <-> 1", t_integrity_0_1,
     300},
    {"byte stream, random sizes to 1 MiB, 2 connections both ways, node 1 <-> 2", t_integrity_2_1,
     300},
    {"6 threads sending on one endpoint deliver every byte", t_shared_endpoint, 0},
};

int main(int argc, char **argv) {
    return run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
