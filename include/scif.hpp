// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// scif.hpp - a header-only C++17 interface to libscif (include/scif.h).
//
// Conventions
// ===========
// Everything is a thin inline layer over the C functions of scif.h; link
// with -lscif as a C program does.  Nothing here adds state, locks or
// threads of its own.
//
// Ownership.  Endpoint, Window and Mapping are move-only owners of one SCIF
// resource each: an endpoint descriptor, a registered window, a mapping of a
// peer's window.  Their destructors release the resource (scif_close,
// scif_unregister, scif_munmap) and ignore any error, and leave errno as it
// was.  Call close()/unregister()/unmap() instead to see the error of the
// release.  A moved-from or default-constructed object owns nothing and its
// destructor does nothing.  release() gives the raw resource to the caller,
// the constructors taking a raw resource adopt one.
//
// Lifetimes.  A Window names its endpoint by descriptor: destroy (or
// unregister) every Window before the Endpoint it was registered on (declare
// the Endpoint first), as closing an endpoint unregisters its windows and a
// later unregister would name a closed (or reused) descriptor.  A Mapping
// stays valid after its endpoint is closed, until it is unmapped, as with
// scif_mmap().  Buffers passed to vreadfrom/vwriteto and to register_window
// must stay valid while the transfer or the window uses them, as in C.
//
// Errors.  Every failing call throws std::system_error whose code() is the
// errno of the C call in std::generic_category() (so
// e.code() == std::errc::connection_refused works) and whose what() names
// the C function.  The only calls that report a condition without throwing
// are the try_ and _some variants, which are documented per call.  Memory
// exhaustion inside the library is ENOMEM like any other errno.
//
// Threads.  The same as the C API: distinct objects may be used from
// distinct threads freely; one Endpoint may be used by several threads for
// the calls the C API allows concurrently (send and recv, RMA), but moving,
// closing or destroying an object must not race with any other use of it.
//
// Buffers.  scif::buffer and scif::const_buffer are a pointer and a length
// in bytes.  They convert from a contiguous container (anything with data()
// and size() of trivially copyable elements: std::vector, std::array,
// std::string, std::span), from a C array, or from (pointer, bytes).  With
// C++20 they also convert to std::span<std::byte> (as_span()).
#ifndef SCIF_HPP
#define SCIF_HPP

#include <scif.h>

#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#if __cplusplus >= 202002L && defined(__has_include)
#if __has_include(<span>)
#include <span>
#define SCIF_HPP_HAVE_SPAN 1
#endif
#endif

namespace scif {

// ---- errors ---------------------------------------------------------------

// Throws std::system_error for errno value err, naming the C call.
[[noreturn]] inline void throw_error(int err, const char *call) {
    throw std::system_error(err, std::generic_category(), call);
}

// Throws std::system_error for the current errno.
[[noreturn]] inline void throw_errno(const char *call) {
    throw_error(errno, call);
}

namespace detail {

// Saves errno and restores it on scope exit (destructors must not clobber
// the errno a caller is about to read).
class ErrnoSaver {
  public:
    ErrnoSaver() noexcept : saved_(errno) {}
    ~ErrnoSaver() { errno = saved_; }
    ErrnoSaver(const ErrnoSaver &) = delete;
    ErrnoSaver &operator=(const ErrnoSaver &) = delete;

  private:
    int saved_;
};

template <typename C, typename = void> struct is_contiguous : std::false_type {};
template <typename C>
struct is_contiguous<C, std::void_t<decltype(std::data(std::declval<C &>())),
                                    decltype(std::size(std::declval<C &>()))>>
    : std::is_trivially_copyable<std::remove_pointer_t<decltype(std::data(std::declval<C &>()))>> {
};

// The largest piece one scif_send/scif_recv call takes (its len is an int).
constexpr std::size_t kMaxMessage = static_cast<std::size_t>(INT_MAX);

} // namespace detail

// ---- buffers --------------------------------------------------------------

// A writable byte range.
class buffer {
  public:
    constexpr buffer() noexcept = default;
    constexpr buffer(void *data, std::size_t bytes) noexcept : data_(data), size_(bytes) {}
    template <
        typename C,
        typename = std::enable_if_t<
            detail::is_contiguous<C>::value &&
            !std::is_const_v<std::remove_pointer_t<decltype(std::data(std::declval<C &>()))>> &&
            !std::is_same_v<std::decay_t<C>, buffer>>>
    buffer(C &c) noexcept // NOLINT(google-explicit-constructor): a view
        : data_(std::data(c)), size_(std::size(c) * sizeof(*std::data(c))) {}

