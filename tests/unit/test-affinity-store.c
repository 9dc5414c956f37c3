/* SPDX-License-Identifier: GPL-2.0-or-later */
/* daemon/affinity-store: the affinity keeper's records and their state file, with no
 * thread touched: records kept sorted and within their bounds, written and read back
 * the same (a previous placed mask too, dropped at the next write), written only when
 * changed, lines not valid skipped, a format-2 file read, files not trusted (another
 * format, another boot, writable by others) put aside and the newest three kept, the
 * writer held to the reader's bound, the serve callback, the default path. */
#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include "affinity-store.h"
#include "log.h"
#include "test.h"
#include "tmptree.h"

static char dir[] = "/tmp/test-affinity-store-XXXXXX";
static char state[128];         /* <dir>/run/affinity: its directory made by the store */
static char header[128];        /* this boot's first two lines */
static char header_2[128];      /* the same in format 2 */

static nb_cpumask cpus(unsigned first, unsigned last) {
        nb_cpumask m = {};
        for (unsigned c = first; c <= last; c++)
                cpumask_set(&m, c);
        return m;
}

static void write_state(const char *text) {
        if (tmptree_write(state, text) < 0)
                abort();
        chmod(state, 0600);
}

/* The state file's text, malloc'd; NULL when it cannot be read. */
static char *read_state(void) {
        FILE *f = fopen(state, "re");
        char *text = calloc(1, 4096);

        if (f && text && fread(text, 1, 4095, f) > 0) {
                fclose(f);
                return text;
        }
        if (f)
                fclose(f);
        free(text);
        return NULL;
}

/* <state>.refused-* files in the state directory. */
static unsigned refused_files(bool remove) {
        char run[160], path[768];
        DIR *d;
        struct dirent *de;
        unsigned n = 0;

        snprintf(run, sizeof(run), "%s/run", dir);
        d = opendir(run);
        while (d && (de = readdir(d)))
                if (strncmp(de->d_name, AFFINITY_STATE_FILE ".refused-", strlen(AFFINITY_STATE_FILE) + 9) == 0) {
                        n++;
                        snprintf(path, sizeof(path), "%s/%s", run, de->d_name);
                        if (remove)
                                unlink(path);
                }
        if (d)
                closedir(d);
        return n;
}

/* A store with two processes of two threads each (pids 300 and 100, given in that
 * order), the second thread of each left alone. */
static void fill(struct affinity_store *s) {
        nb_cpumask o = cpus(0, 7), p = cpus(0, 3);

        for (pid_t pid = 300; pid > 0; pid -= 200) {
                struct aff_proc *ap = affinity_store_add(s, pid, 1000 + (uint64_t) pid);
                CHECK(ap != NULL);
                CHECK_INT(affinity_store_add_thread(s, ap, pid, 7, 0, &o, &p, NULL), 0);
                CHECK_INT(affinity_store_add_thread(s, ap, pid + 1, 8, AT_LEFT_ALONE, &o, &p, NULL), 0);
        }
}

TEST(records_sorted_and_bounded) {
        struct affinity_store s;
        nb_cpumask o = cpus(0, 7), p = cpus(2, 3), got;
        struct aff_proc *ap;
        struct aff_thread *t;

        CHECK_INT(affinity_store_init(&s, state), 0);
        fill(&s);
        CHECK_INT(s.n_procs, 2);
        CHECK_INT(s.procs[0].pid, 100);
        CHECK_INT(s.n_threads, 4);
        ap = affinity_store_find(&s, 100);
        CHECK(ap && affinity_store_proc_held(ap) == 1);
        CHECK(affinity_store_find(&s, 200) == NULL);
        t = affinity_store_thread(ap, 101);
        CHECK(t && t->flags == AT_LEFT_ALONE);
        CHECK_INT(affinity_store_set_masks(t, &o, &p, NULL), 0);
        affinity_store_original(t, &got);
        CHECK(cpumask_equal(&got, &o));
        affinity_store_placed(t, &got);
        CHECK(cpumask_equal(&got, &p));
        CHECK(affinity_store_placed_equals(t, &p));
        /* The bounds: per process, then in all. */
        s.max_proc = 2;
        CHECK_INT(affinity_store_add_thread(&s, ap, 102, 9, 0, &o, &p, NULL), -E2BIG);
        s.max_proc = 8;
        s.max_all = 4;
        CHECK_INT(affinity_store_add_thread(&s, ap, 102, 9, 0, &o, &p, NULL), -E2BIG);
        affinity_store_remove_thread(&s, ap, affinity_store_thread(ap, 100));
        affinity_store_remove(&s, affinity_store_find(&s, 300));
        CHECK_INT(s.n_threads, 1);
        CHECK_INT(s.n_procs, 1);
        affinity_store_done(&s);
}

