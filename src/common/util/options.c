#include "ursa/options.h"
#include "ursa/buf.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(const char *prog, const char *summary, const struct opt *opts, int n)
{
	printf("Usage: %s [flags]\n\n%s\n\nFlags:\n", prog, summary);
	for (int i = 0; i < n; i++) {
		const struct opt *o = &opts[i];
		char def[64] = "";
		if (o->type == OPT_STRING && *(const char **)o->ptr)
			snprintf(def, sizeof(def), " (default \"%s\")", *(const char **)o->ptr);
		else if (o->type == OPT_INT)
			snprintf(def, sizeof(def), " (default %lld)", *(long long *)o->ptr);
		printf("  --%-28s %s%s\n", o->name, o->help, def);
	}
	printf("  --%-28s %s\n", "help", "show this help and exit");
}

static int set_value(const struct opt *o, const char *v)
{
	switch (o->type) {
	case OPT_STRING:
		*(const char **)o->ptr = v;
		return 0;
	case OPT_INT:
		return parse_int64(v, (long long *)o->ptr);
	case OPT_BOOL:
		if (!v || strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
			*(bool *)o->ptr = true;
		else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
			*(bool *)o->ptr = false;
		else
			return -1;
		return 0;
	}
	return -1;
}

int opts_parse(const char *prog, const char *summary, const struct opt *opts, int n, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(prog, summary, opts, n);
			exit(0);
		}
		if (strncmp(a, "--", 2) != 0) {
			fprintf(stderr, "%s: unexpected argument \"%s\" (see --help)\n", prog, a);
			return -1;
		}
		a += 2;
		const char *eq = strchr(a, '=');
		size_t len = eq ? (size_t)(eq - a) : strlen(a);
		const struct opt *o = NULL;
		for (int k = 0; k < n && !o; k++)
			if (strlen(opts[k].name) == len && strncmp(opts[k].name, a, len) == 0)
				o = &opts[k];
		if (!o) {
			fprintf(stderr, "%s: unknown flag --%.*s (see --help)\n", prog, (int)len, a);
			return -1;
		}
		const char *v = eq ? eq + 1 : NULL;
		if (!v && o->type != OPT_BOOL) {
			if (i + 1 >= argc) {
				fprintf(stderr, "%s: flag --%s needs a value\n", prog, o->name);
				return -1;
			}
			v = argv[++i];
		}
		if (set_value(o, v) < 0) {
			fprintf(stderr, "%s: invalid value \"%s\" for --%s\n", prog, v ? v : "", o->name);
			return -1;
		}
	}
	return 0;
}
