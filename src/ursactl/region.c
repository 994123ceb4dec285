/* Defaults of the local region directory: $URSA_HOME, else the nearest ".ursa" above the
 * current directory, holding signing-key.pem, server (one line: the URL) and ca.crt. */
#include "ursactl.h"
#include "auth/auth_internal.h"
#include "ursa/xalloc.h"
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SERVER_FILE_MAX 4096

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

char *region_dir(void)
{
	const char *home = getenv("URSA_HOME");
	if (home && *home)
		return xstrdup(home);
	char *cwd = getcwd(NULL, 0);
	if (!cwd)
		return NULL;
	char *found = NULL;
	for (;;) {
		char *cand = xasprintf("%s/.ursa", strcmp(cwd, "/") == 0 ? "" : cwd);
		if (is_dir(cand)) {
			found = cand;
			break;
		}
		free(cand);
		char *slash = strrchr(cwd, '/');
		if (!slash || strcmp(cwd, "/") == 0)
			break;
		if (slash == cwd)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	free(cwd);
	return found;
}

static char *where_hint(const char *what, const char *env, const char *name)
{
	char *dir = region_dir();
	char *hint;
	if (dir)
		hint = xasprintf("pass %s, set %s, or create %s/%s", what, env, dir, name);
	else
		hint = xasprintf("pass %s, set %s, or create .ursa/%s (or $URSA_HOME/%s)", what, env,
				 name, name);
	free(dir);
	return hint;
}

char *region_file(const char *flag_value, const char *flag_name, const char *env, const char *name,
		  char **ret_hint)
{
	if (flag_value && *flag_value)
		return xstrdup(flag_value);
	const char *e = getenv(env);
	if (e && *e)
		return xstrdup(e);
	char *dir = region_dir();
	char *path = dir ? xasprintf("%s/%s", dir, name) : NULL;
	free(dir);
	if (path && is_file(path))
		return path;
	free(path);
	*ret_hint = where_hint(flag_name, env, name);
	return NULL;
}

static char *first_line(const char *path, char **ret_hint)
{
	struct buf data = BUF_INIT;
	char *err = NULL, *line = NULL;
	if (auth_read_file(path, SERVER_FILE_MAX, &data, &err) < 0) {
		*ret_hint = err;
		goto out;
	}
	const char *p = buf_cstr(&data);
	size_t n = strcspn(p, "\r\n");
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	while (n && (*p == ' ' || *p == '\t'))
		p++, n--;
	if (n == 0) {
		*ret_hint = xasprintf("%s: empty (it should hold the server URL)", path);
		goto out;
	}
	line = xstrndup(p, n);
out:
	buf_release(&data);
	return line;
}

char *region_server(const char *flag_value, char **ret_hint)
{
	if (flag_value && *flag_value)
		return xstrdup(flag_value);
	const char *e = getenv("URSA_SERVER");
	if (e && *e)
		return xstrdup(e);
	char *dir = region_dir();
	char *path = dir ? xasprintf("%s/server", dir) : NULL;
	char *url = NULL;
	free(dir);
	if (path && is_file(path))
		url = first_line(path, ret_hint);
	else
		*ret_hint = where_hint("--server", "URSA_SERVER", "server");
	free(path);
	return url;
}
