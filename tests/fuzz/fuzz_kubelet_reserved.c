/* Fuzzes the --system-reserved / --kube-reserved parser: whatever it accepts has non-negative
 * reservations, and allocatable from them stays within 0..capacity; whatever it refuses says why
 * and leaves the result untouched. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "podlogic.h"
#include "ursa/xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *s = xstrndup((const char *)data, size);
	struct kl_reserved r = { -7, -7, -7, -7 };
	struct buf err = BUF_INIT;
	if (kl_reserved_parse(s, &r, &err) != 0) {
		if (!err.len || r.cpu_m != -7 || r.mem_m != -7 || r.pids != -7 || r.storage_m != -7)
			abort();
	} else {
		if (err.len || r.cpu_m < 0 || r.mem_m < 0 || r.pids < 0 || r.storage_m < 0)
			abort();
		struct kl_res cap = { 4000, 8LL << 40, 110 }, alloc;
		struct kl_reserved none = { 0 };
		kl_allocatable(&cap, &r, &none, &alloc);
		if (alloc.cpu_m < 0 || alloc.cpu_m > cap.cpu_m || alloc.mem_m < 0 || alloc.mem_m > cap.mem_m ||
		    alloc.pods != cap.pods)
			abort();
	}
	buf_release(&err);
	free(s);
	return 0;
}
