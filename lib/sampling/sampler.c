/* SPDX-License-Identifier: MIT */
#include "sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "../error.h"
#include "../util.h"
#include "bpf/sampler.skel.h"
#include "btfmin.h"

struct cp_sampler {
	struct sampler *skel;
	struct ring_buffer *rb;
	struct perf_buffer *pb;
	int pb_map_fd;
	int *pe_fds;
	struct bpf_link **links;
	struct bpf_link *fork_link, *exit_link;
	struct bpf_link *switch_link;
	int ncpus;
	int epfd;
	int cgroup_fd;
	const struct cp_sampler_ops *ops;
	void *arg;
	uint64_t lost_records;
	int delivered;
	uint64_t records_until; /* records are read up to this CLOCK_MONOTONIC time */
	/* Records read but not yet handed over, in time order: each is handed
	 * over just before the first sample taken after it, so that a sample
	 * sees its process as it was when it was taken (a child's samples
	 * before its exec are unwound in the parent's image, not the new one). */
	struct pending_rec {
		uint64_t time, seq;
		size_t off; /* the record's copy, in qbuf */
	} *q, *qtmp;
	size_t qhead, qn, qcap, qtmpcap;
	uint64_t qseq;
	bool qunsorted; /* a record older than the one before it was queued */
	/* the copies of the queued records, one after the other (no malloc per
	 * record): emptied when the queue is, compacted when mostly handed over */
	char *qbuf;
	size_t qlen, qbufcap, qlive;
	bool stopped;
};

static void deliver_record(struct cp_sampler *s, const struct perf_event_header *h);

/* libbpf's messages: kept for the error text, printed with CPROF_DEBUG=1 */
static char last_libbpf_msg[256];
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char buf[1024];
	size_t n;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	if (level == LIBBPF_DEBUG) {
		if (getenv("CPROF_DEBUG") && !strcmp(getenv("CPROF_DEBUG"), "2"))
			fputs(buf, stderr);
		return 0;
	}
	if (getenv("CPROF_DEBUG"))
		fputs(buf, stderr);
	n = strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = 0;
	if (n)
		snprintf(last_libbpf_msg, sizeof(last_libbpf_msg), "%s", buf);
	return 0;
}

static long perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group, unsigned long flags)
{
	return syscall(__NR_perf_event_open, attr, pid, cpu, group, flags);
}

static int need_privileges(int err, const char *what)
{
	return cp_error(err,
			"%s: %s; run as root, or give cprof CAP_BPF and CAP_PERFMON "
			"(setcap cap_bpf,cap_perfmon+ep $(command -v cprof))",
			what, strerror(err));
}

