/* authorization.k8s.io/v1: the access reviews `kubectl auth can-i` sends as protobuf
 * (SelfSubjectAccessReview, SelfSubjectRulesReview) and the subject reviews other clients send.
 * Field numbers from k8s.io/api/authorization/v1/generated.proto. Statuses are the server's to
 * fill: skipped. */
#include "ursa/schema.h"

static const struct pb_field resource_attributes[] = {
	F_STR(1, "namespace"),
	F_STR(2, "verb"),
	F_STR(3, "group"),
	F_STR(4, "version"),
	F_STR(5, "resource"),
	F_STR(6, "subresource"),
	F_STR(7, "name"),
	F_OPAQUE(8, "fieldSelector"),
	F_OPAQUE(9, "labelSelector"),
};
static PB_MSG(pm_resource_attributes, resource_attributes);

static const struct pb_field non_resource_attributes[] = {
	F_STR(1, "path"),
	F_STR(2, "verb"),
};
static PB_MSG(pm_non_resource_attributes, non_resource_attributes);

static const struct pb_field self_access_spec[] = {
	F_MSG(1, "resourceAttributes", &pm_resource_attributes),
	F_MSG(2, "nonResourceAttributes", &pm_non_resource_attributes),
};
static PB_MSG(pm_self_access_spec, self_access_spec);

static const struct pb_field access_spec[] = {
	F_MSG(1, "resourceAttributes", &pm_resource_attributes),
	F_MSG(2, "nonResourceAttributes", &pm_non_resource_attributes),
	F_STR(3, "user"),
	F_STRR(4, "groups"),
	F_OPAQUE(5, "extra"),
	F_STR(6, "uid"),
};
static PB_MSG(pm_access_spec, access_spec);

static const struct pb_field self_subject_access_review[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_self_access_spec),
	F_OPAQUE(3, "status"),
};
PB_MSG(pm_self_subject_access_review, self_subject_access_review);

/* SubjectAccessReview and LocalSubjectAccessReview share one wire layout. */
static const struct pb_field subject_access_review[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_access_spec),
	F_OPAQUE(3, "status"),
};
PB_MSG(pm_subject_access_review, subject_access_review);

static const struct pb_field rules_spec[] = {
	F_STR(1, "namespace"),
};
static PB_MSG(pm_rules_spec, rules_spec);

static const struct pb_field self_subject_rules_review[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_rules_spec),
	F_OPAQUE(3, "status"),
};
PB_MSG(pm_self_subject_rules_review, self_subject_rules_review);
