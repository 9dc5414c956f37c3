/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The tenant reader's pool (daemon/tenant-reader.h) with calls that wait on a pipe
 * until the test writes to it: a call that overruns returns -ETIMEDOUT at its deadline
 * and belongs to its thread from then on (freed when it returns: valgrind sees every
 * call freed); its owner is refused until then; other owners are served; the threads
 * are bounded, pinned where asked, and an honest call returns its result. */
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>
#include "clock.h"
#include "tenant-reader.h"
#include "test.h"

struct pipe_call {
        struct tenant_call call;
        int fd;             /* read one byte from it: waits until the test writes */
        int *released;      /* a global: a thread may release a call after its case ended */
};

static int released_a, released_b, released_c, released_d;

static int run_pipe(struct tenant_call *c) {
        struct pipe_call *p = (struct pipe_call *) c;
        char b;

        return read(p->fd, &b, 1) == 1 ? b : -EIO;
}

static void release_pipe(struct tenant_call *c) {
        struct pipe_call *p = (struct pipe_call *) c;

        __atomic_add_fetch(p->released, 1, __ATOMIC_SEQ_CST);
        free(p);
}

static struct pipe_call *pipe_call(int fd, uid_t owner, unsigned deadline_ms, int *released) {
        struct pipe_call *p = calloc(1, sizeof(*p));

        p->call = (struct tenant_call) { .run = run_pipe, .release = release_pipe, .owner = owner, .deadline_ms = deadline_ms };
        p->fd = fd;
        p->released = released;
        return p;
}

/* The call as the daemon makes it: c is the caller's again unless the read overran,
 * and is released here then; an overrun's belongs to its thread. */
static int call(struct tenant_reader *tr, struct pipe_call *c) {
        int r = tenant_reader_call(tr, &c->call);

        if (r != -ETIMEDOUT)
                release_pipe(&c->call);
        return r;
}

static nb_cpumask one_cpu(void) {
        nb_cpumask m = {};
        cpu_set_t set;

        sched_getaffinity(0, sizeof(set), &set);
        for (unsigned c = 0; c < CPU_SETSIZE && c < NB_CPUS_MAX; c++)
                if (CPU_ISSET(c, &set)) {
                        cpumask_set(&m, c);
                        break;
                }
        return m;
}

static bool wait_released(int *released, int n) {
        for (int i = 0; i < 300; i++) {
                if (__atomic_load_n(released, __ATOMIC_SEQ_CST) >= n)
                        return true;
                usleep(10000);
        }
        return false;
}

TEST(overrun_refuses_its_owner_only) {
        struct tenant_reader *tr = NULL;
        nb_cpumask cpus = one_cpu();
        int stuck[2], honest[2];
        int *released_p = &released_a;
        struct pipe_call *c;
        struct tenant_reader_stats st;
        uint64_t t;

        CHECK_INT(pipe(stuck), 0);
        CHECK_INT(pipe(honest), 0);
        CHECK_INT(tenant_reader_new(&cpus, 0, &tr), 0);

        t = clock_now_ms();
        c = pipe_call(stuck[0], 1000, 400, released_p);
        CHECK_INT(call(tr, c), -ETIMEDOUT);   /* c is the reader's now */
        t = clock_now_ms() - t;
        CHECK(t >= 390 && t < 3000);
        CHECK(tenant_reader_owner_stuck(tr, 1000));
        CHECK(!tenant_reader_owner_stuck(tr, 2000));

        c = pipe_call(honest[0], 1000, 2000, released_p);
        CHECK_INT(call(tr, c), -EBUSY);       /* still ours */

        CHECK_INT(write(honest[1], "\x07", 1), 1);
        c = pipe_call(honest[0], 2000, 2000, released_p);
        CHECK_INT(call(tr, c), 7);

        tenant_reader_stats(tr, &st);
        CHECK_INT(st.calls, 2);
        CHECK_INT(st.overruns, 1);
        CHECK_INT(st.refused, 1);
        CHECK_INT(st.threads, 2);
        CHECK_INT(st.stuck, 1);
        CHECK(tenant_reader_pinned(tr, &cpus, true));

        /* The stuck read returns: its thread releases it; the owner is served again. */
        CHECK_INT(write(stuck[1], "\x01", 1), 1);
        CHECK(wait_released(released_p, 3));
        CHECK(!tenant_reader_owner_stuck(tr, 1000));
        CHECK_INT(write(honest[1], "\x05", 1), 1);
        c = pipe_call(honest[0], 1000, 2000, released_p);
        CHECK_INT(call(tr, c), 5);
        tenant_reader_free(tr);
        for (int i = 0; i < 2; i++) {
                close(stuck[i]);
                close(honest[i]);
        }
}

