/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The data address of the instruction that ended at a sampled IP (insn-decoder.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "insn-decoder.h"

#include "build-config.h"
#if defined(__x86_64__) && HAVE_CAPSTONE
#include <capstone/capstone.h>

/* A register operand: perf's index, and whether only its low 32 bits count. */
struct reg_ref {
        int8_t idx;                /* -1: none */
        bool low32;
};

/* How to compute the address of a decoded instruction; usable false: it has none. */
struct operand {
        bool usable;
        bool rip;                  /* RIP-relative: the address is the IP after it + disp */
        struct reg_ref base, index;
        int8_t scale;
        int64_t disp;
};

struct entry {
        uint64_t space;            /* the address space ip is in (insn_decoder_addr) */
        uint64_t ip;               /* 0: empty */
        uint8_t len;               /* bytes of code compared on a hit */
        uint8_t code[INSN_CODE_LEN];
        bool certain;              /* chosen because it starts at a known boundary */
        uint64_t boundary_gen;     /* the boundaries known when an uncertain choice was made */
        struct operand op;
};

struct insn_decoder {
        csh cs;                    /* with operand details: the chosen instruction */
        csh sweep;                 /* without: the sweeps that choose it */
        struct entry cache[INSN_CACHE_SIZE];
        struct boundary {
                uint64_t space, ip;
        } boundaries[INSN_CACHE_SIZE];         /* IPs sampled: instruction starts for certain */
        uint64_t boundary_gen;
        struct insn_decoder_stats stats;
};

/* What is learnt of an IP (its instruction, that an instruction starts there) holds
 * in its address space only: one process's code says nothing of another's at the same
 * address, and a tenant's samples must not steer how another process's are decoded. */
static size_t slot(uint64_t space, uint64_t ip) {
        /* Fibonacci hashing: neighbouring IPs land far apart. */
        return (size_t) (((ip ^ space * UINT64_C(0x9e3779b97f4a7c15)) * UINT64_C(11400714819323198485)) >> 52) &
               (INSN_CACHE_SIZE - 1);
}

static void learn_boundary(struct insn_decoder *d, uint64_t space, uint64_t ip) {
        struct boundary *b = &d->boundaries[slot(space, ip)];

        if (b->ip != ip || b->space != space) {
                *b = (struct boundary) { space, ip };
                d->boundary_gen++;
        }
}

static bool is_boundary(const struct insn_decoder *d, uint64_t space, uint64_t ip) {
        const struct boundary *b = &d->boundaries[slot(space, ip)];

        return b->ip == ip && b->space == space;
}

/* Capstone's register to perf's index (any width of it). */
static struct reg_ref reg_of(x86_reg r) {
        static const struct { x86_reg r64, r32, r16, r8; int8_t idx; } regs[] = {
                { X86_REG_RAX, X86_REG_EAX, X86_REG_AX, X86_REG_AL, 0 },
                { X86_REG_RBX, X86_REG_EBX, X86_REG_BX, X86_REG_BL, 1 },
                { X86_REG_RCX, X86_REG_ECX, X86_REG_CX, X86_REG_CL, 2 },
                { X86_REG_RDX, X86_REG_EDX, X86_REG_DX, X86_REG_DL, 3 },
                { X86_REG_RSI, X86_REG_ESI, X86_REG_SI, X86_REG_SIL, 4 },
                { X86_REG_RDI, X86_REG_EDI, X86_REG_DI, X86_REG_DIL, 5 },
                { X86_REG_RBP, X86_REG_EBP, X86_REG_BP, X86_REG_BPL, 6 },
                { X86_REG_RSP, X86_REG_ESP, X86_REG_SP, X86_REG_SPL, 7 },
                { X86_REG_RIP, X86_REG_EIP, X86_REG_IP, X86_REG_INVALID, 8 },
                { X86_REG_R8, X86_REG_R8D, X86_REG_R8W, X86_REG_R8B, 16 },
                { X86_REG_R9, X86_REG_R9D, X86_REG_R9W, X86_REG_R9B, 17 },
                { X86_REG_R10, X86_REG_R10D, X86_REG_R10W, X86_REG_R10B, 18 },
                { X86_REG_R11, X86_REG_R11D, X86_REG_R11W, X86_REG_R11B, 19 },
                { X86_REG_R12, X86_REG_R12D, X86_REG_R12W, X86_REG_R12B, 20 },
                { X86_REG_R13, X86_REG_R13D, X86_REG_R13W, X86_REG_R13B, 21 },
                { X86_REG_R14, X86_REG_R14D, X86_REG_R14W, X86_REG_R14B, 22 },
                { X86_REG_R15, X86_REG_R15D, X86_REG_R15W, X86_REG_R15B, 23 },
        };

        if (r == X86_REG_INVALID)
                return (struct reg_ref) { -1, false };
        if (r == X86_REG_AH || r == X86_REG_BH || r == X86_REG_CH || r == X86_REG_DH)
                return (struct reg_ref) { (int8_t) (r == X86_REG_AH ? 0 : r == X86_REG_BH ? 1 : r == X86_REG_CH ? 2 : 3),
                                          false };
        for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
                if (r == regs[i].r64 || r == regs[i].r16 || r == regs[i].r8)
                        return (struct reg_ref) { regs[i].idx, false };
                if (r == regs[i].r32)
                        return (struct reg_ref) { regs[i].idx, true };
        }
        /* Anything else (a vector register for a gather's index, a segment): unknown. */
        return (struct reg_ref) { -2, false };
}

