/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Shared by the fuzz targets: the libFuzzer entry point, and a check that aborts so
 * that both libFuzzer and the corpus replay (a plain meson test) report it. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(cond) do {                                                  \
        if (!(cond)) {                                                          \
                fprintf(stderr, "%s:%d: invariant violated: %s\n", __FILE__, __LINE__, #cond); \
                abort();                                                        \
        } } while (0)
