/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Checked number parsing. Text from /proc, sysfs, xattrs and the config is
 * untrusted: every helper here rejects empty input, signs where none belong,
 * trailing junk and overflow, and never guesses. All return 0 or -EINVAL/-ERANGE
 * and leave *ret untouched on failure. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The whole string must be a decimal number in [min, max]. */
int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret);
int parse_int(const char *s, int min, int max, int *ret);
/* Like parse_u64 but the number is s[0..len) (not NUL-terminated). */
int parse_u64_n(const char *s, size_t len, uint64_t min, uint64_t max, uint64_t *ret);
/* Hexadecimal, no 0x prefix, whole string of length len. */
int parse_hex_u64_n(const char *s, size_t len, uint64_t *ret);
/* "yes/no/true/false/on/off/1/0". */
int parse_bool(const char *s, bool *ret);
/* A number with an optional unit suffix: K, M, G, T (powers of 1024), e.g. "512M". */
int parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *ret);

/* Reads a whole (proc/sys) file relative to dirfd (AT_FDCWD for absolute paths) into
 * a NUL-terminated buffer, using large reads (numa_maps takes the target's mmap lock
 * once per read()). Fails with -EFBIG beyond max_size. */
int parse_read_file_at(int dirfd, const char *path, size_t max_size, char **ret, size_t *ret_len);
/* The same from an open file, read from where it stands to its end (fd stays open). */
int parse_read_fd_all(int fd, size_t max_size, char **ret, size_t *ret_len);
