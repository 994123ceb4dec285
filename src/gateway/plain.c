/* Plain (non-stream) requests to one partition, event-driven: one loop thread owns every
 * request to the partitions and drives it with the gateway's own HTTP/1.1 client (h1.h) over
 * epoll, so no thread waits on a partition. The same loop drives the gateway's HTTP server
 * (external mode: its epoll descriptor is in this loop's set), so a plain request never leaves
 * this thread: the client's request is read and admitted, sent to the partition, and the reply
 * written back, all here. The caller (gateway.c) defers its client's reply and finishes it from
 * the completion callback.
 *
 * Cost per request. A request on a kept connection is one write of its head (and a small body)
 * and the reads of its answer: no epoll_ctl, no poll, no peek (libcurl, which this loop drove
 * before, added a recv(MSG_PEEK), two polls and its per-transfer setup to each). Connections
 * are pooled per endpoint by the client (h1conn.c); watches, streams and fan-out stay on
 * libcurl (stream.c, upstream.c).
 *
 * Parking (plain_park): a write of a tenant that is moving between partitions is held by the
 * gateway rather than refused (gateway.c, move.c). It waits here as an entry of a list the loop
 * owns, with a due time the loop's epoll_wait honours, and is woken early by plain_unpark (the
 * registry's change hook, from the etcd watch thread). Nothing is parked in the common case: the
 * loop then pays one pointer test per round for it.
 *
 * Ownership. A job belongs to the submitting thread until it is queued, then to the loop until
 * its done callback has returned. Only the loop thread touches the client and the running
 * list; other threads talk to it through a locked queue and an eventfd that is written only
 * when the queue goes from empty to non-empty (one wake-up per batch). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "gw.h"
#include "h1.h"
#include "ursa/errors.h"
#include "ursa/http.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define MAX_EVENTS 256

/* epoll data: the eventfd, the server, else a connection of the client (fd + TAG_SOCK). */
enum { TAG_EVFD = 0, TAG_SRV = 1, TAG_SOCK = 2 };

struct job {
	struct partition *p;       /* ref */
	struct upstream_req rq;
	plain_done_fn done;
	void *ud;
	size_t ep_first, ep_tries;
	int64_t deadline_ms;       /* 0: none */
	/* loop thread only */
	struct h1_call *call;      /* while running */
	struct job *prev, *next;   /* running list; next is also the queue link */
};

/* A parked request (loop thread only). */
struct park {
	const char *key;
	int64_t due_ms;
	plain_park_fn fn;
	void *ud;
	struct park *next;
};

#define UNPARK_KEYS_MAX 64 /* keys queued for the loop; more wake every parked entry */

static struct {
	pthread_mutex_t lock;
	bool running, stopping, quiescing, stop_asked;
	struct job *q_head, *q_tail;
	int64_t quiesce_at_ms;
	char *unpark_keys[UNPARK_KEYS_MAX]; /* plain_unpark's keys not yet seen by the loop (owned) */
	size_t n_unpark;
	bool unpark_all;
	/* loop thread only */
	pthread_t thread;
	struct http_server *srv;   /* driven here, or NULL */
	bool srv_again;            /* a connection was resumed while the server ran: run it again */
	int ep, evfd;
	struct h1_client *h1;
	struct job *active;
	struct park *parked;
} L = { .lock = PTHREAD_MUTEX_INITIALIZER, .ep = -1, .evfd = -1 };

static atomic_long in_flight, n_parked;
static _Thread_local bool on_loop; /* this thread is the loop's */

long plain_in_flight(void) { return atomic_load(&in_flight); }

/* --- jobs ----------------------------------------------------------------------------------- */
static void unlink_active(struct job *j)
{
	if (j->prev)
		j->prev->next = j->next;
	else
		L.active = j->next;
	if (j->next)
		j->next->prev = j->prev;
	j->prev = j->next = NULL;
}

static void link_active(struct job *j)
{
	j->prev = NULL;
	j->next = L.active;
	if (L.active)
		L.active->prev = j;
	L.active = j;
}

/* Ends j (not on the running list, no call running) with err, or with resp. */
static void job_finish(struct job *j, int err, struct upstream_resp *resp)
{
	struct upstream_resp none = { 0 };
	if (!resp)
		resp = &none;
	j->done(j->ud, err, resp);
	upstream_resp_release(resp);
	partition_unref(j->p);
	free(j);
	atomic_fetch_sub(&in_flight, 1);
}

