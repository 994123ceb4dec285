/*
 * ursa-podwatch: the scheduler benchmark's observer (bench/run-scheduler.sh). Watches every pod of
 * a partition with the client library's informer and reports how many have been seen with a
 * node, and when the last of them was first seen so:
 *
 *   ursa-podwatch --server URL --token T [--cacert F]
 *
 * prints "BOUND <count> <seconds>" (seconds on CLOCK_MONOTONIC, Python's time.monotonic) at
 * most every 10 ms while the count grows, after "SYNCED" once the first list is in. Runs until
 * its standard input closes or it is signalled. Replaces a Python watch that spent about 7 % of
 * the benchmark machine's CPU decoding every pod event; it reads each event's raw line instead of
 * parsing it (skip_event).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ursa/client.h"
#include "ursa/jsonutil.h"
#include "ursa/strmap.h"

struct watch {
	pthread_mutex_t mu;
	struct strmap bound; /* keys of pods seen with a node */
	long count;
	double last;         /* when the last one was first seen */
};

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void count_bound(struct watch *w, const char *uid)
{
	pthread_mutex_lock(&w->mu);
	bool created = false;
	strmap_put(&w->bound, uid, &created);
	if (created) {
		w->count++;
		w->last = mono_s();
	}
	pthread_mutex_unlock(&w->mu);
}

static void seen(void *ud, const json_t *obj)
{
	const char *node = json_path_str(obj, "spec.nodeName"), *uid = json_path_str(obj, "metadata.uid");
	if (node && *node && uid)
		count_bound(ud, uid);
}

static void on_update(void *ud, const json_t *old_obj, const json_t *obj)
{
	(void)old_obj;
	seen(ud, obj);
}

/* The text after the first `"<name>":"` in line, up to the closing quote (no escapes: names
 * and uids have none); false when absent or empty. */
static bool raw_string(const char *line, size_t len, const char *name, const char **ret, size_t *ret_len)
{
	char pat[32];
	size_t n = (size_t)snprintf(pat, sizeof(pat), "\"%s\":\"", name);
	const char *p = memmem(line, len, pat, n);
	if (!p)
		return false;
	p += n;
	const char *q = memchr(p, '"', len - (size_t)(p - line));
	if (!q || q == p || memchr(p, '\\', (size_t)(q - p)))
		return false;
	*ret = p;
	*ret_len = (size_t)(q - p);
	return true;
}

/* Every event is settled here, on its raw line, so the observer parses no pod: that cost ~0.25
 * CPU-s per throughput window on the two cores the system under test runs on. Events of pods
 * without a node are of no interest; an ADDED or MODIFIED one with a node counts its pod (by
 * metadata.uid: the object's first "uid", metadata coming before ownerReferences) as bound.
 * A line the scan cannot read is parsed as before (seen). */
static bool skip_event(void *ud, const char *line, size_t len)
{
	struct watch *w = ud;
	const char *node, *uid;
	size_t node_len, uid_len;
	if (!raw_string(line, len, "nodeName", &node, &node_len))
		return !memmem(line, len, "\"nodeName\":\"", 12) || memmem(line, len, "\"nodeName\":\"\"", 13);
	if (memmem(line, len, "\"type\":\"DELETED\"", 16))
		return true;
	if (!memmem(line, len, "\"type\":\"ADDED\"", 14) && !memmem(line, len, "\"type\":\"MODIFIED\"", 17))
		return false;
	if (!raw_string(line, len, "uid", &uid, &uid_len))
		return false;
	char *key = strndup(uid, uid_len);
	count_bound(w, key);
	free(key);
	return true;
}

static void *stdin_main(void *arg)
{
	(void)arg;
	char b[256];
	while (fread(b, 1, sizeof(b), stdin) > 0)
		;
	exit(0);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *server = NULL, *token = NULL, *cacert = NULL;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--server"))
			server = argv[i + 1];
		else if (!strcmp(argv[i], "--token"))
			token = argv[i + 1];
		else if (!strcmp(argv[i], "--cacert"))
			cacert = argv[i + 1];
	}
	if (!server || !token) {
		fprintf(stderr, "usage: ursa-podwatch --server URL --token T [--cacert F]\n");
		return 2;
	}
	struct rest_client *c = rest_new(&(struct rest_config){ .servers = server, .token = token, .ca_file = cacert,
								 .user_agent = "ursa-podwatch" });
	struct watch w = { .mu = PTHREAD_MUTEX_INITIALIZER };
	strmap_init(&w.bound);
	static const struct informer_handlers h = { .on_add = seen, .on_update = on_update, .skip_event = skip_event };
	struct informer *inf = c ? informer_start(c, "/api/v1/tenants/all/pods", NULL, &h, &w) : NULL;
	if (!inf) {
		fprintf(stderr, "ursa-podwatch: cannot watch %s\n", server);
		return 1;
	}
	pthread_t t;
	pthread_create(&t, NULL, stdin_main, NULL);
	while (!informer_synced(inf))
		usleep(10 * 1000);
	printf("SYNCED\n");
	fflush(stdout);
	long told = -1;
	for (;;) {
		pthread_mutex_lock(&w.mu);
		long n = w.count;
		double last = w.last;
		pthread_mutex_unlock(&w.mu);
		if (n != told) {
			printf("BOUND %ld %.6f\n", n, last);
			fflush(stdout);
			told = n;
		}
		usleep(10 * 1000);
	}
}
