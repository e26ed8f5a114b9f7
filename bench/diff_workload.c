/* A workload with known shares, for bench/diff_significance.sh: for SECONDS
 * (argv[1]), main loops over f1..f10, each spinning for a number of
 * iterations of the same loop; f1's is WEIGHT (argv[2], default 1) times the
 * others', so that its share of the CPU is WEIGHT / (WEIGHT + 9): 10% at 1,
 * 13% at 1.345.  Built without inlining, so that each fi is a frame. */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

/* each with its own increment, so that no two are the same code (GCC folds
 * identical functions into one at -O2) */
#define SPIN(name, inc)                                                   \
	__attribute__((noinline)) static void name(long n)                \
	{                                                                 \
		uint64_t x = sink;                                        \
		for (long i = 0; i < n; i++)                              \
			x = x * 6364136223846793005ull + (inc);           \
		sink = x;                                                 \
	}
SPIN(f1, 1)
SPIN(f2, 3)
SPIN(f3, 5)
SPIN(f4, 7)
SPIN(f5, 9)
SPIN(f6, 11)
SPIN(f7, 13)
SPIN(f8, 15)
SPIN(f9, 17)
SPIN(f10, 19)

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10, w = argc > 2 ? atof(argv[2]) : 1, t0 = now();
	long n = 20000, n1 = (long)(n * w);

	/* the clock read once every 64 rounds: its share (which a longer f1
	 * would shrink, a real change) stays far below what a test can see */
	for (unsigned r = 0; (r & 63) || now() - t0 < secs; r++) {
		f1(n1);
		f2(n);
		f3(n);
		f4(n);
		f5(n);
		f6(n);
		f7(n);
		f8(n);
		f9(n);
		f10(n);
	}
	return 0;
}
