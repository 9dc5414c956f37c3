/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A tenant's files and code through the tenant reader (tenant-files.h): one call
 * struct per kind of read, holding its inputs and outputs, released by whoever holds
 * it last (the caller, or the reader thread when the read overran). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "proc.h"
#include "smaps.h"
#include "task-sampler.h"
#include "tenant-files.h"

/* The inputs are copied: a call that overruns outlives its caller's strings. */
struct file_call {
        struct tenant_call call;
        char *proc_root;
        pid_t pid;
        uint64_t ip;
        int (*read)(struct file_call *f);
        /* Outputs: */
        struct numa_maps *maps;
        void *array;            /* struct vma_range[] or uint64_t[] */
        size_t n;
        uint8_t code[INSN_CODE_LEN];
};

static int run_file_call(struct tenant_call *c) {
        struct file_call *f = (struct file_call *) c;

        return f->read(f);
}

static void release_file_call(struct tenant_call *c) {
        struct file_call *f = (struct file_call *) c;

        numa_maps_free(f->maps);
        free(f->array);
        free(f->proc_root);
        free(f);
}

static struct file_call *file_call_new(const struct tenant_proc *p, int (*read)(struct file_call *f)) {
        struct file_call *f = calloc(1, sizeof(*f));

        if (!f)
                return NULL;
        f->proc_root = strdup(p->proc_root);
        if (!f->proc_root) {
                free(f);
                return NULL;
        }
        f->pid = p->pid;
        f->read = read;
        f->call.run = run_file_call;
        f->call.release = release_file_call;
        f->call.owner = p->owner;
        f->call.deadline_ms = p->deadline_ms;
        return f;
}

/* Runs f and, unless the reader took it (an overrun), releases it. */
static int call(struct tenant_reader *tr, struct file_call *f, void (*take)(struct file_call *f, void *ret), void *ret) {
        int r = tenant_reader_call(tr, &f->call);

        if (r == -ETIMEDOUT)
                return r;
        if (r >= 0 && take)
                take(f, ret);
        release_file_call(&f->call);
        return r;
}

static int read_numa_maps(struct file_call *f) {
        return numa_maps_read(f->proc_root, f->pid, &f->maps);
}

static void take_numa_maps(struct file_call *f, void *ret) {
        *(struct numa_maps **) ret = TAKE_PTR(f->maps);
}

int tenant_files_numa_maps(struct tenant_reader *tr, const struct tenant_proc *p, struct numa_maps **ret) {
        struct file_call *f = file_call_new(p, read_numa_maps);

        return f ? call(tr, f, take_numa_maps, ret) : -ENOMEM;
}

static int read_maps(struct file_call *f) {
        struct vma_range *r = NULL;
        int e = maps_read(f->proc_root, f->pid, &r, &f->n);

        f->array = r;
        return e;
}

static int read_smaps_locked(struct file_call *f) {
        uint64_t *r = NULL;
        int e = smaps_read_locked(f->proc_root, f->pid, &r, &f->n);

        f->array = r;
        return e;
}

struct array_ret {
        void **array;
        size_t *n;
};

static void take_array(struct file_call *f, void *ret) {
        struct array_ret *a = ret;

        *a->array = TAKE_PTR(f->array);
        *a->n = f->n;
}

int tenant_files_maps(struct tenant_reader *tr, const struct tenant_proc *p, struct vma_range **ret, size_t *ret_n) {
        struct file_call *f = file_call_new(p, read_maps);
        struct array_ret a = { (void **) ret, ret_n };

        return f ? call(tr, f, take_array, &a) : -ENOMEM;
}

int tenant_files_smaps_locked(struct tenant_reader *tr, const struct tenant_proc *p, uint64_t **ret, size_t *ret_n) {
        struct file_call *f = file_call_new(p, read_smaps_locked);
        struct array_ret a = { (void **) ret, ret_n };

        return f ? call(tr, f, take_array, &a) : -ENOMEM;
}

static int read_code(struct file_call *f) {
        return task_sampler_code(f->pid, f->ip, f->code);
}

struct code_ret {
        uint8_t *code;
};

static void take_code(struct file_call *f, void *ret) {
        memcpy(((struct code_ret *) ret)->code, f->code, INSN_CODE_LEN);
}

int tenant_files_code(struct tenant_reader *tr, const struct tenant_proc *p, uint64_t ip, uint8_t code[INSN_CODE_LEN]) {
        struct file_call *f = file_call_new(p, read_code);
        struct code_ret c = { code };

        if (!f)
                return -ENOMEM;
        f->ip = ip;
        return call(tr, f, take_code, &c);
}
