/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The instruction decoder's wrapper (lib/insn-decoder) on arbitrary bytes: the code it
 * decodes is another process's memory. Input: 8 bytes of IP, then up to INSN_CODE_LEN
 * bytes of code ending at it; the registers are a pattern of the IP. Checked besides
 * memory safety: the result is an address or -ENOENT, and the same lookup again (a
 * cache hit) gives the same answer. Without a decoder in the build, it checks that
 * every call says so. */
#include <errno.h>
#include <string.h>
#include "fuzz.h"
#include "insn-decoder.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static struct insn_decoder *d;
        static int state;          /* 0: not made yet, 1: made, -1: none in this build */
        uint64_t ip, regs[INSN_REGS], a = 0, b = 0;
        size_t len;
        int r, again;

        if (state == 0)
                state = insn_decoder_new(&d) == 0 ? 1 : -1;
        if (size < 9)
                return 0;
        memcpy(&ip, data, 8);
        ip |= 0x1000;              /* at least INSN_CODE_LEN */
        len = size - 8 > INSN_CODE_LEN ? INSN_CODE_LEN : size - 8;
        for (unsigned i = 0; i < INSN_REGS; i++)
                regs[i] = ip * (i + 1);
        if (state < 0) {
                FUZZ_ASSERT(insn_decoder_addr(d, 0, ip, data + 8, len, regs, &a) == -EOPNOTSUPP);
                return 0;
        }
        r = insn_decoder_addr(d, 0, ip, data + 8, len, regs, &a);
        FUZZ_ASSERT(r == 0 || r == -ENOENT);
        again = insn_decoder_addr(d, 0, ip, data + 8, len, regs, &b);
        FUZZ_ASSERT(again == r && (r < 0 || a == b));
        return 0;
}
