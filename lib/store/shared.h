/* SPDX-License-Identifier: MIT */
/* One store shared by the threads of a server (cprof serve): writes go
 * through one writer thread that commits everything queued as one batch
 * (group commit) and then wakes each waiting caller, so a return of 0 means
 * the data is committed; reads take a handle from a small pool (each keeps
 * its dictionary loaded).  The writer also runs the store's upkeep
 * (retention, size bound; lib/store/upkeep.h) when idle and after batches.
 *
 * Ownership: the shared store owns its handles; a reader taken with
 * cp_shared_reader is the caller's until cp_shared_release.  Appends are
 * not copied: they must stay valid until cp_shared_append returns.
 * Errors: NULL + errno or -errno, the message with cp_errmsg(). */
#ifndef CP_STORE_SHARED_H
#define CP_STORE_SHARED_H

#include <stddef.h>

#include "store.h"
#include "upkeep.h"

struct cp_shared;

/* Opens dir for writing and starts the writer thread.  upkeep (may be NULL)
 * is copied. */
struct cp_shared *cp_shared_open(const char *dir, const struct cp_upkeep *upkeep);
/* Queues a batch and waits until it is committed, whole or not at all: 0, or
 * -errno with a one-line reason in msg.  -ESHUTDOWN once stopping. */
int cp_shared_append(struct cp_shared *s, const struct cp_store_append *a, size_t n, char *msg, size_t mlen);
/* A read handle (blocks while all are taken), or NULL + errno. */
struct cp_store *cp_shared_reader(struct cp_shared *s);
void cp_shared_release(struct cp_shared *s, struct cp_store *r);
/* Refuses new appends, commits what is queued, stops the writer. */
void cp_shared_stop(struct cp_shared *s);
/* Stops (if not yet) and closes every handle.  NULL is fine. */
void cp_shared_close(struct cp_shared *s);

#endif