    void *data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
#ifdef SCIF_HPP_HAVE_SPAN
    std::span<std::byte> as_span() const noexcept {
        return {static_cast<std::byte *>(data_), size_};
    }
#endif

  private:
    void *data_ = nullptr;
    std::size_t size_ = 0;
};

// A read-only byte range.
class const_buffer {
  public:
    constexpr const_buffer() noexcept = default;
    constexpr const_buffer(const void *data, std::size_t bytes) noexcept
        : data_(data), size_(bytes) {}
    const_buffer(buffer b) noexcept : data_(b.data()), size_(b.size()) {}
    template <typename C,
              typename = std::enable_if_t<detail::is_contiguous<const C>::value &&
                                          !std::is_same_v<std::decay_t<C>, buffer> &&
                                          !std::is_same_v<std::decay_t<C>, const_buffer>>>
    const_buffer(const C &c) noexcept // NOLINT(google-explicit-constructor): a view
        : data_(std::data(c)), size_(std::size(c) * sizeof(*std::data(c))) {}

    const void *data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
#ifdef SCIF_HPP_HAVE_SPAN
    std::span<const std::byte> as_span() const noexcept {
        return {static_cast<const std::byte *>(data_), size_};
    }
#endif

  private:
    const void *data_ = nullptr;
    std::size_t size_ = 0;
};

// ---- nodes and ports ------------------------------------------------------

// A node and port, as struct scif_portID.
struct PortId {
    std::uint16_t node = 0;
    std::uint16_t port = 0;
};

// The nodes online and the calling process's own node.
struct NodeIds {
    std::vector<std::uint16_t> nodes;
    std::uint16_t self = 0;
};

// scif_get_nodeIDs(): every node online (throws on failure).
inline NodeIds get_node_ids() {
    NodeIds r;
    // The count returned is the number online, which may exceed the room
    // given: retry with room for all (a few times, as nodes may come up
    // between calls; then the first ones, as scif_get_nodeIDs gives).
    int cap = 16;
    for (int tries = 0; tries < 4; ++tries) {
        r.nodes.resize(static_cast<std::size_t>(cap));
        int n = scif_get_nodeIDs(r.nodes.data(), cap, &r.self);
        if (n < 0)
            throw_errno("scif_get_nodeIDs");
        if (n <= cap) {
            r.nodes.resize(static_cast<std::size_t>(n));
            return r;
        }
        cap = n;
    }
    return r;
}

// ---- registered memory ----------------------------------------------------

// A window registered on an endpoint (scif_register); unregistered by the
// destructor.  Destroy it before its Endpoint (see Lifetimes above).
class Window {
  public:
    Window() noexcept = default;
    // Adopts a window registered at offset with len bytes on epd.
    Window(scif_epd_t epd, off_t offset, std::size_t len) noexcept
        : epd_(epd), offset_(offset), size_(len) {}
    Window(Window &&o) noexcept
        : epd_(std::exchange(o.epd_, SCIF_OPEN_FAILED)), offset_(o.offset_), size_(o.size_) {}
    Window &operator=(Window &&o) noexcept {
        if (this != &o) {
            reset();
            epd_ = std::exchange(o.epd_, SCIF_OPEN_FAILED);
            offset_ = o.offset_;
            size_ = o.size_;
        }
        return *this;
    }
    Window(const Window &) = delete;
    Window &operator=(const Window &) = delete;
    ~Window() { reset(); }

    // The window's offset in the endpoint's registered address space.
    off_t offset() const noexcept { return offset_; }
    std::size_t size() const noexcept { return size_; }
    scif_epd_t endpoint() const noexcept { return epd_; }
    explicit operator bool() const noexcept { return epd_ != SCIF_OPEN_FAILED; }

