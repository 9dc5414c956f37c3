/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The capabilities the daemon needs (docs/KERNEL.md, the capabilities;
 * the unit's CapabilityBoundingSet= is exactly this list), checked once at start: each
 * one missing from the effective set is named in one line with what the daemon cannot
 * do without it, instead of failing obscurely later. None is fatal: the daemon does
 * what it can (the BPF source falls back to /proc, and so on). */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "config.h"

/* Logs the missing ones (warning) or that all are there (info). Returns the number
 * missing, or -errno if the effective set cannot be read. */
int caps_check(const struct nb_config *cfg);
/* The missing ones as "CAP_A CAP_B" (empty: none), for status; "" before caps_check(). */
const char *caps_missing(void);
/* Drops every capability of the calling thread alone (effective, permitted,
 * inheritable; no_new_privs set), for a thread that parses bytes a tenant wrote: a
 * flaw in the parser then runs with none of the daemon's capabilities. The process's
 * other threads keep theirs. Returns 0, or -errno (-EPERM: some remain). */
int caps_drop_thread(void);
