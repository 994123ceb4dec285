/* The atomic writer of projected volume contents: see atomicdir.h. */
#include "atomicdir.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "runtime_common.h"
#include "ursa/xalloc.h"

#define DATA_LINK "..data"
#define DATA_TMP "..data_tmp"
#define MAX_FILE (16u << 20)

bool atomicdir_path_ok(const char *path)
{
	if (!path || !*path || strlen(path) > 4096 || path[0] == '/')
		return false;
	const char *p = path;
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		if (len == 0 || (len >= 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (!slash)
			break;
		p = slash + 1;
		if (!*p)
			return false; /* trailing slash */
	}
	return true;
}

void atomic_files_release(struct atomic_file *files, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(files[i].path);
		free(files[i].data);
	}
}

/* The length of the first component of path. */
static size_t first_len(const char *path)
{
	const char *slash = strchr(path, '/');
	return slash ? (size_t)(slash - path) : strlen(path);
}

/* -1 with a message when the list cannot be laid out. */
static int check_files(const struct atomic_file *files, size_t n, struct buf *err)
{
	for (size_t i = 0; i < n; i++) {
		if (!atomicdir_path_ok(files[i].path)) {
			buf_addf(err, "invalid path \"%s\"", files[i].path ? files[i].path : "");
			return -1;
		}
		for (size_t j = 0; j < i; j++) {
			const char *a = files[i].path, *b = files[j].path;
			size_t la = strlen(a), lb = strlen(b);
			if (!strcmp(a, b) || (la < lb && !strncmp(a, b, la) && b[la] == '/') ||
			    (lb < la && !strncmp(a, b, lb) && a[lb] == '/')) {
				buf_addf(err, "conflicting paths \"%s\" and \"%s\"", b, a);
				return -1;
			}
		}
	}
	return 0;
}

/* True when dir/..data holds exactly files, with their modes. */
static bool same_contents(const char *dir, const struct atomic_file *files, size_t n)
{
	char *data = xasprintf("%s/" DATA_LINK, dir);
	bool same = true;
	struct stat st;
	if (lstat(data, &st) < 0 || !S_ISLNK(st.st_mode))
		same = false;
	for (size_t i = 0; same && i < n; i++) {
		char *f = xasprintf("%s/%s", data, files[i].path);
		int fd = open(f, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		free(f);
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size != files[i].len ||
		    (st.st_mode & 07777) != (files[i].mode & 07777)) {
			same = false;
		} else {
			char *buf = xmalloc(files[i].len + 1);
			size_t got = 0;
			ssize_t r;
			while (got < files[i].len && (r = read(fd, buf + got, files[i].len - got)) > 0)
				got += (size_t)r;
			same = got == files[i].len && memcmp(buf, files[i].data, got) == 0;
			free(buf);
		}
		if (fd >= 0)
			close(fd);
	}
	/* the same count of top-level names: no file was dropped */
	if (same) {
		DIR *d = opendir(dir);
		size_t top = 0;
		struct dirent *e;
		while (d && (e = readdir(d)))
			if (e->d_name[0] != '.')
				top++;
		if (d)
			closedir(d);
		size_t want = 0;
		for (size_t i = 0; i < n; i++) {
			bool seen = false;
			size_t l = first_len(files[i].path);
			for (size_t j = 0; j < i && !seen; j++)
				seen = first_len(files[j].path) == l && !strncmp(files[i].path, files[j].path, l);
			want += !seen;
		}
		same = top == want;
	}
	free(data);
	return same;
}

static int write_file(const char *path, const struct atomic_file *f)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	size_t off = 0;
	while (off < f->len) {
		ssize_t w = write(fd, f->data + off, f->len - off);
		if (w < 0) {
			int e = errno;
			close(fd);
			return -e;
		}
		off += (size_t)w;
	}
	if (fchmod(fd, f->mode & 07777) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return close(fd) < 0 ? -errno : 0;
}

