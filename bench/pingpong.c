/* Two threads ping-pong one byte over two pipes for SECONDS (argv[1]): a
 * context-switch storm, for bench/offcpu_cost.sh.  With RATE (argv[2], > 0)
 * the storm is paced to about RATE context switches a second by the two
 * threads (each round trip is one switch of each): after each round trip the
 * first thread spins until the time of the next, so both keep waiting only on
 * each other, as in the unpaced storm; without, as fast as the scheduler lets
 * them (which on a guest moves tenfold with the machine's other load).
 * Prints the round trips, the wall time from the second thread's start to
 * its end, the two threads' CPU time (ns) and their context switches
 * (voluntary and involuntary, as getrusage counts them): the exact off-CPU
 * time of the two is 2 x wall - CPU, and then the machine's steal time over
 * the run (ns, /proc/stat: time a hypervisor ran something else while a
 * vCPU wanted to run; the threads' CPU time leaves it out, so up to that
 * much of 2 x wall - CPU may have been no wait at all).  With WINDOW (argv[3], seconds, > 0),
 * also a line on standard error at the end of each window of about that
 * long: "w END TRIPS NS", END the window's end in CLOCK_REALTIME ns (what
 * `date +%s%N` reads), TRIPS its round trips, NS its length. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int ab[2], ba[2];
static int64_t pong_cpu;
static long pong_sw;

static int64_t ns(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* the machine's steal time so far, in ns (0 when /proc/stat has none) */
static int64_t steal_ns(void)
{
	FILE *f = fopen("/proc/stat", "re");
	unsigned long long v[8] = { 0 };
	int n = 0;

	if (f) {
		n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
			   &v[6], &v[7]);
		fclose(f);
	}
	return n == 8 ? (int64_t)(v[7] * (1e9 / (double)sysconf(_SC_CLK_TCK))) : 0;
}

static long switches(void)
{
	struct rusage u;

	return getrusage(RUSAGE_THREAD, &u) ? 0 : u.ru_nvcsw + u.ru_nivcsw;
}

static void *pong(void *arg)
{
	char c;

	(void)arg;
	while (read(ab[0], &c, 1) == 1)
		if (write(ba[1], &c, 1) != 1)
			break;
	pong_cpu = ns(CLOCK_THREAD_CPUTIME_ID);
	pong_sw = switches();
	return NULL;
}

int main(int argc, char **argv)
{
	int64_t secs = (int64_t)((argc > 1 ? atof(argv[1]) : 10) * 1e9), t0, t1, cpu0, st0;
	double rate = argc > 2 ? atof(argv[2]) : 0, trip = rate > 0 ? 2e9 / rate : 0; /* ns a round trip */
	int64_t win = (int64_t)((argc > 3 ? atof(argv[3]) : 0) * 1e9), w0, now;
	unsigned long n = 0, wn = 0;
	long sw0;
	pthread_t th;
	char c = 1;

	if (pipe(ab) || pipe(ba))
		return 1;
	/* both threads' lives: from before the second starts to after it ends */
	st0 = steal_ns();
	t0 = ns(CLOCK_MONOTONIC);
	cpu0 = ns(CLOCK_THREAD_CPUTIME_ID);
	sw0 = switches();
	if (pthread_create(&th, NULL, pong, NULL))
		return 1;
	w0 = t0;
	do {
		for (int i = 0; i < 64; i++, n++) {
			if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
				return 1;
			while (trip > 0 && ns(CLOCK_MONOTONIC) - t0 < (int64_t)((double)(n + 1) * trip))
				;
		}
		now = ns(CLOCK_MONOTONIC);
		if (win > 0 && now - w0 >= win) {
			fprintf(stderr, "w %lld %lu %lld\n", (long long)ns(CLOCK_REALTIME), n - wn, (long long)(now - w0));
			w0 = now;
			wn = n;
		}
	} while (now - t0 < secs);
	close(ab[1]);
	pthread_join(th, NULL);
	t1 = ns(CLOCK_MONOTONIC);
	printf("%lu %lld %lld %ld %lld\n", n, (long long)(t1 - t0),
	       (long long)(ns(CLOCK_THREAD_CPUTIME_ID) - cpu0 + pong_cpu), switches() - sw0 + pong_sw,
	       (long long)(steal_ns() - st0));
	return 0;
}
