// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * scif_info: what the loaded openscif module is and does, from its stable
 * sysfs interface (docs/kernel.md, "sysfs ABI"): version and parameters
 * (/sys/module/scif/), nodes, DMA channel and counters (/sys/kernel/scif/).
 * Plain text for people, --json for scripts.  See scif_info(1).
 *
 * SCIF_INFO_SYSFS (environment) replaces the /sys prefix, for tests.
 */
#include <dirent.h>
#include <getopt.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr int kExitError = 1;     // the interface is there but unreadable
constexpr int kExitNotLoaded = 2; // no scif module

struct Error {
    std::string msg;
};

struct Node {
    unsigned id;
    bool up;
    std::string transport;
    int numa; // host NUMA node, -1 none or unknown
};

struct Info {
    std::string version;
    std::vector<std::pair<std::string, std::string>> params;
    std::string dma_channel;
    std::vector<Node> nodes;
    std::vector<std::pair<std::string, unsigned long long>> counters;
};

std::string read_value(const std::string &path) {
    std::ifstream in(path);
    if (!in)
        throw Error{path + ": " + std::strerror(errno)};
    std::string s;
    std::getline(in, s);
    if (in.bad())
        throw Error{path + ": read error"};
    return s;
}

std::vector<std::string> list_dir(const std::string &path) {
    std::unique_ptr<DIR, int (*)(DIR *)> d(opendir(path.c_str()), closedir);
    if (!d)
        throw Error{path + ": " + std::strerror(errno)};
    std::vector<std::string> names;
    while (const dirent *e = readdir(d.get()))
        if (e->d_name[0] != '.')
            names.emplace_back(e->d_name);
    std::sort(names.begin(), names.end());
    return names;
}

unsigned long long to_number(const std::string &path, const std::string &s) {
    char *end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    if (s.empty() || errno || *end)
        throw Error{path + ": not a number: '" + s + "'"};
    return v;
}

// A numa_node file: -1 (none or unknown) or a NUMA node number.
int read_numa(const std::string &path) {
    const std::string s = read_value(path);
    if (s == "-1")
        return -1;
    const unsigned long long v = to_number(path, s);
    if (v > static_cast<unsigned long long>(std::numeric_limits<int>::max()))
        throw Error{path + ": not a NUMA node: '" + s + "'"};
    return static_cast<int>(v);
}

Info collect(const std::string &sys) {
    const std::string mod = sys + "/module/scif";
    const std::string top = sys + "/kernel/scif";
    Info info;

    info.version = read_value(mod + "/version");
    for (const auto &p : list_dir(mod + "/parameters"))
        info.params.emplace_back(p, read_value(mod + "/parameters/" + p));
    info.dma_channel = read_value(top + "/dma_channel");
    for (const auto &n : list_dir(top + "/nodes")) {
        const std::string dir = top + "/nodes/" + n;
        Node node{static_cast<unsigned>(to_number(dir, n)), false, "", -1};
        node.up = to_number(dir + "/online", read_value(dir + "/online")) != 0;
        node.transport = read_value(dir + "/transport");
        node.numa = read_numa(dir + "/numa_node");
        info.nodes.push_back(node);
    }
    std::sort(info.nodes.begin(), info.nodes.end(),
              [](const Node &a, const Node &b) { return a.id < b.id; });
    std::istringstream remote(read_value(top + "/remote_nodes"));
    std::string id;
    while (remote >> id) {
        Node node{static_cast<unsigned>(to_number(top + "/remote_nodes", id)), true, "rdma", -1};
        // remote/<id>/ (absent before the module had it: rdma, no NUMA node)
        const std::string dir = top + "/remote/" + std::to_string(node.id);
        if (access(dir.c_str(), F_OK) == 0) {
            node.transport = read_value(dir + "/transport");
            node.numa = read_numa(dir + "/numa_node");
        }
        info.nodes.push_back(node);
    }
    for (const auto &c : list_dir(top + "/stats")) {
        const std::string path = top + "/stats/" + c;
        info.counters.emplace_back(c, to_number(path, read_value(path)));
    }
    return info;
}

