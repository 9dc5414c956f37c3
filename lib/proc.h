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
        uint64_t vm_rss_kb;        /* VmRSS, 0 if absent (kernel threads, zombies) */
        uint64_t vm_lck_kb;        /* VmLck (mlocked), 0 if absent */
        unsigned threads;          /* Threads, 0 if absent */
        bool has_cpus_allowed, has_mems_allowed;
        nb_cpumask cpus_allowed;   /* Cpus_allowed_list */
        nb_nodemask mems_allowed;  /* Mems_allowed_list */
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
};

#define PF_KTHREAD_FLAG 0x00200000UL

/* Return 0 or -EINVAL when a required field is missing or malformed. */
int proc_status_parse(const char *buf, size_t len, struct proc_status *ret);
int proc_stat_parse(const char *buf, size_t len, struct proc_stat *ret);

/* Readers. pid 0 is refused (-EINVAL). -ENOENT/-ESRCH: the process is gone;
 * -EACCES/-EPERM: not ours to read. */
int proc_read_status(const char *proc_root, pid_t pid, struct proc_status *ret);
int proc_read_stat(const char *proc_root, pid_t pid, struct proc_stat *ret);
int proc_read_task_stat(const char *proc_root, pid_t pid, pid_t tid, struct proc_stat *ret);
/* Thread ids of pid, sorted; *ret is malloc'd. */
int proc_list_tasks(const char *proc_root, pid_t pid, pid_t **ret, size_t *ret_n);
/* /proc/<pid>/numa_maps, whole (see numa_maps.h for the parse). */
int proc_read_numa_maps(const char *proc_root, pid_t pid, char **ret, size_t *ret_len);
