/* One way to write a controller: a table of controller definitions run by a manager over shared
 * informers, one work queue per controller with rate-limited retries, worker threads, the
 * --controllers flag and leader election. Both controller managers are such a table.
 *
 * A definition names what it watches (collection paths; one informer per path, shared by every
 * controller watching it) and how keys are derived from an object; the manager adds the keys to
 * the controller's queue, and workers call its sync with one key at a time (a key is never
 * synced by two workers at once). sync returns 0 when done (the key's back-off is forgotten) or
 * an E_* code (the key is retried with wq_add_rate_limited). Keys are "tenant/..." so the queue
 * stays fair between tenants. All of it is thread-safe; callbacks run on informer threads
 * (keys), worker threads (sync) or the ticker thread (period). */
#ifndef URSA_CONTROLLER_H
#define URSA_CONTROLLER_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ursa/client.h"

enum ctl_event { CTL_ADD = 1, CTL_UPDATE = 2, CTL_DELETE = 4 };
#define CTL_ALL_EVENTS (CTL_ADD | CTL_UPDATE | CTL_DELETE)

/* Derives keys from obj (borrowed; for an update, the new object) and adds them to q with
 * wq_add. ud is the manager's ud. When the engine re-queues every object (a period without
 * tick_key, or taking the lease without start_on_leading) it runs under that informer's
 * informer_foreach: it must not call into the same informer then. */
typedef void (*ctl_keys_fn)(void *ud, struct workqueue *q, const json_t *obj);
/* Syncs one key: 0, or an E_* code for a retry with back-off. */
typedef int (*ctl_sync_fn)(void *ud, const char *key);

/* Key functions for common cases. */
void ctl_key_self(void *ud, struct workqueue *q, const json_t *obj);  /* object_key(obj) */
void ctl_key_none(void *ud, struct workqueue *q, const json_t *obj);  /* nothing: the informer is only read */

struct ctl_watch {
	const char *path;   /* collection of the shared informer ("/api/v1/tenants/all/pods"); NULL ends the list */
	unsigned events;    /* CTL_ADD | CTL_UPDATE | CTL_DELETE; 0 means all */
	ctl_keys_fn keys;   /* NULL means ctl_key_self */
};

#define CTL_MAX_WATCHES 16
struct ctl_def {
	const char *name;                            /* as --controllers names it */
	struct ctl_watch watch[CTL_MAX_WATCHES];     /* up to the first with path NULL */
	ctl_sync_fn sync;
	/* A tick: tick_key (if set) is queued once at start and, when period_ms > 0, again
	 * period_ms after each sync of it ends (or the sync may re-queue it itself, with
	 * wq_add_after); with period_ms > 0 and no tick_key every object of watch[0]'s informer is
	 * re-queued (through its keys function) every period_ms instead. */
	const char *tick_key;
	int64_t period_ms;
	bool off_by_default;                         /* "*" leaves it off; naming it turns it on */
	/* Worker threads of its own, at least (Kubernetes' --concurrent-*-syncs): a sync waits on
	 * the API server, so a controller with a backlog (the garbage collector after mass
	 * deletes) needs more of them than --workers; 0: the manager's count. */
	int workers;
	bool standby;                                /* also synced while not leading (it asks ctl_manager_leading) */
	/* Optional, once each: start after the informers started and before any sync (0 or E_*:
	 * the controller is then not run); stop after its workers stopped. */
	int (*start)(void *ud);
	void (*stop)(void *ud);
};

/* Parses a --controllers list into enabled[i] for defs[i]: "*" turns on every controller not
 * off_by_default, "name" turns one on, "-name" turns one off whatever comes before or after;
 * NULL or "" mean "*". E_INVALID (enabled untouched) on an unknown name or an empty item. */
int ctl_parse_controllers(const struct ctl_def *defs, size_t n, const char *list, bool *enabled);

struct ctl_config {
	const struct ctl_def *defs;  /* borrowed; must outlive the manager */
	size_t ndefs;
	const char *controllers;     /* --controllers */
	int workers;                 /* per controller, 1..64 (clamped); a def's own count if higher */
	struct rest_client *rest;    /* borrowed, for informers and the lease (NULL: no watches, no election) */
	void *ud;                    /* handed to every callback */
	/* Leader election: with leader_elect, campaigns for the Lease at lease_path as identity
	 * (NULL: hostname_pid). start_on_leading: nothing starts before the lease is first held
	 * (informers, start hooks, workers); else everything starts at once and only standby
	 * controllers are synced while not leading (other keys are dropped then). on_leading is
	 * called with true when the lease is acquired (at once without leader_elect) and false
	 * when it is lost; it may be NULL. */
	bool leader_elect;
	const char *lease_path;
	const char *identity;
	int lease_duration_s, renew_deadline_s, retry_period_s; /* 0: leader_config's defaults */
	bool start_on_leading;
	void (*on_leading)(void *ud, bool leading);
};

struct ctl_manager;
/* Parses cfg->controllers and creates the enabled controllers' queues; starts nothing.
 * E_INVALID on a bad --controllers list. The manager borrows cfg's pointers. */
int ctl_manager_new(const struct ctl_config *cfg, struct ctl_manager **ret_m);
/* Starts leader election (or everything, per the config). */
void ctl_manager_start(struct ctl_manager *m);
/* Stops election (releasing the lease), informers, workers, the ticker, then calls the stop
 * hooks. NULL-safe. */
void ctl_manager_free(struct ctl_manager *m);

bool ctl_manager_enabled(struct ctl_manager *m, const char *name);
/* The queue of an enabled controller (borrowed), NULL when disabled or unknown. */
struct workqueue *ctl_manager_queue(struct ctl_manager *m, const char *name);
/* The shared informer of path (borrowed), NULL before it started or when no enabled
 * controller watches path. */
struct informer *ctl_manager_informer(struct ctl_manager *m, const char *path);
bool ctl_manager_leading(struct ctl_manager *m);
/* The identity campaigned with (borrowed). */
const char *ctl_manager_identity(struct ctl_manager *m);
/* Delivers one event about obj on path to every enabled controller watching it, as the
 * shared informer does; for tests and for events that do not come from an informer. */
void ctl_manager_deliver(struct ctl_manager *m, const char *path, enum ctl_event ev, const json_t *obj);

#endif
