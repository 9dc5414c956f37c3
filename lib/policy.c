/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "policy.h"

enum policy_verdict policy_allowed_nodes(const struct mempolicy *p, const nb_nodemask *mems_allowed,
                                         const nb_nodemask *with_memory, bool move_preferred,
                                         nb_nodemask *ret_allowed) {
        nb_nodemask base;

        nodemask_and(&base, mems_allowed, with_memory);
        nodemask_zero(ret_allowed);

        switch (p->mode) {
        case MODE_DEFAULT:
        case MODE_LOCAL:
                *ret_allowed = base;
                break;
        case MODE_BIND:
        case MODE_PREFERRED:
        case MODE_PREFERRED_MANY:
                if (p->nodes_truncated)
                        return POLICY_TRUNCATED;
                /* =relative and =static masks are shown by the kernel as the user gave
                 * them; the effective nodes are remapped into the cpuset. Only the plain
                 * and static cases are exact, so relative masks are intersected too
                 * (never widened): we may move less than allowed, never more. */
                nodemask_and(ret_allowed, &p->nodes, &base);
                if (p->mode != MODE_BIND && !move_preferred)
                        return POLICY_PREFERRED;
                break;
        case MODE_INTERLEAVE:
        case MODE_WEIGHTED_INTERLEAVE:
                nodemask_and(ret_allowed, &p->nodes, &base);
                return POLICY_INTERLEAVED;
        default:
                return POLICY_NO_NODES;
        }
        return nodemask_empty(ret_allowed) ? POLICY_NO_NODES : POLICY_MOVABLE;
}

enum policy_verdict policy_allowed_nodes_threads(const struct mempolicy *pols, size_t n,
                                                 const nb_nodemask *mems_allowed, const nb_nodemask *with_memory,
                                                 bool move_preferred, nb_nodemask *ret_allowed) {
        nb_nodemask all;

        nodemask_and(&all, mems_allowed, with_memory);
        nodemask_zero(ret_allowed);
        for (size_t i = 0; i < n; i++) {
                nb_nodemask one;

                if (policy_allowed_nodes(&pols[i], mems_allowed, with_memory, move_preferred, &one) != POLICY_MOVABLE)
                        return POLICY_THREAD;
                nodemask_and(&all, &all, &one);
        }
        if (nodemask_empty(&all))
                return POLICY_THREAD;
        *ret_allowed = all;
        return POLICY_MOVABLE;
}

const char *policy_verdict_name(enum policy_verdict v) {
        switch (v) {
        case POLICY_MOVABLE: return "movable";
        case POLICY_INTERLEAVED: return "interleaved";
        case POLICY_PREFERRED: return "preferred";
        case POLICY_TRUNCATED: return "policy-truncated";
        case POLICY_NO_NODES: return "no-allowed-nodes";
        case POLICY_THREAD: return "thread-policy";
        }
        return "unknown";
}