/* The memory operand of insn, and whether the registers after it still give its
 * address. */
static struct operand operand_of(csh cs, const cs_insn *insn) {
        const cs_x86 *x = &insn->detail->x86;
        const x86_op_mem *mem = NULL;
        struct operand op = {};
        cs_regs rd, wr;
        uint8_t n_rd = 0, n_wr = 0;

        /* LEA computes an address without touching it; NOPs with operands touch nothing;
         * prefetches and cache-line flushes take any address, mapped or not, without
         * faulting: a process could make its samples name pages it never uses. */
        switch (insn->id) {
        case X86_INS_LEA: case X86_INS_NOP:
        case X86_INS_PREFETCH: case X86_INS_PREFETCHNTA: case X86_INS_PREFETCHT0: case X86_INS_PREFETCHT1:
        case X86_INS_PREFETCHT2: case X86_INS_PREFETCHW:
        case X86_INS_CLFLUSH: case X86_INS_CLFLUSHOPT: case X86_INS_CLWB:
                return op;
        default:
                break;
        }
        for (uint8_t i = 0; i < x->op_count; i++) {
                if (x->operands[i].type != X86_OP_MEM)
                        continue;
                if (mem)
                        return op;         /* two memory operands (string moves): which one? */
                mem = &x->operands[i].mem;
        }
        if (!mem || mem->segment == X86_REG_FS || mem->segment == X86_REG_GS)
                return op;                 /* none, or a segment base the sample does not carry */
        op.base = reg_of(mem->base);
        op.index = reg_of(mem->index);
        if (op.base.idx == -2 || op.index.idx == -2)
                return op;
        op.rip = op.base.idx == 8;
        op.scale = (int8_t) mem->scale;
        op.disp = mem->disp;
        if (cs_regs_access(cs, insn, rd, &n_rd, wr, &n_wr) != CS_ERR_OK)
                return op;
        for (uint8_t i = 0; i < n_wr; i++) {
                struct reg_ref w = reg_of(wr[i]);
                if ((w.idx >= 0 && w.idx != 8 && (w.idx == op.base.idx || w.idx == op.index.idx)))
                        return op;         /* it overwrote its own address register */
        }
        op.usable = true;
        return op;
}

/* Votes for where the instruction that ended at ip starts: x86 code decoded from a
 * wrong start falls back into step with the real instruction stream within a few
 * instructions, so a linear sweep from each byte of the context that ends an
 * instruction exactly at ip votes for that instruction's length (votes[k], k <= 15).
 * Sweeps from the last bytes are the single candidates themselves, one vote each; the
 * real start also gets the votes of the sweeps that began further back. Sweeps that
 * meet go on the same way, so each byte's outcome is computed once, from the end:
 * last[pos] is the length of the instruction a sweep from pos ends at ip with, 0 when
 * it runs into bytes that are no instruction or steps over ip. One decode per byte. */
static void vote(struct insn_decoder *d, uint64_t ip, const uint8_t *code, size_t len,
                 unsigned votes[INSN_MAX_LEN + 1]) {
        uint8_t last[INSN_CODE_LEN + 1] = {};
        cs_insn *insn = cs_malloc(d->sweep);

        if (!insn)
                return;
        for (size_t pos = len; pos-- > 0;) {
                const uint8_t *p = code + pos;
                size_t left = len - pos;
                uint64_t at = ip - left;

                if (!cs_disasm_iter(d->sweep, &p, &left, &at, insn))
                        continue;
                last[pos] = left == 0 ? (uint8_t) insn->size : last[len - left];
                if (last[pos] >= 1 && last[pos] <= INSN_MAX_LEN)
                        votes[last[pos]]++;
        }
        cs_free(insn, 1);
}

