/* SPDX-License-Identifier: MIT */
/* The recorder (lib/sampling/recorder.h) with the real BPF sampler: children
 * of this test spin or sleep in functions of their own, named by comm, and
 * are recorded by pid; the profiles handed over (cp_recorder_take, or the
 * store's series, cp_recorder_series) must hold their functions with the
 * labels the header promises, and nothing of the processes left out.  Loading
 * BPF needs root, as CI runs: without it the tests fail, saying so.  Only
 * presence and positive values are asserted (the machine may be busy). */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "labels.h"
#include "profile.h"
#include "util.h"
#include "sampling/recorder.h"
#include "testutil.h"

#if defined(__x86_64__)

#define FREQ 199

/* ---- the workloads: children that spin or sleep ---- */

static volatile uint64_t spins;

/* (external and called with a run-time value: neither inlined nor cloned,
 * so that their names are theirs) */
__attribute__((noinline)) void rec_spin_child(int64_t until_ns)
{
	while (cp_mono_ns() < until_ns)
		for (int i = 0; i < 10000; i++)
			spins++;
}

__attribute__((noinline)) void rec_sleep_child(int64_t until_ns)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	while (cp_mono_ns() < until_ns)
		nanosleep(&ts, NULL);
	spins++;
}

/* what this test process runs while it records (it is not recorded) */
__attribute__((noinline)) void rec_spin_self(int64_t until_ns)
{
	while (cp_mono_ns() < until_ns)
		for (int i = 0; i < 10000; i++)
			spins++;
}

/* A child named comm running fn for at most 8 s (it dies with this test, and
 * is killed at the end: children_end) */
#define MAX_CHILDREN 4
static pid_t children[MAX_CHILDREN];
static size_t nchildren;

__attribute__((noinline)) static pid_t spawn(const char *comm, void (*fn)(int64_t))
{
	pid_t pid;

	ck_assert_uint_lt(nchildren, MAX_CHILDREN);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prctl(PR_SET_NAME, comm);
		fn(cp_mono_ns() + 8000000000LL);
		_exit(0);
	}
	children[nchildren++] = pid;
	return pid;
}

static void children_end(void)
{
	for (size_t i = 0; i < nchildren; i++) {
		kill(children[i], SIGKILL);
		waitpid(children[i], NULL, 0);
	}
	nchildren = 0;
}

/* A recorder of o that ran ms milliseconds (this process spinning meanwhile
 * when spin), finished. */
static struct cp_recorder *record(const struct cp_recorder_opts *o, int ms, bool spin)
{
	struct cp_recorder *r;
	int64_t end;

	if (geteuid() != 0) {
		ck_abort_msg("recording with BPF needs root (CI runs as root)");
		return NULL;
	}
	r = cp_recorder_new(o);
	ck_assert_msg(r != NULL, "cp_recorder_new: %s", cp_errmsg(errno));
	end = cp_mono_ns() + (int64_t)ms * 1000000;
	while (cp_mono_ns() < end) {
		ck_assert_int_eq(cp_recorder_poll(r, spin ? 0 : 50), 0);
		if (spin)
			rec_spin_self(cp_mono_ns() + 20000000);
	}
	ck_assert_int_eq(cp_recorder_finish(r), 0);
	return r;
}

/* ---- reading a profile ---- */

/* The string label key of sample i (NULL: none) */
static const char *label_of(const struct cp_profile *p, uint32_t i, const char *key)
{
	const struct cp_span *ls = &p->labelsets[p->samples[i].labels];

	for (uint32_t k = 0; k < ls->len; k++) {
		const struct cp_label *l = &p->labels[ls->off + k];

		if (!strcmp(cp_profile_string(p, l->key), key))
			return l->str ? cp_profile_string(p, l->str) : NULL;
	}
	return NULL;
}

static unsigned nlabels(const struct cp_profile *p, uint32_t i)
{
	return p->labelsets[p->samples[i].labels].len;
}

/* Sample i's stack as names, leaf first, joined by ';' (each framed by
 * ';': ";a;b;"), and whether a frame is in the kernel's mapping */
static void stack_of(const struct cp_profile *p, uint32_t i, char *out, size_t len, bool *kernel)
{
	struct cp_frame *frames = NULL;
	size_t cap = 0, off = 1;
	int n = cp_profile_frames(p, p->samples[i].stack, &frames, &cap);

	ck_assert_int_ge(n, 0);
	snprintf(out, len, ";");
	if (kernel)
		*kernel = false;
	for (int k = 0; k < n; k++) {
		const struct cp_location *l = cp_profile_loc(p, frames[k].location);
		char buf[256];
		int w = snprintf(out + off, len - off, "%s;", cp_frame_name(p, &frames[k], buf, sizeof(buf)));

		if (w > 0 && (size_t)w < len - off)
			off += (size_t)w;
		if (kernel && l->mapping &&
		    !strcmp(cp_profile_string(p, p->mappings[l->mapping - 1].filename), "[kernel.kallsyms]"))
			*kernel = true;
	}
	free(frames);
}

