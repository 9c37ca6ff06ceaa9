// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * scif_nodes: a helper of tools/vm/rdma-pair.test (not a selftest of its
 * own).  Prints the node list as scif_get_nodeIDs() returns it:
 *
 *   self S nodes N: ID ID ...
 *
 * and with "connect NODE PORT" also tries a blocking scif_connect() to
 * NODE:PORT and prints "connect NODE:PORT: ok" or ": ERRNONAME".
 * Exit 0, or 1 when a call fails in a way the test did not ask about.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <scif.h>

static const char *errname(int e) {
    switch (e) {
    case ENODEV:
        return "ENODEV";
    case ECONNREFUSED:
        return "ECONNREFUSED";
    case EINVAL:
        return "EINVAL";
    default:
        return strerror(e);
    }
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
    } else if (argc != 1) {
        fprintf(stderr, "usage: %s [connect NODE PORT]\n", argv[0]);
        return 2;
    }
    return 0;
}