static void job_end(struct job *j, int err, struct upstream_resp *resp)
{
	unlink_active(j);
	if (j->call) {
		h1_call_cancel(j->call);
		j->call = NULL;
	}
	job_finish(j, err, resp);
}

static void on_call_done(void *ud, int err, struct upstream_resp *resp);

/* Starts j's call to its current endpoint. */
static void job_attach(struct job *j)
{
	struct partition *p = j->p;
	const char *base = p->endpoints[(j->ep_first + j->ep_tries) % p->nendpoints];
	j->call = h1_client_send(L.h1, base, &j->rq, j->deadline_ms, on_call_done, j);
}

/* Nothing reached the partition (refused, no connection within a second, TLS failed, a bad
 * endpoint URL): the partition's next endpoint, or its circuit opens. */
static void job_connect_failed(struct job *j)
{
	struct partition *p = j->p;
	if (j->deadline_ms && mono_ms() >= j->deadline_ms) {
		job_end(j, E_TIMEOUT, NULL); /* out of time, not a partition down */
		return;
	}
	if (++j->ep_tries < p->nendpoints) {
		job_attach(j);
		return;
	}
	if (!atomic_exchange(&p->down, true))
		log_warn("partition unreachable", "partition=%s from=request", p->id);
	job_end(j, E_UNAVAILABLE, NULL);
}

/* The client ended j's call (its handle is gone). */
static void on_call_done(void *ud, int err, struct upstream_resp *resp)
{
	struct job *j = ud;
	struct partition *p = j->p;
	j->call = NULL;
	if (err == E_UNAVAILABLE) {
		job_connect_failed(j);
		return;
	}
	if (!err && j->ep_tries)
		atomic_store(&p->next_ep, (int)((j->ep_first + j->ep_tries) % p->nendpoints));
	job_end(j, err, err ? NULL : resp);
}

/* --- parking -------------------------------------------------------------------------------- */
long plain_parked(void) { return atomic_load(&n_parked); }

void plain_park(const char *key, int64_t due_ms, plain_park_fn fn, void *ud)
{
	struct park *k = xcalloc(1, sizeof(*k));
	*k = (struct park){ .key = key, .due_ms = due_ms, .fn = fn, .ud = ud, .next = L.parked };
	L.parked = k;
	atomic_fetch_add(&n_parked, 1);
}

static void wake(void);

/* Runs the parked entries due by due_by (-1: none is), those of key (NULL: none), or every one
 * (all); cancelled tells their fn. Entries are taken off the list before their fn runs, so a
 * fn may park again. */
static void run_parks(int64_t due_by, const char *key, bool all, bool cancelled)
{
	struct park *run = NULL, **pp = &L.parked;
	while (*pp) {
		struct park *k = *pp;
		bool go = all || (due_by >= 0 && k->due_ms <= due_by) || (key && strcmp(k->key, key) == 0);
		if (go) {
			*pp = k->next;
			k->next = run;
			run = k;
		} else {
			pp = &k->next;
		}
	}
	while (run) {
		struct park *k = run;
		run = k->next;
		atomic_fetch_sub(&n_parked, 1);
		k->fn(k->ud, cancelled);
		free(k);
	}
}

/* The keys plain_unpark queued (loop thread). */
static void run_unparks(void)
{
	char *keys[UNPARK_KEYS_MAX];
	pthread_mutex_lock(&L.lock);
	size_t n = L.n_unpark;
	bool all = L.unpark_all;
	memcpy(keys, L.unpark_keys, n * sizeof(*keys));
	L.n_unpark = 0;
	L.unpark_all = false;
	pthread_mutex_unlock(&L.lock);
	if (all)
		run_parks(-1, NULL, true, false);
	for (size_t i = 0; i < n; i++) {
		if (!all && L.parked)
			run_parks(-1, keys[i], false, false);
		free(keys[i]);
	}
}

void plain_unpark(const char *key)
{
	if (!atomic_load(&n_parked))
		return;
	pthread_mutex_lock(&L.lock);
	if (L.running && !L.stopping) {
		if (!key || L.n_unpark == UNPARK_KEYS_MAX)
			L.unpark_all = true;
		else
			L.unpark_keys[L.n_unpark++] = xstrdup(key);
		wake(); /* from the loop too: the keys are read when the eventfd is */
	}
	pthread_mutex_unlock(&L.lock);
}

