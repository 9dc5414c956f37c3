/* SPDX-License-Identifier: GPL-2.0-or-later */
/* SipHash-2-4, after the reference implementation (https://github.com/veorq/SipHash),
 * checked against its test vectors in tests/unit/test-siphash.c. */
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "siphash.h"

static uint64_t rotl(uint64_t x, unsigned b) {
        return (x << b) | (x >> (64 - b));
}

/* Little-endian load of n (at most 8) bytes. */
static uint64_t load_le(const uint8_t *p, size_t n) {
        uint64_t v = 0;
        for (size_t i = 0; i < n; i++)
                v |= (uint64_t) p[i] << (8 * i);
        return v;
}

#define SIPROUND                                                        \
        do {                                                            \
                v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32); \
                v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;                  \
                v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;                  \
                v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32); \
        } while (0)

uint64_t siphash24(const void *data, size_t len, const uint8_t key[static SIPHASH_KEY_SIZE]) {
        const uint8_t *in = data;
        uint64_t k0 = load_le(key, 8), k1 = load_le(key + 8, 8);
        uint64_t v0 = k0 ^ UINT64_C(0x736f6d6570736575), v1 = k1 ^ UINT64_C(0x646f72616e646f6d);
        uint64_t v2 = k0 ^ UINT64_C(0x6c7967656e657261), v3 = k1 ^ UINT64_C(0x7465646279746573);
        uint64_t m, b = (uint64_t) len << 56;
        size_t i;

        for (i = 0; i + 8 <= len; i += 8) {
                m = load_le(in + i, 8);
                v3 ^= m;
                SIPROUND;
                SIPROUND;
                v0 ^= m;
        }
        b |= load_le(in + i, len - i);
        v3 ^= b;
        SIPROUND;
        SIPROUND;
        v0 ^= b;
        v2 ^= 0xff;
        SIPROUND;
        SIPROUND;
        SIPROUND;
        SIPROUND;
        return v0 ^ v1 ^ v2 ^ v3;
}

void siphash_random_key(uint8_t key[static SIPHASH_KEY_SIZE]) {
        struct timespec a, b;
        uint64_t mix[2];

        if (getrandom(key, SIPHASH_KEY_SIZE, GRND_NONBLOCK) == SIPHASH_KEY_SIZE)
                return;
        a = clock_now_ts(CLOCK_MONOTONIC);
        b = clock_now_ts(CLOCK_REALTIME);
        mix[0] = (uint64_t) a.tv_nsec ^ ((uint64_t) b.tv_nsec << 32) ^ (uint64_t) getpid();
        mix[1] = (uint64_t) b.tv_sec ^ ((uint64_t) a.tv_sec << 20) ^ (uint64_t) (uintptr_t) &a;
        memcpy(key, mix, SIPHASH_KEY_SIZE);
}