static int cmp_pending(const void *a, const void *b)
{
	const struct pending_rec *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sorts q[0..n) whose records come as runs in time order (the sorted
 * rest of the last read, then each CPU's): adjacent runs merged, bottom up,
 * through tmp (n entries), in the order of cmp_pending. */
static void merge_runs(struct pending_rec *q, size_t n, struct pending_rec *tmp)
{
	for (;;) {
		size_t i = 0, runs = 0, o = 0;

		while (i < n) { /* two runs [i, m) and [m, e) into tmp[o..] */
			size_t m = i + 1, e, a, b;

			while (m < n && cmp_pending(&q[m - 1], &q[m]) <= 0)
				m++;
			e = m < n ? m + 1 : m;
			while (e < n && cmp_pending(&q[e - 1], &q[e]) <= 0)
				e++;
			for (a = i, b = m; a < m || b < e;)
				tmp[o++] = b >= e || (a < m && cmp_pending(&q[a], &q[b]) <= 0) ? q[a++] : q[b++];
			runs++;
			i = e;
		}
		memcpy(q, tmp, n * sizeof(*q));
		if (runs <= 1)
			return;
	}
}

/* Frees the queue's copies that were handed over: all of them once the
 * queue is empty, else those before the oldest still queued once they are
 * most of qbuf. */
static void compact_records(struct cp_sampler *s)
{
	size_t lo = SIZE_MAX, i;

	if (s->qhead == s->qn) {
		s->qhead = s->qn = 0;
		s->qlen = s->qlive = 0;
		return;
	}
	if (s->qlen < 65536 || s->qlen < 2 * s->qlive)
		return;
	for (i = s->qhead; i < s->qn; i++)
		lo = s->q[i].off < lo ? s->q[i].off : lo;
	memmove(s->qbuf, s->qbuf + lo, s->qlen - lo);
	s->qlen -= lo;
	for (i = s->qhead; i < s->qn; i++)
		s->q[i].off -= lo;
}

/* Hands over the pending records up to time t (all of them: UINT64_MAX). */
static void deliver_records_until(struct cp_sampler *s, uint64_t t)
{
	if (s->qunsorted) { /* the CPUs' records, each CPU's in order, merged */
		size_t n = s->qn - s->qhead;

		if (!cp_grow((void **)&s->qtmp, &s->qtmpcap, n, sizeof(*s->qtmp)))
			merge_runs(s->q + s->qhead, n, s->qtmp);
		else /* no room to merge through: sorted in place */
			cp_qsort(s->q + s->qhead, n, sizeof(*s->q), cmp_pending);
		s->qunsorted = false;
	}
	while (s->qhead < s->qn && s->q[s->qhead].time <= t) {
		const struct perf_event_header *h = (const void *)(s->qbuf + s->q[s->qhead++].off);

		s->qlive -= h->size;
		deliver_record(s, h);
	}
	compact_records(s);
}

static int on_sample(void *ctx, void *data, size_t len)
{
	struct cp_sampler *s = ctx;
	const struct cp_sample_rec *r = data;

	if (len >= CP_SAMPLE_END_LEN && (r->flags & CP_SAMPLE_OFFCPU_END)) {
		/* the end of a wait: a header only, in time order with the rest */
	} else if (len < offsetof(struct cp_sample_rec, ustack) ||
		   len < offsetof(struct cp_sample_rec, ustack) + (size_t)r->ustack_len ||
		   (r->rt_frames && (r->rt_frames > CP_RT_FRAMES_MAX ||
				     len < offsetof(struct cp_sample_rec, ustack) + (((size_t)r->ustack_len + 7) & ~(size_t)7) +
						   r->rt_frames * sizeof(struct cp_rt_frame)))) {
		return 0;
	}
	if (r->time_ns >= s->records_until) {
		/* the sample is newer than the records read: read them first, so
		 * that the exec and mmap records of its process are known */
		s->records_until = (uint64_t)cp_mono_ns();
		perf_buffer__consume(s->pb);
	}
	deliver_records_until(s, r->time_ns);
	s->ops->sample(s->arg, r);
	/* bounded work per call, so that a flood cannot starve the caller's
	 * clock (duration, flushes, signals) */
	if (++s->delivered >= 4096)
		return -ECANCELED;
	return 0;
}

/* The records of the dummy event, with sample_id_all (pid, tid, time). */
struct sample_id {
	__u32 pid, tid;
	__u64 time;
};

static const struct sample_id *record_id(const struct perf_event_header *h)
{
	if (h->size < sizeof(*h) + sizeof(struct sample_id))
		return NULL;
	return (const struct sample_id *)((const char *)h + h->size - sizeof(struct sample_id));
}

static void deliver_record(struct cp_sampler *s, const struct perf_event_header *h)
{
	const char *p = (const char *)(h + 1), *end = (const char *)h + h->size;
	const struct sample_id *id = record_id(h);

	switch (h->type) {
	case PERF_RECORD_MMAP2: {
		struct {
			__u32 pid, tid;
			__u64 addr, len, pgoff;
			union {
				struct {
					__u32 maj, min;
					__u64 ino, ino_generation;
				};
				struct {
					__u8 build_id_size, reserved1;
					__u16 reserved2;
					__u8 build_id[20];
				};
			};
			__u32 prot, flags;
		} m;
		struct cp_mmap_event e;
		const char *name = p + sizeof(m);

		if (!id || p + sizeof(m) >= end)
			break;
		memcpy(&m, p, sizeof(m));
		e.pid = m.pid;
		e.tid = m.tid;
		e.start = m.addr;
		e.len = m.len;
		e.pgoff = m.pgoff;
		e.prot = m.prot;
		e.build_id = NULL;
		e.build_id_len = 0;
		if ((h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) && m.build_id_size <= 20) {
			e.build_id = (const uint8_t *)p + offsetof(__typeof__(m), build_id);
			e.build_id_len = m.build_id_size;
		}
		if (!memchr(name, 0, (size_t)((const char *)id - name)))
			break;
		e.path = name;
		e.time_ns = id->time;
		if (s->ops->mmap)
			s->ops->mmap(s->arg, &e);
		break;
	}
	case PERF_RECORD_COMM: {
		__u32 ids[2];
		const char *name = p + sizeof(ids);

		if (!id || name >= (const char *)id || !memchr(name, 0, (size_t)((const char *)id - name)))
			break;
		memcpy(ids, p, sizeof(ids));
		if (s->ops->comm)
			s->ops->comm(s->arg, ids[0], ids[1], name, h->misc & PERF_RECORD_MISC_COMM_EXEC, id->time);
		break;
	}
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT: {
		__u32 ids[4];
		__u64 t;

		if ((size_t)(end - p) < sizeof(ids) + sizeof(t))
			break;
		memcpy(ids, p, sizeof(ids));
		memcpy(&t, p + sizeof(ids), sizeof(t));
		if (h->type == PERF_RECORD_FORK && s->ops->fork)
			s->ops->fork(s->arg, ids[0], ids[1], ids[2], t);
		else if (h->type == PERF_RECORD_EXIT && s->ops->exit)
			s->ops->exit(s->arg, ids[0], ids[2], t);
		break;
	}
	case PERF_RECORD_LOST: {
		__u64 v[2];

		if ((size_t)(end - p) >= sizeof(v)) {
			memcpy(v, p, sizeof(v));
			s->lost_records += v[1];
		}
		break;
	}
	default:
		break;
	}
}

/* Queues a record (sorted by time before the next hand-over: each CPU's
 * come in order, the CPUs' one after the other).  Lost-record counts, and
 * records when memory is short, are handled at once. */
static enum bpf_perf_event_ret on_record(void *ctx, int cpu, struct perf_event_header *h)
{
	struct cp_sampler *s = ctx;
	const struct sample_id *id = record_id(h);
	uint64_t t;
	size_t size;

	(void)cpu;
	if (h->type == PERF_RECORD_LOST || !id) {
		deliver_record(s, h);
		return LIBBPF_PERF_EVENT_CONT;
	}
	t = id->time;
	if (s->qhead > 0 && s->qn == s->qcap) { /* room at the front: slide down */
		memmove(s->q, s->q + s->qhead, (s->qn - s->qhead) * sizeof(*s->q));
		s->qn -= s->qhead;
		s->qhead = 0;
	}
	/* 8-byte aligned copies: the records' fields are read in place */
	size = ((size_t)h->size + 7) & ~(size_t)7;
	if (cp_grow((void **)&s->qbuf, &s->qbufcap, s->qlen + size, 1) ||
	    cp_grow((void **)&s->q, &s->qcap, s->qn + 1, sizeof(*s->q))) {
		deliver_record(s, h);
		return LIBBPF_PERF_EVENT_CONT;
	}
	memcpy(s->qbuf + s->qlen, h, h->size);
	if (s->qn > s->qhead && s->q[s->qn - 1].time > t)
		s->qunsorted = true;
	s->q[s->qn].time = t;
	s->q[s->qn].seq = s->qseq++;
	s->q[s->qn].off = s->qlen;
	s->qn++;
	s->qlen += size;
	s->qlive += h->size;
	return LIBBPF_PERF_EVENT_CONT;
}

static int open_records(struct cp_sampler *s)
{
	struct perf_event_attr attr;
	int err;

	s->pb_map_fd = bpf_map_create(BPF_MAP_TYPE_PERF_EVENT_ARRAY, "cp_records", sizeof(int), sizeof(int),
				      (unsigned)libbpf_num_possible_cpus(), NULL);
	if (s->pb_map_fd < 0)
		return need_privileges(errno, "cannot create a BPF map");
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	attr.sample_id_all = 1;
	attr.mmap = 1;
	attr.mmap2 = 1;
	attr.comm = 1;
	attr.comm_exec = 1;
	attr.task = 1;
	attr.build_id = 1;
	attr.use_clockid = 1;
	attr.clockid = CLOCK_MONOTONIC;
	attr.watermark = 1;
	attr.wakeup_watermark = 64 * 1024;
	s->pb = perf_buffer__new_raw(s->pb_map_fd, 64, &attr, on_record, s, NULL);
	if (!s->pb) {
		err = errno;
		if (err == EPERM || err == EACCES)
			return need_privileges(err, "cannot open perf events");
		return cp_error(err, "cannot open perf events for mmap/exec records: %s", strerror(err));
	}
	return 0;
}

/* The ring holds about 1/8 s of samples at full stack size (the reader is
 * woken at an eighth full and drains every 100 ms anyway): a power of two
 * from 512 KiB to 64 MiB.  Off-CPU records come at the rate threads wait, not
 * at the sampling rate: on a busy host (a build, hundreds of processes
 * waking and sleeping) several times as many, in bursts, so the ring is 8
 * times the size then (a lost end of a wait loses the wait).  It is mapped
 * twice, so it counts double in RSS. */
static size_t ring_size(const struct cp_sampler_opts *o)
{
	size_t want, size = 512u << 10;
	int ncpu = libbpf_num_possible_cpus();

	want = (size_t)o->freq * (size_t)(ncpu > 0 ? ncpu : 1) * sizeof(struct cp_sample_rec) / 8;
	if (o->offcpu)
		want *= 8;
	while (size < want && size < (64u << 20))
		size <<= 1;
	return size;
}

/* /sys/devices/system/cpu/online: "0-3,5,7-8" */
static int online_cpus(bool **out, int *n)
{
	char buf[4096];
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	size_t len;
	const char *p;
	bool *on;
	int max = libbpf_num_possible_cpus();

	if (!f)
		return cp_error(errno, "cannot read /sys/devices/system/cpu/online: %s", strerror(errno));
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = 0;
	if (max <= 0)
		return cp_error(EINVAL, "cannot count the CPUs");
	on = calloc((size_t)max, sizeof(*on));
	if (!on)
		return cp_error(ENOMEM, "out of memory counting the CPUs");
	for (p = buf; *p && *p != '\n';) {
		char *e;
		long a = strtol(p, &e, 10), b = a;

		if (e == p)
			break;
		if (*e == '-')
			b = strtol(e + 1, &e, 10);
		for (long c = a; c <= b && c < max; c++)
			if (c >= 0)
				on[c] = true;
		p = *e == ',' ? e + 1 : e;
	}
	*out = on;
	*n = max;
	return 0;
}

/* Opens and loads the program for o (CO-RE against the BTF at btf, or the
 * kernel's when NULL) into s->skel: 0 or -errno, libbpf's last message in
 * last_libbpf_msg. */
static int load_skel(struct cp_sampler *s, const struct cp_sampler_opts *o, const char *btf)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = btf);
	int err;

	sampler__destroy(s->skel);
	last_libbpf_msg[0] = 0;
	if (!(s->skel = sampler__open_opts(&oo)))
		return -errno;
	s->skel->rodata->filter_pids = o->npids > 0;
	s->skel->rodata->follow_forks = o->follow_forks;
	s->skel->rodata->with_idle = o->idle;
	s->skel->rodata->filter_cgroup = o->cgroup != NULL;
	s->skel->rodata->offcpu_period_ns = o->offcpu_period_ns ? o->offcpu_period_ns : 10000000;
	s->skel->rodata->offcpu_thr_per_ns = (1ull << 32) / s->skel->rodata->offcpu_period_ns;
	s->skel->rodata->offcpu_min_ns = o->offcpu_min_ns;
	/* the off-CPU programs and their map only when asked for */
	bpf_program__set_autoload(s->skel->progs.cp_switch, o->offcpu);
	bpf_map__set_autocreate(s->skel->maps.offcpu_tasks, o->offcpu);
	bpf_map__set_max_entries(s->skel->maps.samples, (uint32_t)ring_size(o));
	err = sampler__load(s->skel);
	return err < 0 ? err : -err;
}

