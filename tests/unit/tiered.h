/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The tiered test topology (tests/data/sys/2n1m-tiered: nodes 0 and 1 with CPUs,
 * node 2 in a lower tier), for the tests of the fast tier. */
#pragma once
#include <limits.h>
#include <stdio.h>
#include "test.h"
#include "topology.h"

static inline struct topology *tiered_topology(void) {
        char root[PATH_MAX];
        struct topology *t = NULL;

        snprintf(root, sizeof(root), "%s/sys/2n1m-tiered", TEST_DATA_DIR);
        CHECK_INT(topology_read(root, &t), 0);
        return t;
}
