/* Flag parsing and help text, both driven by a command's flag table. */
#include "ursactl.h"
#include "ursa/xalloc.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("ursactl: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return EXIT_FAIL;
}

static size_t count_flags(const struct command *cmd)
{
	size_t n = 0;
	while (cmd->flags && cmd->flags[n].name)
		n++;
	return n;
}

static long find_flag(const struct command *cmd, const char *name, size_t len)
{
	for (size_t i = 0; cmd->flags && cmd->flags[i].name; i++)
		if (strlen(cmd->flags[i].name) == len && memcmp(cmd->flags[i].name, name, len) == 0)
			return (long)i;
	return -1;
}

static int usage_error(const struct command *cmd, const char *fmt, const char *arg)
{
	fprintf(stderr, "ursactl %s: ", cmd->name);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nRun 'ursactl %s --help' for usage.\n", cmd->name);
	return EXIT_USAGE;
}

/* Handles one "--name[=value]" at argv[*i]; may consume the next argument as the value. */
static int parse_one(struct flags *f, int argc, char **argv, int *i)
{
	const char *arg = argv[*i] + 2, *eq = strchr(arg, '=');
	size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
	long k = find_flag(f->cmd, arg, len);
	if (k < 0)
		return usage_error(f->cmd, "unknown flag %s", argv[*i]);
	const struct flag_spec *spec = &f->cmd->flags[k];
	if (!spec->metavar) {
		if (eq && strcmp(eq + 1, "true") != 0 && strcmp(eq + 1, "false") != 0)
			return usage_error(f->cmd, "flag --%s takes no value (or =true/=false)", spec->name);
		f->values[k] = eq && strcmp(eq + 1, "false") == 0 ? NULL : "true";
		return EXIT_OK;
	}
	if (eq) {
		f->values[k] = eq + 1;
	} else if (*i + 1 < argc) {
		f->values[k] = argv[++*i];
	} else {
		return usage_error(f->cmd, "flag --%s needs a value", spec->name);
	}
	return EXIT_OK;
}

static int check_required(const struct flags *f)
{
	for (size_t k = 0; f->cmd->flags && f->cmd->flags[k].name; k++)
		if (f->cmd->flags[k].required && !f->values[k])
			return usage_error(f->cmd, "missing required flag --%s", f->cmd->flags[k].name);
	return EXIT_OK;
}

int flags_parse(const struct command *cmd, int argc, char **argv, struct flags *ret)
{
	struct flags f = { .cmd = cmd };
	f.values = xcalloc(count_flags(cmd) + 1, sizeof(*f.values));
	f.args = xcalloc((size_t)argc + 1, sizeof(*f.args));
	int r = EXIT_OK;
	bool only_args = false;
	for (int i = 0; i < argc && r == EXIT_OK; i++) {
		const char *a = argv[i];
		if (!only_args && (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)) {
			command_help(cmd, stdout);
			r = -1;
		} else if (!only_args && strcmp(a, "--") == 0) {
			only_args = true;
		} else if (!only_args && a[0] == '-' && a[1] == '-' && a[2]) {
			r = parse_one(&f, argc, argv, &i);
		} else if (!only_args && a[0] == '-' && a[1]) {
			r = usage_error(cmd, "unknown flag %s (flags are spelled --name)", a);
		} else if (f.nargs < cmd->max_args) {
			f.args[f.nargs++] = a;
		} else {
			r = usage_error(cmd, "unexpected argument \"%s\"", a);
		}
	}
	if (r == EXIT_OK)
		r = check_required(&f);
	if (r != EXIT_OK) {
		flags_release(&f);
		return r;
	}
	*ret = f;
	return EXIT_OK;
}

void flags_release(struct flags *f)
{
	free(f->values);
	free(f->args);
	f->values = NULL;
	f->args = NULL;
	f->nargs = 0;
}

const char *flag_get(const struct flags *f, const char *name)
{
	long k = find_flag(f->cmd, name, strlen(name));
	if (k < 0) {
		fprintf(stderr, "ursactl: internal error: command %s has no flag --%s\n", f->cmd->name, name);
		abort();
	}
	return f->values[k];
}

bool flag_bool(const struct flags *f, const char *name)
{
	return flag_get(f, name) != NULL;
}

void command_help(const struct command *cmd, FILE *out)
{
	fprintf(out, "Usage: ursactl %s [flags]%s%s\n\n%s\n", cmd->name, cmd->args_usage ? " " : "",
		cmd->args_usage ? cmd->args_usage : "", cmd->summary);
	if (cmd->description)
		fprintf(out, "\n%s\n", cmd->description);
	fputs("\nFlags:\n", out);
	for (size_t k = 0; cmd->flags && cmd->flags[k].name; k++) {
		const struct flag_spec *s = &cmd->flags[k];
		struct buf left = BUF_INIT;
		buf_addf(&left, "--%s%s%s", s->name, s->metavar ? " " : "", s->metavar ? s->metavar : "");
		fprintf(out, "  %-32s %s%s\n", buf_cstr(&left), s->help, s->required ? " (required)" : "");
		buf_release(&left);
	}
	fprintf(out, "  %-32s %s\n", "-h, --help", "Show this help");
}

/* A Go-like duration without fractions: one or more <digits><unit>, unit d, h, m or s. */
int parse_duration(const char *s, int64_t *ret_s)
{
	static const int64_t cap = 100LL * 365 * 24 * 3600;
	int64_t total = 0;
	if (!s || !*s)
		return -1;
	if (strcmp(s, "0") == 0) {
		*ret_s = 0;
		return 0;
	}
	while (*s) {
		int64_t n = 0;
		const char *start = s;
		while (*s >= '0' && *s <= '9') {
			n = n * 10 + (*s++ - '0');
			if (n > cap)
				return -1;
		}
		if (s == start)
			return -1;
		switch (*s++) {
		case 'd': n *= 24 * 3600; break;
		case 'h': n *= 3600; break;
		case 'm': n *= 60; break;
		case 's': break;
		default: return -1;
		}
		total += n;
		if (total > cap)
			return -1;
	}
	*ret_s = total;
	return 0;
}
