/* SPDX-License-Identifier: GPL-2.0-or-later */
/* daemon/state-dir: the state directory's lock (held twice: refused, or waited for),
 * the atomic write (the old file left whole when a write fails, no temporary file
 * left, mode 0600, the directory made) and the bounded read (over the limit, a link,
 * a FIFO, a file others may write: refused), in a temporary directory. */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "state-dir.h"
#include "test.h"

static char root[] = "/tmp/test-state-dir-XXXXXX";

static char *path_in(const char *name) {
        static char buf[4][256];
        static unsigned next;
        char *p = buf[next++ % 4];

        snprintf(p, sizeof(buf[0]), "%s/%s", root, name);
        return p;
}

static char *contents(const char *path) {
        static char buf[4096];
        FILE *f = fopen(path, "re");
        size_t n;

        if (!f)
                return NULL;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = 0;
        fclose(f);
        return buf;
}

/* Entries of dir besides . and .. */
static unsigned entries(const char *dir) {
        DIR *d = opendir(dir);
        struct dirent *de;
        unsigned n = 0;

        while (d && (de = readdir(d)))
                n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
        if (d)
                closedir(d);
        return n;
}

TEST(default_dir) {
        char *p;

        unsetenv("RUNTIME_DIRECTORY");
        p = state_dir_default(NULL);
        CHECK_STR(p, STATE_DIR_DEFAULT);
        free(p);
        p = state_dir_default("affinity");
        CHECK_STR(p, "/run/numabalanced/affinity");
        free(p);
        setenv("RUNTIME_DIRECTORY", "/run/nb-test:/run/other", 1);
        p = state_dir_default("damon");
        CHECK_STR(p, "/run/nb-test/damon");
        free(p);
        setenv("RUNTIME_DIRECTORY", "relative", 1);
        p = state_dir_default(NULL);
        CHECK_STR(p, STATE_DIR_DEFAULT);
        free(p);
        unsetenv("RUNTIME_DIRECTORY");
}

TEST(lock_held_twice_refused) {
        const char *dir = path_in("locked");
        int a, b;

        CHECK_INT(state_dir_lock(dir, false, 0), -ENOENT);     /* not made unless asked */
        a = state_dir_lock(dir, true, 0);
        CHECK(a >= 0);
        /* A second holder, this process or another: flock() is per open file. */
        CHECK_INT(state_dir_lock(dir, true, 0), -EWOULDBLOCK);
        CHECK_INT(state_dir_lock(dir, false, 200), -EWOULDBLOCK);
        close(a);
        b = state_dir_lock(dir, false, 0);
        CHECK(b >= 0);
        close(b);
        rmdir(dir);
}

static void *let_go(void *arg) {
        nanosleep(&(struct timespec) { .tv_nsec = 100 * 1000000L }, NULL);
        close(*(int *) arg);
        return NULL;
}

/* --restore-affinity waits for a daemon being killed: the lock is taken once it goes. */
TEST(lock_waited_for) {
        const char *dir = path_in("waited");
        pthread_t th;
        int a, b;

        a = state_dir_lock(dir, true, 0);
        CHECK(a >= 0);
        CHECK(pthread_create(&th, NULL, let_go, &a) == 0);
        /* Far more than the 100 ms it is held: a loaded machine cannot make it fail. */
        b = state_dir_lock(dir, false, 60000);
        CHECK(b >= 0);
        pthread_join(th, NULL);
        close(b);
        rmdir(dir);
}

static int write_half_then_fail(int fd, void *userdata) {
        (void) state_dir_write_all(fd, "half", 4);
        return -EIO;
}

TEST(atomic_write_replaces_or_leaves_the_old_file) {
        const char *dir = path_in("made"), *file = path_in("made/state");
        struct stat st;

        /* The directory is made; the file is 0600 whatever the umask. */
        CHECK_INT(state_dir_write_buf(file, "one\n", 4), 0);
        CHECK_STR(contents(file), "one\n");
        CHECK(stat(file, &st) == 0 && (st.st_mode & 0777) == 0600);
        CHECK_INT(state_dir_write_buf(file, "two\n", 4), 0);
        CHECK_STR(contents(file), "two\n");
        CHECK_INT(entries(dir), 1);
        /* A write that fails halfway: the old file whole, no temporary file left. */
        CHECK_INT(state_dir_write(file, write_half_then_fail, NULL), -EIO);
        CHECK_STR(contents(file), "two\n");
        CHECK_INT(entries(dir), 1);
        /* An empty file is a file. */
        CHECK_INT(state_dir_write_buf(file, "", 0), 0);
        CHECK_STR(contents(file), "");
        unlink(file);
        rmdir(dir);
}

TEST(atomic_write_where_nothing_can_go) {
        const char *notdir = path_in("plain"), *file = path_in("plain/state");
        FILE *f = fopen(notdir, "we");

        CHECK(f != NULL);
        if (f)
                fclose(f);
        CHECK(state_dir_write_buf(file, "x\n", 2) < 0);
        CHECK_STR(contents(notdir), "");
        unlink(notdir);
}

TEST(bounded_read) {
        const char *file = path_in("bounded"), *link = path_in("link"), *fifo = path_in("fifo");
        char *text = NULL;
        size_t len = 0;

        CHECK_INT(state_dir_read(file, 16, 0, &text, &len), -ENOENT);
        CHECK_INT(state_dir_write_buf(file, "0123456789abcdef", 16), 0);
        /* Exactly the limit: read; one byte over: refused. */
        CHECK_INT(state_dir_read(file, 16, STATE_DIR_OURS, &text, &len), 0);
        CHECK_STR(text, "0123456789abcdef");
        CHECK_INT(len, 16);
        free(text);
        text = NULL;
        CHECK_INT(state_dir_read(file, 15, 0, &text, &len), -EFBIG);
        CHECK(text == NULL);
        CHECK_INT(state_dir_open(file, 15, 0), -EFBIG);
        /* Not through a link, not a FIFO (which must not hold the open), not a
         * directory. */
        CHECK(symlink(file, link) == 0);
        CHECK_INT(state_dir_read(link, 16, 0, &text, &len), -ELOOP);
        CHECK(mkfifo(fifo, 0600) == 0);
        CHECK_INT(state_dir_read(fifo, 16, 0, &text, &len), -EPERM);
        CHECK_INT(state_dir_read(root, 16, 0, &text, &len), -EPERM);
        /* Writable by others: not ours to act on, though readable as a plain file. */
        CHECK(chmod(file, 0666) == 0);
        CHECK_INT(state_dir_read(file, 16, STATE_DIR_OURS, &text, &len), -EPERM);
        CHECK_INT(state_dir_read(file, 16, 0, &text, &len), 0);
        free(text);
        unlink(link);
        unlink(fifo);
        unlink(file);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static int intro(void) {
        return mkdtemp(root) ? 0 : 1;
}

static void outro(void) {
        (void) nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