/* The off-CPU program, on the sched_switch tracepoint.  0 or -errno with a
 * message. */
static int attach_offcpu(struct cp_sampler *s)
{
	s->switch_link = bpf_program__attach(s->skel->progs.cp_switch);
	if (!s->switch_link)
		return cp_error(errno, "cannot attach to the sched_switch tracepoint (--off-cpu): %s", strerror(errno));
	return 0;
}

struct cp_sampler *cp_sampler_new(const struct cp_sampler_opts *o, const struct cp_sampler_ops *ops, void *arg)
{
	struct cp_sampler *s;
	struct epoll_event ev;
	int err, cpu, nposs;
	bool *online = NULL, cut;
	int nonline = 0;
	char btfpath[4300];
	const void *objbytes;
	size_t objlen;

	libbpf_set_print(libbpf_print);
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		cp_error(ENOTSUP, "this kernel has no BTF (/sys/kernel/btf/vmlinux): cprof record needs a kernel "
				  "built with CONFIG_DEBUG_INFO_BTF=y (5.15 or later)");
		errno = ENOTSUP;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->ops = ops;
	s->arg = arg;
	s->epfd = -1;
	s->pb_map_fd = -1;
	s->cgroup_fd = -1;

	/* records first, so that no mapping made after sampling starts is missed */
	err = open_records(s);
	if (err)
		goto fail;