TEST(written_and_read_back) {
        struct affinity_store s, back;
        struct stat st1, st2;
        nb_cpumask a, b;

        unlink(state);
        CHECK_INT(affinity_store_init(&s, state), 0);
        fill(&s);
        CHECK(s.dirty);
        CHECK_INT(affinity_store_save(&s), 0);
        CHECK(!s.dirty);
        CHECK(stat(state, &st1) == 0 && (st1.st_mode & 0777) == 0600);
        CHECK_INT((size_t) st1.st_size, affinity_store_size(&s));
        /* Not changed: not written again. */
        CHECK_INT(affinity_store_save_if_dirty(&s), 0);
        CHECK(stat(state, &st2) == 0 && st2.st_ino == st1.st_ino);
        CHECK_INT(affinity_store_init(&back, state), 0);
        CHECK_INT(affinity_store_load(&back), 0);
        CHECK(back.had_file);
        CHECK_INT(back.n_threads, 4);
        for (size_t i = 0; i < s.n_procs; i++)
                for (size_t j = 0; j < s.procs[i].n; j++) {
                        const struct aff_thread *t = &s.procs[i].threads[j];
                        const struct aff_thread *u = affinity_store_thread(&back.procs[i], t->tid);

                        CHECK(u && u->flags == t->flags && u->tid_start == t->tid_start);
                        affinity_store_original(u, &a);
                        affinity_store_original(t, &b);
                        CHECK(cpumask_equal(&a, &b));
                        CHECK_INT(back.procs[i].start_time, s.procs[i].start_time);
                }
        CHECK_INT(refused_files(false), 0);
        affinity_store_done(&back);
        affinity_store_done(&s);
}

TEST(lines_not_valid_skipped) {
        struct affinity_store s;
        char text[1024];

        /* valid; placed not within the original; cut short (no end of line) */
        snprintf(text, sizeof(text), "%s100 5 100 6 0-7 0-3 - 0\n100 5 101 6 0-3 4 - 0\n100 5 102 6 0-7 0-3 - 0",
                 header);
        write_state(text);
        CHECK_INT(affinity_store_init(&s, state), 0);
        CHECK_INT(affinity_store_load(&s), 0);
        CHECK_INT(s.n_threads, 1);
        CHECK(affinity_store_find(&s, 100) && affinity_store_thread(affinity_store_find(&s, 100), 100));
        CHECK_INT(refused_files(true), 1);       /* kept aside, whole, for whoever wants to look */
        affinity_store_done(&s);
}

/* A thread placed again: its previous placed mask written beside the placed one, read
 * back, taken for ours; once its change is made, dropped from the next write. */
