/* SPDX-License-Identifier: MIT */
/* Without libFuzzer: run a fuzz target over the files named on the command
 * line (the seed corpus) and over prefixes and bit-flipped copies of each, so
 * every build exercises the targets with broken input too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int main(int argc, char **argv)
{
	unsigned long runs = 0;
	int i;

	for (i = 1; i < argc; i++) {
		uint8_t *data = NULL, *copy;
		size_t len = 0, cut, k;

		if (cp_read_file(argv[i], 1 << 30, &data, &len)) {
			fprintf(stderr, "replay: cannot read %s\n", argv[i]);
			return 1;
		}
		copy = malloc(len + 1);
		if (!copy)
			return 1;
		for (cut = 0; cut <= len; cut += 1 + len / 97, runs++) {
			memcpy(copy, data, cut); /* a fresh buffer of exactly cut bytes for ASan */
			uint8_t *exact = malloc(cut + 1);

			if (!exact)
				return 1;
			memcpy(exact, copy, cut);
			LLVMFuzzerTestOneInput(exact, cut);
			free(exact);
		}
		srand(42);
		for (k = 0; len && k < 200; k++, runs++) {
			memcpy(copy, data, len);
			copy[(size_t)rand() % len] ^= (uint8_t)(1u << (rand() % 8));
			LLVMFuzzerTestOneInput(copy, len);
		}
		free(copy);
		free(data);
	}
	printf("replayed %lu inputs from %d files\n", runs, argc - 1);
	return 0;
}
