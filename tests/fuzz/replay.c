/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Replays a fuzz target over files and directories given on the command line, so `make test`
 * runs every committed corpus under gcc (after libgit2's fuzzers/standalone_driver.c).
 * With clang, `make fuzz` links the same targets against libFuzzer instead.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf;
	long size;

	if (!f) {
		perror(path);
		return -1;
	}
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)size + 1);
	if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
		fclose(f);
		free(buf);
		fprintf(stderr, "%s: cannot read\n", path);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)size);
	free(buf);
	return 0;
}

static int replay_path(const char *path, unsigned *count)
{
	struct stat st;
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (stat(path, &st) < 0) {
		perror(path);
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		(*count)++;
		return replay_file(path);
	}
	d = opendir(path);
	if (!d) {
		perror(path);
		return -1;
	}
	while ((de = readdir(d))) {
		char sub[4096];
		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		if (replay_path(sub, count) < 0)
			r = -1;
	}
	closedir(d);
	return r;
}

int main(int argc, char **argv)
{
	unsigned count = 0;
	int r = 0;

	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++)
		if (replay_path(argv[i], &count) < 0)
			r = 1;
	printf("%s: replayed %u inputs\n", argv[0], count);
	return r;
}