TEST(previous_mask_written_until_dropped) {
        struct affinity_store s, back;
        nb_cpumask o = cpus(0, 7), a = cpus(0, 3), b = cpus(4, 7), got;
        struct aff_thread *t;
        char *text;

        unlink(state);
        CHECK_INT(affinity_store_init(&s, state), 0);
        CHECK_INT(affinity_store_add_thread(&s, affinity_store_add(&s, 100, 5), 100, 6, 0, &o, &a, &t), 0);
        CHECK(!affinity_store_previous(t, &got));
        CHECK(!affinity_store_is_ours(t, &b));
        CHECK_INT(affinity_store_set_masks(t, &o, &b, &a), 0);
        CHECK(affinity_store_previous(t, &got) && cpumask_equal(&got, &a));
        CHECK(affinity_store_is_ours(t, &a) && affinity_store_is_ours(t, &b) && !affinity_store_is_ours(t, &o));
        CHECK_INT(affinity_store_save(&s), 0);
        text = read_state();
        CHECK_MSG(text && strstr(text, "\n100 5 100 6 0-7 4-7 0-3 0\n"), "state file: %s", text ? text : "");
        free(text);
        CHECK_INT(affinity_store_init(&back, state), 0);
        CHECK_INT(affinity_store_load(&back), 0);
        t = affinity_store_thread(affinity_store_find(&back, 100), 100);
        CHECK(t && affinity_store_previous(t, &got) && cpumask_equal(&got, &a));
        CHECK(affinity_store_placed_equals(t, &b));
        affinity_store_done(&back);
        /* the change made: dropped, and written at the next save */
        t = affinity_store_thread(affinity_store_find(&s, 100), 100);
        affinity_store_drop_previous(&s, t);
        CHECK(s.dirty && affinity_store_is_ours(t, &a) && affinity_store_is_ours(t, &b));    /* until the save */
        CHECK_INT(affinity_store_save_if_dirty(&s), 0);
        CHECK(!affinity_store_is_ours(t, &a) && affinity_store_is_ours(t, &b));
        CHECK_INT(affinity_store_size(&s), strlen(header) + strlen("100 5 100 6 0-7 4-7 - 0\n"));
        text = read_state();
        CHECK_MSG(text && strstr(text, "\n100 5 100 6 0-7 4-7 - 0\n"), "state file: %s", text ? text : "");
        free(text);
        affinity_store_done(&s);
        CHECK_INT(refused_files(false), 0);
}

/* Format 2 (no previous mask), what a daemon before format 3 left: read, not put
 * aside; each format's lines only in its file. */
TEST(format_2_read) {
        struct affinity_store s;
        nb_cpumask got, a = cpus(0, 3), prev = cpus(4, 5);
        struct aff_thread *t;
        char text[1024];

        snprintf(text, sizeof(text), "%s100 5 100 6 0-7 0-3 0\n100 5 101 6 0-7 0-3 4-7 0\n", header_2);
        write_state(text);
        CHECK_INT(affinity_store_init(&s, state), 0);
        CHECK_INT(affinity_store_load(&s), 0);
        CHECK_INT(s.n_threads, 1);
        t = affinity_store_thread(affinity_store_find(&s, 100), 100);
        CHECK(t && affinity_store_placed_equals(t, &a) && !affinity_store_previous(t, &got));
        CHECK_INT(refused_files(true), 1);      /* the line of 8 fields */
        affinity_store_done(&s);
        /* format 3: 7 fields, a previous not within the original, an empty one */
        snprintf(text, sizeof(text), "%s100 5 100 6 0-7 0-3 0\n100 5 101 6 0-3 0-1 4 0\n100 5 102 6 0-7 0-3  0\n"
                 "100 5 103 6 0-7 0-3 4-5 0\n", header);
        write_state(text);
        CHECK_INT(affinity_store_init(&s, state), 0);
        CHECK_INT(affinity_store_load(&s), 0);
        CHECK_INT(s.n_threads, 1);
        t = affinity_store_thread(affinity_store_find(&s, 100), 103);
        CHECK(t && affinity_store_previous(t, &got) && cpumask_equal(&got, &prev));
        CHECK_INT(refused_files(true), 1);
        affinity_store_done(&s);
}

