// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * scif_server: a minimal SCIF echo server.
 *
 *   scif_server PORT [COUNT]
 *
 * Binds PORT on the node this process acts as (node 0, or SCIF_NODE=N),
 * listens, and for each of COUNT connections (default: forever) echoes
 * every byte back until the client closes.  Uses only <scif.h> and -lscif:
 *
 *   cc -o scif_server scif_server.c -lscif
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scif.h>

static int echo(scif_epd_t epd) {
    char buf[65536];

    for (;;) {
        /* Take whatever has arrived (at least one byte), then send it all back. */
        int n = scif_recv(epd, buf, 1, SCIF_RECV_BLOCK);

        if (n == 1) {
            int more = scif_recv(epd, buf + 1, sizeof(buf) - 1, 0);

            n += more > 0 ? more : 0;
        }
        if (n < 0)
            return errno == ECONNRESET ? 0 : -1; /* the client closed: done */
        if (scif_send(epd, buf, n, SCIF_SEND_BLOCK) != n)
            return errno == ECONNRESET ? 0 : -1;
    }
}

int main(int argc, char **argv) {
    struct scif_portID peer;
    scif_epd_t lep, epd;
    long count, i;
    int port;

    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s PORT [COUNT]\n", argv[0]);
        return 2;
    }
    port = atoi(argv[1]);
    count = argc > 2 ? atol(argv[2]) : -1;
    lep = scif_open();
    if (lep == SCIF_OPEN_FAILED) {
        perror("scif_open");
        return 1;
    }
    if (scif_bind(lep, (uint16_t)port) < 0) {
        perror("scif_bind");
        return 1;
    }
    if (scif_listen(lep, 16) < 0) {
        perror("scif_listen");
        return 1;
    }
    printf("listening on port %d\n", port);
    fflush(stdout);
    for (i = 0; count < 0 || i < count; i++) {
        if (scif_accept(lep, &peer, &epd, SCIF_ACCEPT_SYNC) < 0) {
            perror("scif_accept");
            return 1;
        }
        printf("connection from node %u port %u\n", peer.node, peer.port);
        fflush(stdout);
        if (echo(epd) < 0) {
            perror("echo");
            scif_close(epd);
            return 1;
        }
        scif_close(epd);
    }
    scif_close(lep);
    return 0;
}