static void cancel_all(void)
{
	while (L.active)
		job_end(L.active, E_UNAVAILABLE, NULL);
	while (L.parked) /* a cancelled park's fn answers without sending */
		run_parks(-1, NULL, true, true);
}

/* --- the loop ------------------------------------------------------------------------------- */
static void start_job(struct job *j, int64_t now)
{
	if (atomic_load(&j->p->down)) {
		job_finish(j, E_UNAVAILABLE, NULL);
		return;
	}
	j->deadline_ms = j->rq.timeout_ms > 0 ? now + j->rq.timeout_ms : 0;
	link_active(j);
	job_attach(j);
}

static void run_queue(void)
{
	pthread_mutex_lock(&L.lock);
	struct job *q = L.q_head;
	bool refuse = L.quiescing || L.stopping;
	L.q_head = L.q_tail = NULL;
	pthread_mutex_unlock(&L.lock);
	int64_t now = mono_ms();
	while (q) {
		struct job *j = q;
		q = j->next;
		j->next = NULL;
		if (refuse)
			job_finish(j, E_UNAVAILABLE, NULL);
		else
			start_job(j, now);
	}
}

/* plain_stop asked: the server takes no new connections and running jobs get STOP_GRACE_MS
 * (quiesce). True once the loop may end. */
#define STOP_GRACE_MS 10000
static bool stop_step(bool *began)
{
	if (!*began) {
		*began = true;
		if (L.srv)
			http_server_quiesce(L.srv);
		plain_quiesce(STOP_GRACE_MS);
	}
	return !L.active && !L.parked;
}

/* Runs the server until no reply finished during the run is left waiting (a resume here
 * signals nothing: libmicrohttpd only notices it on its next run). */
static void run_server(void)
{
	for (int i = 0; L.srv && i < 8; i++) {
		L.srv_again = false;
		http_server_run(L.srv);
		if (!L.srv_again)
			break;
	}
}

static int wait_ms(int64_t now, bool quiescing, int64_t quiesce_at)
{
	if (L.srv_again)
		return 0;
	int64_t t = -1, due = h1_client_due(L.h1);
	for (struct park *k = L.parked; k; k = k->next)
		if (due < 0 || k->due_ms < due)
			due = k->due_ms;
	if (due >= 0)
		t = due > now ? due - now : 0;
	if (quiescing && (t < 0 || quiesce_at - now < t))
		t = quiesce_at > now ? quiesce_at - now : 0;
	if (L.srv) {
		long s = http_server_timeout_ms(L.srv);
		if (s >= 0 && (t < 0 || s < t))
			t = s;
	}
	return (int)t;
}

/* Calls past their connect limit or deadline, parked requests due. */
static void run_timers(void)
{
	int64_t now = mono_ms();
	h1_client_timers(L.h1, now);
	if (L.parked)
		run_parks(now, NULL, false, false);
}

static void *loop_main(void *arg)
{
	struct epoll_event evs[MAX_EVENTS];
	bool stop_began = false;
	on_loop = true;
	for (;;) {
		pthread_mutex_lock(&L.lock);
		bool stop = L.stopping, asked = L.stop_asked, quiescing = L.quiescing;
		int64_t quiesce_at = L.quiesce_at_ms;
		pthread_mutex_unlock(&L.lock);
		if (stop || (asked && stop_step(&stop_began)))
			break;
		int64_t now = mono_ms();
		if (quiescing && now >= quiesce_at)
			cancel_all();
		if (quiescing && L.parked) /* held requests are answered, not sent again */
			run_parks(-1, NULL, true, true);
		int n = epoll_wait(L.ep, evs, MAX_EVENTS, wait_ms(now, quiescing, quiesce_at));
		for (int i = 0; i < n; i++) {
			uint64_t tag = evs[i].data.u64;
			if (tag == TAG_EVFD) {
				uint64_t v;
				ssize_t r = read(L.evfd, &v, sizeof(v));
				(void)r;
				run_queue();
				run_unparks();
			} else if (tag >= TAG_SOCK) {
				h1_client_event(L.h1, (int)(tag - TAG_SOCK), evs[i].events);
			}
		}
		run_timers();
		/* Every round: the client side's new requests, and the replies just finished
		 * (resumed connections) go out in the same round; the requests the server just
		 * handed over go out before the loop waits again. */
		run_server();
		run_timers();
	}
	cancel_all();
	run_queue(); /* refused: stopping */
	run_server();
	return NULL;
}

