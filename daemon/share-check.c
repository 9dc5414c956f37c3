/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The check before moving shared pages (share-check.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"
#include "pagesize.h"
#include "proc.h"
#include "share-check.h"

/* /proc/PID/pagemap (Documentation/admin-guide/mm/pagemap.rst). */
#define PM_PRESENT (UINT64_C(1) << 63)
#define PM_PFN_MASK ((UINT64_C(1) << 55) - 1)
/* /proc/kpageflags bits: a page of a compound page (a transparent huge page, a large
 * folio) moves with its whole folio; a KSM page is merged with unrelated processes'. */
#define KPF_COMPOUND_HEAD 15
#define KPF_COMPOUND_TAIL 16
#define KPF_KSM 21
#define KPF_THP 22
#define KPF_UNMOVABLE ((UINT64_C(1) << KPF_COMPOUND_HEAD) | (UINT64_C(1) << KPF_COMPOUND_TAIL) | \
                       (UINT64_C(1) << KPF_KSM) | (UINT64_C(1) << KPF_THP))
/* Pagemap entries read at once (32 KiB). */
#define SPAN_MAX 4096

static const char *const fail_names[_SHARE_FAIL_MAX] = {
        [SHARE_FAIL_OUTSIDE] = "outside-group",
        [SHARE_FAIL_MEMBER] = "member-disallows",
        [SHARE_FAIL_HUGE] = "huge-or-ksm",
        [SHARE_FAIL_FRAMES] = "frames-unreadable",
};

const char *share_check_fail_name(enum share_fail f) {
        return (unsigned) f < _SHARE_FAIL_MAX ? fail_names[f] : NULL;
}

static int open_pagemap(const char *proc_root, pid_t pid) {
        char path[128];

        snprintf(path, sizeof(path), "%s/%d/pagemap", proc_root, (int) pid);
        return open(path, O_RDONLY | O_CLOEXEC);
}

/* The page frames of the addresses va[] (ascending; 0: none) in fd's process, 0 where no
 * page is present, one pread per SPAN_MAX pages of address space. */
static void read_frames(int fd, const uint64_t *va, size_t n, uint64_t *ret) {
        uint64_t ps = page_size(), buf[SPAN_MAX];
        size_t i = 0;

        while (i < n) {
                uint64_t vpn;
                ssize_t got;
                size_t have;

                if (va[i] == 0) {
                        ret[i++] = 0;
                        continue;
                }
                vpn = va[i] / ps;
                got = pread(fd, buf, sizeof(buf), (off_t) (vpn * sizeof(uint64_t)));
                have = got > 0 ? (size_t) got / sizeof(uint64_t) : 0;
                for (; i < n && (va[i] == 0 || va[i] / ps - vpn < SPAN_MAX); i++) {
                        uint64_t k = va[i] ? va[i] / ps - vpn : SPAN_MAX;

                        ret[i] = k < have && (buf[k] & PM_PRESENT) ? buf[k] & PM_PFN_MASK : 0;
                }
        }
}

/* Where peer maps the object byte the mover maps at a, or 0 when it does not. */
static uint64_t peer_address(const struct share_check *c, const struct share_peer *peer, uint64_t a) {
        uint64_t off = c->own_pgoff + (a - c->own_start);

        if (off < peer->pgoff || off - peer->pgoff >= peer->end - peer->start)
                return 0;
        return peer->start + (off - peer->pgoff);
}

/* Whether peer is still the member the group was built from and allows target:
 * 1 yes, 0 it is gone or another process now (it maps nothing of the group's), -1 it
 * disallows target. */
static int peer_still(const char *proc_root, const struct share_peer *peer, int target) {
        struct proc_stat st;
        struct proc_status status;

        if (proc_read_stat(proc_root, peer->pid, &st) < 0 || st.starttime != peer->starttime)
                return 0;
        if (proc_read_status(proc_root, peer->pid, &status) < 0)
                return 0;
        if (status.has_mems_allowed && !nodemask_test(&status.mems_allowed, (unsigned) target))
                return -1;
        return 1;
}

