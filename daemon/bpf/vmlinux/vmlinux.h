/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pinned vmlinux.h (-Dvmlinux_h=tree, the default): only the kernel types the BPF
 * programs in daemon/bpf use, written by hand from the kernel's UAPI and BTF. Fields of
 * kernel-internal structs are marked preserve_access_index, so their offsets are
 * CO-RE relocations resolved by libbpf against the running kernel's BTF at load: the
 * layout written here does not have to match any kernel. UAPI types (the BPF enums,
 * bpf_perf_event_data) are stable ABI and used as is.
 *
 * -Dvmlinux_h=generate dumps the build machine's /sys/kernel/btf/vmlinux instead
 * (bpftool btf dump file ... format c); the programs compile against either. Add a
 * type here when a program needs one. */
#ifndef __VMLINUX_H__
#define __VMLINUX_H__

typedef signed char __s8;
typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
enum { false = 0, true = 1 };
typedef int pid_t;

/* include/uapi/linux/bpf.h */
enum bpf_map_type {
        BPF_MAP_TYPE_UNSPEC = 0,
        BPF_MAP_TYPE_HASH = 1,
        BPF_MAP_TYPE_ARRAY = 2,
        BPF_MAP_TYPE_PROG_ARRAY = 3,
        BPF_MAP_TYPE_PERF_EVENT_ARRAY = 4,
        BPF_MAP_TYPE_PERCPU_HASH = 5,
        BPF_MAP_TYPE_PERCPU_ARRAY = 6,
        BPF_MAP_TYPE_LRU_HASH = 9,
        BPF_MAP_TYPE_LRU_PERCPU_HASH = 10,
        BPF_MAP_TYPE_RINGBUF = 27,
};

enum {
        BPF_ANY = 0,
        BPF_NOEXIST = 1,
        BPF_EXIST = 2,
        BPF_F_LOCK = 4,
};

enum {
        BPF_F_NO_PREALLOC = 1,
};

#pragma clang attribute push (__attribute__((preserve_access_index)), apply_to = record)

/* include/linux/sched.h: only what we read. */
struct task_struct {
        pid_t pid;
        pid_t tgid;
};

#pragma clang attribute pop

/* include/uapi/linux/bpf_perf_event.h: a perf_event program's context. regs is the
 * architecture's bpf_user_pt_regs_t (only its size matters here). */
#if defined(__TARGET_ARCH_x86)
struct pt_regs {
        unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di,
                orig_ax, ip, cs, flags, sp, ss;
};
typedef struct pt_regs bpf_user_pt_regs_t;
#elif defined(__TARGET_ARCH_arm64)
struct user_pt_regs {
        __u64 regs[31];
        __u64 sp;
        __u64 pc;
        __u64 pstate;
};
typedef struct user_pt_regs bpf_user_pt_regs_t;
#else
#error "daemon/bpf/vmlinux/vmlinux.h: add this architecture's bpf_user_pt_regs_t, or build with -Dvmlinux_h=generate"
#endif

struct bpf_perf_event_data {
        bpf_user_pt_regs_t regs;
        __u64 sample_period;
        __u64 addr;
};

#endif /* __VMLINUX_H__ */
