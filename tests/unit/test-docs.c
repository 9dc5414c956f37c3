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
                        else
                                TEST_FAIL("%s: subsection \"%s\" is not [section]", MAN_CONF_FILE, buf);
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

/* The two files, and the keys the man page describes. */
struct docs {
        char *conf, *man;
        struct man_key mk[128];
        size_t n_man;
};

static bool docs_load(struct docs *d) {
        *d = (struct docs) {};
        CHECK_INT(parse_read_file_at(AT_FDCWD, CONF_FILE, 1 << 20, &d->conf, NULL), 0);
        CHECK_INT(parse_read_file_at(AT_FDCWD, MAN_CONF_FILE, 1 << 20, &d->man, NULL), 0);
        if (!d->conf || !d->man)
                return false;
        d->n_man = man_keys(d->man, d->mk, ELEMENTSOF(d->mk));
        return true;
}

static void docs_done(struct docs *d) {
        free(d->conf);
        free(d->man);
}

/* "section.key" split: the section into buf, the key returned; NULL without a dot. */
static const char *split_key(const char *k, char *section, size_t size) {
        const char *dot = strchr(k, '.');

        CHECK(dot != NULL);
        if (!dot)
                return NULL;
        snprintf(section, size, "%.*s", (int) (dot - k), k);
        return dot + 1;
}

static const struct man_key *man_key(const struct docs *d, const char *section, const char *key) {
        const struct man_key *m = NULL;

        for (size_t i = 0; i < d->n_man; i++)
                if (strcmp(d->mk[i].section, section) == 0 && strcmp(d->mk[i].key, key) == 0)
                        m = &d->mk[i];
        return m;
}

/* Every key of the parser is in the shipped file as "#key = DEFAULT" in its section. */
TEST(conf_lists_every_key) {
        const char *const *keys = config_keys();
        _cleanup_(docs_done) struct docs d = {};

        if (!docs_load(&d))
                return;
        for (size_t n = 0; keys[n]; n++) {
                char section[32];
                const char *key = split_key(keys[n], section, sizeof(section));
                _cleanup_free_ char *def = NULL;

                if (!key)
                        continue;
                def = conf_default(d.conf, section, key);
                CHECK_MSG(def, "%s: \"#%s = DEFAULT\" not found in [%s]", CONF_FILE, key, section);
        }
}

/* ... and described in the man page, in its section, with a "Range:" line and the
 * shipped file's default on its "Default:" line ("empty" for an empty one). */
TEST(man_page_describes_every_key) {
        const char *const *keys = config_keys();
        _cleanup_(docs_done) struct docs d = {};

        if (!docs_load(&d))
                return;
        for (size_t n = 0; keys[n]; n++) {
                char section[32];
                const char *key = split_key(keys[n], section, sizeof(section));
                _cleanup_free_ char *def = NULL;
                const struct man_key *m;

                if (!key)
                        continue;
                def = conf_default(d.conf, section, key);
                m = man_key(&d, section, key);
                CHECK_MSG(m, "%s: key %s not described in section [%s]", MAN_CONF_FILE, key, section);
                if (!m)
                        continue;
                CHECK_MSG(m->has_range, "%s: [%s] %s has no \"Range:\" line", MAN_CONF_FILE, section, key);
                CHECK_MSG(m->has_def, "%s: [%s] %s has no \"Default:\" line", MAN_CONF_FILE, section, key);
                if (m->has_def && def)
                        CHECK_MSG(strcmp(m->def, def[0] ? def : "empty") == 0,
                                  "%s: [%s] %s: default \"%s\", but %s has \"%s\"", MAN_CONF_FILE,
                                  section, key, m->def, CONF_FILE, def);
        }
}

/* Nothing described that the parser does not know (a renamed or removed key). */
TEST(man_page_describes_only_known_keys) {
        const char *const *keys = config_keys();
        size_t n_keys = 0;
        _cleanup_(docs_done) struct docs d = {};

        if (!docs_load(&d))
                return;
        while (keys[n_keys])
                n_keys++;
        for (size_t i = 0; i < d.n_man; i++) {
                bool known = false;
                for (size_t j = 0; keys[j]; j++) {
                        const char *dot = strchr(keys[j], '.');
                        if (dot && strlen(d.mk[i].section) == (size_t) (dot - keys[j]) &&
                            strncmp(keys[j], d.mk[i].section, (size_t) (dot - keys[j])) == 0 &&
                            strcmp(dot + 1, d.mk[i].key) == 0)
                                known = true;
                }
                CHECK_MSG(known, "%s: [%s] %s is not a key the parser knows", MAN_CONF_FILE,
                          d.mk[i].section, d.mk[i].key);
        }
        CHECK_INT(d.n_man, n_keys);
        CHECK(n_keys > 0);
}

DEFINE_TEST_MAIN()