	if (o->cgroup) {
		struct stat st;

		s->cgroup_fd = open(o->cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (s->cgroup_fd < 0 || fstat(s->cgroup_fd, &st) != 0) {
			err = cp_error(errno, "cannot open cgroup %s: %s (give a cgroup v2 directory, e.g. "
					      "/sys/fs/cgroup/system.slice/ssh.service)", o->cgroup, strerror(errno));
			goto fail;
		}
	}
	/* relocated against the kernel types it needs, cached (btfmin.h); if
	 * that fails to load, against the kernel's whole BTF */
	objbytes = sampler__elf_bytes(&objlen);
	cut = cp_btfmin_path(objbytes, objlen, btfpath, sizeof(btfpath)) == 0;
	err = load_skel(s, o, cut ? btfpath : NULL);
	if (err && cut && err != -EPERM && err != -EACCES) {
		if (getenv("CPROF_DEBUG"))
			fprintf(stderr, "the BPF program did not load with the cut BTF %s (%s): with the kernel's\n",
				btfpath, strerror(-err));
		cp_btfmin_forget(btfpath);
		err = load_skel(s, o, NULL);
	}
	if (err) {
		err = -err;
		if (err == EPERM || err == EACCES)
			err = need_privileges(err, "cannot load the BPF program");
		else
			err = cp_error(err, "the kernel refused the BPF program: %s%s%s (cprof record needs Linux "
					    "5.15 or later with BPF ring buffers and BTF)", strerror(err),
				       last_libbpf_msg[0] ? ": " : "", last_libbpf_msg);
		goto fail;
	}
	if (o->cgroup) {
		uint32_t zero = 0;

		if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.cgroups), &zero, &s->cgroup_fd, BPF_ANY)) {
			err = cp_error(errno, "%s is not a cgroup v2 directory: %s", o->cgroup, strerror(errno));
			goto fail;
		}
	}
	for (size_t i = 0; i < o->npids; i++) {
		err = cp_sampler_add_pid(s, o->pids[i]);
		if (err)
			goto fail;
	}
	if (o->follow_forks) {
		s->fork_link = bpf_program__attach(s->skel->progs.cp_fork);
		s->exit_link = s->fork_link ? bpf_program__attach(s->skel->progs.cp_exit) : NULL;
		if (!s->exit_link) {
			err = cp_error(errno, "cannot attach to the fork/exit tracepoints: %s", strerror(errno));
			goto fail;
		}
	}

	if (o->offcpu && (err = attach_offcpu(s)))
		goto fail;

	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.samples), on_sample, s, NULL);
	if (!s->rb) {
		err = cp_error(errno, "cannot set up the ring buffer: %s", strerror(errno));
		goto fail;
	}

	err = online_cpus(&online, &nonline);
	if (err)
		goto fail;
	nposs = nonline;
	s->pe_fds = calloc((size_t)nposs, sizeof(int));
	s->links = calloc((size_t)nposs, sizeof(*s->links));
	if (!s->pe_fds || !s->links) {
		err = -ENOMEM;
		goto fail;
	}
	for (cpu = 0; cpu < nposs; cpu++)
		s->pe_fds[cpu] = -1;
	s->ncpus = nposs;
	for (cpu = 0; cpu < nposs; cpu++) {
		struct perf_event_attr attr;
		int fd;

		if (!online[cpu])
			continue;
		memset(&attr, 0, sizeof(attr));
		attr.size = sizeof(attr);
		attr.type = PERF_TYPE_SOFTWARE;
		attr.config = PERF_COUNT_SW_CPU_CLOCK;
		attr.freq = 1;
		attr.sample_freq = (__u64)o->freq;
		fd = (int)perf_event_open(&attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			if (errno == ENODEV)
				continue; /* went offline meanwhile */
			if (errno == EINVAL)
				err = cp_error(errno, "cannot sample at %d Hz: the kernel refuses it (see "
						      "/proc/sys/kernel/perf_event_max_sample_rate)", o->freq);
			else if (errno == EPERM || errno == EACCES)
				err = need_privileges(errno, "cannot open a cpu-clock perf event");
			else
				err = cp_error(errno, "cannot open a cpu-clock perf event on CPU %d: %s", cpu,
					       strerror(errno));
			goto fail;
		}
		s->pe_fds[cpu] = fd;
		s->links[cpu] = bpf_program__attach_perf_event(s->skel->progs.cp_sample, fd);
		if (!s->links[cpu]) {
			err = cp_error(errno, "cannot attach the BPF program to CPU %d: %s", cpu, strerror(errno));
			goto fail;
		}
	}

	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0) {
		err = -errno;
		goto fail;
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(s->rb), &ev) ||
	    epoll_ctl(s->epfd, EPOLL_CTL_ADD, perf_buffer__epoll_fd(s->pb), &ev)) {
		err = -errno;
		goto fail;
	}
	free(online);
	return s;
