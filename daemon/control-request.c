// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "control-request.h"
#include "parse.h"

int control_parse_request(const char *buf, size_t len, struct control_request *ret, const char **ret_error) {
        char line[CONTROL_REQUEST_MAX + 1];
        uint64_t pid;

        if (len && buf[len - 1] == '\r')
                len--;
        if (len == 0) {
                *ret_error = CONTROL_ERROR_EMPTY;
                return -EINVAL;
        }
        if (len > CONTROL_REQUEST_MAX - 1) {
                *ret_error = CONTROL_ERROR_TOO_LONG;
                return -EINVAL;
        }
        for (size_t i = 0; i < len; i++)
                if ((unsigned char) buf[i] < 0x20 || (unsigned char) buf[i] >= 0x7f) {
                        *ret_error = "request contains a control or non-ASCII byte";
                        return -EINVAL;
                }
        memcpy(line, buf, len);
        line[len] = 0;

        if (strcmp(line, "status") == 0) {
                *ret = (struct control_request) { .cmd = CONTROL_STATUS };
                return 0;
        }
        if (strcmp(line, "list") == 0) {
                *ret = (struct control_request) { .cmd = CONTROL_LIST };
                return 0;
        }
        if (strcmp(line, "explain") == 0) {
                *ret_error = "explain needs a PID";
                return -EINVAL;
        }
        if (strncmp(line, "explain ", 8) == 0) {
                if (parse_u64(line + 8, 1, INT32_MAX, &pid) < 0) {
                        *ret_error = "explain: not a valid PID (a decimal number from 1)";
                        return -EINVAL;
                }
                *ret = (struct control_request) { .cmd = CONTROL_EXPLAIN, .pid = (pid_t) pid };
                return 0;
        }
        *ret_error = "unknown command (accepted: status, list, explain PID)";
        return -EINVAL;
}
