/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The data address an instruction accessed, from the instruction pointer and the user
 * registers of a timer sample (software page-level sampling, without a PMU).
 *
 * A task-clock sample interrupts a thread between two instructions: its IP is the next
 * one to run, and the instruction that ends at that IP is the last one that did (the
 * one a load stalled is the likeliest to be interrupted after). That instruction's
 * bytes are decoded (Capstone); when it has one memory operand whose address registers
 * it did not itself overwrite, the address is base + index * scale + displacement from
 * the registers the sample carries (RIP-relative: the sampled IP plus displacement).
 * x86-64 only.
 *
 * x86 cannot be decoded backwards without ambiguity: the bytes before IP may end with
 * several instructions of different lengths ("00 00", the end of many instructions, is
 * itself an add to memory). The decoder reads INSN_CODE_LEN bytes before IP and sweeps
 * forward from each of them: code decoded from a wrong start soon falls into step with
 * the real instruction stream, so the start most sweeps end an instruction at IP from
 * is the real one. A start that is an IP seen in an earlier sample (an instruction
 * boundary for certain) wins over the vote. The bytes decoded are another process's
 * memory: they are only ever handed to the decoder, and every result is an address
 * that the caller still has to find in one of the process's VMAs. A decoded instruction is
 * cached per IP with its bytes, compared on every hit: code that changed (a JIT) is
 * decoded again, never attributed by a stale entry. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The x86-64 user registers of a sample, indexed as perf's PERF_REG_X86_* (AX..DI, BP,
 * SP, IP, FLAGS, CS, SS, then R8..R15 at 16..23; DS..GS, 12..15, are not sampled). */
#define INSN_REGS 24
/* perf_event_attr.sample_regs_user for them. */
#define INSN_REGS_MASK (((UINT64_C(1) << INSN_REGS) - 1) & ~(UINT64_C(0xf) << 12))
/* The longest x86 instruction. */
#define INSN_MAX_LEN 15
/* Bytes read before the IP: the instruction and the context its start is found from.
 * With the 15 bytes of one instruction alone the longest candidate was a guess, and
 * wrong for `div %rsi; add (%rdi,%rdx,8),%r12` (it decoded an address from %rbx). */
#define INSN_CODE_LEN 48
/* Cached instructions: a direct-mapped table of this many entries (bounded memory,
 * whatever the samples; a collision decodes again). */
#define INSN_CACHE_SIZE 4096

struct insn_decoder;

/* -EOPNOTSUPP when this build has no decoder (not x86-64, or built without Capstone). */
int insn_decoder_new(struct insn_decoder **ret);
void insn_decoder_free(struct insn_decoder *d);

/* code holds the len bytes just before ip (len <= INSN_CODE_LEN; fewer when the page
 * before is not mapped). Returns 0 with the address in *ret_addr; -ENOENT when the
 * instruction that ended at ip has no memory operand the registers give (none, an
 * LEA, a segment base such as TLS, two memory operands, an address register it wrote
 * itself, bytes that are no instruction); -EINVAL for bad arguments. space names the
 * address space ip is in (the process's pid): what is learnt of an IP in one is never
 * used for another. */
int insn_decoder_addr(struct insn_decoder *d, uint64_t space, uint64_t ip, const uint8_t *code, size_t len,
                      const uint64_t regs[INSN_REGS], uint64_t *ret_addr);

/* What the decoder did so far: lookups, cache hits, and lookups that gave an address. */
struct insn_decoder_stats {
        uint64_t lookups, hits, decoded, addresses;
};
void insn_decoder_stats(const struct insn_decoder *d, struct insn_decoder_stats *ret);
