/* SPDX-License-Identifier: MIT */
/* A command started held until the sampler watches it: see launch.h. */
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../error.h"

void cp_launch_init(struct cp_launch *l)
{
	l->name = NULL;
	l->pid = -1;
	l->go_fd = -1;
	l->err_fd = -1;
	l->exited = false;
	l->status = 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int cp_launch_start(struct cp_launch *l, char *const argv[])
{
	int gate[2], errp[2], err;

	cp_launch_init(l);
	l->name = argv[0];
	if (pipe2(gate, O_CLOEXEC))
		return -errno;
	if (pipe2(errp, O_CLOEXEC)) {
		err = -errno;
		close(gate[0]);
		close(gate[1]);
		return err;
	}
	l->pid = fork();
	if (l->pid < 0) {
		err = -errno;
		close(gate[0]);
		close(gate[1]);
		close(errp[0]);
		close(errp[1]);
		l->pid = -1;
		return err;
	}
	if (l->pid == 0) {
		char c;
		int e;

		close(gate[1]);
		close(errp[0]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		/* wait until the sampler watches us: a closed gate means never */
		if (read(gate[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[0], argv);
		e = errno;
		if (write(errp[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(gate[0]);
	close(errp[1]);
	l->go_fd = gate[1];
	l->err_fd = errp[0];
	return 0;
}

/* One byte into the gate, with SIGPIPE blocked: a child gone meanwhile is
 * EPIPE here, not the end of the caller. */
static int open_gate(int fd)
{
	sigset_t pipe_set, old;
	int e = 0;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	if (write(fd, "g", 1) != 1)
		e = errno ? errno : EIO;
	if (e == EPIPE && !sigismember(&old, SIGPIPE)) {
		struct timespec zero = { 0, 0 };

		sigtimedwait(&pipe_set, NULL, &zero); /* the SIGPIPE it raised */
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return e;
}

int cp_launch_release(struct cp_launch *l)
{
	int e = 0, gate;
	ssize_t n;

	if (l->pid < 0 || l->go_fd < 0)
		return cp_error(EINVAL, "no command is held");
	gate = open_gate(l->go_fd);
	close_fd(&l->go_fd);
	if (gate) {
		close_fd(&l->err_fd);
		waitpid(l->pid, &l->status, 0);
		l->pid = -1;
		if (WIFSIGNALED(l->status))
			return cp_error(ECHILD, "cannot run %s: it was killed (%s) before it started", l->name,
					strsignal(WTERMSIG(l->status)));
		return cp_error(ECHILD, "cannot run %s: it was gone before it started (%s)", l->name, strerror(gate));
	}
	/* the pipe closes at a successful exec (O_CLOEXEC): 0 bytes; else the errno */
	do
		n = read(l->err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(e))
		e = 0;
	close_fd(&l->err_fd);
	if (e) {
		waitpid(l->pid, &l->status, 0);
		l->pid = -1;
		return cp_error(e, "cannot run %s: %s", l->name, strerror(e));
	}
	return 0;
}

bool cp_launch_poll(struct cp_launch *l)
{
	if (l->pid > 0 && !l->exited && waitpid(l->pid, &l->status, WNOHANG) == l->pid)
		l->exited = true;
	return l->exited;
}

void cp_launch_end(struct cp_launch *l)
{
	if (l->pid > 0 && !l->exited) {
		if (l->go_fd >= 0)
			close_fd(&l->go_fd); /* never released: it exits */
		else
			kill(l->pid, SIGTERM); /* the profiling ended first */
		while (waitpid(l->pid, &l->status, 0) < 0 && errno == EINTR)
			;
		l->exited = true;
	}
	close_fd(&l->go_fd);
	close_fd(&l->err_fd);
}
