/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Migration as the manager sees it: the jobs and their outcome classes (executor.h),
 * splitting a job among workers (job-split.h) and the worker pool that runs a tick's
 * jobs under the MB/s budget (migrator.h). */
#pragma once
#include "executor.h"
#include "job-split.h"
#include "migrator.h"