static int type_index(const struct cp_profile *p, const char *type, const char *unit)
{
	for (size_t t = 0; t < p->ntypes; t++)
		if (!strcmp(cp_profile_string(p, p->sample_types[t].type), type) &&
		    !strcmp(cp_profile_string(p, p->sample_types[t].unit), unit))
			return (int)t;
	return -1;
}

static pid_t label_pid(const struct cp_profile *p, uint32_t i)
{
	const char *v = label_of(p, i, "pid");

	ck_assert_msg(v != NULL, "sample %u has a pid label", i);
	return (pid_t)atol(v);
}

/* ---- pure parts ---- */

START_TEST(test_offcpu_period)
{
	/* 1/freq in whole milliseconds, within 1 ms and 1 s; freq 0: 19 Hz */
	ck_assert_uint_eq(cp_recorder_offcpu_period(199), 5000000);
	ck_assert_uint_eq(cp_recorder_offcpu_period(0), 52000000);
	ck_assert_uint_eq(cp_recorder_offcpu_period(19), 52000000);
	ck_assert_uint_eq(cp_recorder_offcpu_period(100), 10000000);
	ck_assert_uint_eq(cp_recorder_offcpu_period(5000), 1000000);
	ck_assert_uint_eq(cp_recorder_offcpu_period(1), 1000000000);
}
END_TEST

START_TEST(test_series_labels)
{
	/* comm ("?" unknown), node, then what is known; the extra labels
	 * replace one of the same name or are added; sorted by name */
	struct cp_proc p;
	struct cp_kv kv[2 + CP_SERIES_OWN_LABELS];
	const struct cp_kv extra[2] = { { "node", "other" }, { "env", "prod" } };
	size_t n;

	memset(&p, 0, sizeof(p));
	n = cp_series_labels(&p, "host1", NULL, 0, kv);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(kv[0].name, "comm");
	ck_assert_str_eq(kv[0].value, "?");
	ck_assert_str_eq(kv[1].name, "node");
	ck_assert_str_eq(kv[1].value, "host1");
	snprintf(p.comm, sizeof(p.comm), "nginx");
	p.exe = "/usr/sbin/nginx";
	p.unit = "nginx.service";
	n = cp_series_labels(&p, "host1", extra, 2, kv);
	ck_assert_uint_eq(n, 5);
	ck_assert_str_eq(kv[0].name, "comm");
	ck_assert_str_eq(kv[0].value, "nginx");
	ck_assert_str_eq(kv[1].name, "env");
	ck_assert_str_eq(kv[1].value, "prod");
	ck_assert_str_eq(kv[2].name, "exe");
	ck_assert_str_eq(kv[2].value, "/usr/sbin/nginx");
	ck_assert_str_eq(kv[3].name, "node");
	ck_assert_str_eq(kv[3].value, "other");
	ck_assert_str_eq(kv[4].name, "unit");
	ck_assert_str_eq(kv[4].value, "nginx.service");
}
END_TEST

/* ---- one profile (cp_recorder_take) ---- */

