/* Aggregated discovery documents, their content negotiation and entity tags (see apidisc.h). */
#include "ursa/apidisc.h"
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

#define MAX_RANGES 32

static const char *const form_version[] = { [APIDISC_V2BETA1] = "v2beta1", [APIDISC_V2] = "v2" };

static struct sv sv_trim(struct sv s)
{
	while (s.len && (s.ptr[0] == ' ' || s.ptr[0] == '\t'))
		s.ptr++, s.len--;
	while (s.len && (s.ptr[s.len - 1] == ' ' || s.ptr[s.len - 1] == '\t'))
		s.len--;
	return s;
}

static bool sv_ieq(struct sv a, const char *s)
{
	return a.len == strlen(s) && strncasecmp(a.ptr, s, a.len) == 0;
}

/* Cuts s at the first sep: returns the part before it, leaves the rest (after sep) in *s. */
static struct sv cut(struct sv *s, char sep)
{
	const char *p = memchr(s->ptr, sep, s->len);
	struct sv head = { s->ptr, p ? (size_t)(p - s->ptr) : s->len };
	*s = p ? (struct sv){ p + 1, s->len - head.len - 1 } : (struct sv){ s->ptr + s->len, 0 };
	return head;
}

/* q=0, q=0.0, q=0.000 */
static bool is_zero(struct sv v)
{
	if (!v.len || v.ptr[0] != '0')
		return false;
	for (size_t i = 1; i < v.len; i++)
		if (v.ptr[i] != (i == 1 ? '.' : '0'))
			return false;
	return true;
}

/* The form one media range asks for; -1 when it names none this server serves. */
static int range_form(struct sv range)
{
	struct sv type = sv_trim(cut(&range, ';'));
	struct sv g = { "", 0 }, v = { "", 0 }, as = { "", 0 };
	while (range.len) {
		struct sv param = cut(&range, ';');
		struct sv key = sv_trim(cut(&param, '='));
		struct sv val = sv_trim(param);
		if (val.len >= 2 && val.ptr[0] == '"' && val.ptr[val.len - 1] == '"')
			val = (struct sv){ val.ptr + 1, val.len - 2 };
		if (sv_ieq(key, "g"))
			g = val;
		else if (sv_ieq(key, "v"))
			v = val;
		else if (sv_ieq(key, "as"))
			as = val;
		else if (sv_ieq(key, "q") && is_zero(val))
			return -1; /* not acceptable */
	}
	if (sv_ieq(type, "*/*") || sv_ieq(type, "application/*"))
		return APIDISC_LEGACY;
	if (!sv_ieq(type, "application/json"))
		return -1;
	if (!g.len && !as.len)
		return APIDISC_LEGACY;
	if (!sv_eq(g, "apidiscovery.k8s.io") || !sv_eq(as, "APIGroupDiscoveryList"))
		return -1;
	if (sv_eq(v, "v2"))
		return APIDISC_V2;
	if (sv_eq(v, "v2beta1"))
		return APIDISC_V2BETA1;
	return -1;
}

enum apidisc_form apidisc_negotiate(const char *accept)
{
	struct sv rest = sv_from(accept ? accept : "");
	for (int i = 0; i < MAX_RANGES && rest.len; i++) {
		int f = range_form(cut(&rest, ','));
		if (f >= 0)
			return (enum apidisc_form)f;
	}
	return APIDISC_LEGACY;
}

const char *apidisc_content_type(enum apidisc_form f)
{
	switch (f) {
	case APIDISC_V2:
		return "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
	case APIDISC_V2BETA1:
		return "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
	default:
		return "application/json";
	}
}

enum apidisc_form apidisc_form_of(const char *content_type)
{
	if (!content_type || strchr(content_type, ','))
		return APIDISC_LEGACY;
	int f = range_form(sv_from(content_type));
	return f < 0 ? APIDISC_LEGACY : (enum apidisc_form)f;
}

/* Borrowed element of array a whose member key (absent: "") equals name, or NULL. */
static json_t *find_by(const json_t *a, const char *key, const char *name)
{
	size_t i;
	json_t *e;
	json_array_foreach(a, i, e)
	{
		const char *n = key[0] == 'm' ? json_path_str(e, "metadata.name") : json_str(e, key);
		if (strcmp(n ? n : "", name) == 0)
			return e;
	}
	return NULL;
}

static json_t *gvk(const json_t *entry, const char *group, const char *version)
{
	const char *g = json_str(entry, "group"), *v = json_str(entry, "version"), *k = json_str(entry, "kind");
	return json_pack("{s:s,s:s,s:s}", "group", g ? g : group, "version", v ? v : version, "kind", k ? k : "");
}

static json_t *copy_or_empty(const json_t *entry, const char *key)
{
	json_t *v = json_object_get(entry, key);
	return json_is_array(v) ? json_deep_copy(v) : json_array();
}