    // scif_unregister(), reporting its error; the Window is empty afterwards
    // even when it throws.
    void unregister() {
        if (epd_ == SCIF_OPEN_FAILED)
            return;
        scif_epd_t epd = std::exchange(epd_, SCIF_OPEN_FAILED);
        if (scif_unregister(epd, offset_, size_) < 0)
            throw_errno("scif_unregister");
    }
    // Gives up ownership: the window stays registered.
    off_t release() noexcept {
        epd_ = SCIF_OPEN_FAILED;
        return offset_;
    }

  private:
    void reset() noexcept {
        if (epd_ != SCIF_OPEN_FAILED) {
            detail::ErrnoSaver keep;
            scif_unregister(std::exchange(epd_, SCIF_OPEN_FAILED), offset_, size_);
        }
    }

    scif_epd_t epd_ = SCIF_OPEN_FAILED;
    off_t offset_ = 0;
    std::size_t size_ = 0;
};

// ---- mappings -------------------------------------------------------------

// A peer's window mapped into this process (scif_mmap); unmapped by the
// destructor.  Outlives its endpoint (see Lifetimes above).
class Mapping {
  public:
    Mapping() noexcept = default;
    // Adopts len bytes mapped at addr by scif_mmap().
    Mapping(void *addr, std::size_t len) noexcept : addr_(addr), size_(len) {}
    Mapping(Mapping &&o) noexcept : addr_(std::exchange(o.addr_, nullptr)), size_(o.size_) {}
    Mapping &operator=(Mapping &&o) noexcept {
        if (this != &o) {
            reset();
            addr_ = std::exchange(o.addr_, nullptr);
            size_ = o.size_;
        }
        return *this;
    }
    Mapping(const Mapping &) = delete;
    Mapping &operator=(const Mapping &) = delete;
    ~Mapping() { reset(); }

    void *data() const noexcept { return addr_; }
    std::size_t size() const noexcept { return size_; }
    template <typename T> T *as() const noexcept { return static_cast<T *>(addr_); }
    buffer bytes() const noexcept { return {addr_, size_}; }
    explicit operator bool() const noexcept { return addr_ != nullptr; }

    // scif_munmap(), reporting its error; empty afterwards even when it throws.
    void unmap() {
        if (!addr_)
            return;
        if (scif_munmap(std::exchange(addr_, nullptr), size_) < 0)
            throw_errno("scif_munmap");
    }
    // Gives up ownership: the mapping stays.
    void *release() noexcept { return std::exchange(addr_, nullptr); }

  private:
    void reset() noexcept {
        if (addr_) {
            detail::ErrnoSaver keep;
            scif_munmap(std::exchange(addr_, nullptr), size_);
        }
    }

    void *addr_ = nullptr;
    std::size_t size_ = 0;
};

// ---- endpoints ------------------------------------------------------------

// A SCIF endpoint (scif_open); closed by the destructor.
class Endpoint {
  public:
    // An empty endpoint; Endpoint::open() makes a real one.
    Endpoint() noexcept = default;
    // Adopts a descriptor from scif_open() or scif_accept().
    explicit Endpoint(scif_epd_t epd) noexcept : epd_(epd) {}
    Endpoint(Endpoint &&o) noexcept : epd_(std::exchange(o.epd_, SCIF_OPEN_FAILED)) {}
    Endpoint &operator=(Endpoint &&o) noexcept {
        if (this != &o) {
            reset();
            epd_ = std::exchange(o.epd_, SCIF_OPEN_FAILED);
        }
        return *this;
    }
    Endpoint(const Endpoint &) = delete;
    Endpoint &operator=(const Endpoint &) = delete;
    ~Endpoint() { reset(); }

    // scif_open() (on the node SCIF_NODE names, as in C).
    static Endpoint open() {
        scif_epd_t epd = scif_open();
        if (epd == SCIF_OPEN_FAILED)
            throw_errno("scif_open");
        return Endpoint(epd);
    }

    scif_epd_t get() const noexcept { return epd_; }
    // The descriptor to poll(2)/select(2) on (scif_get_fd).
    int fd() const noexcept { return scif_get_fd(epd_); }
    explicit operator bool() const noexcept { return epd_ != SCIF_OPEN_FAILED; }
    // Gives up ownership of the descriptor.
    scif_epd_t release() noexcept { return std::exchange(epd_, SCIF_OPEN_FAILED); }

