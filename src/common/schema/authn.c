/* authentication.k8s.io/v1: the request bodies of TokenRequest (serviceaccounts/token),
 * TokenReview and SelfSubjectReview (`kubectl create token`, `kubectl auth whoami` send them as
 * protobuf). Statuses are the server's to fill: skipped. */
#include "ursa/schema.h"

static const struct pb_field bound_object_ref[] = {
	F_STR(1, "kind"),
	F_STR(2, "apiVersion"),
	F_STR(3, "name"),
	F_STR(4, "uid"),
};
static PB_MSG(pm_bound_object_ref, bound_object_ref);

static const struct pb_field token_request_spec[] = {
	F_STRR(1, "audiences"),
	F_MSG(3, "boundObjectRef", &pm_bound_object_ref),
	F_I64K(4, "expirationSeconds"),
};
static PB_MSG(pm_token_request_spec, token_request_spec);

static const struct pb_field token_request[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_token_request_spec),
	F_OPAQUE(3, "status"),
};
PB_MSG(pm_token_request, token_request);

static const struct pb_field token_review_spec[] = {
	F_STR(1, "token"),
	F_STRR(2, "audiences"),
};
static PB_MSG(pm_token_review_spec, token_review_spec);

static const struct pb_field token_review[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_token_review_spec),
	F_OPAQUE(3, "status"),
};
PB_MSG(pm_token_review, token_review);

static const struct pb_field self_subject_review[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_OPAQUE(2, "status"),
};
PB_MSG(pm_self_subject_review, self_subject_review);