/* Adds to count[i] the mappings of peer that hold frame[i]. Returns -1 when the peer
 * disallows target, else 0. */
static int count_peer(const char *proc_root, const struct share_check *c, const struct share_peer *peer,
                      pid_t mover, int target, void *const *addrs, size_t n, const uint64_t *frame, uint64_t *va,
                      uint64_t *pf, uint32_t *count) {
        _cleanup_close_ int fd = -1;
        int still;

        if (peer->pid != mover) {
                still = peer_still(proc_root, peer, target);
                if (still <= 0)
                        return still;
        }
        fd = open_pagemap(proc_root, peer->pid);
        if (fd < 0)
                return 0;
        /* Opened, then checked again: the fd holds the mm of the process whose start
         * time matches, not of a later one with its pid. */
        if (peer->pid != mover && peer_still(proc_root, peer, target) <= 0)
                return 0;
        for (size_t i = 0; i < n; i++)
                va[i] = peer_address(c, peer, (uint64_t) (uintptr_t) addrs[i]);
        read_frames(fd, va, n, pf);
        for (size_t i = 0; i < n; i++)
                count[i] += frame[i] && pf[i] == frame[i];
        return 0;
}

static int read_u64_at(int fd, uint64_t index, uint64_t *ret) {
        return pread(fd, ret, sizeof(*ret), (off_t) (index * sizeof(uint64_t))) == (ssize_t) sizeof(*ret) ? 0 : -EIO;
}

/* The verdict on page i: its frame's mappings all counted, and a page that moves alone. */
static enum share_fail page_verdict(int kcount, int kflags, uint64_t frame, uint32_t count) {
        uint64_t mapcount, flags;

        if (!frame || read_u64_at(kcount, frame, &mapcount) < 0 || read_u64_at(kflags, frame, &flags) < 0)
                return SHARE_FAIL_FRAMES;
        if (flags & KPF_UNMOVABLE)
                return SHARE_FAIL_HUGE;
        return mapcount == count ? _SHARE_FAIL_MAX : SHARE_FAIL_OUTSIDE;
}

static size_t fail_all(size_t n, bool *ok, uint64_t *fails, enum share_fail why) {
        memset(ok, 0, n * sizeof(*ok));
        if (fails)
                fails[why] += n;
        return 0;
}

size_t share_check_pages(const char *proc_root, const struct share_check *c, pid_t pid, int target,
                         void *const *addrs, size_t n, bool *ok, uint64_t fails[_SHARE_FAIL_MAX]) {
        _cleanup_free_ uint64_t *frame = calloc(n ? n : 1, sizeof(*frame));
        _cleanup_free_ uint64_t *va = calloc(n ? n : 1, sizeof(*va)), *pf = calloc(n ? n : 1, sizeof(*pf));
        _cleanup_free_ uint32_t *count = calloc(n ? n : 1, sizeof(*count));
        _cleanup_close_ int own = -1, kcount = -1, kflags = -1;
        size_t passed = 0;

        if (!frame || !va || !pf || !count)
                return fail_all(n, ok, fails, SHARE_FAIL_FRAMES);
        own = open_pagemap(proc_root, pid);
        kcount = open("/proc/kpagecount", O_RDONLY | O_CLOEXEC);
        kflags = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
        if (own < 0 || kcount < 0 || kflags < 0)
                return fail_all(n, ok, fails, SHARE_FAIL_FRAMES);
        for (size_t i = 0; i < n; i++)
                va[i] = (uint64_t) (uintptr_t) addrs[i];
        read_frames(own, va, n, frame);
        for (size_t k = 0; k < c->n_peers; k++)
                if (count_peer(proc_root, c, &c->peers[k], pid, target, addrs, n, frame, va, pf, count) < 0)
                        return fail_all(n, ok, fails, SHARE_FAIL_MEMBER);
        for (size_t i = 0; i < n; i++) {
                enum share_fail why = page_verdict(kcount, kflags, frame[i], count[i]);

                ok[i] = why == _SHARE_FAIL_MAX;
                passed += ok[i];
                if (!ok[i] && fails)
                        fails[why]++;
        }
        return passed;
}
