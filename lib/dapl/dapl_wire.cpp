// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dapl_wire.cpp - the wire protocol on a SCIF connection, sending side:
 * framed messages (MsgHdr + body, dapl_util.h) and the CONN_REQ /
 * CONN_ACCEPT / CONN_REJECT bodies.  Receiving is in dapl_progress.cpp.
 */
#include "dapl_scif.h"
#include "dapl_provider.h"

#include <cerrno>
#include <climits>
#include <cstring>

namespace daplscif {

/* ---- framing ------------------------------------------------------------- */

static int send_all(scif_epd_t epd, const void *p, size_t n) {
    auto *b = static_cast<const uint8_t *>(p);
    while (n) {
        int chunk = n > (size_t)INT_MAX ? INT_MAX : (int)n;
        int r = scif_ops().send(epd, const_cast<uint8_t *>(b), chunk, SCIF_SEND_BLOCK);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0) {
            errno = ECONNRESET;
            return -1;
        }
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

static MsgHdr make_hdr(uint16_t type, uint16_t flags, uint64_t arg, size_t len) {
    MsgHdr h{};
    h.magic = kMagic;
    h.type = type;
    h.flags = flags;
    h.len = (uint32_t)len;
    h.arg = arg;
    return h;
}

int send_msg(scif_epd_t epd, uint16_t type, uint16_t flags, uint64_t arg, const void *a,
             size_t alen, const void *b, size_t blen) {
    MsgHdr h = make_hdr(type, flags, arg, alen + blen);
    std::vector<uint8_t> buf(sizeof(h) + alen + blen);
    std::memcpy(buf.data(), &h, sizeof(h));
    if (alen)
        std::memcpy(buf.data() + sizeof(h), a, alen);
    if (blen)
        std::memcpy(buf.data() + sizeof(h) + alen, b, blen);
    int r = send_all(epd, buf.data(), buf.size());
    DSC_DBG("epd %d: sent type %u len %zu: %s", epd, type, alen + blen,
            r ? std::strerror(errno) : "ok");
    return r;
}

/* A SEND message gathered from an I/O vector. */
int send_iov(scif_epd_t epd, const std::vector<Seg> &segs, uint16_t flags) {
    uint64_t total = iov_total(segs);
    MsgHdr h = make_hdr(MSG_SEND, flags, 0, total);
    DSC_DBG("epd %d: sending SEND len %llu", epd, (unsigned long long)total);
    if (total <= 65536) {
        std::vector<uint8_t> buf(sizeof(h) + total);
        std::memcpy(buf.data(), &h, sizeof(h));
        size_t off = sizeof(h);
        for (const Seg &s : segs) {
            std::memcpy(buf.data() + off, reinterpret_cast<const void *>(s.va), s.len);
            off += s.len;
        }
        return send_all(epd, buf.data(), buf.size());
    }
    if (send_all(epd, &h, sizeof(h)))
        return -1;
    for (const Seg &s : segs)
        if (s.len && send_all(epd, reinterpret_cast<const void *>(s.va), s.len))
            return -1;
    return 0;
}

/* ---- CONN_REQ / ACCEPT / REJECT bodies ---------------------------------- */

std::vector<uint8_t> conn_body(uint64_t qual, const void *pdata, DAT_COUNT plen,
                               const std::vector<MrInfo> &mrs) {
    ConnBody b{};
    b.qual = qual;
    b.pdata_len = (uint32_t)plen;
    b.n_mr = (uint32_t)mrs.size();
    std::vector<uint8_t> v(sizeof(b) + plen + mrs.size() * sizeof(MrInfo));
    std::memcpy(v.data(), &b, sizeof(b));
    if (plen)
        std::memcpy(v.data() + sizeof(b), pdata, plen);
    if (!mrs.empty())
        std::memcpy(v.data() + sizeof(b) + plen, mrs.data(), mrs.size() * sizeof(MrInfo));
    return v;
}

bool parse_body(const std::vector<uint8_t> &v, size_t len, ConnBody *b, std::vector<uint8_t> *pdata,
                std::vector<MrInfo> *mrs) {
    if (len < sizeof(*b))
        return false;
    std::memcpy(b, v.data(), sizeof(*b));
    size_t need = sizeof(*b) + (size_t)b->pdata_len + (size_t)b->n_mr * sizeof(MrInfo);
    if (b->pdata_len > (uint32_t)kMaxPrivateData || need != len)
        return false;
    pdata->assign(v.begin() + sizeof(*b), v.begin() + sizeof(*b) + b->pdata_len);
    mrs->resize(b->n_mr);
    if (b->n_mr)
        std::memcpy(mrs->data(), v.data() + sizeof(*b) + b->pdata_len, b->n_mr * sizeof(MrInfo));
    return true;
}

void peer_add(Conn *c, const MrInfo *m, size_t n) {
    for (size_t i = 0; i < n; i++)
        c->peer[m[i].ctx] = {m[i].priv, m[i].va, m[i].len, m[i].win, m[i].same_pz != 0};
}

} /* namespace daplscif */
