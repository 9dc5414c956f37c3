/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The documentation against the code: every key of the config table (config_keys())
 * is described in numabalanced.conf(5), in its own section, with a "Range:" and a
 * "Default:" line, and is listed in the shipped conf/numabalanced.conf as
 * "#key = DEFAULT" in its section; the man page's default is the shipped file's
 * (test-config checks that the shipped defaults are the parser's), and the man page
 * describes no key the parser does not know. */
#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "parse.h"
#include "test.h"

#if !defined(CONF_FILE) || !defined(MAN_CONF_FILE)
#error "CONF_FILE (conf/numabalanced.conf) and MAN_CONF_FILE (man/numabalanced.conf.5) must be defined"
#endif

/* One line of roff text made plain: font escapes dropped, "\-" and "\&" resolved,
 * macro names (.B, .BR, ...) removed. */
static void plain(const char *line, size_t len, char *out, size_t size) {
        size_t o = 0, i = 0;

        if (len && line[0] == '.') {
                while (i < len && !isspace((unsigned char) line[i]))
                        i++;
                while (i < len && isspace((unsigned char) line[i]))
                        i++;
        }
        for (; i < len && o + 1 < size; i++) {
                if (line[i] == '\\' && i + 1 < len) {
                        char c = line[i + 1];
                        if (c == 'f' && i + 2 < len) {          /* \fB \fR \fI \fP */
                                i += 2;
                                continue;
                        }
                        if (c == '-') {
                                out[o++] = '-';
                                i++;
                                continue;
                        }
                        if (c == '&') {
                                i++;
                                continue;
                        }
                }
                if (line[i] == '"')
                        continue;
                out[o++] = line[i];
        }
        out[o] = 0;
}

/* The shipped file's default for section.key: the value of "#key = VALUE" in
 * [section], trimmed; NULL when there is no such line. */
static char *conf_default(const char *text, const char *section, const char *key) {
        char header[64], setting[80];
        const char *sec, *next, *at, *v, *end;

        snprintf(header, sizeof(header), "\n[%s]\n", section);
        snprintf(setting, sizeof(setting), "\n#%s =", key);
        sec = strstr(text, header);
        if (!sec)
                return NULL;
        next = strstr(sec + 1, "\n[");
        at = strstr(sec, setting);
        if (!at || (next && at > next))
                return NULL;
        v = at + strlen(setting);
        while (*v == ' ' || *v == '\t')
                v++;
        end = strchr(v, '\n');
        if (!end)
                end = v + strlen(v);
        while (end > v && isspace((unsigned char) end[-1]))
                end--;
        return strndup(v, (size_t) (end - v));
}

struct man_key {
        char section[32], key[64];
        bool has_range;
        char def[256];      /* "" until a Default: line is seen */
        bool has_def;
};

/* Reads the keys of the man page: under OPTIONS, each .SS "[section]" starts a
 * section and each ".TP" followed by ".B key" a key, until the next .SS or .SH. */
static size_t man_keys(const char *text, struct man_key *keys, size_t max) {
        char section[32] = "", buf[512];
        bool in_options = false, after_tp = false;
        struct man_key *cur = NULL;
        size_t n = 0;

        for (const char *p = text; *p;) {
                const char *eol = strchr(p, '\n');
                size_t len = eol ? (size_t) (eol - p) : strlen(p);

                if (len >= 3 && strncmp(p, ".SH", 3) == 0) {
                        plain(p, len, buf, sizeof(buf));
                        in_options = strcmp(buf, "OPTIONS") == 0;
                        section[0] = 0;
                        cur = NULL;
                } else if (in_options && len >= 3 && strncmp(p, ".SS", 3) == 0) {
                        plain(p, len, buf, sizeof(buf));
                        if (buf[0] == '[' && buf[strlen(buf) - 1] == ']')
                                snprintf(section, sizeof(section), "%.*s", (int) strlen(buf) - 2, buf + 1);
                        else {
                                fprintf(stderr, "%s: subsection \"%s\" is not [section]\n", MAN_CONF_FILE, buf);
                                test_failures++;
                        }
                        cur = NULL;
                } else if (in_options && len == 3 && strncmp(p, ".TP", 3) == 0) {
                        after_tp = true;
                        p = eol ? eol + 1 : p + len;
                        continue;
                } else if (in_options && after_tp && section[0] && len > 3 && strncmp(p, ".B ", 3) == 0 && n < max) {
                        cur = &keys[n++];
                        *cur = (struct man_key) {};
                        snprintf(cur->section, sizeof(cur->section), "%s", section);
                        plain(p, len, cur->key, sizeof(cur->key));
                } else if (cur) {
                        plain(p, len, buf, sizeof(buf));
                        if (strncmp(buf, "Range:", 6) == 0)
                                cur->has_range = true;
                        if (strncmp(buf, "Default:", 8) == 0) {
                                const char *v = buf + 8;
                                size_t l;
                                while (*v == ' ')
                                        v++;
                                l = strlen(v);
                                if (l && v[l - 1] == '.')   /* the sentence's full stop */
                                        l--;
                                snprintf(cur->def, sizeof(cur->def), "%.*s", (int) l, v);
                                cur->has_def = true;
                        }
                }
                after_tp = false;
                p = eol ? eol + 1 : p + len;
        }
        return n;
}

static void test_docs(void) {
        _cleanup_free_ char *conf = NULL, *man = NULL;
        const char *const *keys = config_keys();
        struct man_key mk[128];
        size_t n_man, n_keys = 0;

        CHECK_INT(read_file_at(AT_FDCWD, CONF_FILE, 1 << 20, &conf, NULL), 0);
        CHECK_INT(read_file_at(AT_FDCWD, MAN_CONF_FILE, 1 << 20, &man, NULL), 0);
        if (!conf || !man)
                return;
        n_man = man_keys(man, mk, ELEMENTSOF(mk));

        for (; keys[n_keys]; n_keys++) {
                const char *k = keys[n_keys], *dot = strchr(k, '.');
                char section[32];
                _cleanup_free_ char *def = NULL;
                const struct man_key *m = NULL;

                CHECK(dot != NULL);
                if (!dot)
                        continue;
                snprintf(section, sizeof(section), "%.*s", (int) (dot - k), k);
                def = conf_default(conf, section, dot + 1);
                if (!def) {
                        fprintf(stderr, "%s: \"#%s = DEFAULT\" not found in [%s]\n", CONF_FILE, dot + 1, section);
                        test_failures++;
                }
                for (size_t i = 0; i < n_man; i++)
                        if (strcmp(mk[i].section, section) == 0 && strcmp(mk[i].key, dot + 1) == 0)
                                m = &mk[i];
                if (!m) {
                        fprintf(stderr, "%s: key %s not described in section [%s]\n", MAN_CONF_FILE, dot + 1, section);
                        test_failures++;
                        continue;
                }
                if (!m->has_range) {
                        fprintf(stderr, "%s: [%s] %s has no \"Range:\" line\n", MAN_CONF_FILE, section, dot + 1);
                        test_failures++;
                }
                if (!m->has_def) {
                        fprintf(stderr, "%s: [%s] %s has no \"Default:\" line\n", MAN_CONF_FILE, section, dot + 1);
                        test_failures++;
                } else if (def) {
                        /* An empty default is written "empty" in the man page. */
                        const char *want = def[0] ? def : "empty";
                        if (strcmp(m->def, want) != 0) {
                                fprintf(stderr, "%s: [%s] %s: default \"%s\", but %s has \"%s\"\n", MAN_CONF_FILE,
                                        section, dot + 1, m->def, CONF_FILE, def);
                                test_failures++;
                        }
                }
        }

        /* Nothing described that the parser does not know (a renamed or removed key). */
        for (size_t i = 0; i < n_man; i++) {
                bool known = false;
                for (size_t j = 0; keys[j]; j++) {
                        const char *dot = strchr(keys[j], '.');
                        if (dot && strlen(mk[i].section) == (size_t) (dot - keys[j]) &&
                            strncmp(keys[j], mk[i].section, (size_t) (dot - keys[j])) == 0 &&
                            strcmp(dot + 1, mk[i].key) == 0)
                                known = true;
                }
                if (!known) {
                        fprintf(stderr, "%s: [%s] %s is not a key the parser knows\n", MAN_CONF_FILE,
                                mk[i].section, mk[i].key);
                        test_failures++;
                }
        }
        CHECK_INT(n_man, n_keys);
        CHECK(n_keys > 0);
}

int main(void) {
        test_docs();
        TEST_MAIN_END();
}
