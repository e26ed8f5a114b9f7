/* SPDX-License-Identifier: MIT */
/* A CPU-bound workload with known call paths, for bench/record_stacks.sh and
 * bench/record_overhead.sh.  Built -O2 -fomit-frame-pointer -g, so a
 * frame-pointer walk cannot unwind it; one path goes through zlib (Debian's
 * libz.so is built without frame pointers too).  The paths, and the share of
 * the time each is meant to take:
 *
 *   main -> a -> b -> leaf_b                      ~20%
 *   main -> c -> leaf_c                           ~12%
 *   main -> rec -> rec -> ... (25 deep) -> leaf_rec ~16%
 *   main -> big -> leaf_big (a 6 KiB stack frame)  ~8%
 *   main -> d -> d_inline (inlined into d)        ~8%
 *   main -> zpath -> compress2 -> deflate -> ...  ~40%
 *
 * A profiler must show d_inline as an inline frame inside d (perf does),
 * not instead of d.
 *
 * usage: stack_workload [SECONDS]   (default 10; 0 runs until killed) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

/* noipa: no inlining, cloning or interprocedural shortcuts, so every
 * function is a real frame (clang has no noipa; noinline is close enough) */
#if defined(__GNUC__) && !defined(__clang__)
#define FRAME __attribute__((noipa))
#else
#define FRAME __attribute__((noinline))
#endif

static volatile uint64_t sink;

/* spin for about n units of work in the caller's frame */
#define SPIN(n, seed)                                                                                                  \
	do {                                                                                                           \
		uint64_t x_ = (seed) | 1;                                                                              \
		for (long i_ = 0; i_ < (n); i_++)                                                                      \
			x_ = x_ * 6364136223846793005ULL + 1442695040888963407ULL;                                     \
		sink += x_;                                                                                            \
	} while (0)

FRAME uint64_t leaf_b(long n)
{
	SPIN(n, 3);
	return sink;
}

/* the "+ 1"s keep the calls out of tail position: a sibling call would
 * leave the caller off the stack */
FRAME uint64_t b(long n)
{
	return leaf_b(n) + 1;
}

FRAME uint64_t a(long n)
{
	return b(n) + 1;
}

FRAME uint64_t leaf_c(long n)
{
	SPIN(n, 5);
	return sink;
}

FRAME uint64_t c(long n)
{
	return leaf_c(n) + 1;
}

FRAME uint64_t leaf_rec(long n)
{
	SPIN(n, 7);
	return sink;
}

/* called through a volatile pointer so the compiler cannot turn the
 * recursion into a loop */
FRAME uint64_t rec(int depth, long n);
static uint64_t (*volatile rec_fn)(int, long) = rec;

FRAME uint64_t rec(int depth, long n)
{
	if (depth == 0)
		return leaf_rec(n) + 1;
	return rec_fn(depth - 1, n) * 3 + (uint64_t)depth;
}

FRAME uint64_t leaf_big(volatile unsigned char *buf, long n)
{
	SPIN(n, buf[n % 6144]);
	return sink;
}

/* a function with a large frame: the unwinder must copy past it */
FRAME uint64_t big(long n)
{
	volatile unsigned char buf[6144];

	for (size_t i = 0; i < sizeof(buf); i += 64)
		buf[i] = (unsigned char)i;
	return leaf_big(buf, n) + buf[100];
}

static inline __attribute__((always_inline)) uint64_t d_inline(long n)
{
	SPIN(n, 11);
	return sink;
}

FRAME uint64_t d(long n)
{
	return d_inline(n) + 1;
}

static unsigned char zin[64 << 10], zout[80 << 10];

FRAME uint64_t zpath(int reps)
{
	uint64_t t = 0;

	for (int i = 0; i < reps; i++) {
		uLongf len = sizeof(zout);

		if (compress2(zout, &len, zin, sizeof(zin), 6) != Z_OK)
			abort();
		t += len;
	}
	return t;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10, t0;
	uint64_t x = 88172645463325252ULL, acc = 0;
	unsigned long rounds = 0;

	/* compressible but not trivially: deflate does real matching */
	for (size_t i = 0; i < sizeof(zin); i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		zin[i] = (unsigned char)("abcdefgh"[x % 8] + (x >> 60 == 0 ? (x >> 8) % 64 : 0));
	}
	t0 = now();
	/* one round is a few ms; the shares above are set by these counts */
	do {
		acc += a(2500000);
		acc += c(1500000);
		acc += rec(24, 2000000);
		acc += big(1000000);
		acc += d(1000000);
		acc += zpath(1);
		rounds++;
	} while (secs <= 0 || now() - t0 < secs);
	printf("%lu rounds %llu\n", rounds, (unsigned long long)(acc & 0xff));
	return 0;
}