/* Writes files into a new timestamped directory of dir: its name (new string) or NULL. */
static char *write_generation(const char *dir, const struct atomic_file *files, size_t n, struct buf *err)
{
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	char stamp[64];
	strftime(stamp, sizeof(stamp), "..%Y_%m_%d_%H_%M_%S.XXXXXX", &tm);
	char *tmpl = xasprintf("%s/%s", dir, stamp);
	if (!mkdtemp(tmpl)) {
		buf_addf(err, "cannot create a directory in %s: %s", dir, strerror(errno));
		free(tmpl);
		return NULL;
	}
	chmod(tmpl, 0755);
	for (size_t i = 0; i < n; i++) {
		char *path = xasprintf("%s/%s", tmpl, files[i].path);
		char *slash = strrchr(path, '/');
		*slash = '\0';
		int rc = rt_mkdir_p(path, 0755);
		*slash = '/';
		if (!rc)
			rc = write_file(path, &files[i]);
		free(path);
		if (rc) {
			buf_addf(err, "cannot write %s: %s", files[i].path, strerror(-rc));
			rt_rm_rf(tmpl);
			free(tmpl);
			return NULL;
		}
	}
	char *name = xstrdup(strrchr(tmpl, '/') + 1);
	free(tmpl);
	return name;
}

/* Top-level symlinks: one per first component, stale ones removed. */
static void update_links(const char *dir, const struct atomic_file *files, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *top = xstrndup(files[i].path, first_len(files[i].path));
		char *link = xasprintf("%s/%s", dir, top), *target = xasprintf(DATA_LINK "/%s", top);
		char cur[4096];
		ssize_t l = readlink(link, cur, sizeof(cur) - 1);
		if (l < 0 || (size_t)l != strlen(target) || memcmp(cur, target, (size_t)l) != 0) {
			unlink(link);
			if (symlink(target, link) < 0)
				errno = 0; /* the next write tries again */
		}
		free(top);
		free(link);
		free(target);
	}
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		bool keep = false;
		size_t len = strlen(e->d_name);
		for (size_t i = 0; i < n && !keep; i++)
			keep = first_len(files[i].path) == len && !strncmp(files[i].path, e->d_name, len);
		if (!keep) {
			char *p = xasprintf("%s/%s", dir, e->d_name);
			unlink(p);
			free(p);
		}
	}
	if (d)
		closedir(d);
}

int atomicdir_write(const char *dir, const struct atomic_file *files, size_t n, bool *ret_changed, struct buf *err)
{
	if (ret_changed)
		*ret_changed = false;
	for (size_t i = 0; i < n; i++)
		if (files[i].len > MAX_FILE) {
			buf_addf(err, "%s is larger than %u bytes", files[i].path, MAX_FILE);
			return -1;
		}
	if (check_files(files, n, err))
		return -1;
	int rc = rt_mkdir_p(dir, 0755);
	if (rc) {
		buf_addf(err, "cannot create %s: %s", dir, strerror(-rc));
		return -1;
	}
	if (same_contents(dir, files, n))
		return 0;
	char *gen = write_generation(dir, files, n, err);
	if (!gen)
		return -1;
	char *data = xasprintf("%s/" DATA_LINK, dir), *tmp = xasprintf("%s/" DATA_TMP, dir);
	char old[4096];
	ssize_t ol = readlink(data, old, sizeof(old) - 1);
	old[ol > 0 ? ol : 0] = '\0';
	unlink(tmp);
	int ret = -1;
	if (symlink(gen, tmp) < 0 || rename(tmp, data) < 0) {
		buf_addf(err, "cannot swap %s: %s", data, strerror(errno));
		char *g = xasprintf("%s/%s", dir, gen);
		rt_rm_rf(g);
		free(g);
		goto out;
	}
	update_links(dir, files, n);
	if (old[0] && old[0] == '.' && old[1] == '.' && !strchr(old, '/') && strcmp(old, gen) != 0) {
		char *o = xasprintf("%s/%s", dir, old);
		rt_rm_rf(o);
		free(o);
	}
	if (ret_changed)
		*ret_changed = true;
	ret = 0;
out:
	free(gen);
	free(data);
	free(tmp);
	return ret;
}
