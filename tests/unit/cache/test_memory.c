/* Memory per cached object: 100,000 pod-like objects of ~1.5 KB JSON each, loaded the way a
 * relist loads them. Prints heap bytes in use and RSS growth per object; asserts < 4 KB. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <malloc.h>
#include "cache_testlib.h"

#define NOBJ 100000

static long vm_rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char *line = NULL;
	size_t cap = 0;
	long kb = -1;
	if (!f)
		return -1;
	while (getline(&line, &cap, f) > 0)
		if (strncmp(line, "VmRSS:", 6) == 0)
			kb = strtol(line + 6, NULL, 10);
	free(line);
	fclose(f);
	return kb;
}

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

/* A pod as a real API server stores it: ~1.5 KB of compact JSON. */
static char *realistic_pod(int i, struct buf *b)
{
	buf_reset(b);
	buf_addf(b,
		 "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"web-7d4b9c8f5d-%05d\","
		 "\"namespace\":\"ns-%d\",\"tenant\":\"tenant-%d\","
		 "\"uid\":\"0b6a3c1e-5f2d-4e8a-9c7b-%012d\",\"hashKey\":%d,\"creationTimestamp\":"
		 "\"2024-05-01T10:00:00Z\",\"labels\":{\"app\":\"web\",\"pod-template-hash\":\"7d4b9c8f5d\","
		 "\"tier\":\"frontend\"},\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
		 "\"name\":\"web-7d4b9c8f5d\",\"uid\":\"9a8b7c6d-1e2f-4a3b-8c9d-0e1f2a3b4c5d\",\"controller\":true,"
		 "\"blockOwnerDeletion\":true}]},\"spec\":{\"containers\":[{\"name\":\"web\",\"image\":"
		 "\"registry.example.com/team/web:1.25.3\",\"ports\":[{\"containerPort\":8080,\"protocol\":\"TCP\"}],"
		 "\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"},\"limits\":{\"cpu\":\"500m\","
		 "\"memory\":\"256Mi\"}},\"imagePullPolicy\":\"IfNotPresent\"}],"
		 "\"restartPolicy\":\"Always\",\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":\"ClusterFirst\","
		 "\"serviceAccountName\":\"default\",\"nodeName\":\"node-%04d\",\"schedulerName\":\"default-scheduler\","
		 "\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\",\"effect\":"
		 "\"NoExecute\",\"tolerationSeconds\":300}],\"priority\":0},\"status\":{\"phase\":"
		 "\"Running\",\"conditions\":[{\"type\":\"Initialized\",\"status\":\"True\",\"lastTransitionTime\":"
		 "\"2024-05-01T10:00:01Z\"},{\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":"
		 "\"2024-05-01T10:00:05Z\"},{\"type\":\"PodScheduled\",\"status\":\"True\",\"lastTransitionTime\":"
		 "\"2024-05-01T10:00:00Z\"}],\"hostIP\":\"10.0.%d.%d\",\"podIP\":\"10.244.%d.%d\",\"startTime\":"
		 "\"2024-05-01T10:00:01Z\",\"containerStatuses\":[{\"name\":\"web\",\"ready\":true,\"restartCount\":0,"
		 "\"image\":\"registry.example.com/team/web:1.25.3\",\"containerID\":\"containerd://%016d\"}],"
		 "\"qosClass\":\"Burstable\"}}",
		 i, i % 50, i % 10, i, i * 7, i % 1000, i % 250, i % 200, i % 250, i % 200, i);
	return b->ptr;
}

static void test_bytes_per_object(void **state)
{
	struct buf b = BUF_INIT;
	realistic_pod(12345, &b);
	print_message("pod JSON: %zu bytes\n", b.len);
	assert_in_range(b.len, 1400, 1700);

	malloc_trim(0);
	size_t heap0 = heap_in_use();
	long rss0 = vm_rss_kb();
	struct wcache *c = wcache_new_detached(&test_pods, NULL);
	struct cobj **objs = xcalloc(NOBJ, sizeof(*objs));
	for (int i = 0; i < NOBJ; i++) {
		realistic_pod(i, &b);
		char *key = xasprintf("/registry/pods/tenant-%d/ns-%d/web-7d4b9c8f5d-%05d", i % 10, i % 50, i);
		objs[i] = cobj_new(&test_pods, key, b.ptr, b.len, 1000 + i);
		assert_non_null(objs[i]);
		free(key);
	}
	wcache_install(c, objs, NOBJ, 1000 + NOBJ);
	free(objs);
	buf_release(&b);
	malloc_trim(0);
	size_t heap1 = heap_in_use();
	long rss1 = vm_rss_kb();
	assert_int_equal(wcache_size(c), NOBJ);

	print_message("heap %zu -> %zu bytes, VmRSS %ld -> %ld kB\n", heap0, heap1, rss0, rss1);
	double heap_per = (double)(heap1 - heap0) / NOBJ;
	double rss_per = (double)(rss1 - rss0) * 1024.0 / NOBJ;
	print_message("cached objects: %d; heap in use %.0f B/object; VmRSS growth %.0f B/object\n", NOBJ,
		      heap_per, rss_per);
#if defined(__SANITIZE_ADDRESS__)
	print_message("(ASan build: allocator figures are not meaningful, not asserted)\n");
#else
	assert_true(heap_per < 4096);
	assert_true(rss_per < 4096);
#endif
	/* the per-node index and a filtered list work at this size */
	struct field_selector *fs = NULL;
	struct cobj **got;
	size_t n;
	int64_t rv;
	assert_int_equal(field_selector_parse("spec.nodeName=node-0007", &fs, NULL), 0);
	struct wfilter f = { NULL, NULL, NULL, NULL, fs };
	assert_int_equal(wcache_list(c, &f, &got, &n, &rv), 0);
	assert_int_equal(n, NOBJ / 1000);
	for (size_t i = 0; i < n; i++)
		cobj_unref(got[i]);
	free(got);
	field_selector_free(fs);
	wcache_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bytes_per_object),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
