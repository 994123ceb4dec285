/* Identities and the tenant-isolation checks built on them. */
#include "auth/auth_internal.h"
#include "ursa/xalloc.h"
#include <stdlib.h>
#include <string.h>

void identity_release(struct identity *id)
{
	if (!id)
		return;
	free(id->user);
	free(id->uid);
	free(id->tenant);
	for (size_t i = 0; i < id->ngroups; i++)
		free(id->groups[i]);
	free(id->groups);
	free(id->sa_uid);
	free(id->bound_kind);
	free(id->bound_name);
	free(id->bound_uid);
	memset(id, 0, sizeof(*id));
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

void identity_copy(const struct identity *src, struct identity *ret)
{
	struct identity id = {
		.user = dup_or_null(src->user),
		.uid = dup_or_null(src->uid),
		.tenant = dup_or_null(src->tenant),
		.ngroups = src->ngroups,
		.sa_uid = dup_or_null(src->sa_uid),
		.bound_kind = dup_or_null(src->bound_kind),
		.bound_name = dup_or_null(src->bound_name),
		.bound_uid = dup_or_null(src->bound_uid),
	};
	if (src->ngroups) {
		id.groups = xcalloc(src->ngroups, sizeof(*id.groups));
		for (size_t i = 0; i < src->ngroups; i++)
			id.groups[i] = xstrdup(src->groups[i]);
	}
	*ret = id;
}

void identity_add_group(struct identity *id, const char *group, size_t len)
{
	id->groups = xrealloc(id->groups, (id->ngroups + 1) * sizeof(*id->groups));
	id->groups[id->ngroups++] = xstrndup(group, len);
}

int sa_user_split(const char *user, char **ret_ns, char **ret_name)
{
	size_t plen = strlen(SA_USER_PREFIX);
	if (!user || strncmp(user, SA_USER_PREFIX, plen) != 0)
		return -1;
	const char *ns = user + plen, *colon = strchr(ns, ':');
	if (!colon || colon == ns || !colon[1] || strchr(colon + 1, ':'))
		return -1;
	*ret_ns = xstrndup(ns, (size_t)(colon - ns));
	*ret_name = xstrdup(colon + 1);
	return 0;
}

bool identity_in_group(const struct identity *id, const char *group)
{
	if (!id || !group)
		return false;
	for (size_t i = 0; i < id->ngroups; i++)
		if (id->groups[i] && strcmp(id->groups[i], group) == 0)
			return true;
	return false;
}

bool identity_is_system_admin(const struct identity *id)
{
	return id && id->tenant && strcmp(id->tenant, TENANT_SYSTEM) == 0 &&
	       identity_in_group(id, GROUP_MASTERS);
}

bool identity_may_access_tenant(const struct identity *id, const char *tenant)
{
	if (!id || !id->tenant || !tenant)
		return false;
	if (identity_is_system_admin(id))
		return true;
	/* "all" never matches: an identity cannot carry it (auth_tenant_ok). */
	return *tenant && strcmp(tenant, TENANT_ALL) != 0 && strcmp(id->tenant, tenant) == 0;
}

bool identity_is_sre(const struct identity *id)
{
	return id && id->tenant && strcmp(id->tenant, TENANT_SYSTEM) == 0 && identity_in_group(id, GROUP_SRE) &&
	       !identity_in_group(id, GROUP_MASTERS);
}

bool identity_is_node(const struct identity *id)
{
	return id && id->tenant && strcmp(id->tenant, TENANT_SYSTEM) == 0 && identity_in_group(id, GROUP_NODES) &&
	       !identity_in_group(id, GROUP_MASTERS);
}

const char *identity_node_name(const struct identity *id)
{
	static const char prefix[] = "system:node:";
	if (!identity_is_node(id) || !id->user || strncmp(id->user, prefix, sizeof(prefix) - 1) != 0)
		return NULL;
	const char *name = id->user + sizeof(prefix) - 1;
	return *name ? name : NULL;
}

bool identity_may_read_tenant(const struct identity *id, const char *tenant)
{
	if (!tenant || !*tenant)
		return false;
	return identity_may_access_tenant(id, tenant) || identity_is_sre(id);
}

bool auth_field_ok(const char *s, size_t len)
{
	if (!s || len == 0 || len > AUTH_FIELD_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f)
			return false;
	}
	return true;
}

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* Tenant names end up in etcd keys and URL paths, so they must be DNS labels (as Arktos
 * validates them), never "all". */
bool auth_tenant_ok(const char *s, size_t len)
{
	if (!s || len == 0 || len > 63)
		return false;
	if (!is_lower_alnum(s[0]) || !is_lower_alnum(s[len - 1]))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!is_lower_alnum(s[i]) && s[i] != '-')
			return false;
	return !(len == 3 && memcmp(s, TENANT_ALL, 3) == 0);
}
