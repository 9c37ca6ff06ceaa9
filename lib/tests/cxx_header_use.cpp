// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Compiled (not run) by cxx_header_check.sh in C++17 and C++20 with
// -Wall -Wextra -Werror -pedantic: scif.hpp is self-contained (included
// first) and every member and template instantiates without a warning.
#include <scif.hpp>

#include <array>
#include <string>
#include <vector>

#if __cplusplus >= 202002L && defined(SCIF_HPP_HAVE_SPAN)
#include <span>
#endif

int scif_hpp_use(bool run);

int scif_hpp_use(bool run) {
    if (!run)
        return 0;
    scif::NodeIds ids = scif::get_node_ids();
    scif::Endpoint ep = scif::Endpoint::open();
    scif::Endpoint other;
    other = std::move(ep);
    other.bind(0);
    other.listen(1);
    scif::PortId peer;
    scif::Endpoint c = other.try_accept(&peer);
    c = other.accept();
    c.connect({ids.self, 2000});
    std::vector<char> v(16);
    const std::string s = "text";
    std::array<int, 4> a{};
    char raw[8] = {};
    c.send_all(s);
    c.send_all(v);
    c.send_all(a);
    c.send_some(raw);
    c.recv_all(v);
    c.recv_some(scif::buffer(raw, sizeof raw));
    short re = c.poll(SCIF_POLLIN, 0);
    std::vector<scif_pollepd> many{{c.get(), SCIF_POLLIN, 0}};
    int n = scif::poll(many, -1);
    scif::Window w = c.register_window(v, SCIF_PROT_READ | SCIF_PROT_WRITE);
    c.readfrom(w.offset(), w.size(), 0, SCIF_RMA_SYNC);
    c.writeto(w.offset(), w.size(), 0);
    c.vreadfrom(v, 0, SCIF_RMA_USECPU);
    c.vwriteto(s, 0);
    int mark = c.fence_mark();
    c.fence_wait(mark);
    c.fence();
    c.fence_signal(w.offset(), 1, 0, 2, SCIF_FENCE_INIT_SELF | SCIF_SIGNAL_LOCAL);
    scif::Mapping m = c.map(0, 4096);
    int *p = m.as<int>();
#if __cplusplus >= 202002L && defined(SCIF_HPP_HAVE_SPAN)
    std::span<char> sp(v);
    c.send_all(sp);
    std::span<std::byte> bytes = scif::buffer(v).as_span();
    std::span<const std::byte> cbytes = scif::const_buffer(s).as_span();
    n += static_cast<int>(bytes.size() + cbytes.size());
#endif
    w.unregister();
    m.unmap();
    c.close();
    (void)w.release();
    (void)m.release();
    (void)other.release();
    try {
        other.fd();
    } catch (const std::system_error &e) {
        return e.code().value();
    }
    return n + re + (p != nullptr);
}