    // scif_close(), reporting its error; empty afterwards even when it throws.
    void close() {
        if (epd_ == SCIF_OPEN_FAILED)
            return;
        if (scif_close(std::exchange(epd_, SCIF_OPEN_FAILED)) < 0)
            throw_errno("scif_close");
    }

    // scif_bind(): port 0 picks a free port.  Returns the port bound.
    std::uint16_t bind(std::uint16_t port = 0) {
        int r = scif_bind(epd_, port);
        if (r < 0)
            throw_errno("scif_bind");
        return static_cast<std::uint16_t>(r);
    }

    void listen(int backlog) {
        if (scif_listen(epd_, backlog) < 0)
            throw_errno("scif_listen");
    }

    // scif_connect(): returns the local port of the connection.
    std::uint16_t connect(PortId dst) {
        scif_portID id{dst.node, dst.port};
        int r = scif_connect(epd_, &id);
        if (r < 0)
            throw_errno("scif_connect");
        return static_cast<std::uint16_t>(r);
    }

    // scif_accept() with SCIF_ACCEPT_SYNC: waits for a connection.
    Endpoint accept(PortId *peer = nullptr) { return accept_flags(SCIF_ACCEPT_SYNC, peer); }
    // scif_accept() without waiting: an empty Endpoint when no request is
    // pending (EAGAIN), else as accept().
    Endpoint try_accept(PortId *peer = nullptr) {
        try {
            return accept_flags(0, peer);
        } catch (const std::system_error &e) {
            if (e.code() == std::errc::resource_unavailable_try_again)
                return Endpoint();
            throw;
        }
    }

    // scif_send() without SCIF_SEND_BLOCK: the bytes queued now (maybe 0).
    // At most INT_MAX bytes per call.
    std::size_t send_some(const_buffer b) { return send_chunk(b.data(), b.size(), 0); }
    // scif_send() with SCIF_SEND_BLOCK until every byte is sent; throws
    // ECONNRESET when the connection ends first.
    void send_all(const_buffer b) {
        auto p = static_cast<const char *>(b.data());
        for (std::size_t left = b.size(); left > 0;) {
            std::size_t n = send_chunk(p, left, SCIF_SEND_BLOCK);
            if (n == 0)
                throw_error(ECONNRESET, "scif_send");
            p += n;
            left -= n;
        }
    }

    // scif_recv() without SCIF_RECV_BLOCK: the bytes received now (maybe 0).
    std::size_t recv_some(buffer b) { return recv_chunk(b.data(), b.size(), 0); }
    // scif_recv() with SCIF_RECV_BLOCK until the buffer is full; throws
    // ECONNRESET when the connection ends first.
    void recv_all(buffer b) {
        auto p = static_cast<char *>(b.data());
        for (std::size_t left = b.size(); left > 0;) {
            std::size_t n = recv_chunk(p, left, SCIF_RECV_BLOCK);
            if (n == 0)
                throw_error(ECONNRESET, "scif_recv");
            p += n;
            left -= n;
        }
    }

    // scif_poll() on this endpoint alone: the revents (0 on timeout).
    // timeout_ms as in scif_poll(): -1 waits forever.
    short poll(short events, long timeout_ms) {
        scif_pollepd p{epd_, events, 0};
        if (scif_poll(&p, 1, timeout_ms) < 0)
            throw_errno("scif_poll");
        return p.revents;
    }

    // scif_register() of memory b (page aligned, a multiple of the page size)
    // at offset (or anywhere when map_flags lacks SCIF_MAP_FIXED).
    Window register_window(buffer b, int prot = SCIF_PROT_READ | SCIF_PROT_WRITE, off_t offset = 0,
                           int map_flags = 0) {
        off_t off = scif_register(epd_, b.data(), b.size(), offset, prot, map_flags);
        if (off == SCIF_REGISTER_FAILED)
            throw_errno("scif_register");
        return Window(epd_, off, b.size());
    }

