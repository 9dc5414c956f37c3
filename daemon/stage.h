/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The stages the daemon's CPU time is charged by (cost.h says what each covers): a
 * header of its own so that the records that carry a time per stage (cg-records.h)
 * need not see the ledger that charges them. */
#pragma once

enum stage { STAGE_READ, STAGE_DECIDE, STAGE_MIGRATE, STAGE_WALK, STAGE_BOOKKEEPING, STAGE_REPORT, _STAGE_MAX };
