/* SPDX-License-Identifier: GPL-2.0-or-later */
/* SipHash-2-4 against the reference test vectors (key 00..0f, message 00..len-1). */
#include <string.h>
#include "cleanup.h"
#include "siphash.h"
#include "test.h"

/* vectors.h of the reference implementation, as little-endian 64-bit numbers. */
static const uint64_t want[] = {
        [0] = UINT64_C(0x726fdb47dd0e0e31),
        [1] = UINT64_C(0x74f839c593dc67fd),
        [7] = UINT64_C(0xab0200f58b01d137),
        [8] = UINT64_C(0x93f5f5799a932462),
        [15] = UINT64_C(0xa129ca6149be45e5),
        [63] = UINT64_C(0x958a324ceb064572),
};

TEST(reference_vectors) {
        uint8_t key[SIPHASH_KEY_SIZE], msg[64];

        for (unsigned i = 0; i < sizeof(key); i++)
                key[i] = (uint8_t) i;
        for (unsigned i = 0; i < sizeof(msg); i++)
                msg[i] = (uint8_t) i;
        for (size_t len = 0; len < ELEMENTSOF(want); len++)
                if (want[len])
                        CHECK_INT(siphash24(msg, len, key), want[len]);
}

/* Two random keys differ, and so do the hashes they give one path. */
TEST(random_keys_differ) {
        uint8_t a[SIPHASH_KEY_SIZE], b[SIPHASH_KEY_SIZE];
        static const char path[] = "/user.slice/user-1000.slice/a";

        siphash_random_key(a);
        siphash_random_key(b);
        CHECK(memcmp(a, b, sizeof(a)) != 0);
        CHECK(siphash24(path, strlen(path), a) != siphash24(path, strlen(path), b));
}

DEFINE_TEST_MAIN()
