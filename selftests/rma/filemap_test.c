// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Long-term pins of shared file mappings.  Linux 6.5 and later refuse
 * writable long-term pins (FOLL_LONGTERM | FOLL_WRITE) of shared mappings
 * of files whose file system tracks dirty pages (ext4, xfs, ...); on older
 * kernels the module refuses them itself, so both behave alike:
 * scif_register() of a writable window there fails with EFAULT, a read-only
 * window works, shmem (tmpfs, memfd) is allowed, and SCIF_RMA_USECACHE does
 * not keep such pages pinned.
 *
 * An ext4 file system is made in a loop-mounted image under /tmp; without
 * mkfs.ext4 or loop/ext4 support every behaviour is skipped with the reason.
 */
#include <sys/mount.h>
#include <sys/stat.h>

#include "scif_test.h"

#define RW (SCIF_PROT_READ | SCIF_PROT_WRITE)
#define NPAGES 8
#define LEN (NPAGES * PAGE)
#define PEER_OFF 0x100000L

static char fs_dir[64], fs_img[64], fs_skip[160];

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...) {
    char cmd[320];
    va_list ap;
    int st;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    st = system(cmd);
    return st == 0 ? 0 : -1;
}

/* Make and mount the ext4 image; on failure fs_skip says why. */
static void fs_mount(void) {
    snprintf(fs_img, sizeof(fs_img), "/tmp/scif_ext4_%d.img", (int)getpid());
    snprintf(fs_dir, sizeof(fs_dir), "/tmp/scif_ext4_%d", (int)getpid());
    sh("modprobe -q loop >/dev/null 2>&1; modprobe -q ext4 >/dev/null 2>&1");
    if (sh("truncate -s 16M %s && mkfs.ext4 -q -F %s >/dev/null 2>&1", fs_img, fs_img)) {
        snprintf(fs_skip, sizeof(fs_skip), "cannot make an ext4 image (mkfs.ext4)");
        return;
    }
    if (mkdir(fs_dir, 0755) && errno != EEXIST) {
        snprintf(fs_skip, sizeof(fs_skip), "mkdir %s: %s", fs_dir, strerror(errno));
        return;
    }
    if (sh("mount -t ext4 -o loop %s %s >/dev/null 2>&1", fs_img, fs_dir))
        snprintf(fs_skip, sizeof(fs_skip), "cannot loop-mount an ext4 image");
}

static void fs_umount(void) {
    if (!fs_skip[0])
        umount(fs_dir);
    rmdir(fs_dir);
    unlink(fs_img);
}

/* A shared writable mapping of a new LEN-byte file at @path, filled with @v. */
static uint8_t *map_file(const char *path, int v) {
    uint8_t *p;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

    if (fd < 0 || ftruncate(fd, LEN))
        return NULL;
    p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return NULL;
    memset(p, v, LEN);
    return p;
}

static uint8_t *map_ext4(int v) {
    char path[96];

    snprintf(path, sizeof(path), "%s/f%d", fs_dir, (int)getpid());
    return map_file(path, v);
}

#define REQUIRE_EXT4()                                                                             \
    do {                                                                                           \
        if (fs_skip[0])                                                                            \
            return test_skip("%s", fs_skip);                                                       \
    } while (0)

/* A writable window on a shared ext4 mapping: EFAULT, nothing pinned. */
static int t_rw_window(void) {
    long long pinned;
    uint8_t *p;
    int srv, cli;

    REQUIRE_EXT4();
    CHECK(connect_pair(0, 0, &srv, &cli) == 0);
    CHECK((p = map_ext4(1)) != NULL);
    pinned = dbg_counter("pinned_pages");
    CHECK_ERR(scif_register(srv, p, LEN, 0, RW, 0), EFAULT);
    CHECK_ERR(scif_register(srv, p, LEN, 0, SCIF_PROT_WRITE, 0), EFAULT);
    CHECK(dbg_counter("pinned_pages") == pinned);
    return KSFT_PASS;
}

/* A read-only window on the same mapping works, and the peer reads it. */
static int t_ro_window(void) {
    uint8_t *p, *dst;
    int srv, cli;

    REQUIRE_EXT4();
    CHECK(connect_pair(0, 0, &srv, &cli) == 0);
    CHECK((p = map_ext4(7)) != NULL && (dst = map_anon(LEN)) != NULL);
    CHECK(scif_register(srv, p, LEN, PEER_OFF, SCIF_PROT_READ, SCIF_MAP_FIXED) == PEER_OFF);
    CHECK(scif_vreadfrom(cli, dst, LEN, PEER_OFF, SCIF_RMA_SYNC) == 0);
    CHECK(first_diff(p, dst, LEN) < 0);
    return KSFT_PASS;
}

/* shmem is no file system with writeback: writable windows are allowed. */
static int t_shmem_window(void) {
    uint8_t *p;
    int srv, cli;
    char path[64];

    CHECK(connect_pair(0, 0, &srv, &cli) == 0);
    snprintf(path, sizeof(path), "/dev/shm/scif_filemap_%d", (int)getpid());
    p = map_file(path, 3);
    unlink(path);
    CHECK(p != NULL);
    CHECK(scif_register(srv, p, LEN, PEER_OFF, RW, SCIF_MAP_FIXED) == PEER_OFF);
    CHECK(scif_unregister(srv, PEER_OFF, LEN) == 0);
    return KSFT_PASS;
}

/*
 * SCIF_RMA_USECACHE with a shared ext4 mapping as destination: the
 * transfer works, but the range is not kept pinned (long-term, writable)
 * in the registration cache.
 */
static int t_cache(void) {
    uint8_t *p, *src;
    long long before;
    int srv, cli;

    REQUIRE_EXT4();
    CHECK(connect_pair(0, 0, &srv, &cli) == 0);
    CHECK((p = map_ext4(0)) != NULL && (src = map_anon(LEN)) != NULL);
    fill(src, LEN, 42);
    CHECK(scif_register(srv, src, LEN, PEER_OFF, RW, SCIF_MAP_FIXED) == PEER_OFF);
    before = dbg_counter("pinned_pages");
    CHECK(before >= NPAGES);
    CHECK(scif_vreadfrom(cli, p, LEN, PEER_OFF, SCIF_RMA_USECACHE | SCIF_RMA_SYNC) == 0);
    CHECK(first_diff(p, src, LEN) < 0);
    if (dbg_counter("pinned_pages") != before) {
        diag("pinned_pages %lld after the transfer, %lld before: the ext4 range stayed pinned",
             dbg_counter("pinned_pages"), before);
        return KSFT_FAIL;
    }
    return KSFT_PASS;
}

static const struct scif_test tests[] = {
    {"writable window on a shared ext4 mapping: EFAULT", t_rw_window, 0},
    {"read-only window on a shared ext4 mapping works", t_ro_window, 0},
    {"writable window on a shared shmem mapping works", t_shmem_window, 0},
    {"SCIF_RMA_USECACHE keeps no pin of a shared ext4 mapping", t_cache, 0},
};

int main(int argc, char **argv) {
    int r;

    fs_mount();
    r = run_tests(tests, ARRAY_SIZE(tests), argc, argv);
    fs_umount();
    return r;
}
