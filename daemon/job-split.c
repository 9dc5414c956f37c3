/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Splitting a job among the workers (job-split.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cleanup.h"
#include "job-split.h"

/* Where the split stands: the next byte to hand out is pos, in range ri. */
struct split_cursor {
        const struct migrate_job *job;
        size_t ri;
        uint64_t pos;
};

/* Fills part j with the next share bytes from the cursor, cut on an align boundary
 * inside a range; the last part takes whatever is left. Returns the bytes taken. */
static uint64_t take_share(struct split_cursor *cur, struct migrate_job *j, uint64_t share, uint64_t align,
                           bool last) {
        const struct migrate_job *job = cur->job;
        uint64_t left = share, bytes = 0;

        while (cur->ri < job->n_ranges && (left > 0 || last)) {
                const struct migrate_range *rg = &job->ranges[cur->ri];
                uint64_t pos = cur->pos, end = rg->end;

                if (!last && end - pos > left) {
                        /* Cut inside this range, on an aligned address past pos. */
                        uint64_t cut = (pos + left + align - 1) / align * align;
                        if (cut < end)
                                end = cut;
                }
                j->ranges[j->n_ranges++] = (struct migrate_range) { pos, end, rg->page_size };
                bytes += end - pos;
                left = end - pos >= left ? 0 : left - (end - pos);
                cur->pos = end;
                if (end >= rg->end && ++cur->ri < job->n_ranges)
                        cur->pos = job->ranges[cur->ri].start;
        }
        return bytes;
}

/* A part: the job's identity and flags, no results, room for every range. */
static int part_init(const struct migrate_job *job, struct migrate_job *j) {
        *j = *job;
        memset(j->pages, 0, sizeof(j->pages));
        j->error = 0;
        j->cpu_ns = j->wall_ns = 0;
        j->n_ranges = 0;
        j->ranges = calloc(job->n_ranges ? job->n_ranges : 1, sizeof(*j->ranges));
        return j->ranges ? 0 : -ENOMEM;
}

int job_split(const struct migrate_job *job, unsigned parts, uint64_t min_part_bytes,
              struct migrate_job **ret, size_t *ret_n) {
        _cleanup_free_ struct migrate_job *out = NULL;
        uint64_t total = 0, share, align = executor_pmd_size();
        struct split_cursor cur = { .job = job, .pos = job->n_ranges ? job->ranges[0].start : 0 };
        size_t n = 0;

        for (size_t i = 0; i < job->n_ranges; i++) {
                total += job->ranges[i].end - job->ranges[i].start;
                if (job->ranges[i].page_size > align)
                        align = job->ranges[i].page_size;
        }
        if (parts == 0)
                parts = 1;
        if (min_part_bytes && total / min_part_bytes < parts)
                parts = (unsigned) (total / min_part_bytes) ? (unsigned) (total / min_part_bytes) : 1;
        share = (total + parts - 1) / parts;
        share = (share + align - 1) / align * align;

        out = calloc(parts, sizeof(*out));
        if (!out)
                return -ENOMEM;
        while (n < parts) {
                struct migrate_job *j = &out[n];
                uint64_t bytes;

                if (part_init(job, j) < 0)
                        goto oom;
                n++;
                bytes = take_share(&cur, j, share, align, n == parts);
                if (job->max_pages && total) {
                        j->max_pages = (uint64_t) ((unsigned __int128) job->max_pages * bytes / total);
                        if (j->max_pages == 0)
                                j->max_pages = 1;
                }
                if (cur.ri >= job->n_ranges)
                        break;
        }
        *ret_n = n;
        *ret = TAKE_PTR(out);
        return (int) n;
oom:
        for (size_t i = 0; i < n; i++)
                free(out[i].ranges);
        return -ENOMEM;
}
