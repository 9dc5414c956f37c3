/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The guest's memcpy bandwidth from node FROM to node TO (the limit of any page
 * migration between them), run on a CPU of node CPU_NODE: MiB/s, best of ROUNDS.
 *   memcpy-bw SIZE_MB FROM TO CPU_NODE ROUNDS */
#include <numa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv) {
        size_t len;
        char *a, *b;
        double best = 0;

        if (argc != 6 || numa_available() < 0) {
                fprintf(stderr, "usage: memcpy-bw SIZE_MB FROM TO CPU_NODE ROUNDS\n");
                return 2;
        }
        len = (size_t) atol(argv[1]) << 20;
        numa_run_on_node(atoi(argv[4]));
        a = numa_alloc_onnode(len, atoi(argv[2]));
        b = numa_alloc_onnode(len, atoi(argv[3]));
        if (!a || !b)
                return 1;
        memset(a, 1, len);
        memset(b, 2, len);
        for (int r = 0; r < atoi(argv[5]); r++) {
                struct timespec t0, t1;
                double s;
                clock_gettime(CLOCK_MONOTONIC, &t0);
                memcpy(b, a, len);
                clock_gettime(CLOCK_MONOTONIC, &t1);
                s = (double) (t1.tv_sec - t0.tv_sec) + (double) (t1.tv_nsec - t0.tv_nsec) / 1e9;
                if ((double) (len >> 20) / s > best)
                        best = (double) (len >> 20) / s;
        }
        printf("%.1f\n", best);
        return 0;
}
