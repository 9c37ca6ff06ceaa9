// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * scif_client: connects to a SCIF echo server, sends data, checks the echo.
 *
 *   scif_client NODE PORT [BYTES]
 *
 * Connects from the node this process acts as (node 0, or SCIF_NODE=N) to
 * NODE:PORT, sends BYTES bytes (default 1 MiB) of a pattern in chunks while
 * reading the echo back, and verifies every byte.  Exit status 0 when the
 * echo matched.  Uses only <scif.h> and -lscif:
 *
 *   cc -o scif_client scif_client.c -lscif
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scif.h>

#define CHUNK 8192

static unsigned char pattern(long i) {
    return (unsigned char)((i * 131) ^ (i >> 9));
}

int main(int argc, char **argv) {
    unsigned char out[CHUNK], in[CHUNK];
    struct scif_portID dst;
    uint16_t self = 0, nodes[16];
    long bytes, done = 0, i;
    scif_epd_t epd;
    int port;

    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s NODE PORT [BYTES]\n", argv[0]);
        return 2;
    }
    dst.node = (uint16_t)atoi(argv[1]);
    dst.port = (uint16_t)atoi(argv[2]);
    bytes = argc > 3 ? atol(argv[3]) : 1L << 20;
    epd = scif_open();
    if (epd == SCIF_OPEN_FAILED) {
        perror("scif_open");
        return 1;
    }
    if (scif_get_nodeIDs(nodes, 16, &self) < 0) {
        perror("scif_get_nodeIDs");
        return 1;
    }
    port = scif_connect(epd, &dst);
    if (port < 0) {
        fprintf(stderr, "scif_connect to %u:%u: %s\n", dst.node, dst.port, strerror(errno));
        return 1;
    }
    printf("node %u port %d connected to node %u port %u\n", self, port, dst.node, dst.port);
    /* One chunk out, one chunk back: the server's echo never has to queue much. */
    while (done < bytes) {
        int len = bytes - done < CHUNK ? (int)(bytes - done) : CHUNK;

        for (i = 0; i < len; i++)
            out[i] = pattern(done + i);
        if (scif_send(epd, out, len, SCIF_SEND_BLOCK) != len) {
            perror("scif_send");
            return 1;
        }
        if (scif_recv(epd, in, len, SCIF_RECV_BLOCK) != len) {
            perror("scif_recv");
            return 1;
        }
        if (memcmp(in, out, len)) {
            for (i = 0; in[i] == out[i]; i++)
                ;
            fprintf(stderr, "echo differs at byte %ld\n", done + i);
            return 1;
        }
        done += len;
    }
    printf("%ld bytes echoed correctly\n", done);
    scif_close(epd);
    return 0;
}
