/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Log messages straight to the journal, with their structured fields, when systemd
 * connected our stderr to it (JOURNAL_STREAM=); otherwise they stay on stderr as
 * lib/log writes them. */
#pragma once
#include <stdbool.h>

/* Sets the journal sink if stderr is the journal. Returns whether it did. A message
 * the journal refuses is written to stderr as "<LEVEL>message" instead. */
bool journal_log_setup(void);
