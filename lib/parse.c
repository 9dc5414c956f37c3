/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "cleanup.h"
#include "parse.h"

int parse_u64_n(const char *s, size_t len, uint64_t min, uint64_t max, uint64_t *ret) {
        uint64_t v = 0;

        if (!s || len == 0)
                return -EINVAL;
        for (size_t i = 0; i < len; i++) {
                unsigned d;
                if (s[i] < '0' || s[i] > '9')
                        return -EINVAL;
                d = (unsigned) (s[i] - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        if (v < min || v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret) {
        if (!s)
                return -EINVAL;
        return parse_u64_n(s, strlen(s), min, max, ret);
}

int parse_int(const char *s, int min, int max, int *ret) {
        bool neg;
        uint64_t v;
        int r;

        if (!s)
                return -EINVAL;
        neg = s[0] == '-';
        r = parse_u64(s + neg, 0, (uint64_t) INT32_MAX + 1, &v);
        if (r < 0)
                return r;
        if (!neg && v > INT32_MAX)
                return -ERANGE;
        {
                int64_t sv = neg ? -(int64_t) v : (int64_t) v;
                if (sv < min || sv > max)
                        return -ERANGE;
                *ret = (int) sv;
        }
        return 0;
}

int parse_hex_u64_n(const char *s, size_t len, uint64_t *ret) {
        uint64_t v = 0;

        if (!s || len == 0 || len > 16)
                return len > 16 ? -ERANGE : -EINVAL;
        for (size_t i = 0; i < len; i++) {
                char c = s[i];
                unsigned d;
                if (c >= '0' && c <= '9')
                        d = (unsigned) (c - '0');
                else if (c >= 'a' && c <= 'f')
                        d = (unsigned) (c - 'a' + 10);
                else if (c >= 'A' && c <= 'F')
                        d = (unsigned) (c - 'A' + 10);
                else
                        return -EINVAL;
                v = (v << 4) | d;
        }
        *ret = v;
        return 0;
}

int parse_bool(const char *s, bool *ret) {
        static const char *const yes[] = { "1", "yes", "true", "on" };
        static const char *const no[] = { "0", "no", "false", "off" };

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                if (strcasecmp(s, yes[i]) == 0) {
                        *ret = true;
                        return 0;
                }
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                if (strcasecmp(s, no[i]) == 0) {
                        *ret = false;
                        return 0;
                }
        return -EINVAL;
}

int parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *ret) {
        size_t len;
        uint64_t mult = 1, v;
        int r;

        if (!s)
                return -EINVAL;
        len = strlen(s);
        if (len > 0) {
                switch (s[len - 1]) {
                case 'K': case 'k': mult = UINT64_C(1) << 10; break;
                case 'M': case 'm': mult = UINT64_C(1) << 20; break;
                case 'G': case 'g': mult = UINT64_C(1) << 30; break;
                case 'T': case 't': mult = UINT64_C(1) << 40; break;
                }
                if (mult != 1)
                        len--;
        }
        r = parse_u64_n(s, len, 0, UINT64_MAX, &v);
        if (r < 0)
                return r;
        if (v > UINT64_MAX / mult)
                return -ERANGE;
        v *= mult;
        if (v < min || v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

int parse_read_file_at(int dirfd, const char *path, size_t max_size, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = -1;

        fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        return parse_read_fd_all(fd, max_size, ret, ret_len);
}

int parse_read_fd_all(int fd, size_t max_size, char **ret, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, alloc = 0;

        for (;;) {
                ssize_t n;
                if (alloc - size < 4096) {
                        /* Start at 64 KiB: few read() calls, few mmap-lock round trips. */
                        size_t na = alloc ? alloc * 2 : 65536;
                        char *nb;
                        if (na > max_size + 1)
                                na = max_size + 1;
                        if (na <= size)
                                return -EFBIG;
                        nb = realloc(buf, na);
                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                        alloc = na;
                }
                n = read(fd, buf + size, alloc - size - 1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                size += (size_t) n;
                if (size >= max_size)
                        return -EFBIG;
        }
        buf[size] = 0;
        *ret = TAKE_PTR(buf);
        if (ret_len)
                *ret_len = size;
        return 0;
}
