/* Replays a libFuzzer corpus (files or directories given as arguments) through
 * LLVMFuzzerTestOneInput, so ctest runs every fuzz target's corpus without libFuzzer. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "cannot open %s\n", path);
		return -1;
	}
	size_t cap = 1 << 16, len = 0;
	uint8_t *data = malloc(cap);
	size_t n;
	while ((n = fread(data + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap)
			data = realloc(data, cap *= 2);
	}
	fclose(f);
	LLVMFuzzerTestOneInput(data, len);
	free(data);
	return 0;
}

int main(int argc, char **argv)
{
	int count = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "missing corpus %s\n", argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (run_file(argv[i]) < 0)
				return 1;
			count++;
			continue;
		}
		DIR *d = opendir(argv[i]);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			char path[4096];
			snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
			if (run_file(path) < 0)
				return 1;
			count++;
		}
		if (d)
			closedir(d);
	}
	printf("replayed %d inputs\n", count);
	return count > 0 ? 0 : 1;
}