/* --- control -------------------------------------------------------------------------------- */
static void cleanup(void)
{
	for (size_t i = 0; i < L.n_unpark; i++)
		free(L.unpark_keys[i]);
	L.n_unpark = 0;
	h1_client_free(L.h1); /* closes the kept connections */
	L.h1 = NULL;
	if (L.ep >= 0)
		close(L.ep);
	if (L.evfd >= 0)
		close(L.evfd);
	L.ep = L.evfd = -1;
}

int plain_start(struct http_server *srv)
{
	L.srv = srv;
	L.ep = epoll_create1(EPOLL_CLOEXEC);
	L.evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (L.ep < 0 || L.evfd < 0)
		goto fail;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG_EVFD };
	epoll_ctl(L.ep, EPOLL_CTL_ADD, L.evfd, &ev);
	if (srv) {
		struct epoll_event sev = { .events = EPOLLIN, .data.u64 = TAG_SRV };
		if (epoll_ctl(L.ep, EPOLL_CTL_ADD, http_server_fd(srv), &sev) < 0)
			goto fail;
	}
	L.h1 = h1_client_new(L.ep, TAG_SOCK, upstream_ca_file());
	if (!L.h1)
		goto fail;
	L.stopping = L.quiescing = L.stop_asked = false;
	L.active = NULL;
	/* Running before the thread starts: it may serve (and forward) at once. */
	pthread_mutex_lock(&L.lock);
	L.running = true;
	pthread_mutex_unlock(&L.lock);
	if (pthread_create(&L.thread, NULL, loop_main, NULL) != 0) {
		pthread_mutex_lock(&L.lock);
		L.running = false;
		pthread_mutex_unlock(&L.lock);
		goto fail;
	}
	return 0;
fail:
	cleanup();
	return E_INTERNAL;
}

static void wake(void)
{
	uint64_t one = 1;
	ssize_t w = write(L.evfd, &one, sizeof(one));
	(void)w; /* EAGAIN: the counter is already non-zero, the loop wakes anyway */
}

void plain_wake(void *unused)
{
	if (on_loop) {
		L.srv_again = true; /* the loop runs the server again before it waits */
		return;
	}
	/* Under the lock: plain_stop closes the eventfd only after clearing running. */
	pthread_mutex_lock(&L.lock);
	if (L.running)
		wake();
	pthread_mutex_unlock(&L.lock);
}

void plain_quiesce(long grace_ms)
{
	pthread_mutex_lock(&L.lock);
	if (!L.quiescing) {
		L.quiescing = true;
		L.quiesce_at_ms = mono_ms() + (grace_ms > 0 ? grace_ms : 0);
	}
	if (L.running && !on_loop)
		wake();
	pthread_mutex_unlock(&L.lock);
}

void plain_stop(void)
{
	pthread_mutex_lock(&L.lock);
	bool was = L.running;
	L.stop_asked = true;
	pthread_mutex_unlock(&L.lock);
	if (!was)
		return;
	wake();
	pthread_join(L.thread, NULL);
	pthread_mutex_lock(&L.lock);
	L.running = false;
	L.stopping = true;
	pthread_mutex_unlock(&L.lock);
	cleanup();
}

void plain_forward(struct partition *p, const struct upstream_req *rq, plain_done_fn done, void *ud)
{
	struct job *j = xcalloc(1, sizeof(*j));
	j->p = p;
	atomic_fetch_add(&p->refs, 1);
	j->rq = *rq;
	j->done = done;
	j->ud = ud;
	j->ep_first = (size_t)atomic_load(&p->next_ep) % p->nendpoints;
	atomic_fetch_add(&in_flight, 1);
	pthread_mutex_lock(&L.lock);
	bool ok = L.running && !L.stopping && !L.quiescing, first = false;
	bool here = ok && on_loop;
	pthread_mutex_unlock(&L.lock);
	if (here) {
		/* From the server this loop drives: no queue, no wake-up. */
		start_job(j, mono_ms());
		return;
	}
	pthread_mutex_lock(&L.lock);
	ok = L.running && !L.stopping && !L.quiescing;
	if (ok) {
		first = !L.q_head;
		if (L.q_tail)
			L.q_tail->next = j;
		else
			L.q_head = j;
		L.q_tail = j;
		if (first)
			wake();
	}
	pthread_mutex_unlock(&L.lock);
	if (!ok)
		job_finish(j, E_UNAVAILABLE, NULL);
}
