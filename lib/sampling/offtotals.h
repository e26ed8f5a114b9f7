/* SPDX-License-Identifier: MIT */
/* Off-CPU: the exact total of each thread's waits in an interval, and the
 * correction it makes to the sampled ones.
 *
 * The recorder weights each wait whose stacks were sent by its length over
 * the probability it was chosen with (Horvitz-Thompson): unbiased only if
 * choosing a wait does not change its length.  It does: sending a thread's
 * stacks takes microseconds at the switch, and in a storm of microsecond
 * waits (a ping-pong over a pipe) the waits chosen came out 1.5x to 4x as
 * long as the others, and the totals as much too high.  The BPF program
 * therefore also adds up every wait's length (offcpu_acc of the end
 * records), and at a flush each thread's off-CPU values are scaled by
 * exact / sampled: its total is then the exact one, and the sample still
 * says how it splits between stacks and states.
 *
 * Threads are keyed by tid in a fixed table (2^13 slots); a thread that
 * finds no room keeps its sampled values (unscaled).
 *
 * Ownership: the caller's (new/free).  Errors: cp_offtotals_new returns NULL
 * (ENOMEM); cp_offtotals_scale returns -ENOMEM (its profile's string table
 * could not grow); the rest cannot fail. */
#ifndef CP_OFFTOTALS_H
#define CP_OFFTOTALS_H

#include <stddef.h>
#include <stdint.h>

struct cp_profile;
struct cp_offtotals;

struct cp_offtotals *cp_offtotals_new(void);
void cp_offtotals_free(struct cp_offtotals *t);

/* Thread tid's end of a chosen wait: `sampled`, the weight its stacks were
 * given (0: none, the wait was too short to keep), and `exact`, the length
 * of its waits since its last such end. */
void cp_offtotals_add(struct cp_offtotals *t, uint32_t tid, double sampled, uint64_t exact);

/* Scale the off-CPU values of p's samples (column col, and wall_col too
 * unless it is (size_t)-1) by their thread's (label thread_id) exact /
 * sampled; samples whose col is 0 (the on-CPU ones of a profile with both)
 * are left alone. */
int cp_offtotals_scale(const struct cp_offtotals *t, struct cp_profile *p, size_t col, size_t wall_col);

/* A new interval: every thread's totals back to 0. */
void cp_offtotals_clear(struct cp_offtotals *t);

#endif
