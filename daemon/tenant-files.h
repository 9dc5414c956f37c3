/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the daemon reads of a tenant's process that the tenant can make wait: its
 * numa_maps, maps and smaps (each takes the process's mmap lock) and the bytes of its
 * code (process_vm_readv faults them in). Each read goes through the tenant reader
 * (tenant-reader.h), with the process's deadline; same results as the direct reads,
 * plus -ETIMEDOUT (overran: the caller quarantines the process) and -EBUSY (not
 * started: try again later). */
#pragma once
#include <stdint.h>
#include <sys/types.h>
#include "insn-decoder.h"
#include "maps.h"
#include "numa_maps.h"
#include "tenant-reader.h"

struct tenant_proc {
        const char *proc_root;
        pid_t pid;
        uid_t owner;            /* the uid whose opt-in covers the process */
        unsigned deadline_ms;   /* tenant_reader_deadline_ms() of its resident size; 0: the default */
};

int tenant_files_numa_maps(struct tenant_reader *tr, const struct tenant_proc *p, struct numa_maps **ret);
int tenant_files_maps(struct tenant_reader *tr, const struct tenant_proc *p, struct vma_range **ret, size_t *ret_n);
int tenant_files_smaps_locked(struct tenant_reader *tr, const struct tenant_proc *p, uint64_t **ret, size_t *ret_n);
/* task_sampler_code() through the reader: up to INSN_CODE_LEN bytes before ip. */
int tenant_files_code(struct tenant_reader *tr, const struct tenant_proc *p, uint64_t ip, uint8_t code[INSN_CODE_LEN]);
