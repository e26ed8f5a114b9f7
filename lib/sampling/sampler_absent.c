/* SPDX-License-Identifier: MIT */
/* The sampler of a cprof configured with --disable-bpf: there is no BPF
 * program to load, so cp_sampler_new fails with a message that says why and
 * how to get record and live top back.  Nothing else can be reached: every
 * other call needs a sampler that cp_sampler_new returned. */
#include <errno.h>
#include <string.h>

#include "../error.h"
#include "sampler.h"

static int absent(void)
{
	return cp_error(ENOTSUP, "this cprof was built without the BPF sampler (configure --disable-bpf), so record "
			  "and live top are absent: rebuild it with libbpf-dev, clang and bpftool installed (tools/setup.sh installs them)");
}

struct cp_sampler *cp_sampler_new(const struct cp_sampler_opts *o, const struct cp_sampler_ops *ops, void *arg)
{
	(void)o, (void)ops, (void)arg;
	errno = -absent();
	return NULL;
}

void cp_sampler_free(struct cp_sampler *s)
{
	(void)s;
}

int cp_sampler_add_pid(struct cp_sampler *s, uint32_t pid)
{
	(void)s, (void)pid;
	return absent();
}

int cp_sampler_set_runtime(struct cp_sampler *s, uint32_t pid, const struct cp_rt_proc *rp)
{
	(void)s, (void)pid, (void)rp;
	return absent();
}

int cp_sampler_poll(struct cp_sampler *s, int timeout_ms)
{
	(void)s, (void)timeout_ms;
	return absent();
}

void cp_sampler_stop(struct cp_sampler *s)
{
	(void)s;
}

int cp_sampler_drain(struct cp_sampler *s)
{
	(void)s;
	return absent();
}

void cp_sampler_counts(struct cp_sampler *s, struct cp_sampler_counts *c)
{
	(void)s;
	memset(c, 0, sizeof(*c));
}
