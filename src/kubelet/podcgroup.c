/* A CRI pod's own cgroup <--cgroup-parent>/pod<uid> (runtime_cri.h): made before its sandbox,
 * with the pod's pids limit, and removed with the pod. */
#define _GNU_SOURCE
#include "runtime_cri.h"
#include "runtime_common.h"
#include "ursa/buf.h"
#include "ursa/log.h"
#include "ursa/xalloc.h"
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The pids controller's mount point from /proc/self/mounts text (v1 "pids" hierarchy first, else a
 * cgroup2 mount) into out; false when there is none. */
bool cri_pids_mount(const char *mounts, char *out, size_t max)
{
	bool v2 = false;
	for (const char *l = mounts; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		char dev[64], dir[256], type[32], opts[512];
		char line[1024];
		snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1), l);
		if (sscanf(line, "%63s %255s %31s %511s", dev, dir, type, opts) == 4) {
			bool pids = false;
			for (char *save = NULL, *o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save))
				pids = pids || strcmp(o, "pids") == 0;
			if (strcmp(type, "cgroup") == 0 && pids) {
				snprintf(out, max, "%s", dir);
				return true;
			}
			if (strcmp(type, "cgroup2") == 0 && !v2) {
				snprintf(out, max, "%s", dir);
				v2 = true;
			}
		}
		l = nl ? nl + 1 : NULL;
	}
	return v2;
}

static char *pids_mount(void)
{
	FILE *f = fopen("/proc/self/mounts", "re");
	if (!f)
		return NULL;
	struct buf b = BUF_INIT;
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(&b, chunk, n);
	fclose(f);
	char dir[256];
	char *r = cri_pids_mount(buf_cstr(&b), dir, sizeof(dir)) ? xstrdup(dir) : NULL;
	buf_release(&b);
	return r;
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");
	if (!f)
		return -1;
	int rc = fputs(text, f) < 0 ? -1 : 0;
	return fclose(f) != 0 || rc ? -1 : 0;
}

/* Creates the pod's cgroup in the pids hierarchy with pids.max (cgroup v2: pids enabled in the
 * parents' cgroup.subtree_control on the way). The runtime's containers go below it, so the limit
 * holds for all of the pod's processes together. */
void cri_pod_pids_limit(const char *cgroup, long long max_pids)
{
	if (!cgroup || max_pids <= 0)
		return;
	char *mnt = pids_mount();
	if (!mnt) {
		log_warn("cri: no pids cgroup controller: --pod-max-pids not applied", "cgroup=\"%s\"", cgroup);
		return;
	}
	char *dir = xasprintf("%s%s", mnt, cgroup);
	rt_mkdir_p(dir, 0755);
	char *max = xasprintf("%s/pids.max", dir);
	char val[32];
	snprintf(val, sizeof(val), "%lld", max_pids);
	if (access(max, F_OK) != 0) { /* cgroup v2: enable pids from the mount down */
		for (char *sl = strchr(dir + strlen(mnt) + 1, '/');; sl = strchr(sl + 1, '/')) {
			if (sl)
				*sl = '\0';
			char *parent = xstrdup(dir);
			char *cut = strrchr(parent, '/');
			*cut = '\0';
			char *ctl = xasprintf("%s/cgroup.subtree_control", parent);
			write_file(ctl, "+pids");
			free(ctl);
			free(parent);
			if (!sl)
				break;
			*sl = '/';
		}
	}
	if (write_file(max, val) != 0)
		log_warn("cri: cannot set the pod's pids limit", "path=\"%s\" err=\"%s\"", max, strerror(errno));
	free(max);
	free(dir);
	free(mnt);
}

/* Removes the pod's cgroup directories (empty once its containers are gone) from every hierarchy. */
void cri_pod_cgroup_remove(const char *cgroup)
{
	if (!cgroup)
		return;
	DIR *d = opendir("/sys/fs/cgroup");
	struct dirent *e;
	char *top = xasprintf("/sys/fs/cgroup%s", cgroup);
	rmdir(top);
	free(top);
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *path = xasprintf("/sys/fs/cgroup/%s%s", e->d_name, cgroup);
		rmdir(path);
		free(path);
	}
	if (d)
		closedir(d);
}

