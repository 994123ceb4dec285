/* The tenant partitions of the RM's registry (/apis/ursa.io/v1/tenantpartitions), one REST
 * client each, built with the credentials (token, CA) of the RM kubeconfig. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rmcm.h"
#include "ursa/region.h"
#include "ursa/xalloc.h"

#define REGISTRY_PATH "/apis/ursa.io/v1/tenantpartitions"
#define MAX_PARTITIONS 1024
#define USER_AGENT "ursa-rm-controller-manager"

struct tp_set {
	const struct rest_creds *creds;
	struct informer *registry;
	struct region_peers peers;    /* val: struct rest_client * */
	struct rest_client **clients; /* views handed out by tp_set_refresh */
	char **names;
};

static void *tp_open(void *ud, const char *name, const char *servers, const json_t *obj)
{
	struct tp_set *s = ud;
	return rest_new_with_creds(s->creds, servers, USER_AGENT);
}

/* A moved partition gets a new client; the old endpoints stay when none can be made. */
static void *tp_move(void *ud, void *val, const char *servers, const json_t *obj)
{
	struct rest_client *rc = tp_open(ud, NULL, servers, obj);
	if (rc)
		rest_free(val);
	return rc;
}

static void tp_close(void *ud, const char *name, void *val)
{
	rest_free(val);
}

static const struct region_follow tp_follow = { .open = tp_open, .move = tp_move, .close = tp_close };

struct tp_set *tp_set_start(struct rest_client *rm, const struct rest_creds *creds)
{
	static const struct informer_handlers none = { 0 };
	struct tp_set *s = xcalloc(1, sizeof(*s));
	s->creds = creds;
	region_peers_init(&s->peers, &tp_follow, s, MAX_PARTITIONS);
	s->clients = xcalloc(MAX_PARTITIONS, sizeof(*s->clients));
	s->names = xcalloc(MAX_PARTITIONS, sizeof(*s->names));
	s->registry = informer_start(rm, REGISTRY_PATH, NULL, &none, s);
	return s;
}

void tp_set_free(struct tp_set *s)
{
	if (!s)
		return;
	informer_stop(s->registry);
	region_peers_release(&s->peers);
	free(s->clients);
	free(s->names);
	free(s);
}

size_t tp_set_refresh(struct tp_set *s, struct rest_client ***ret_clients, char ***ret_names)
{
	region_peers_sweep(&s->peers, s->registry);
	for (size_t i = 0; i < s->peers.n; i++) {
		s->clients[i] = s->peers.v[i].val;
		s->names[i] = s->peers.v[i].name;
	}
	*ret_clients = s->clients;
	*ret_names = s->names;
	return s->peers.n;
}