std::string json_string(const std::string &s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof(buf), "\\u%04x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

void print_json(const Info &info) {
    std::ostream &o = std::cout;
    o << "{\n  \"version\": " << json_string(info.version) << ",\n";
    o << "  \"parameters\": {";
    for (size_t i = 0; i < info.params.size(); i++)
        o << (i ? "," : "") << "\n    " << json_string(info.params[i].first) << ": "
          << json_string(info.params[i].second);
    o << "\n  },\n  \"dma_channel\": " << json_string(info.dma_channel) << ",\n";
    o << "  \"self\": 0,\n  \"nodes\": [";
    for (size_t i = 0; i < info.nodes.size(); i++) {
        const Node &n = info.nodes[i];
        o << (i ? "," : "") << "\n    {\"id\": " << n.id
          << ", \"up\": " << (n.up ? "true" : "false")
          << ", \"transport\": " << json_string(n.transport) << ", \"numa_node\": " << n.numa
          << "}";
    }
    o << "\n  ],\n  \"counters\": {";
    for (size_t i = 0; i < info.counters.size(); i++)
        o << (i ? "," : "") << "\n    " << json_string(info.counters[i].first) << ": "
          << info.counters[i].second;
    o << "\n  }\n}\n";
}

void print_text(const Info &info) {
    std::printf("openscif module version %s\n\n", info.version.c_str());
    std::printf("nodes:\n  %-4s %-5s %-4s %s\n", "id", "state", "numa", "transport");
    for (const Node &n : info.nodes) {
        const std::string numa = n.numa < 0 ? "-" : std::to_string(n.numa);
        std::printf("  %-4u %-5s %-4s %s%s\n", n.id, n.up ? "up" : "down", numa.c_str(),
                    n.transport.c_str(), n.id == 0 ? " (self)" : "");
    }
    std::printf("\nRMA data mover: %s\n", info.dma_channel.c_str());
    std::printf("\nparameters:\n");
    for (const auto &p : info.params)
        std::printf("  %-16s %s\n", p.first.c_str(), p.second.c_str());
    std::printf("\ncounters:\n");
    for (const auto &c : info.counters)
        std::printf("  %-16s %llu\n", c.first.c_str(), c.second);
}

void usage(std::FILE *f) {
    std::fprintf(f, "Usage: scif_info [--json] [--help]\n"
                    "Show the openscif module's version, parameters, nodes, DMA channel\n"
                    "and counters (from /sys/kernel/scif and /sys/module/scif).\n"
                    "  -j, --json   print one JSON object (for scripts)\n"
                    "  -h, --help   print this help\n"
                    "Exit status: 0 ok, 1 error reading the interface, 2 module not loaded,\n"
                    "64 bad usage.\n");
}

} // namespace

int main(int argc, char **argv) {
    static const option opts[] = {
        {"json", no_argument, nullptr, 'j'},
        {"help", no_argument, nullptr, 'h'},
        {nullptr, 0, nullptr, 0},
    };
    bool json = false;
    int c;

    while ((c = getopt_long(argc, argv, "jh", opts, nullptr)) != -1) {
        switch (c) {
        case 'j':
            json = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 64;
        }
    }
    if (optind < argc) {
        std::fprintf(stderr, "scif_info: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 64;
    }
    const char *env = std::getenv("SCIF_INFO_SYSFS");
    const std::string sys = env && *env ? env : "/sys";
    const std::string top = sys + "/kernel/scif";

    std::unique_ptr<DIR, int (*)(DIR *)> probe(opendir(top.c_str()), closedir);
    if (!probe) {
        if (errno == ENOENT) {
            std::fprintf(stderr,
                         "scif_info: the scif module is not loaded (%s does not exist);"
                         " load it with: modprobe scif\n",
                         top.c_str());
            return kExitNotLoaded;
        }
        std::fprintf(stderr, "scif_info: %s: %s\n", top.c_str(), std::strerror(errno));
        return kExitError;
    }
    try {
        const Info info = collect(sys);
        if (json)
            print_json(info);
        else
            print_text(info);
    } catch (const Error &e) {
        std::fprintf(stderr, "scif_info: %s\n", e.msg.c_str());
        return kExitError;
    }
    std::fflush(stdout);
    if (std::ferror(stdout)) {
        std::fprintf(stderr, "scif_info: write error\n");
        return kExitError;
    }
    return 0;
}