/* A file not trusted: nothing of it loaded, kept aside, the newest three kept. */
TEST(files_not_trusted_put_aside) {
        struct affinity_store s;
        char text[512];

        write_state("numabalanced-affinity 1\n100 5 100 6 0-7 0-3 - 0\n");
        CHECK_INT(affinity_store_init(&s, state), 0);
        CHECK_INT(affinity_store_load(&s), -EINVAL);
        CHECK(s.had_file);
        CHECK_INT(s.n_threads, 0);
        CHECK(access(state, F_OK) < 0);
        affinity_store_done(&s);
        snprintf(text, sizeof(text), "numabalanced-affinity 3\nboot 00000000-1111-2222-3333-444444444444\n"
                 "100 5 100 6 0-7 0-3 - 0\n");
        write_state(text);
        CHECK_INT(affinity_store_init(&s, state), 0);
        CHECK_INT(affinity_store_load(&s), 0);     /* another boot's: not an error */
        CHECK_INT(s.n_threads, 0);
        affinity_store_done(&s);
        snprintf(text, sizeof(text), "%s100 5 100 6 0-7 0-3 - 0\n", header);
        write_state(text);
        CHECK(chmod(state, 0666) == 0);
        CHECK_INT(affinity_store_init(&s, state), 0);
        CHECK_INT(affinity_store_load(&s), -EPERM);
        CHECK_INT(s.n_threads, 0);
        affinity_store_done(&s);
        write_state("junk\n");
        CHECK_INT(affinity_store_init(&s, state), 0);
        CHECK_INT(affinity_store_load(&s), -EINVAL);
        affinity_store_done(&s);
        CHECK_INT(refused_files(true), 3);
}

TEST(writer_bounded_as_the_reader) {
        struct affinity_store s;
        char run[160];

        unlink(state);
        CHECK_INT(affinity_store_init(&s, state), 0);
        fill(&s);
        s.file_max = affinity_store_size(&s) - 1;
        CHECK_INT(affinity_store_save(&s), -EFBIG);
        CHECK(access(state, F_OK) < 0);
        snprintf(run, sizeof(run), "%s/run", dir);
        {
                DIR *d = opendir(run);
                struct dirent *de;
                unsigned n = 0;

                while (d && (de = readdir(d)))
                        n += de->d_name[0] != '.';
                if (d)
                        closedir(d);
                CHECK_INT(n, 0);        /* no temporary file left */
        }
        s.file_max = affinity_store_size(&s);
        CHECK_INT(affinity_store_save(&s), 0);
        affinity_store_done(&s);
}

static unsigned served;

static void serve(void *userdata) {
        served++;
}

TEST(serve_called_while_writing) {
        struct affinity_store s;
        nb_cpumask o = cpus(0, 7), p = cpus(0, 3);
        struct aff_proc *ap;

        CHECK_INT(affinity_store_init(&s, state), 0);
        s.serve = serve;
        s.max_proc = 5000;
        ap = affinity_store_add(&s, 100, 5);
        for (pid_t t = 0; t < 5000; t++)
                CHECK_INT(affinity_store_add_thread(&s, ap, 100 + t, 6, 0, &o, &p, NULL), 0);
        CHECK_INT(affinity_store_save(&s), 0);
        CHECK_INT(served, 2);      /* every 2,048 records */
        affinity_store_done(&s);
}

TEST(state_path_default) {
        char *p;

        unsetenv("RUNTIME_DIRECTORY");
        p = affinity_store_path_default();
        CHECK_STR(p, "/run/numabalanced/affinity");
        free(p);
        setenv("RUNTIME_DIRECTORY", "/run/nb-test:/run/other", 1);
        p = affinity_store_path_default();
        CHECK_STR(p, "/run/nb-test/affinity");
        free(p);
        setenv("RUNTIME_DIRECTORY", "relative", 1);
        p = affinity_store_path_default();
        CHECK_STR(p, "/run/numabalanced/affinity");
        free(p);
        unsetenv("RUNTIME_DIRECTORY");
}

static void quiet(int level, int error, const struct log_fields *fields, const char *msg) {
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static int intro(void) {
        char id[64] = "";
        FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

        if (!f || !fgets(id, sizeof(id), f) || !mkdtemp(dir))
                return 1;
        fclose(f);
        id[strcspn(id, "\n")] = 0;
        snprintf(header, sizeof(header), "numabalanced-affinity 3\nboot %s\n", id);
        snprintf(header_2, sizeof(header_2), "numabalanced-affinity 2\nboot %s\n", id);
        snprintf(state, sizeof(state), "%s/run", dir);
        if (mkdir(state, 0755) < 0)
                return 1;
        snprintf(state, sizeof(state), "%s/run/%s", dir, AFFINITY_STATE_FILE);
        log_set_sink(quiet);
        return 0;
}

static void outro(void) {
        (void) nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
