/* The atomic writer of configMap, secret, downwardAPI and projected volumes, as Kubernetes' kubelet
 * lays them out: the files live in a timestamped directory "..<time>.<random>", the symlink
 * "..data" points to it, and each top-level name of the volume is a symlink "name -> ..data/name".
 * A new set of files is written into a new directory and "..data" swapped to it with one rename,
 * so a reader sees either the old set or the new one, never a mix; the old directory is removed
 * after the swap. Nothing changes when the contents and modes are those already there. */
#ifndef URSA_KUBELET_ATOMICDIR_H
#define URSA_KUBELET_ATOMICDIR_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "ursa/buf.h"

struct atomic_file {
	char *path;  /* relative, '/'-separated: atomicdir_path_ok */
	char *data;  /* contents (may hold NULs) */
	size_t len;
	mode_t mode; /* permission bits */
};

/* True for a path Kubernetes accepts for a key or item path: relative, not empty, at most 4096
 * bytes, no ".." component, no component starting with "..", no empty component. */
bool atomicdir_path_ok(const char *path);

/* Makes dir (created 0755 if missing) hold exactly files. 0 with *ret_changed (may be NULL) true
 * when it swapped, or -1 with the reason in err. The file list is checked first (paths, duplicates,
 * a path that is a prefix directory of another): nothing is written when it is invalid. */
int atomicdir_write(const char *dir, const struct atomic_file *files, size_t n, bool *ret_changed, struct buf *err);

/* Frees the contents of n files. */
void atomic_files_release(struct atomic_file *files, size_t n);

#endif
