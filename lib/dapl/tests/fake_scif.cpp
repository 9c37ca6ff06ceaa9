// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fake_scif.cpp - SCIF in one process for the provider's unit tests.
 */
#include "fake_scif.h"

#include <cerrno>
#include <deque>
#include <map>
#include <mutex>

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

namespace fake_scif {

namespace {

struct Ep {
    int fd = -1;       /* connected: our end of the socket pair */
    int lfd = -1;      /* listening: eventfd, readable while backlog is not empty */
    uint16_t port = 0; /* bound port */
    bool listening = false;
    std::deque<std::pair<int, uint16_t>> backlog; /* socket, peer port */
};

std::mutex g_mu; /* protects everything below */
std::map<scif_epd_t, Ep> g_eps;
std::map<uint16_t, scif_epd_t> g_ports;
scif_epd_t g_next_epd = 1000;
uint16_t g_next_port = 2000;

Ep *find(scif_epd_t epd) {
    auto it = g_eps.find(epd);
    if (it == g_eps.end()) {
        errno = EBADF;
        return nullptr;
    }
    return &it->second;
}

scif_epd_t f_open(void) {
    std::lock_guard<std::mutex> lk(g_mu);
    scif_epd_t e = g_next_epd++;
    g_eps[e] = Ep{};
    return e;
}

int f_close(scif_epd_t epd) {
    std::lock_guard<std::mutex> lk(g_mu);
    Ep *e = find(epd);
    if (!e)
        return -1;
    if (e->fd >= 0)
        close(e->fd);
    if (e->lfd >= 0)
        close(e->lfd);
    for (auto &b : e->backlog)
        close(b.first);
    if (e->port && g_ports.count(e->port) && g_ports[e->port] == epd)
        g_ports.erase(e->port);
    g_eps.erase(epd);
    return 0;
}

int f_bind(scif_epd_t epd, uint16_t pn) {
    std::lock_guard<std::mutex> lk(g_mu);
    Ep *e = find(epd);
    if (!e)
        return -1;
    if (!pn)
        pn = g_next_port++;
    if (g_ports.count(pn)) {
        errno = EADDRINUSE;
        return -1;
    }
    g_ports[pn] = epd;
    e->port = pn;
    return pn;
}

int f_listen(scif_epd_t epd, int) {
    std::lock_guard<std::mutex> lk(g_mu);
    Ep *e = find(epd);
    if (!e)
        return -1;
    e->lfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (e->lfd < 0)
        return -1;
    e->listening = true;
    return 0;
}

int f_connect(scif_epd_t epd, struct scif_portID *dst) {
    std::lock_guard<std::mutex> lk(g_mu);
    Ep *e = find(epd);
    if (!e)
        return -1;
    auto it = g_ports.find(dst->port);
    Ep *l = it == g_ports.end() ? nullptr : find(it->second);
    if (!l || !l->listening) {
        errno = ECONNREFUSED;
        return -1;
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return -1;
    if (!e->port) {
        e->port = g_next_port++;
        g_ports[e->port] = epd;
    }
    e->fd = sv[0];
    l->backlog.push_back({sv[1], e->port});
    uint64_t one = 1;
    if (write(l->lfd, &one, sizeof(one)) != sizeof(one))
        return -1;
    return e->port;
}

int f_accept(scif_epd_t epd, struct scif_portID *peer, scif_epd_t *newepd, int) {
    std::lock_guard<std::mutex> lk(g_mu);
    Ep *l = find(epd);
    if (!l)
        return -1;
    if (!l->listening) {
        errno = EINVAL;
        return -1;
    }
    if (l->backlog.empty()) {
        errno = EAGAIN;
        return -1;
    }
    auto b = l->backlog.front();
    l->backlog.pop_front();
    if (l->backlog.empty()) {
        uint64_t v;
        if (read(l->lfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
            return -1;
    }
    scif_epd_t n = g_next_epd++;
    g_eps[n].fd = b.first;
    peer->node = 0;
    peer->port = b.second;
    *newepd = n;
    return 0;
}

int conn_fd(scif_epd_t epd) {
    std::lock_guard<std::mutex> lk(g_mu);
    Ep *e = find(epd);
    if (!e)
        return -1;
    if (e->fd < 0) {
        errno = ENOTCONN;
        return -1;
    }
    return e->fd;
}

int f_send(scif_epd_t epd, void *msg, int len, int flags) {
    int fd = conn_fd(epd);
    if (fd < 0)
        return -1;
    ssize_t r = ::send(fd, msg, len, MSG_NOSIGNAL | (flags & SCIF_SEND_BLOCK ? 0 : MSG_DONTWAIT));
    if (r < 0 && errno == EPIPE)
        errno = ECONNRESET;
    if (r < 0 && errno == EAGAIN)
        return 0;
    return (int)r;
}

int f_recv(scif_epd_t epd, void *msg, int len, int flags) {
    int fd = conn_fd(epd);
    if (fd < 0)
        return -1;
    int got = 0;
    do {
        ssize_t r =
            ::recv(fd, (char *)msg + got, len - got, flags & SCIF_RECV_BLOCK ? 0 : MSG_DONTWAIT);
        if (r == 0)
            break; /* peer gone: what we have, 0 when nothing */
        if (r < 0)
            return got ? got : -1;
        got += (int)r;
    } while ((flags & SCIF_RECV_BLOCK) && got < len);
    return got;
}

off_t f_reg(scif_epd_t, void *, size_t, off_t, int, int) {
    errno = ENOSYS;
    return -1;
}

int f_unreg(scif_epd_t, off_t, size_t) {
    errno = ENOSYS;
    return -1;
}

int f_rma(scif_epd_t, void *, size_t, off_t, int) {
    errno = ENOSYS;
    return -1;
}

int f_rma_win(scif_epd_t, off_t, size_t, off_t, int) {
    errno = ENOSYS;
    return -1;
}

int f_nodes(uint16_t *nodes, int len, uint16_t *self) {
    if (len > 0)
        nodes[0] = 0;
    *self = 0;
    return 1;
}

int f_get_fd(scif_epd_t epd) {
    std::lock_guard<std::mutex> lk(g_mu);
    Ep *e = find(epd);
    if (!e)
        return -1;
    return e->listening ? e->lfd : e->fd;
}

} /* namespace */

const daplscif::ScifOps &ops() {
    static const daplscif::ScifOps t = {
        f_open, f_close, f_bind, f_listen, f_connect, f_accept,  f_send,  f_recv,
        f_reg,  f_unreg, f_rma,  f_rma,    f_rma_win, f_rma_win, f_nodes, f_get_fd};
    return t;
}

int open_count() {
    std::lock_guard<std::mutex> lk(g_mu);
    return (int)g_eps.size();
}

} /* namespace fake_scif */