START_TEST(test_take_by_pid)
{
	/* pid a spins; b (spinning the same function) and this process are not
	 * asked for: only a's samples, with its function under its caller,
	 * labelled pid, comm, thread_id and thread_name; cpu time beside the
	 * count (with_time) */
	pid_t a = spawn("cprec-spin", rec_spin_child), b = spawn("cprec-other", rec_spin_child);
	uint32_t pids[1] = { (uint32_t)a };
	struct cp_recorder_opts o = { .freq = FREQ, .pids = pids, .npids = 1, .with_time = true, .verb = "test" };
	struct cp_recorder *r = record(&o, 1500, true);
	struct cp_profile *p = cp_recorder_take(r), *next;
	int64_t in_fn = 0, total = 0, period = cp_recorder_period(r);
	char st[8192], want[32];

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(period, 1000000000 / FREQ);
	ck_assert_uint_ge(p->ntypes, 2);
	ck_assert_int_eq(type_index(p, "samples", "count"), 0);
	ck_assert_int_eq(type_index(p, "cpu", "nanoseconds"), 1);
	ck_assert_uint_gt(p->nsamples, 0);
	snprintf(want, sizeof(want), "%d", (int)a);
	for (uint32_t i = 0; i < p->nsamples; i++) {
		const int64_t *v = cp_profile_values(p, i);

		stack_of(p, i, st, sizeof(st), NULL);
		ck_assert_msg(label_pid(p, i) == a, "only pid %d sampled, not %d (%s)", (int)a, (int)label_pid(p, i), st);
		ck_assert_str_eq(label_of(p, i, "comm"), "cprec-spin");
		ck_assert_str_eq(label_of(p, i, "thread_id"), want);
		ck_assert_str_eq(label_of(p, i, "thread_name"), "cprec-spin");
		ck_assert_uint_eq(nlabels(p, i), 4);
		ck_assert_ptr_null(strstr(st, ";rec_spin_self;"));
		ck_assert_int_gt(v[0], 0);
		ck_assert_int_eq(v[1], v[0] * period);
		total += v[0];
		if (strstr(st, ";rec_spin_child;spawn;"))
			in_fn += v[0];
	}
	ck_assert_msg(in_fn > 0, "rec_spin_child called by spawn in %lld of %lld samples", (long long)in_fn,
		      (long long)total);
	ck_assert_uint_eq(cp_recorder_samples(r), (uint64_t)total);
	/* handed over: the next profile starts empty */
	next = cp_recorder_take(r);
	ck_assert_ptr_nonnull(next);
	ck_assert_uint_eq(next->nsamples, 0);
	(void)b;
	cp_profile_free(next);
	cp_profile_free(p);
	cp_recorder_free(r);
	children_end();
}
END_TEST

START_TEST(test_take_all)
{
	/* no pids: every process, this one among them (its own function), and
	 * both children by their pid and comm */
	pid_t a = spawn("cprec-one", rec_spin_child), b = spawn("cprec-two", rec_spin_child);
	struct cp_recorder_opts o = { .freq = FREQ, .verb = "test" };
	struct cp_recorder *r = record(&o, 1000, true);
	struct cp_profile *p = cp_recorder_take(r);
	int64_t in_a = 0, in_b = 0, in_self = 0;
	char st[8192];

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p->ntypes, 1); /* the count alone */
	for (uint32_t i = 0; i < p->nsamples; i++) {
		pid_t pid = label_pid(p, i);
		int64_t v = cp_profile_values(p, i)[0];

		ck_assert_ptr_nonnull(label_of(p, i, "comm"));
		ck_assert_ptr_nonnull(label_of(p, i, "thread_id"));
		ck_assert_ptr_nonnull(label_of(p, i, "thread_name"));
		if (pid != a && pid != b && pid != getpid())
			continue;
		stack_of(p, i, st, sizeof(st), NULL);
		if (pid == a && strstr(st, ";rec_spin_child;")) {
			ck_assert_str_eq(label_of(p, i, "comm"), "cprec-one");
			in_a += v;
		} else if (pid == b && strstr(st, ";rec_spin_child;")) {
			ck_assert_str_eq(label_of(p, i, "comm"), "cprec-two");
			in_b += v;
		} else if (pid == getpid() && strstr(st, ";rec_spin_self;")) {
			in_self += v;
		}
	}
	ck_assert_int_gt(in_a, 0);
	ck_assert_int_gt(in_b, 0);
	ck_assert_int_gt(in_self, 0);
	cp_profile_free(p);
	cp_recorder_free(r);
	children_end();
}
END_TEST

