/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/<pid>/status, /proc/<pid>/stat and the task list.
 * The parsers take a buffer; the readers take the proc root ("/proc" or a snapshot).
 * Everything here is written by, or shaped by, the process itself (comm!): parse
 * defensively. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "nodemask.h"

struct proc_status {
        char name[64];             /* Name: (escaped by the kernel) */
        char state;                /* first letter of State: */
        pid_t tgid, pid, ppid;
        uid_t uid_real, uid_effective;
        uid_t uid_saved, uid_fs;   /* (uid_t) -1 when the line lacks them: never root by mistake */
        gid_t gid_real, gid_effective, gid_saved, gid_fs;  /* Gid:, (gid_t) -1 when absent */
        uint64_t vm_rss_kb;        /* VmRSS, 0 if absent (kernel threads, zombies) */
        uint64_t vm_lck_kb;        /* VmLck (mlocked), 0 if absent */
        unsigned threads;          /* Threads, 0 if absent */
        bool has_cpus_allowed, has_mems_allowed;
        nb_cpumask cpus_allowed;   /* Cpus_allowed_list */
        nb_nodemask mems_allowed;  /* Mems_allowed_list */
};

/* Where exec() put the program's pieces: fields 26-28 and 45-51 of stat. They are set
 * by exec (load_elf_binary, setup_arg_pages) and change at no other time but
 * prctl(PR_SET_MM) (CAP_SYS_RESOURCE: checkpoint/restore), so that with address space
 * randomization (kernel.randomize_va_space, on by default) a new exec, even of the
 * same program, gives other values: an exec signature. All 0 for a kernel thread, a
 * zombie, or a reader without ptrace read access (the kernel hides them). Fields
 * 45-51 appeared in 3.5: 0 before. */
struct proc_mm_layout {
        uint64_t start_code, end_code, start_stack;
        uint64_t start_data, end_data, start_brk, arg_start, arg_end, env_start, env_end;
};

struct proc_stat {
        pid_t pid;
        char comm[64];             /* between the first '(' and the LAST ')' */
        char state;
        unsigned long flags;       /* field 9: PF_KTHREAD = 0x00200000 */
        uint64_t utime, stime;     /* fields 14, 15, clock ticks */
        uint64_t starttime;        /* field 22, clock ticks since boot */
        uint64_t rss_pages;        /* field 24 */
        int processor;             /* field 39: CPU it last ran on */
        struct proc_mm_layout layout;
};

static inline bool proc_mm_layout_equal(const struct proc_mm_layout *a, const struct proc_mm_layout *b) {
        return a->start_code == b->start_code && a->end_code == b->end_code && a->start_stack == b->start_stack &&
               a->start_data == b->start_data && a->end_data == b->end_data && a->start_brk == b->start_brk &&
               a->arg_start == b->arg_start && a->arg_end == b->arg_end && a->env_start == b->env_start &&
               a->env_end == b->env_end;
}

#define PF_KTHREAD_FLAG 0x00200000UL

/* Return 0 or -EINVAL when a required field is missing or malformed. */
int proc_status_parse(const char *buf, size_t len, struct proc_status *ret);
int proc_stat_parse(const char *buf, size_t len, struct proc_stat *ret);
/* The resident pages of /proc/<pid>/statm (its second field): the cheapest size the
 * kernel gives (a few counters, no page-table walk). */
int proc_statm_parse(const char *buf, size_t len, uint64_t *ret_resident_pages);

/* Readers. pid 0 is refused (-EINVAL). -ENOENT/-ESRCH: the process is gone;
 * -EACCES/-EPERM: not ours to read. */
int proc_read_status(const char *proc_root, pid_t pid, struct proc_status *ret);
int proc_read_stat(const char *proc_root, pid_t pid, struct proc_stat *ret);
int proc_read_statm_resident(const char *proc_root, pid_t pid, uint64_t *ret_pages);
int proc_read_task_stat(const char *proc_root, pid_t pid, pid_t tid, struct proc_stat *ret);
int proc_read_task_status(const char *proc_root, pid_t pid, pid_t tid, struct proc_status *ret);
/* Thread ids of pid, sorted; *ret is malloc'd. */
int proc_list_tasks(const char *proc_root, pid_t pid, pid_t **ret, size_t *ret_n);
/* The same, at most max of them: -E2BIG past it (the listing stops there, so a process
 * with a million threads costs max + 1 entries). */
int proc_list_tasks_max(const char *proc_root, pid_t pid, size_t max, pid_t **ret, size_t *ret_n);
/* The cgroup v2 path of pid, the "0::" line of /proc/<pid>/cgroup, malloc'd. -ESRCH: it
 * is gone; -ENODATA: no such line, or more than one (a cgroup name holding a newline
 * could forge a second one: then nothing is trusted). */
int proc_read_cgroup(const char *proc_root, pid_t pid, char **ret);
/* /proc/<pid>/numa_maps, whole (see numa_maps.h for the parse), up to 256 MiB: for
 * numabalancectl show, run by root on one process. The daemon reads numa_maps a chunk
 * at a time (numa_maps_read), never whole. */
int proc_read_numa_maps(const char *proc_root, pid_t pid, char **ret, size_t *ret_len);
