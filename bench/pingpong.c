/* Two threads ping-pong one byte over two pipes for SECONDS (argv[1]), as
 * fast as the scheduler lets them: a context-switch storm, for
 * bench/offcpu_cost.sh.  Prints the round trips, the wall time from the
 * second thread's start to its end and the two threads' CPU time (ns): the
 * exact off-CPU time of the two is 2 x wall - CPU. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int ab[2], ba[2];
static int64_t pong_cpu;

static int64_t ns(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void *pong(void *arg)
{
	char c;

	(void)arg;
	while (read(ab[0], &c, 1) == 1)
		if (write(ba[1], &c, 1) != 1)
			break;
	pong_cpu = ns(CLOCK_THREAD_CPUTIME_ID);
	return NULL;
}

int main(int argc, char **argv)
{
	int64_t secs = (int64_t)((argc > 1 ? atof(argv[1]) : 10) * 1e9), t0, t1, cpu0;
	unsigned long n = 0;
	pthread_t th;
	char c = 1;

	if (pipe(ab) || pipe(ba))
		return 1;
	/* both threads' lives: from before the second starts to after it ends */
	t0 = ns(CLOCK_MONOTONIC);
	cpu0 = ns(CLOCK_THREAD_CPUTIME_ID);
	if (pthread_create(&th, NULL, pong, NULL))
		return 1;
	do {
		for (int i = 0; i < 1000; i++, n++)
			if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
				return 1;
	} while (ns(CLOCK_MONOTONIC) - t0 < secs);
	close(ab[1]);
	pthread_join(th, NULL);
	t1 = ns(CLOCK_MONOTONIC);
	printf("%lu %lld %lld\n", n, (long long)(t1 - t0),
	       (long long)(ns(CLOCK_THREAD_CPUTIME_ID) - cpu0 + pong_cpu));
	return 0;
}
