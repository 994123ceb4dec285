/* The pod worker's decision for a pod served by two partitions while its tenant moves (podlogic.h):
 * the move copies the pod to the target and later deletes the source's copy with raw etcd deletes
 * (no deletionTimestamp first), or, when the move is undone, deletes the target's. Either way one
 * copy lives on and its containers must not stop or start again. */
#include "podlogic.h"

enum kl_pod_action kl_pod_key_action(enum kl_pod_key key, bool present, bool other)
{
	switch (key) {
	case KL_KEY_HOME:
		if (present)
			return KL_POD_RUN;
		return other ? KL_POD_HAND_OFF : KL_POD_STOP;
	case KL_KEY_COPY:
		return present ? KL_POD_NONE : KL_POD_FORGET_COPY;
	case KL_KEY_NEW:
		break;
	}
	if (!present)
		return KL_POD_NONE;
	return other ? KL_POD_ADD_COPY : KL_POD_RUN;
}