fail:
	free(online);
	cp_sampler_free(s);
	errno = err < 0 ? -err : err;
	return NULL;
}

void cp_sampler_free(struct cp_sampler *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->ncpus; i++) {
		bpf_link__destroy(s->links[i]);
		if (s->pe_fds[i] >= 0)
			close(s->pe_fds[i]);
	}
	free(s->links);
	free(s->pe_fds);
	bpf_link__destroy(s->fork_link);
	bpf_link__destroy(s->exit_link);
	bpf_link__destroy(s->switch_link);
	ring_buffer__free(s->rb);
	perf_buffer__free(s->pb);
	free(s->q);
	free(s->qtmp);
	free(s->qbuf);
	sampler__destroy(s->skel);
	if (s->pb_map_fd >= 0)
		close(s->pb_map_fd);
	if (s->cgroup_fd >= 0)
		close(s->cgroup_fd);
	if (s->epfd >= 0)
		close(s->epfd);
	free(s);
}

void cp_sampler_stop(struct cp_sampler *s)
{
	s->stopped = true;
	for (int i = 0; i < s->ncpus; i++) {
		bpf_link__destroy(s->links[i]);
		s->links[i] = NULL;
	}
}

int cp_sampler_add_pid(struct cp_sampler *s, uint32_t pid)
{
	uint8_t one = 1;

	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.pids), &pid, &one, BPF_ANY))
		return cp_error(errno, "cannot add pid %u to the filter: %s", pid, strerror(errno));
	return 0;
}

