/* The tenant partitions of the RM's registry (/apis/ursa.io/v1/tenantpartitions), one REST
 * client each, built with the credentials (token, CA) of the RM kubeconfig. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rmcm.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

#define REGISTRY_PATH "/apis/ursa.io/v1/tenantpartitions"
#define MAX_PARTITIONS 1024

struct tp_entry {
	char *name, *servers;
	struct rest_client *rc;
	bool seen;
};

struct tp_set {
	const struct rest_creds *creds;
	struct informer *registry;
	struct tp_entry *v;
	size_t n;
	struct rest_client **clients; /* views handed out by tp_set_refresh */
	char **names;
};

struct tp_set *tp_set_start(struct rest_client *rm, const struct rest_creds *creds)
{
	static const struct informer_handlers none = { 0 };
	struct tp_set *s = xcalloc(1, sizeof(*s));
	s->creds = creds;
	s->v = xcalloc(MAX_PARTITIONS, sizeof(*s->v));
	s->clients = xcalloc(MAX_PARTITIONS, sizeof(*s->clients));
	s->names = xcalloc(MAX_PARTITIONS, sizeof(*s->names));
	s->registry = informer_start(rm, REGISTRY_PATH, NULL, &none, s);
	return s;
}

static void entry_release(struct tp_entry *e)
{
	free(e->name);
	free(e->servers);
	rest_free(e->rc);
}

void tp_set_free(struct tp_set *s)
{
	if (!s)
		return;
	informer_stop(s->registry);
	for (size_t i = 0; i < s->n; i++)
		entry_release(&s->v[i]);
	free(s->v);
	free(s->clients);
	free(s->names);
	free(s);
}

/* "https://a,https://b" from spec.endpoints; new string or NULL. */
static char *endpoints_of(const json_t *tp)
{
	struct buf b = BUF_INIT;
	size_t i;
	const json_t *e;
	json_array_foreach(json_path(tp, "spec.endpoints"), i, e) {
		const char *s = json_string_value(e);
		if (!s || !*s || strchr(s, ','))
			continue;
		if (b.len)
			buf_addch(&b, ',');
		buf_adds(&b, s);
	}
	return b.len ? buf_detach(&b, NULL) : NULL;
}

static void apply_one(void *ud, const json_t *tp)
{
	struct tp_set *s = ud;
	const char *name = json_path_str(tp, "metadata.name");
	char *servers = endpoints_of(tp);
	if (!name || !servers)
		goto out;
	for (size_t i = 0; i < s->n; i++) {
		struct tp_entry *e = &s->v[i];
		if (strcmp(e->name, name) != 0)
			continue;
		if (strcmp(e->servers, servers) != 0) {
			struct rest_client *rc = rest_new_with_creds(s->creds, servers, "ursa-rm-controller-manager");
			if (rc) {
				rest_free(e->rc);
				e->rc = rc;
				free(e->servers);
				e->servers = servers;
				servers = NULL;
			}
		}
		e->seen = true;
		goto out;
	}
	if (s->n >= MAX_PARTITIONS)
		goto out;
	struct rest_client *rc = rest_new_with_creds(s->creds, servers, "ursa-rm-controller-manager");
	if (!rc)
		goto out;
	s->v[s->n++] = (struct tp_entry){ .name = xstrdup(name), .servers = servers, .rc = rc, .seen = true };
	servers = NULL;
out:
	free(servers);
}

size_t tp_set_refresh(struct tp_set *s, struct rest_client ***ret_clients, char ***ret_names)
{
	for (size_t i = 0; i < s->n; i++)
		s->v[i].seen = false;
	informer_foreach(s->registry, apply_one, s);
	for (size_t i = 0; i < s->n;) {
		if (s->v[i].seen) {
			i++;
			continue;
		}
		entry_release(&s->v[i]);
		s->v[i] = s->v[--s->n];
	}
	for (size_t i = 0; i < s->n; i++) {
		s->clients[i] = s->v[i].rc;
		s->names[i] = s->v[i].name;
	}
	*ret_clients = s->clients;
	*ret_names = s->names;
	return s->n;
}
