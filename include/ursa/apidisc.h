/* Aggregated discovery (apidiscovery.k8s.io v2 and v2beta1, kubectl 1.26+) and the validators
 * of discovery replies. Pure functions over jansson values: the API servers build the
 * aggregated document from the legacy APIResourceLists they already serve (one description of
 * the resources, two shapes), and the gateway merges the documents of several partitions.
 * Unless stated, returned json_t pointers are new references. */
#ifndef URSA_APIDISC_H
#define URSA_APIDISC_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include "ursa/buf.h"

enum apidisc_form {
	APIDISC_LEGACY,  /* APIVersions / APIGroupList, Content-Type application/json */
	APIDISC_V2BETA1, /* APIGroupDiscoveryList, apidiscovery.k8s.io/v2beta1 */
	APIDISC_V2,      /* APIGroupDiscoveryList, apidiscovery.k8s.io/v2 */
};

/* The form an Accept header (may be NULL) asks for at /api and /apis: the first media range, in
 * the client's order, that names JSON aggregated discovery of a known version, plain JSON or a
 * wildcard. Protobuf and unknown ranges are passed over (q=0 ranges too); nothing usable means
 * the legacy form. At most 32 ranges are read. */
enum apidisc_form apidisc_negotiate(const char *accept);
/* The Content-Type of a reply in form f (static string). */
const char *apidisc_content_type(enum apidisc_form f);
/* The form a reply's Content-Type (may be NULL) names; APIDISC_LEGACY for anything else. */
enum apidisc_form apidisc_form_of(const char *content_type);

/* APIGroupDiscovery for group (""= the core group at /api) from its APIResourceLists (borrowed;
 * lists[0] is the preferred version). Each list entry without '/' becomes a resource (scope,
 * singularResource, responseKind from the list's group version unless the entry names its own,
 * verbs, shortNames, categories); "plural/sub" entries become that resource's subresources.
 * Versions are Current. */
json_t *apidisc_group(const char *group, json_t *const *lists, size_t n);
/* APIGroupDiscoveryList in form f (V2 or V2BETA1) holding items (an array, stolen). */
json_t *apidisc_list(enum apidisc_form f, json_t *items);
/* Adds to dst (an APIGroupDiscoveryList) the groups, versions of a group and resources of a
 * version that src (borrowed) has and dst lacks (copies); dst's entries win. */
void apidisc_merge(json_t *dst, const json_t *src);

/* Strong entity tag of a reply body: a quoted hex SHA-256, appended to out. */
void apidisc_etag(const char *body, size_t len, struct buf *out);
/* Whether If-None-Match (may be NULL) holds etag or "*" (weak comparison, as RFC 9110 asks for
 * If-None-Match: a W/ prefix is ignored). */
bool apidisc_etag_matches(const char *if_none_match, const char *etag);

#endif
