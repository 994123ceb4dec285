/* resourceVersions as clients see them: revision.h. */
#include "ursa/revision.h"

#define REV_MASK ((INT64_C(1) << RV_NUMBER_SHIFT) - 1)

static unsigned number;

int rv_set_number(long long n)
{
	if (n < 0 || n > RV_NUMBER_MAX)
		return -1;
	number = (unsigned)n;
	return 0;
}

unsigned rv_number(void)
{
	return number;
}

int64_t rv_show_at(unsigned n, int64_t rev)
{
	return rev > 0 ? (int64_t)((uint64_t)n << RV_NUMBER_SHIFT) | rev : rev;
}

int64_t rv_show(int64_t rev)
{
	return rv_show_at(number, rev);
}

unsigned rv_number_of(int64_t shown)
{
	return shown > 0 ? (unsigned)((uint64_t)shown >> RV_NUMBER_SHIFT) : 0;
}

enum rv_where rv_resolve(int64_t shown, int64_t moved_from, int64_t moved_to, int64_t *ret_rev)
{
	*ret_rev = shown;
	if (shown <= 0)
		return RV_HERE;
	if (rv_number_of(shown) == number) {
		*ret_rev = shown & REV_MASK;
		return RV_HERE;
	}
	if (moved_from > 0 && moved_to > 0 && rv_number_of(moved_to) == number &&
	    rv_number_of(shown) == rv_number_of(moved_from) && shown >= moved_from) {
		*ret_rev = moved_to & REV_MASK;
		return RV_CAUGHT_UP;
	}
	return RV_ELSEWHERE;
}