    // RMA between registered windows; flags are SCIF_RMA_*: with
    // SCIF_RMA_SYNC the call returns when the transfer is complete, without
    // it the transfer may still run (order it with fence_mark/fence_wait).
    void readfrom(off_t loffset, std::size_t len, off_t roffset, int flags = 0) {
        if (scif_readfrom(epd_, loffset, len, roffset, flags) < 0)
            throw_errno("scif_readfrom");
    }
    void writeto(off_t loffset, std::size_t len, off_t roffset, int flags = 0) {
        if (scif_writeto(epd_, loffset, len, roffset, flags) < 0)
            throw_errno("scif_writeto");
    }
    // RMA between local memory b and the peer's window at roffset.
    void vreadfrom(buffer b, off_t roffset, int flags = 0) {
        if (scif_vreadfrom(epd_, b.data(), b.size(), roffset, flags) < 0)
            throw_errno("scif_vreadfrom");
    }
    void vwriteto(const_buffer b, off_t roffset, int flags = 0) {
        // scif_vwriteto() only reads the memory; its C signature is not const.
        if (scif_vwriteto(epd_, const_cast<void *>(b.data()), b.size(), roffset, flags) < 0)
            throw_errno("scif_vwriteto");
    }

    // scif_fence_mark(): a mark for the RMAs issued so far (flags:
    // SCIF_FENCE_INIT_SELF or SCIF_FENCE_INIT_PEER).
    int fence_mark(int flags = SCIF_FENCE_INIT_SELF) {
        int mark = 0;
        if (scif_fence_mark(epd_, flags, &mark) < 0)
            throw_errno("scif_fence_mark");
        return mark;
    }
    void fence_wait(int mark) {
        if (scif_fence_wait(epd_, mark) < 0)
            throw_errno("scif_fence_wait");
    }
    // fence_mark() then fence_wait(): every RMA issued so far is complete.
    void fence(int flags = SCIF_FENCE_INIT_SELF) { fence_wait(fence_mark(flags)); }
    // scif_fence_signal(): writes lval at loff and/or rval at roff once the
    // RMAs issued so far are complete (flags as in C).
    void fence_signal(off_t loff, std::uint64_t lval, off_t roff, std::uint64_t rval, int flags) {
        if (scif_fence_signal(epd_, loff, lval, roff, rval, flags) < 0)
            throw_errno("scif_fence_signal");
    }

    // scif_mmap() of len bytes of the peer's window at offset.
    Mapping map(off_t offset, std::size_t len, int prot = SCIF_PROT_READ | SCIF_PROT_WRITE) {
        void *p = scif_mmap(nullptr, len, prot, 0, epd_, offset);
        if (p == SCIF_MMAP_FAILED)
            throw_errno("scif_mmap");
        return Mapping(p, len);
    }

  private:
    void reset() noexcept {
        if (epd_ != SCIF_OPEN_FAILED) {
            detail::ErrnoSaver keep;
            scif_close(std::exchange(epd_, SCIF_OPEN_FAILED));
        }
    }

    Endpoint accept_flags(int flags, PortId *peer) {
        scif_portID id{};
        scif_epd_t nep = SCIF_OPEN_FAILED;
        if (scif_accept(epd_, &id, &nep, flags) < 0)
            throw_errno("scif_accept");
        if (peer)
            *peer = PortId{id.node, id.port};
        return Endpoint(nep);
    }

    std::size_t send_chunk(const void *p, std::size_t len, int flags) {
        int n = len > detail::kMaxMessage ? INT_MAX : static_cast<int>(len);
        int r = scif_send(epd_, const_cast<void *>(p), n, flags);
        if (r < 0)
            throw_errno("scif_send");
        return static_cast<std::size_t>(r);
    }
    std::size_t recv_chunk(void *p, std::size_t len, int flags) {
        int n = len > detail::kMaxMessage ? INT_MAX : static_cast<int>(len);
        int r = scif_recv(epd_, p, n, flags);
        if (r < 0)
            throw_errno("scif_recv");
        return static_cast<std::size_t>(r);
    }

    scif_epd_t epd_ = SCIF_OPEN_FAILED;
};

// scif_poll() over several endpoints: the number with revents set (0 on
// timeout).
inline int poll(std::vector<scif_pollepd> &epds, long timeout_ms) {
    int r = scif_poll(epds.data(), static_cast<unsigned int>(epds.size()), timeout_ms);
    if (r < 0)
        throw_errno("scif_poll");
    return r;
}

} // namespace scif

#endif // SCIF_HPP