int cp_sampler_set_runtime(struct cp_sampler *s, uint32_t pid, const struct cp_rt_proc *rp)
{
	int fd = bpf_map__fd(s->skel->maps.rtprocs);

	if (rp ? bpf_map_update_elem(fd, &pid, rp, BPF_ANY) : bpf_map_delete_elem(fd, &pid) && errno != ENOENT)
		return -errno;
	return 0;
}

/* A sample is in the ring this long after it was taken, at most (it is
 * written in place between its time stamp and its submission). */
#define SAMPLE_LATENCY_NS 50000000u

int cp_sampler_drain(struct cp_sampler *s)
{
	uint64_t start;
	int err;

	s->delivered = 0;
	s->records_until = start = (uint64_t)cp_mono_ns();
	err = perf_buffer__consume(s->pb);
	if (err < 0 && err != -EINTR)
		return cp_error(-err, "reading mmap/exec records: %s", strerror(-err));
	err = ring_buffer__consume(s->rb);
	if (err < 0 && err != -EINTR && err != -ECANCELED)
		return cp_error(-err, "reading samples: %s", strerror(-err));
	/* the ring is empty: no sample older than this is still to come, so the
	 * records up to it are handed over (all of them once sampling stopped) */
	if (s->delivered < 4096)
		deliver_records_until(s, s->stopped ? UINT64_MAX
						    : start > SAMPLE_LATENCY_NS ? start - SAMPLE_LATENCY_NS : 0);
	return s->delivered;
}

