/*
 * Runs a fuzz target over files without libFuzzer: the seed corpus and
 * every input that once crashed (fuzz/regress/<target>/), in `make test`,
 * so a fixed crash stays fixed. Prints "N passed, N failed"; a crash is a
 * failure of the whole program, which tests/run.sh reports.
 *
 *	test_fuzz_<target> [DIR...]
 *
 * Without DIR: fuzz/corpus/FUZZ_NAME and fuzz/regress/FUZZ_NAME.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
run_file(const char *path)
{
	FILE    *f = fopen(path, "rb");
	uint8_t *buf;
	long     n;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0) {
		if (f)
			fclose(f);
		return -1;
	}
	rewind(f);
	buf = malloc((size_t) n + 1);
	if (buf == NULL || fread(buf, 1, (size_t) n, f) != (size_t) n) {
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t) n);
	free(buf);
	return 0;
}

#ifndef FUZZ_NAME
#define FUZZ_NAME "unknown"
#endif

int
main(int argc, char **argv)
{
	const char *defaults[] = { "fuzz/corpus/" FUZZ_NAME,
		"fuzz/regress/" FUZZ_NAME };
	const char *const *dirs = (const char *const *) argv + 1;
	int                 ndirs = argc - 1;
	int                 passed = 0, failed = 0;

	if (ndirs == 0) {
		dirs  = defaults;
		ndirs = 2;
	}
	for (int i = 0; i < ndirs; i++) {
		DIR           *d = opendir(dirs[i]);
		struct dirent *e;

		if (d == NULL)
			continue;
		while ((e = readdir(d)) != NULL) {
			char path[4096];

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", dirs[i],
			    e->d_name);
			if (run_file(path) == 0)
				passed++;
			else {
				printf("FAIL cannot read %s\n", path);
				failed++;
			}
		}
		closedir(d);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
