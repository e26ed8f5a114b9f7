/* SPDX-License-Identifier: MIT */
/* A profile cut to the largest nodes of its call tree, as Pyroscope's max_nodes cuts a pprof answer
 * (SelectMergeProfile, SelectMergeStacktraces in pprof format): the call tree is by function (an
 * inlined call is a node; a location without lines is one node of its own), a node whose total
 * (value vidx) is under the max_nodes-th largest is cut, and each sample keeps its stack's root-side
 * locations down to its last node that is not cut, then one location of the function "other" in
 * place of the rest; samples whose stacks become the same are summed.  Every total of the root-side
 * nodes kept, and the profile's total, stay as they were.
 * Owns nothing of src; *out is the caller's (cp_profile_free).  Errors: -ENOMEM, -EOVERFLOW (from
 * the profile's tables), with the message in cp_errmsg(). */
#ifndef CP_RENDER_TRIM_H
#define CP_RENDER_TRIM_H

#include <stdint.h>

#include "../profile.h"

/* *out: src's samples cut to max_nodes nodes (a copy of src when it has no more, or max_nodes <= 0). */
int cp_profile_trim_nodes(const struct cp_profile *src, int vidx, int64_t max_nodes, struct cp_profile **out);

#endif