/* APIResourceDiscovery of a legacy entry without '/'. */
static json_t *resource_of(const json_t *e, const char *group, const char *version)
{
	const char *singular = json_str(e, "singularName");
	json_t *r = json_pack("{s:s,s:o,s:s,s:s,s:o}", "resource", json_str(e, "name"), "responseKind",
			      gvk(e, group, version), "scope",
			      json_is_true(json_object_get(e, "namespaced")) ? "Namespaced" : "Cluster",
			      "singularResource", singular ? singular : "", "verbs", copy_or_empty(e, "verbs"));
	if (json_array_size(json_object_get(e, "shortNames")))
		json_object_set_new(r, "shortNames", copy_or_empty(e, "shortNames"));
	if (json_array_size(json_object_get(e, "categories")))
		json_object_set_new(r, "categories", copy_or_empty(e, "categories"));
	return r;
}

/* APIVersionDiscovery of one APIResourceList. */
static json_t *version_of(const json_t *list, const char *group)
{
	const char *gv = json_str(list, "groupVersion");
	const char *slash = gv ? strrchr(gv, '/') : NULL;
	const char *version = slash ? slash + 1 : gv ? gv : "";
	json_t *resources = json_array(), *in = json_object_get(list, "resources"), *e;
	size_t i;
	json_array_foreach(in, i, e)
	{
		const char *name = json_str(e, "name");
		if (name && !strchr(name, '/'))
			json_array_append_new(resources, resource_of(e, group, version));
	}
	json_array_foreach(in, i, e)
	{
		const char *name = json_str(e, "name"), *sub = name ? strchr(name, '/') : NULL;
		if (!sub)
			continue;
		char *parent = xstrndup(name, (size_t)(sub - name));
		json_t *r = find_by(resources, "resource", parent);
		free(parent);
		if (!r)
			continue;
		json_t *subs = json_object_get(r, "subresources");
		if (!subs) {
			subs = json_array();
			json_object_set_new(r, "subresources", subs);
		}
		json_array_append_new(subs, json_pack("{s:s,s:o,s:o}", "subresource", sub + 1, "responseKind",
						      gvk(e, group, version), "verbs", copy_or_empty(e, "verbs")));
	}
	return json_pack("{s:s,s:o,s:s}", "version", version, "resources", resources, "freshness", "Current");
}

json_t *apidisc_group(const char *group, json_t *const *lists, size_t n)
{
	json_t *versions = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(versions, version_of(lists[i], group));
	json_t *meta = group[0] ? json_pack("{s:s}", "name", group) : json_object();
	return json_pack("{s:o,s:o}", "metadata", meta, "versions", versions);
}

json_t *apidisc_list(enum apidisc_form f, json_t *items)
{
	char *av = xasprintf("apidiscovery.k8s.io/%s", form_version[f == APIDISC_V2BETA1 ? f : APIDISC_V2]);
	json_t *j = json_pack("{s:s,s:s,s:{},s:o}", "kind", "APIGroupDiscoveryList", "apiVersion", av, "metadata",
			      "items", items);
	free(av);
	return j;
}

/* Appends to dst (array) copies of src's elements whose key dst lacks; for those it has,
 * recurses with merge_child when given. */
static void union_into(json_t *dst, const json_t *src, const char *key, void (*merge_child)(json_t *, const json_t *))
{
	size_t i;
	json_t *e;
	if (!json_is_array(dst) || !json_is_array(src))
		return;
	json_array_foreach(src, i, e)
	{
		const char *name = key[0] == 'm' ? json_path_str(e, "metadata.name") : json_str(e, key);
		if (!json_is_object(e) || (!name && key[0] != 'm'))
			continue;
		json_t *have = find_by(dst, key, name ? name : "");
		if (!have)
			json_array_append_new(dst, json_deep_copy(e));
		else if (merge_child)
			merge_child(have, e);
	}
}

static void merge_version(json_t *dst, const json_t *src)
{
	union_into(json_object_get(dst, "resources"), json_object_get(src, "resources"), "resource", NULL);
}

static void merge_group(json_t *dst, const json_t *src)
{
	union_into(json_object_get(dst, "versions"), json_object_get(src, "versions"), "version", merge_version);
}

void apidisc_merge(json_t *dst, const json_t *src)
{
	union_into(json_object_get(dst, "items"), json_object_get(src, "items"), "metadata", merge_group);
}

void apidisc_etag(const char *body, size_t len, struct buf *out)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	EVP_Digest(body ? body : "", len, md, &mdlen, EVP_sha256(), NULL);
	buf_addch(out, '"');
	for (unsigned i = 0; i < mdlen; i++)
		buf_addf(out, "%02x", md[i]);
	buf_addch(out, '"');
}

bool apidisc_etag_matches(const char *if_none_match, const char *etag)
{
	struct sv rest = sv_from(if_none_match ? if_none_match : "");
	struct sv want = sv_from(etag);
	if (sv_has_prefix(want, "W/"))
		want = (struct sv){ want.ptr + 2, want.len - 2 };
	for (int i = 0; i < MAX_RANGES && rest.len; i++) {
		struct sv tag = sv_trim(cut(&rest, ','));
		if (sv_eq(tag, "*"))
			return true;
		if (sv_has_prefix(tag, "W/"))
			tag = (struct sv){ tag.ptr + 2, tag.len - 2 };
		if (tag.len && tag.len == want.len && memcmp(tag.ptr, want.ptr, tag.len) == 0)
			return true;
	}
	return false;
}