/* The instruction that ended at ip: one starting at a sampled IP (a boundary for
 * certain), else the one most sweeps agree on (the longer on a tie); certain too when
 * it won at least 4 votes and twice the runner-up's, so it is not decoded again. */
static bool decode(struct insn_decoder *d, uint64_t space, uint64_t ip, const uint8_t *code, size_t len,
                   struct entry *e) {
        unsigned votes[INSN_MAX_LEN + 1] = {}, best_votes = 0, second = 0;
        size_t best = 0;
        bool certain = false;
        struct operand op = {};

        vote(d, ip, code, len, votes);
        for (size_t k = 1; k <= INSN_MAX_LEN && k <= len && !certain; k++) {
                if (!votes[k])
                        continue;
                if (is_boundary(d, space, ip - k)) {
                        best = k;
                        certain = true;
                } else if (votes[k] >= best_votes) {
                        second = best_votes;
                        best_votes = votes[k];
                        best = k;
                } else if (votes[k] > second)
                        second = votes[k];
        }
        if (!certain && best_votes >= 4 && best_votes >= 2 * second)
                certain = true;
        if (best) {
                cs_insn *insn = NULL;
                size_t n = cs_disasm(d->cs, code + len - best, best, ip - best, 1, &insn);
                if (n == 1 && insn->size == best)
                        op = operand_of(d->cs, insn);
                if (n)
                        cs_free(insn, n);
        }
        *e = (struct entry) { .space = space, .ip = ip, .len = (uint8_t) len, .certain = certain, .boundary_gen = d->boundary_gen,
                              .op = op };
        memcpy(e->code, code, len);
        return best != 0;
}

static uint64_t reg_value(const uint64_t *regs, struct reg_ref r) {
        if (r.idx < 0)
                return 0;
        return r.low32 ? (uint32_t) regs[r.idx] : regs[r.idx];
}

int insn_decoder_addr(struct insn_decoder *d, uint64_t space, uint64_t ip, const uint8_t *code, size_t len,
                      const uint64_t regs[INSN_REGS], uint64_t *ret_addr) {
        struct entry *e;

        if (!d || !code || len == 0 || len > INSN_CODE_LEN || ip < len || !regs || !ret_addr)
                return -EINVAL;
        d->stats.lookups++;
        learn_boundary(d, space, ip);
        e = &d->cache[slot(space, ip)];
        if (e->space == space && e->ip == ip && e->len == len && memcmp(e->code, code, len) == 0 &&
            (e->certain || e->boundary_gen == d->boundary_gen))
                d->stats.hits++;
        else {
                decode(d, space, ip, code, len, e);
                d->stats.decoded++;
        }
        if (!e->op.usable)
                return -ENOENT;
        *ret_addr = (e->op.rip ? ip : reg_value(regs, e->op.base)) + reg_value(regs, e->op.index) * (uint64_t) e->op.scale +
                    (uint64_t) e->op.disp;
        d->stats.addresses++;
        return 0;
}

int insn_decoder_new(struct insn_decoder **ret) {
        struct insn_decoder *d = calloc(1, sizeof(*d));

        if (!d)
                return -ENOMEM;
        if (cs_open(CS_ARCH_X86, CS_MODE_64, &d->cs) != CS_ERR_OK) {
                free(d);
                return -EOPNOTSUPP;
        }
        if (cs_open(CS_ARCH_X86, CS_MODE_64, &d->sweep) != CS_ERR_OK) {
                cs_close(&d->cs);
                free(d);
                return -EOPNOTSUPP;
        }
        cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_ON);
        *ret = d;
        return 0;
}

void insn_decoder_free(struct insn_decoder *d) {
        if (!d)
                return;
        cs_close(&d->cs);
        cs_close(&d->sweep);
        free(d);
}

void insn_decoder_stats(const struct insn_decoder *d, struct insn_decoder_stats *ret) {
        *ret = d->stats;
}

#else

int insn_decoder_new(struct insn_decoder **ret) {
        (void) ret;
        return -EOPNOTSUPP;
}

void insn_decoder_free(struct insn_decoder *d) {
        (void) d;
}

int insn_decoder_addr(struct insn_decoder *d, uint64_t space, uint64_t ip, const uint8_t *code, size_t len,
                      const uint64_t regs[INSN_REGS], uint64_t *ret_addr) {
        (void) d, (void) space, (void) ip, (void) code, (void) len, (void) regs, (void) ret_addr;
        return -EOPNOTSUPP;
}

void insn_decoder_stats(const struct insn_decoder *d, struct insn_decoder_stats *ret) {
        (void) d;
        memset(ret, 0, sizeof(*ret));
}

#endif
