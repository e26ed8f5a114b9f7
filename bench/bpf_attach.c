/* Loads a BPF object (argv[1]), attaches all its programs and keeps them
 * until its standard input closes: for the benchmarks' calibration programs
 * (bench/switch_empty.bpf.c).  Prints "attached" once they are. */
#include <bpf/libbpf.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct bpf_object *o;
	struct bpf_program *p;
	char c;

	if (argc != 2 || !(o = bpf_object__open_file(argv[1], NULL)) || bpf_object__load(o)) {
		fprintf(stderr, "bpf_attach: cannot load %s\n", argc > 1 ? argv[1] : "(no object)");
		return 1;
	}
	bpf_object__for_each_program(p, o)
		if (!bpf_program__attach(p)) {
			fprintf(stderr, "bpf_attach: cannot attach %s\n", bpf_program__name(p));
			return 1;
		}
	printf("attached\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	bpf_object__close(o);
	return 0;
}