int cp_sampler_poll(struct cp_sampler *s, int timeout_ms)
{
	struct epoll_event ev[2];
	int n = epoll_wait(s->epfd, ev, 2, timeout_ms);

	if (n < 0 && errno == EINTR)
		return cp_error(EINTR, "interrupted by a signal");
	if (n < 0)
		return cp_error(errno, "epoll_wait: %s", strerror(errno));
	return cp_sampler_drain(s);
}

void cp_sampler_counts(struct cp_sampler *s, struct cp_sampler_counts *c)
{
	int ncpu = libbpf_num_possible_cpus();
	struct cp_sampler_stats *st;
	struct bpf_prog_info info;
	uint32_t zero = 0, len = sizeof(info);

	memset(c, 0, sizeof(*c));
	c->lost_records = s->lost_records;
	st = ncpu > 0 ? calloc((size_t)ncpu, sizeof(*st)) : NULL;
	if (st && bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.stats), &zero, st) == 0) {
		for (int i = 0; i < ncpu; i++) {
			c->samples += st[i].samples;
			c->dropped += st[i].dropped;
			c->ustack_fault += st[i].ustack_fault;
			c->offcpu_sent += st[i].offcpu_sent;
		}
	}
	free(st);
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_program__fd(s->skel->progs.cp_sample), &info, &len) == 0) {
		c->bpf_run_ns = info.run_time_ns;
		c->bpf_run_cnt = info.run_cnt;
	}
}
