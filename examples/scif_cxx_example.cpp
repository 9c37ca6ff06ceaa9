// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// scif_cxx_example: the C++ interface (scif.hpp) end to end.
//
//   scif_cxx_example [PEER_NODE [PORT]]
//
// Forks a server acting as PEER_NODE (default: this process's own node, i.e.
// loopback) listening on PORT (default 2050), and connects to it from this
// process's node.  The server registers a window and tells the client its
// offset in a message; the client writes a pattern into it by RMA
// (writeto from its own window, then vwriteto from plain memory), fences,
// reads it back with vreadfrom and through a mapping (scif_mmap), and tells
// the server, which checks the bytes in its own memory.  Exit status 0 when
// every check passed.  Build:
//
//   c++ -std=c++17 -o scif_cxx_example scif_cxx_example.cpp -lscif
#include <scif.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <csignal>
#include <cstring>
#include <string>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

constexpr std::size_t kWindow = 64 * 1024; // bytes in each window
constexpr std::size_t kHalf = kWindow / 2;

unsigned char pattern(std::size_t i) {
    return static_cast<unsigned char>((i * 131) ^ (i >> 9));
}

// Page-aligned memory for a window (scif_register needs whole pages).
struct Pages {
    explicit Pages(std::size_t len) : len_(len) {
        void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            scif::throw_errno("mmap");
        p_ = static_cast<unsigned char *>(p);
    }
    ~Pages() { munmap(p_, len_); }
    Pages(const Pages &) = delete;
    Pages &operator=(const Pages &) = delete;
    unsigned char *data() { return p_; }
    std::size_t size() const { return len_; }

  private:
    unsigned char *p_ = nullptr;
    std::size_t len_;
};

// The server: one connection, one window, checks what the client wrote.
int serve(std::uint16_t port) {
    scif::Endpoint listener = scif::Endpoint::open();
    listener.bind(port);
    listener.listen(1);
    scif::PortId peer;
    scif::Endpoint conn = listener.accept(&peer);
    std::printf("server: connection from node %u port %u\n", peer.node, peer.port);

    Pages mem(kWindow);
    std::memset(mem.data(), 0, mem.size());
    scif::Window win = conn.register_window({mem.data(), mem.size()});
    std::int64_t off = win.offset();
    conn.send_all(scif::const_buffer(&off, sizeof off));

    char done = 0;
    conn.recv_all(scif::buffer(&done, 1)); // the client's RMAs are complete
    for (std::size_t i = 0; i < kWindow; ++i) {
        if (mem.data()[i] != pattern(i)) {
            std::printf("server: byte %zu is %u, expected %u\n", i, mem.data()[i], pattern(i));
            return 1;
        }
    }
    std::printf("server: %zu bytes arrived by RMA\n", kWindow);
    const char ok = 'k';
    conn.send_all(scif::const_buffer(&ok, 1));
    return 0;
}

// Connects to dst, retrying while the server is not listening yet (bounded).
scif::Endpoint connect_to(scif::PortId dst) {
    for (int tries = 0;; ++tries) {
        scif::Endpoint ep = scif::Endpoint::open();
        try {
            ep.connect(dst);
            return ep;
        } catch (const std::system_error &e) {
            if (e.code() != std::errc::connection_refused || tries >= 200)
                throw;
        }
        usleep(50 * 1000);
    }
}

int client(scif::PortId dst) {
    scif::Endpoint ep = connect_to(dst);
    std::int64_t roff = 0;
    ep.recv_all(scif::buffer(&roff, sizeof roff));

    // First half: from a registered window of ours, asynchronously, then a
    // fence (mark + wait) so that it is complete.
    Pages mine(kHalf);
    for (std::size_t i = 0; i < kHalf; ++i)
        mine.data()[i] = pattern(i);
    {
        scif::Window local = ep.register_window({mine.data(), mine.size()}, SCIF_PROT_READ);
        ep.writeto(local.offset(), kHalf, roff);
        ep.fence();
    } // local unregistered here, before ep closes

    // Second half: from plain memory, synchronously.
    std::vector<unsigned char> rest(kHalf);
    for (std::size_t i = 0; i < kHalf; ++i)
        rest[i] = pattern(kHalf + i);
    ep.vwriteto(rest, roff + static_cast<off_t>(kHalf), SCIF_RMA_SYNC);

    // Read it all back by RMA and through a mapping of the peer's window.
    std::vector<unsigned char> back(kWindow);
    ep.vreadfrom(back, roff, SCIF_RMA_SYNC);
    scif::Mapping map = ep.map(roff, kWindow, SCIF_PROT_READ);
    for (std::size_t i = 0; i < kWindow; ++i) {
        if (back[i] != pattern(i) || map.as<unsigned char>()[i] != pattern(i)) {
            std::printf("client: byte %zu read back wrong\n", i);
            return 1;
        }
    }
    std::printf("client: %zu bytes written (writeto + fence, vwriteto) and read back "
                "(vreadfrom, mmap)\n",
                kWindow);

    const char done = 'd';
    ep.send_all(scif::const_buffer(&done, 1));
    char ok = 0;
    ep.recv_all(scif::buffer(&ok, 1));
    return ok == 'k' ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
    if (argc > 3) {
        std::fprintf(stderr, "usage: %s [PEER_NODE [PORT]]\n", argv[0]);
        return 2;
    }
    try {
        scif::NodeIds ids = scif::get_node_ids();
        scif::PortId dst{ids.self, 2050};
        if (argc > 1)
            dst.node = static_cast<std::uint16_t>(std::atoi(argv[1]));
        if (argc > 2)
            dst.port = static_cast<std::uint16_t>(std::atoi(argv[2]));
        std::printf("node %u -> node %u port %u\n", ids.self, dst.node, dst.port);

        std::fflush(stdout);
        pid_t pid = fork();
        if (pid < 0)
            scif::throw_errno("fork");
        if (pid == 0) {
            // The server acts as the peer node (SCIF_NODE is read at each open).
            setenv("SCIF_NODE", std::to_string(dst.node).c_str(), 1);
            int rc = 1;
            try {
                rc = serve(dst.port);
            } catch (const std::system_error &e) {
                std::fprintf(stderr, "server: %s: %s\n", e.what(), e.code().message().c_str());
            }
            std::fflush(stdout);
            _exit(rc);
        }
        int rc = 1;
        try {
            rc = client(dst);
        } catch (const std::system_error &e) {
            std::fprintf(stderr, "client: %s\n", e.what());
            kill(pid, SIGKILL);
        }
        int status = 0;
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            rc = 1;
        if (rc == 0)
            std::printf("scif_cxx_example: ok\n");
        return rc;
    } catch (const std::system_error &e) {
        // e.code().value() is the errno of the failed call, e.what() names it.
        std::fprintf(stderr, "scif_cxx_example: %s\n", e.what());
        return 1;
    }
}
