/* meta/v1 messages shared by every kind. */
#include "ursa/schema.h"

/* Upstream ObjectMeta plus the Arktos fields tenant (18) and hashKey (19). */
static const struct pb_field object_meta[] = {
	F_STR(1, "name"),
	F_STR(2, "generateName"),
	F_STR(3, "namespace"),
	F_STR(4, "selfLink"),
	F_STR(5, "uid"),
	F_STR(6, "resourceVersion"),
	F_I64(7, "generation"),
	F_TIME(8, "creationTimestamp"),
	F_TIME(9, "deletionTimestamp"),
	F_I64K(10, "deletionGracePeriodSeconds"),
	F_MAPS(11, "labels"),
	F_MAPS(12, "annotations"),
	F_MSGRK(13, "ownerReferences", &pm_owner_reference, "uid"),
	F_STRSET(14, "finalizers"),
	F_MSGR(17, "managedFields", &pm_managed_fields_entry),
	F_STR(18, "tenant"),
	F_I64(19, "hashKey"),
};
PB_MSG(pm_object_meta, object_meta);

static const struct pb_field owner_reference[] = {
	F_STRK(1, "kind"),
	F_STRK(3, "name"),
	F_STRK(4, "uid"),
	F_STRK(5, "apiVersion"),
	F_BOOLK(6, "controller"),
	F_BOOLK(7, "blockOwnerDeletion"),
	F_I64(8, "hashKey"),
};
PB_MSG(pm_owner_reference, owner_reference);

static const struct pb_field label_selector[] = {
	F_MAPS(1, "matchLabels"),
	F_MSGR(2, "matchExpressions", &pm_label_selector_requirement),
};
PB_MSG(pm_label_selector, label_selector);

/* fieldsV1 is a free-form object (the field set, in JSON inside the protobuf bytes). */
static const struct pb_field managed_fields_entry[] = {
	F_STR(1, "manager"),
	F_STR(2, "operation"),
	F_STR(3, "apiVersion"),
	F_TIME(4, "time"),
	F_STR(6, "fieldsType"),
	F_OPAQUE(7, "fieldsV1"),
	F_STR(8, "subresource"),
};
PB_MSG(pm_managed_fields_entry, managed_fields_entry);

/* metav1.Condition, used by the newer statuses. */
static const struct pb_field condition[] = {
	F_STRK(1, "type"),
	F_STRK(2, "status"),
	F_I64(3, "observedGeneration"),
	F_TIME(4, "lastTransitionTime"),
	F_STRK(5, "reason"),
	F_STRK(6, "message"),
};
PB_MSG(pm_condition, condition);

static const struct pb_field label_selector_requirement[] = {
	F_STRK(1, "key"),
	F_STRK(2, "operator"),
	F_STRR(3, "values"),
};
PB_MSG(pm_label_selector_requirement, label_selector_requirement);