TEST(threads_bounded_then_refused) {
        struct tenant_reader *tr = NULL;
        nb_cpumask cpus = one_cpu();
        int fds[2];
        int *released_p = &released_b;
        struct pipe_call *c;
        struct tenant_reader_stats st;

        CHECK_INT(pipe(fds), 0);
        /* Long enough for a new thread to start and take its call on a loaded machine. */
        CHECK_INT(tenant_reader_new(&cpus, 250, &tr), 0);
        for (unsigned i = 0; i < TENANT_READER_THREADS_MAX; i++) {
                c = pipe_call(fds[0], 5000 + i, 0, released_p);
                CHECK_INT(call(tr, c), -ETIMEDOUT);
        }
        c = pipe_call(fds[0], 0, 0, released_p);
        CHECK_INT(call(tr, c), -EBUSY);
        tenant_reader_stats(tr, &st);
        CHECK_INT(st.threads, TENANT_READER_THREADS_MAX);
        CHECK_INT(st.stuck, TENANT_READER_THREADS_MAX);

        for (unsigned i = 0; i < TENANT_READER_THREADS_MAX; i++)
                CHECK_INT(write(fds[1], "\x01", 1), 1);
        CHECK(wait_released(released_p, (int) TENANT_READER_THREADS_MAX + 1));
        tenant_reader_stats(tr, &st);
        CHECK_INT(st.stuck, 0);
        CHECK_INT(write(fds[1], "\x09", 1), 1);
        c = pipe_call(fds[0], 0, 0, released_p);
        CHECK_INT(call(tr, c), 9);
        tenant_reader_free(tr);
        close(fds[0]);
        close(fds[1]);
}

static int served;
static void count_serve(void *userdata) {
        (void) userdata;
        served++;
}

/* The event loop serves every 100 ms while it waits on a read; no other thread does. */
TEST(the_loop_serves_while_it_waits) {
        struct tenant_reader *tr = NULL;
        nb_cpumask cpus = one_cpu();
        int fds[2];
        int *released_p = &released_c;
        struct pipe_call *c;

        CHECK_INT(pipe(fds), 0);
        CHECK_INT(tenant_reader_new(&cpus, 0, &tr), 0);
        tenant_reader_set_serve(tr, count_serve, NULL);
        served = 0;
        c = pipe_call(fds[0], 1000, 450, released_p);
        CHECK_INT(call(tr, c), -ETIMEDOUT);
        CHECK(served >= 2 && served <= 5);
        CHECK_INT(write(fds[1], "\x01", 1), 1);
        CHECK(wait_released(released_p, 1));
        tenant_reader_free(tr);
        close(fds[0]);
        close(fds[1]);
}

TEST(no_reader_runs_here) {
        int fds[2];
        int *released_p = &released_d;
        struct pipe_call *c;

        CHECK_INT(pipe(fds), 0);
        CHECK_INT(write(fds[1], "\x03", 1), 1);
        c = pipe_call(fds[0], 0, 0, released_p);
        CHECK_INT(call(NULL, c), 3);
        close(fds[0]);
        close(fds[1]);
}

TEST(deadline_grows_with_resident_size) {
        CHECK_INT(tenant_reader_deadline_ms(0), TENANT_READ_DEADLINE_MS);
        CHECK_INT(tenant_reader_deadline_ms(UINT64_C(64) << 30), TENANT_READ_DEADLINE_MS + 4000);
        CHECK_INT(tenant_reader_deadline_ms(UINT64_C(1) << 40), TENANT_READ_DEADLINE_MAX_MS);
}

DEFINE_TEST_MAIN()
