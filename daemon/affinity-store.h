/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The affinity keeper's records (affinity.h) and their state file: for every thread
 * the daemon narrowed, the affinity it had (its original) and the one it set
 * (placed), keyed by pid and process start time, tid and thread start time; kept in
 * memory sorted by pid and tid, and written whole to a state file under /run
 * (state_dir_write(): a daemon killed at any instant leaves the old file or the new
 * one) from which the next start gives every thread its original back.
 *
 * The file: "numabalanced-affinity 3", then "boot " and this boot's id (the file is
 * trusted in that boot only: /run need not be a tmpfs, and a pid and start time repeat
 * across boots), then a line a thread: "pid start tid tid_start original placed
 * previous flags". previous is the mask we had set before placed, or "-": a thread
 * placed again on another node carries one or the other from the write before its
 * change until the next write after it, and a daemon killed between them must still
 * give it back (affinity_recover). Format 2, read still (an upgrade with threads
 * placed), has no previous field. It is read strictly (a line cut short, a mask out of
 * place, a field too many: skipped, logged) and never bigger than its reader accepts
 * (64 MiB), the writer holding to the same bound. A file not trusted (not a regular
 * file of ours, another format, another boot, bad lines) is renamed aside
 * (<file>.refused-<UTC time>, the newest 3 kept) and logged; one that cannot be
 * renamed is never written over.
 *
 * This module only stores: which thread to narrow, when, and whether it still is
 * ours are affinity.c's. Used on the event loop only. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "nodemask.h"

#define AFFINITY_THREADS_PROC_MAX 1024
#define AFFINITY_THREADS_MAX 65536
/* The state file's name in the daemon's state directory (/run/numabalanced). */
#define AFFINITY_STATE_FILE "affinity"

/* A record's flags, as written in the state file. */
enum {
        /* The application (or a cpuset change) set another mask after we placed it:
         * never touched again, never restored. */
        AT_LEFT_ALONE = 1,
        /* A thread of a placed process that we did not narrow: known, so that it is never
         * taken for a new thread that inherited our mask; may be placed later. */
        AT_KNOWN = 2,
};
#define AT_FLAGS_KNOWN (AT_LEFT_ALONE | AT_KNOWN)

struct aff_thread {
        pid_t tid;
        unsigned flags;
        unsigned call;             /* the affinity_place() call that last planned it */
        uint64_t tid_start;
        unsigned line_len;         /* its line in the state file, 0: not known since its masks changed */
        unsigned nwords;           /* of each mask in masks */
        bool has_previous;         /* masks holds a previous placed mask */
        bool drop_previous;        /* its change made: the previous mask dropped at the next save */
        /* The original in [0, nwords), the placed mask in [nwords, 2 nwords), the
         * previous placed mask (has_previous) in [2 nwords, 3 nwords). */
        uint64_t *masks;
};

struct aff_proc {
        pid_t pid;
        uint64_t start_time;
        int node_first;            /* first CPU of the last node_cpus, -1 before */
        /* The clock tick (the unit and clock of a start time) of its first placement,
         * an adopted process's from the process it was adopted from; 0: none yet. */
        uint64_t placed_at;
        /* Adopted (created by a placed thread, affinity_adopt): the placed process it
         * descends from, whose undo gives it back too; 0 when the round placed it. In
         * memory only: a recovery gives every record back anyway. */
        pid_t root_pid;
        uint64_t root_start;
        size_t n, cap;
        struct aff_thread *threads;   /* sorted by tid */
};


/* Called every few thousand records while the state file is written (the daemon
 * serves its control socket and the watchdog there). The records are whole and
 * unchanged during the call, which must not change them. */
typedef void (*affinity_serve_fn)(void *userdata);