START_TEST(test_take_offcpu)
{
	/* off-CPU: the sleeping child's waits, in state S, where it sleeps
	 * (kernel frames, then its function): offcpu and wall nanoseconds (its
	 * third and fourth values without cpu time: second and third), no
	 * more than the time it has lived; its cpu samples are state CPU */
	int64_t born = cp_mono_ns(), lived;
	pid_t s = spawn("cprec-sleep", rec_sleep_child);
	uint32_t pids[1] = { (uint32_t)s };
	struct cp_recorder_opts o = { .freq = FREQ, .pids = pids, .npids = 1, .offcpu = true, .verb = "test" };
	struct cp_recorder *r = record(&o, 1500, false);
	struct cp_profile *p;
	int64_t off = 0, off_in_fn = 0;
	int toff, twall;
	char st[8192];
	bool kernel, any_kernel = false;

	p = cp_recorder_take(r);
	lived = cp_mono_ns() - born;
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p->ntypes, 3);
	ck_assert_int_eq(type_index(p, "samples", "count"), 0);
	toff = type_index(p, "offcpu", "nanoseconds");
	twall = type_index(p, "wall", "nanoseconds");
	ck_assert_int_eq(toff, 1);
	ck_assert_int_eq(twall, 2);
	for (uint32_t i = 0; i < p->nsamples; i++) {
		const int64_t *v = cp_profile_values(p, i);
		const char *state = label_of(p, i, "state");

		ck_assert_int_eq(label_pid(p, i), s);
		ck_assert_str_eq(label_of(p, i, "comm"), "cprec-sleep");
		ck_assert_ptr_nonnull(state);
		if (!strcmp(state, "CPU")) {
			ck_assert_int_gt(v[0], 0);
			ck_assert_int_eq(v[toff], 0);
			continue;
		}
		ck_assert_msg(!strcmp(state, "S") || !strcmp(state, "D") || !strcmp(state, "R"), "state %s", state);
		ck_assert_int_eq(v[0], 0);
		ck_assert_int_ge(v[toff], 0);
		ck_assert_int_eq(v[twall], v[toff]);
		if (strcmp(state, "S"))
			continue;
		off += v[toff];
		stack_of(p, i, st, sizeof(st), &kernel);
		any_kernel |= kernel;
		if (strstr(st, ";rec_sleep_child;spawn;"))
			off_in_fn += v[toff];
	}
	ck_assert_msg(off_in_fn > 0, "waits in rec_sleep_child: %lld ns of %lld ns in state S", (long long)off_in_fn,
		      (long long)off);
	ck_assert_msg(off <= lived, "%lld ns asleep in %lld ns", (long long)off, (long long)lived);
	ck_assert_msg(any_kernel, "the waits' stacks have kernel frames");
	cp_profile_free(p);
	cp_recorder_free(r);
	children_end();
}
END_TEST

/* ---- the store's series (for_store) ---- */

/* The value of label name among a series' labels (NULL: none) */
static const char *kv_of(const struct cp_store_append *a, const char *name)
{
	for (size_t i = 0; i < a->nlabels; i++)
		if (!strcmp(a->labels[i].name, name))
			return a->labels[i].value;
	return NULL;
}

START_TEST(test_series_per_program)
{
	/* two processes of program "cprec-a" and one of "cprec-b": one cpu
	 * series each program, labelled comm, node and the extra label; their
	 * rows of the shared profile labelled by pid (both of a's), thread,
	 * never comm; each sample the period in nanoseconds */
	pid_t a1 = spawn("cprec-a", rec_spin_child), a2 = spawn("cprec-a", rec_spin_child);
	pid_t b = spawn("cprec-b", rec_spin_child);
	uint32_t pids[3] = { (uint32_t)a1, (uint32_t)a2, (uint32_t)b };
	struct cp_recorder_opts o = { .freq = FREQ, .pids = pids, .npids = 3, .for_store = true, .verb = "test" };
	const struct cp_kv extra[1] = { { "env", "check" } };
	struct cp_recorder *r = record(&o, 1500, false);
	struct cp_recorder_series s;
	int64_t period = cp_recorder_period(r), start = 1700000000000000000LL, end = start + 1500000000LL;
	char st[8192];

	ck_assert_int_eq(cp_recorder_series(r, "node1", extra, 1, start, end, &s), 0);
	ck_assert_uint_eq(s.n, 2);
	for (size_t k = 0; k < s.n; k++) {
		const struct cp_store_append *ap = &s.a[k];
		const struct cp_profile *p = ap->profile;
		const char *comm = kv_of(ap, "comm");
		bool saw[3] = { false, false, false }, in_fn = false;

		ck_assert_str_eq(ap->name, CP_RECORDER_CPU_TYPE);
		ck_assert_ptr_nonnull(comm);
		ck_assert_str_eq(kv_of(ap, "node"), "node1");
		ck_assert_str_eq(kv_of(ap, "env"), "check");
		ck_assert_ptr_nonnull(kv_of(ap, "exe"));
		for (size_t i = 1; i < ap->nlabels; i++)
			ck_assert_int_lt(strcmp(ap->labels[i - 1].name, ap->labels[i].name), 0);
		ck_assert_uint_eq(p->ntypes, 1);
		ck_assert_int_eq(type_index(p, "cpu", "nanoseconds"), 0);
		ck_assert_int_eq(p->time_nanos, start);
		ck_assert_int_eq(p->duration_nanos, end - start);
		ck_assert_ptr_nonnull(ap->sel);
		ck_assert_uint_gt(ap->nsel, 0);
		for (size_t j = 0; j < ap->nsel; j++) {
			uint32_t i = ap->sel[j];
			pid_t pid;

			ck_assert_uint_lt(i, p->nsamples);
			pid = label_pid(p, i);
			ck_assert_ptr_nonnull(label_of(p, i, "thread_id"));
			ck_assert_str_eq(label_of(p, i, "thread_name"), comm);
			ck_assert_ptr_null(label_of(p, i, "comm"));
			ck_assert_int_eq(cp_profile_values(p, i)[0] % period, 0);
			ck_assert_int_gt(cp_profile_values(p, i)[0], 0);
			if (!strcmp(comm, "cprec-a")) {
				ck_assert_msg(pid == a1 || pid == a2, "pid %d in program cprec-a", (int)pid);
				saw[pid == a1 ? 0 : 1] = true;
			} else {
				ck_assert_str_eq(comm, "cprec-b");
				ck_assert_int_eq(pid, b);
				saw[2] = true;
			}
			stack_of(p, i, st, sizeof(st), NULL);
			in_fn |= strstr(st, ";rec_spin_child;") != NULL;
		}
		if (!strcmp(comm, "cprec-a"))
			ck_assert_msg(saw[0] && saw[1], "both processes of cprec-a in its series");
		else
			ck_assert(saw[2]);
		ck_assert(in_fn);
	}
	ck_assert_str_ne(kv_of(&s.a[0], "comm"), kv_of(&s.a[1], "comm"));
	cp_recorder_series_release(&s);
	/* reset: the interval's samples are gone */
	cp_recorder_reset(r);
	ck_assert_int_eq(cp_recorder_series(r, "node1", extra, 1, end, end + 1, &s), 0);
	ck_assert_uint_eq(s.n, 0);
	cp_recorder_series_release(&s);
	cp_recorder_free(r);
	children_end();
}
END_TEST

