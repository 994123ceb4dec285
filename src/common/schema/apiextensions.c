/* apiextensions.k8s.io/v1 CustomResourceDefinition (field numbers from upstream's
 * generated.proto). The schema of a version (openAPIV3Schema, a JSONSchemaProps) is kept whole:
 * opaque here, checked by src/common/crd. */
#include "ursa/schema.h"

static const struct pb_field crd_names[] = {
	F_STR(1, "plural"), F_STR(2, "singular"), F_STRR(3, "shortNames"),
	F_STR(4, "kind"),   F_STR(5, "listKind"), F_STRR(6, "categories"),
};
static PB_MSG(pm_crd_names, crd_names);

static const struct pb_field crd_validation[] = {
	F_OPAQUE(1, "openAPIV3Schema"),
};
static PB_MSG(pm_crd_validation, crd_validation);

static const struct pb_field crd_scale[] = {
	F_STR(1, "specReplicasPath"),
	F_STR(2, "statusReplicasPath"),
	F_STR(3, "labelSelectorPath"),
};
static PB_MSG(pm_crd_scale, crd_scale);

static const struct pb_field crd_subresources[] = {
	F_OPAQUE(1, "status"),
	F_MSG(2, "scale", &pm_crd_scale),
};
static PB_MSG(pm_crd_subresources, crd_subresources);

static const struct pb_field crd_column[] = {
	F_STR(1, "name"),        F_STR(2, "type"),     F_STR(3, "format"),
	F_STR(4, "description"), F_I32(5, "priority"), F_STR(6, "jsonPath"),
};
static PB_MSG(pm_crd_column, crd_column);

static const struct pb_field crd_selectable[] = {
	F_STR(1, "jsonPath"),
};
static PB_MSG(pm_crd_selectable, crd_selectable);

static const struct pb_field crd_version[] = {
	F_STR(1, "name"),
	F_BOOLK(2, "served"),
	F_BOOLK(3, "storage"),
	F_MSG(4, "schema", &pm_crd_validation),
	F_MSG(5, "subresources", &pm_crd_subresources),
	F_MSGR(6, "additionalPrinterColumns", &pm_crd_column),
	F_BOOL(7, "deprecated"),
	F_STR(8, "deprecationWarning"),
	F_MSGR(9, "selectableFields", &pm_crd_selectable),
};
static PB_MSG(pm_crd_version, crd_version);

static const struct pb_field crd_conversion[] = {
	F_STR(1, "strategy"),
	F_OPAQUE(2, "webhook"),
};
static PB_MSG(pm_crd_conversion, crd_conversion);

static const struct pb_field crd_spec[] = {
	F_STR(1, "group"),
	F_MSG(3, "names", &pm_crd_names),
	F_STR(4, "scope"),
	F_MSGRK(7, "versions", &pm_crd_version, "name"),
	F_MSG(9, "conversion", &pm_crd_conversion),
	F_BOOL(10, "preserveUnknownFields"),
};
static PB_MSG(pm_crd_spec, crd_spec);

static const struct pb_field crd_condition[] = {
	F_STR(1, "type"), F_STR(2, "status"), F_TIME(3, "lastTransitionTime"), F_STR(4, "reason"), F_STR(5, "message"),
};
static PB_MSG(pm_crd_condition, crd_condition);

static const struct pb_field crd_status[] = {
	F_MSGRK(1, "conditions", &pm_crd_condition, "type"),
	F_MSG(2, "acceptedNames", &pm_crd_names),
	F_STRR(3, "storedVersions"),
};
static PB_MSG(pm_crd_status, crd_status);

static const struct pb_field crd[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_crd_spec),
	F_STATUS(3, &pm_crd_status),
};
PB_MSG(pm_custom_resource_definition, crd);
