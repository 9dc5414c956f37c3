/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Pieces of migrate.c exposed for the unit tests only: the per-page classification.
 * Nothing outside migrate.c and tests/ includes this. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "migrate.h"

/* The class of one move_pages() status slot after a move call. status is the node id
 * or -errno; was_on_target: the query before the move already found it on the target. */
enum migrate_class migrate_classify(int status, int target_node, bool was_on_target);
