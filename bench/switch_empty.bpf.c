/* SPDX-License-Identifier: GPL-2.0 */
/* An empty program on the tracepoint cprof record --off-cpu attaches to, for
 * bench/offcpu_cost.sh: with kernel.bpf_stats_enabled, the run time the
 * kernel reports for a program includes part of its own clock reads around
 * it; what it reports for this one, which does nothing, is that part. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("tp_btf/sched_switch")
int BPF_PROG(bench_empty, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