struct affinity_store {
        char *state_path;
        struct aff_proc *procs;    /* sorted by pid */
        size_t n_procs, cap_procs;
        size_t n_threads;          /* records in all */
        size_t max_proc, max_all;  /* the bounds: AFFINITY_THREADS_PROC_MAX, AFFINITY_THREADS_MAX */
        size_t file_max;           /* 64 MiB, read and written; lower in a test */
        bool dirty;                /* the records differ from the file */
        bool had_file;             /* the last load found a state file */
        bool blocked;              /* a refused file could not be put aside: it is never written over */
        char boot_id[64];          /* this boot's, "" when it cannot be read (then no file is trusted) */
        char *out;                 /* the writer's buffer */
        affinity_serve_fn serve;
        void *serve_userdata;
};

/* The daemon's state file: AFFINITY_STATE_FILE in the state directory
 * (state_dir_default()). malloc'd; NULL when out of memory. */
char *affinity_store_path_default(void);

/* No records, the file at state_path (its directory made when written), this boot's
 * id read. Nothing is read or written yet. Returns 0 or -ENOMEM. */
int affinity_store_init(struct affinity_store *s, const char *state_path);
/* Frees the records; the file stays as it is. */
void affinity_store_done(struct affinity_store *s);

/* The records of pid, or NULL. */
struct aff_proc *affinity_store_find(const struct affinity_store *s, pid_t pid);
/* A new process record, no thread yet (sorted in: pointers into s->procs are stale
 * after it). NULL when out of memory. */
struct aff_proc *affinity_store_add(struct affinity_store *s, pid_t pid, uint64_t start_time);
/* p and its threads' records freed. */
void affinity_store_remove(struct affinity_store *s, struct aff_proc *p);
/* Thread tid's record in p, or NULL. */
struct aff_thread *affinity_store_thread(const struct aff_proc *p, pid_t tid);
/* A new thread record, within the bounds: -E2BIG beyond them (the caller logs),
 * -ENOMEM. Pointers into p->threads are stale after it; *ret (may be NULL): the new
 * record. */
int affinity_store_add_thread(struct affinity_store *s, struct aff_proc *p, pid_t tid, uint64_t tid_start,
                              unsigned flags, const nb_cpumask *original, const nb_cpumask *placed,
                              struct aff_thread **ret);
void affinity_store_remove_thread(struct affinity_store *s, struct aff_proc *p, struct aff_thread *t);
/* p's threads narrowed by us now (no flag). */
size_t affinity_store_proc_held(const struct aff_proc *p);

/* A thread's masks: its original, the mask we set, the one we had set before it while
 * a change to placed may not be made yet (previous, NULL: none); all set at once
 * (-ENOMEM). affinity_store_previous() is false when there is none. */
void affinity_store_original(const struct aff_thread *t, nb_cpumask *ret);
void affinity_store_placed(const struct aff_thread *t, nb_cpumask *ret);
bool affinity_store_previous(const struct aff_thread *t, nb_cpumask *ret);
int affinity_store_set_masks(struct aff_thread *t, const nb_cpumask *original, const nb_cpumask *placed,
                             const nb_cpumask *previous);
bool affinity_store_placed_equals(const struct aff_thread *t, const nb_cpumask *m);
/* Whether m is a mask we set on t: its placed mask, or its previous one. */
bool affinity_store_is_ours(const struct aff_thread *t, const nb_cpumask *m);
/* t's change to its placed mask made: its previous mask is dropped at the next save
 * (the records are dirty), in memory too. Until then it is still ours: a thread t
 * created before the change carries it. */
void affinity_store_drop_previous(struct affinity_store *s, struct aff_thread *t);

/* The size of the file the records make now. */
size_t affinity_store_size(struct affinity_store *s);
/* Every record to the state file (never over a file refused and kept, -EPERM; never
 * bigger than file_max, -EFBIG). Returns 0 or -errno, logged. */
int affinity_store_save(struct affinity_store *s);
/* The same when the records changed since the last save. */
int affinity_store_save_if_dirty(struct affinity_store *s);
/* The state file read into the records (had_file says whether there was one). A file
 * refused whole (not a regular file of ours of at most file_max, not this format, a
 * read error) or written during another boot is put aside and nothing of it loaded;
 * one with lines not valid is loaded without them and put aside too. Returns 0 (no
 * file, another boot's, loaded), or -errno when it could not be read (logged). */
int affinity_store_load(struct affinity_store *s);
