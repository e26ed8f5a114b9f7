/* SPDX-License-Identifier: MIT */
/* A command to profile, started held: forked at once, but exec'ed only when
 * released, so that a sampler attached to its pid in between sees it from
 * its first instruction (cprof record -- CMD, cprof top -- CMD).
 *
 * Lifecycle: cp_launch_start (forked, held) -> cp_launch_release (exec'ed,
 * or the exec's error) -> cp_launch_poll until it exits -> cp_launch_end,
 * always, which also stops a child still held or still running.  Signals:
 * the child gets SIGINT and SIGTERM back at their defaults (the parent's
 * handlers are not its own); none is forwarded, a Ctrl-C reaches both
 * through the terminal's process group. */
#ifndef CP_LAUNCH_H
#define CP_LAUNCH_H

#include <stdbool.h>
#include <sys/types.h>

struct cp_launch {
	const char *name; /* argv[0], for messages */
	pid_t pid;    /* -1: none (never started, or reaped) */
	int go_fd;    /* write end of the gate, -1 once released */
	int err_fd;   /* read end of the exec error pipe, -1 once read */
	bool exited;  /* reaped by cp_launch_poll */
	int status;   /* its wait status, once exited */
};

/* Forks argv (argv[0] looked up in PATH), held before exec.  0, or -errno
 * (pipe or fork failed; l->pid stays -1).  No message is set: the caller
 * names the command. */
int cp_launch_start(struct cp_launch *l, char *const argv[]);
/* Lets the held child exec.  0 when the exec succeeded; else the child is
 * reaped and the error has a message: -errno of the exec ("cannot run CMD:
 * No such file or directory"), or -ECHILD when the child was gone before it
 * could exec (killed while held; SIGPIPE does not reach the caller). */
int cp_launch_release(struct cp_launch *l);
/* Has the child exited (reaped without blocking)?  Once true, l->status is
 * its wait status. */
bool cp_launch_poll(struct cp_launch *l);
/* The end, in every case: a child never released exits without running
 * the command; one still running gets SIGTERM; either is reaped.  Closes
 * the pipes.  Safe on a zeroed-then-cp_launch_init'ed or ended launch. */
void cp_launch_end(struct cp_launch *l);
/* A launch with nothing started (pid -1, no pipes). */
void cp_launch_init(struct cp_launch *l);

#endif
