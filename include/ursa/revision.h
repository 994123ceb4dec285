/* resourceVersions as clients see them (docs/migration.md, "resourceVersions after a move").
 *
 * An object's resourceVersion is its etcd mod_revision with the partition's number above it:
 * shown = number << RV_NUMBER_SHIFT | revision. Each tenant partition of a region has its own
 * number (ursa-tp-apiserver --partition-number), so a resourceVersion a tenant's client got
 * from one partition is never taken for a revision of another after the tenant moves: the new
 * partition sees it is not its own, and answers it as Kubernetes answers one it no longer holds
 * (410 Gone for a watch or an exact list, 409 Conflict for a precondition), unless the client
 * had seen every change of the tenant up to the move's fence: then its watch goes on from the
 * move's switch (rv_resolve). Number 0 (the default) shows etcd revisions as they are.
 *
 * The number is the process's: rv_set_number once at start, before any other thread. */
#ifndef URSA_REVISION_H
#define URSA_REVISION_H
#include <stdbool.h>
#include <stdint.h>

#define RV_NUMBER_SHIFT 44 /* 2^44 revisions a partition (17.6e12) */
#define RV_NUMBER_MAX 511  /* resourceVersions stay below 2^53 (JavaScript's exact integers) */

/* number in [0, RV_NUMBER_MAX]; -1 (nothing set) otherwise. */
int rv_set_number(long long number);
unsigned rv_number(void);
/* The resourceVersion of etcd revision rev here; 0 stays 0 (no revision). rv_show_at: on the
 * partition of that number (ursactl, for a move's revisions on either side). */
int64_t rv_show(int64_t rev);
int64_t rv_show_at(unsigned number, int64_t rev);
/* The partition number a resourceVersion carries. */
unsigned rv_number_of(int64_t shown);

/* Where a resourceVersion a client gave points on this partition. */
enum rv_where {
	RV_HERE,      /* this partition's: *ret_rev its etcd revision (also for shown <= 0, as is) */
	RV_CAUGHT_UP, /* another partition's, taken by the tenant's move after every change of the
		       * tenant there: *ret_rev the move's revision here (its copy is that state) */
	RV_ELSEWHERE, /* another partition's, not known to be current (*ret_rev = shown) */
};
/* Pure. moved_from: the tenant's last move here, the source's resourceVersion of its fence
 * (every change of the tenant there at or below it); moved_to: this partition's resourceVersion
 * at which the copy held that state. Both 0 when the tenant never moved here (or unknown). */
enum rv_where rv_resolve(int64_t shown, int64_t moved_from, int64_t moved_to, int64_t *ret_rev);

#endif