START_TEST(test_series_offcpu)
{
	/* off-CPU for the store: the sleeper's program has an "offcpu" series
	 * (samples labelled pid and state S, where it sleeps) and a "wall" one */
	pid_t s = spawn("cprec-nap", rec_sleep_child);
	uint32_t pids[1] = { (uint32_t)s };
	struct cp_recorder_opts o = { .freq = FREQ, .pids = pids, .npids = 1, .for_store = true, .offcpu = true,
				      .verb = "test" };
	struct cp_recorder *r = record(&o, 1500, false);
	struct cp_recorder_series ser;
	const struct cp_store_append *off = NULL, *wall = NULL;
	int64_t in_fn = 0;
	char st[8192];

	ck_assert_int_eq(cp_recorder_series(r, "node1", NULL, 0, 1000, 2000, &ser), 0);
	for (size_t k = 0; k < ser.n; k++) {
		ck_assert_str_eq(kv_of(&ser.a[k], "comm"), "cprec-nap");
		if (!strcmp(ser.a[k].name, "offcpu"))
			off = &ser.a[k];
		else if (!strcmp(ser.a[k].name, "wall"))
			wall = &ser.a[k];
		else
			ck_assert_str_eq(ser.a[k].name, CP_RECORDER_CPU_TYPE);
	}
	ck_assert_ptr_nonnull(off);
	ck_assert_ptr_nonnull(wall);
	ck_assert_int_eq(type_index(off->profile, "offcpu", "nanoseconds"), 0);
	ck_assert_int_eq(type_index(wall->profile, "wall", "nanoseconds"), 0);
	ck_assert_ptr_null(off->sel);
	for (uint32_t i = 0; i < off->profile->nsamples; i++) {
		const char *state = label_of(off->profile, i, "state");

		ck_assert_int_eq(label_pid(off->profile, i), s);
		ck_assert_ptr_nonnull(state);
		ck_assert_ptr_null(label_of(off->profile, i, "comm"));
		stack_of(off->profile, i, st, sizeof(st), NULL);
		if (!strcmp(state, "S") && strstr(st, ";rec_sleep_child;"))
			in_fn += cp_profile_values(off->profile, i)[0];
	}
	ck_assert_int_gt(in_fn, 0);
	ck_assert_int_ge(cp_profile_total(wall->profile, 0), in_fn);
	cp_recorder_series_release(&ser);
	cp_recorder_free(r);
	children_end();
}
END_TEST

int main(void)
{
	const TTest *const tests[] = {
		test_offcpu_period, test_series_labels, test_take_by_pid, test_take_all,
		test_take_offcpu,   test_series_per_program, test_series_offcpu,
	};

	return run_tests_timeout("recorder", tests, sizeof(tests) / sizeof(tests[0]), 20);
}

#else
int main(void)
{
	return 77; /* x86-64 only, as the sampler */
}
#endif
