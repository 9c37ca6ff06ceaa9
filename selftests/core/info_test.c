// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * info_test: scif_info(1) against the loaded module, through its --json
 * output: the JSON is valid, the counters move with what this program
 * does (an endpoint opened and closed, a window registered, an RMA), and
 * the nodes it lists as up are the ones scif_get_nodeIDs() returns.
 *
 * The tool is the build's tools/scif_info (SCIF_TEST_TOP_BUILDDIR, set by
 * run-suite).  Behaviours run one after the other, so no other endpoint
 * of the suite comes or goes while one compares two readings.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include "scif_test.h"

#define INFO_MAX (64 * 1024)

/* scif_info --json into @buf (NUL-terminated): 0, or -1 with a diagnostic. */
static int info_json(char *buf, size_t size) {
    const char *top = getenv("SCIF_TEST_TOP_BUILDDIR");
    char cmd[4096];
    size_t len = 0, n;
    FILE *f;
    int st;

    snprintf(cmd, sizeof(cmd), "%s/tools/scif_info --json", top ? top : ".");
    f = popen(cmd, "r");
    if (!f) {
        diag("popen %s: %s", cmd, strerror(errno));
        return -1;
    }
    while (len + 1 < size && (n = fread(buf + len, 1, size - 1 - len, f)) > 0)
        len += n;
    buf[len] = '\0';
    st = pclose(f);
    if (st != 0) {
        diag("%s: exit status %d", cmd, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        return -1;
    }
    return 0;
}

/* The counter @name of scif_info --json, or -1. */
static long long info_counter(const char *name) {
    static char buf[INFO_MAX];
    char key[64];
    const char *p;

    if (info_json(buf, sizeof(buf)))
        return -1;
    snprintf(key, sizeof(key), "\"%s\": ", name);
    p = strstr(buf, key);
    if (!p) {
        diag("no counter %s in scif_info --json", name);
        return -1;
    }
    return strtoll(p + strlen(key), NULL, 10);
}

static int t_json_valid(void) {
    static char buf[INFO_MAX];
    FILE *f;

    if (system("command -v python3 >/dev/null 2>&1") != 0)
        return test_skip("python3 not installed");
    CHECK(info_json(buf, sizeof(buf)) == 0);
    f = popen("python3 -m json.tool >/dev/null", "w");
    CHECK(f != NULL);
    fputs(buf, f);
    CHECK(pclose(f) == 0, "python3 -m json.tool rejects:\n%s", buf);
    return KSFT_PASS;
}

static int t_eps_open(void) {
    long long open0 = info_counter("eps_open"), made0 = info_counter("eps_created");
    int epd;

    CHECK(open0 >= 0 && made0 >= 0);
    epd = scif_open();
    CHECK_OK(epd);
    CHECK(info_counter("eps_open") == open0 + 1, "eps_open %lld -> %lld", open0,
          info_counter("eps_open"));
    CHECK(info_counter("eps_created") == made0 + 1);
    CHECK_OK(scif_close(epd));
    CHECK(info_counter("eps_open") == open0, "eps_open %lld after close, was %lld",
          info_counter("eps_open"), open0);
    return KSFT_PASS;
}

/* Wait (bounded, ~5 s) for counter @name to read @want; its last value. */
static long long info_wait(const char *name, long long want) {
    long long v = -1;

    for (int i = 0; i < 100; i++) {
        v = info_counter(name);
        if (v == want)
            break;
        usleep(50000);
    }
    return v;
}

static int t_window(void) {
    const size_t len = 4 * 4096;
    long long win0, pin0, acc0, conn0;
    int srv, cli;
    uint8_t *mem;

    conn0 = info_counter("connects");
    acc0 = info_counter("accepts");
    CHECK(conn0 >= 0 && acc0 >= 0);
    CHECK(connect_pair(0, 0, &srv, &cli) == 0);
    CHECK(info_counter("connects") == conn0 + 1);
    CHECK(info_counter("accepts") == acc0 + 1);
    win0 = info_counter("windows");
    pin0 = info_counter("pinned_pages");
    CHECK(win0 >= 0 && pin0 >= 0);
    mem = rma_window(srv, len, 0, SCIF_PROT_READ | SCIF_PROT_WRITE);
    CHECK(mem != NULL);
    CHECK(info_counter("windows") == win0 + 1, "windows %lld, was %lld", info_counter("windows"),
          win0);
    CHECK(info_counter("pinned_pages") == pin0 + 4, "pinned_pages %lld, was %lld",
          info_counter("pinned_pages"), pin0);
    CHECK_OK(scif_unregister(srv, 0, len));
    CHECK(info_wait("windows", win0) == win0);
    CHECK(info_wait("pinned_pages", pin0) == pin0);
    scif_close(cli);
    scif_close(srv);
    return KSFT_PASS;
}

static long long rma_bytes(void) {
    long long dma = info_counter("rma_bytes_dma"), cpu = info_counter("rma_bytes_cpu");

    return dma < 0 || cpu < 0 ? -1 : dma + cpu;
}

static int t_transfer(void) {
    const size_t len = 64 * 1024;
    struct rma_pair p;
    long long xfers0, bytes0;

    REQUIRE_NODE(1);
    CHECK(rma_pair_open(&p, NULL, NULL, len, 0) == 0);
    xfers0 = info_counter("rma_transfers");
    bytes0 = rma_bytes();
    CHECK(xfers0 >= 0 && bytes0 >= 0);
    CHECK_OK(scif_vwriteto(p.cli, p.ubuf, len, p.roff, SCIF_RMA_SYNC));
    CHECK(info_counter("rma_transfers") == xfers0 + 1, "rma_transfers %lld, was %lld",
          info_counter("rma_transfers"), xfers0);
    CHECK(rma_bytes() == bytes0 + (long long)len, "rma bytes %lld, was %lld", rma_bytes(), bytes0);
    rma_pair_close(&p);
    return KSFT_PASS;
}

static int t_nodes(void) {
    static char buf[INFO_MAX];
    uint16_t ids[64], self = 0xffff;
    int want, got = 0;
    const char *p;

    want = scif_get_nodeIDs(ids, 64, &self);
    CHECK(want > 0 && want <= 64);
    CHECK(info_json(buf, sizeof(buf)) == 0);
    CHECK(strstr(buf, "\"self\": 0,") != NULL && self == 0);
    for (p = buf; (p = strstr(p, "{\"id\": ")) != NULL; p++) {
        long id = strtol(p + 7, NULL, 10);
        const char *eol = strchr(p, '}');

        CHECK(eol != NULL);
        if (!memmem(p, (size_t)(eol - p), "\"up\": true", 10))
            continue;
        CHECK(got < want, "scif_info lists more nodes up than scif_get_nodeIDs (%d)", want);
        CHECK(ids[got] == id, "node %d: scif_info %ld, scif_get_nodeIDs %u", got, id, ids[got]);
        got++;
    }
    CHECK(got == want, "scif_info lists %d nodes up, scif_get_nodeIDs %d", got, want);
    return KSFT_PASS;
}

static int t_node_lost(void) {
    static char buf[INFO_MAX];
    long long lost0 = info_counter("nodes_lost");
    int r = KSFT_PASS;

    REQUIRE_NODE(1);
    CHECK(lost0 >= 0);
    if (dbg_write("node_lost", 1))
        return test_skip("debugfs node_lost not writable");
    if (info_json(buf, sizeof(buf)) || !strstr(buf, "{\"id\": 1, \"up\": false,")) {
        diag("node 1 not down in scif_info after node_lost:\n%s", buf);
        r = KSFT_FAIL;
    }
    if (info_counter("nodes_lost") != lost0 + 1) {
        diag("nodes_lost did not count the loss");
        r = KSFT_FAIL;
    }
    CHECK(dbg_write("node_online", 1) == 0);
    CHECK(info_json(buf, sizeof(buf)) == 0 && strstr(buf, "{\"id\": 1, \"up\": true,"));
    return r;
}

/* The NUMA node of SCIF node @node from sysfs (-1: none), or -2. */
static int node_numa(int node) {
    char path[128];

    snprintf(path, sizeof(path), "/sys/kernel/scif/nodes/%d/numa_node", node);
    return (int)read_long(path);
}

/*
 * With node_numa set (tools/vm/numa.test: two NUMA nodes), each bound
 * emulated node's endpoints have their receive ring on its NUMA node: a
 * pair on each, then debugfs rings (endpoint, node, NUMA node of the ring).
 */
static int t_numa_rings(void) {
    int srv[17], cli[17]; /* nodes 1..16 */
    int max = max_node(), bound = 0, checked = 0, r = KSFT_PASS;
    unsigned int id, node;
    int nid;
    FILE *f;

    if (access("/sys/devices/system/node/node1", F_OK) != 0)
        return test_skip("one NUMA node: the placement cannot be told apart");
    CHECK(max >= 0 && max <= 16);
    for (int n = 1; n <= max; n++)
        if (node_numa(n) >= 0)
            bound++;
    if (!bound)
        return test_skip("no emulated node bound to a NUMA node (node_numa unset)");
    for (int n = 1; n <= max; n++)
        CHECK(connect_pair(n, n, &srv[n], &cli[n]) == 0);
    f = fopen(DBG_DIR "/rings", "r");
    CHECK(f != NULL, "open " DBG_DIR "/rings");
    while (fscanf(f, "%u %u %d", &id, &node, &nid) == 3) {
        int want = node_numa((int)node);

        if (want < 0)
            continue;
        checked++;
        if (nid != want) {
            diag("endpoint %u of node %u: ring on NUMA node %d, node_numa %d", id, node, nid, want);
            r = KSFT_FAIL;
        }
    }
    fclose(f);
    CHECK(checked >= 2 * bound, "%d rings checked, %d bound nodes", checked, bound);
    for (int n = 1; n <= max; n++) {
        scif_close(cli[n]);
        scif_close(srv[n]);
    }
    return r;
}

static const struct scif_test tests[] = {
    {"scif_info --json is valid JSON", t_json_valid, 0},
    {"eps_open and eps_created count an endpoint opened and closed", t_eps_open, 0},
    {"connects, accepts, windows and pinned_pages count a pair and a window", t_window, 0},
    {"rma_transfers and the RMA bytes count one transfer", t_transfer, 0},
    {"the nodes up are those of scif_get_nodeIDs, self 0", t_nodes, 0},
    {"a lost node reads down and is counted, then up again", t_node_lost, 0},
    {"the rings of a node bound by node_numa lie on its NUMA node", t_numa_rings, 0},
};

int main(int argc, char **argv) {
    return run_tests(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
