/* Fuzzes the image reference parser: whatever it accepts normalises to a fixed point (the
 * fully qualified form parses back to itself), with a valid-looking domain and path, a name
 * within 255 bytes and a tag or digest; whatever it refuses gets Kubernetes' InvalidImageName
 * message. The mirror rewrite of an accepted reference parses too (unless the longer mirror host
 * takes the name past 255 bytes). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "images.h"
#include "ursa/xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 8192)
		return 0;
	char *s = xstrndup((const char *)data, size);
	struct image_ref r;
	char *err = NULL;
	if (image_ref_parse(s, &r, &err) < 0) {
		if (!err || strncmp(err, "Failed to apply default image tag \"", 35) != 0)
			abort();
		free(err);
		free(s);
		return 0;
	}
	if (!r.domain || !r.path || !*r.domain || !*r.path || (!r.tag && !r.digest))
		abort();
	if (strlen(r.domain) + 1 + strlen(r.path) > IMAGE_NAME_MAX || strcmp(r.domain, "index.docker.io") == 0)
		abort();
	char *full = image_ref_string(&r);
	struct image_ref again;
	if (image_ref_parse(full, &again, NULL) < 0)
		abort();
	char *full2 = image_ref_string(&again);
	if (strcmp(full, full2) != 0 || strcmp(r.domain, again.domain) != 0 || strcmp(r.path, again.path) != 0)
		abort();

	struct image_mirrors m = { 0 };
	char *merr = NULL;
	if (image_mirrors_add(&m, "docker.io=127.0.0.1:5000", &merr) < 0)
		abort();
	char *mirrored = image_mirror_ref(&m, &r);
	struct image_ref mr;
	char *mrerr = NULL;
	if (image_ref_parse(mirrored, &mr, &mrerr) == 0) {
		if (strcmp(mr.path, r.path) != 0 ||
		    strcmp(mr.domain, strcmp(r.domain, "docker.io") == 0 ? "127.0.0.1:5000" : r.domain) != 0)
			abort();
		image_ref_release(&mr);
	} else if (!strstr(mrerr, "more than 255 characters")) { /* a longer mirror host may pass the cap */
		abort();
	}
	free(mrerr);
	free(mirrored);
	image_mirrors_release(&m);
	/* the input as a mirror spec: either refused with a message or accepted */
	if (image_mirrors_add(&m, s, &merr) < 0) {
		if (!merr)
			abort();
		free(merr);
	}
	image_mirrors_release(&m);

	free(full2);
	free(full);
	image_ref_release(&again);
	image_ref_release(&r);
	free(s);
	return 0;
}
