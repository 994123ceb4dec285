/* Strategic merge patch metadata of the built-in kinds, derived from the one type description
 * (ursa/schema.h): a list field with a merge key (F_MSGRK) merges element-wise by that key, a
 * repeated scalar flagged PF_SET merges as a set, every other list is replaced; maps merge
 * recursively with the field's sub-schema, if any. */
#include "patch_internal.h"
#include <string.h>

const struct pb_msg *smp_schema_for_kind(const char *kind)
{
	return pb_kind_schema_any(kind);
}

const struct pb_field *smp_field_lookup(const struct pb_msg *node, const char *key, size_t klen)
{
	return pb_field_by_name(node, key, klen);
}

enum smp_list smp_list_of(const struct pb_field *f)
{
	if (!f || !(f->flags & PF_REPEATED))
		return SMP_LIST_REPLACE;
	if (f->type == PT_MSG && f->merge_key)
		return SMP_LIST_MERGE_KEYED;
	if (f->type != PT_MSG && (f->flags & PF_SET))
		return SMP_LIST_MERGE_SET;
	return SMP_LIST_REPLACE;
}

const struct pb_msg *smp_sub(const struct pb_field *f)
{
	return f && f->type == PT_MSG ? f->sub : NULL;
}
