/* JSON text surgery for Table rows (src/common/apiserver/jsontext.c), and the pod cells computed
 * from a projection matching those of the whole pod. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include "apiserver/jsontext.h"
#include "testjson.h"
#include "ursa/api.h"
#include "ursa/jsonutil.h"

/* Single quotes in C literals stand for double quotes. */
static char *dq(const char *text)
{
	char *d = strdup(text);
	for (char *p = d; *p; p++)
		if (*p == '\'')
			*p = '"';
	return d;
}

static void test_skip(void **state)
{
	(void)state;
	char *s = dq("{'a':[1,{'b':'x}]\\\\'}],'c':true} tail");
	assert_int_equal(json_text_skip(s, strlen(s), 0), strlen(s) - 5);
	assert_int_equal(json_text_skip("  12,", 5, 0), 4);
	assert_int_equal(json_text_skip("\"a\\\"b\"", 6, 0), 6);
	assert_int_equal(json_text_skip("{\"a\":1", 6, 0), (size_t)-1);
	assert_int_equal(json_text_skip("\"open", 5, 0), (size_t)-1);
	assert_int_equal(json_text_skip("", 0, 0), (size_t)-1);
	assert_int_equal(json_text_skip(",", 1, 0), (size_t)-1);
	free(s);
}

static void test_member(void **state)
{
	(void)state;
	char *s = dq("{'kind':'Pod','meta':1,'metadata':{'name':'p','x':[1]},'spec':{}}");
	size_t off, len;
	assert_int_equal(json_text_member(s, strlen(s), "metadata", &off, &len), 0);
	assert_int_equal(len, strlen("{'name':'p','x':[1]}"));
	assert_memory_equal(s + off, "{\"name\":\"p\",\"x\":[1]}", len);
	assert_int_equal(json_text_member(s, strlen(s), "status", &off, &len), -1);
	assert_int_equal(json_text_member("[1]", 3, "a", &off, &len), -1);
	assert_int_equal(json_text_member("{\"a\":", 5, "a", &off, &len), -1);
	free(s);
}

static void check_drop(const char *in, const char *want)
{
	char *s = dq(in), *w = dq(want);
	struct buf b = BUF_INIT;
	buf_adds(&b, "x");
	assert_int_equal(json_text_drop_member(s, strlen(s), "managedFields", &b), 0);
	assert_string_equal(buf_cstr(&b) + 1, w);
	buf_release(&b);
	free(s);
	free(w);
}

static void test_drop(void **state)
{
	(void)state;
	check_drop("{'name':'a','managedFields':[{'f':{'x':1}}],'uid':'u'}", "{'name':'a','uid':'u'}");
	check_drop("{'managedFields':[],'name':'a'}", "{'name':'a'}");
	check_drop("{'name':'a','managedFields':null}", "{'name':'a'}");
	check_drop("{'managedFields':[]}", "{}");
	check_drop("{}", "{}");
	check_drop("{ 'name' : 'a' , 'labels' : { 'k' : 'v' } }", "{'name':'a','labels':{ 'k' : 'v' }}");
	struct buf b = BUF_INIT;
	buf_adds(&b, "keep");
	assert_int_equal(json_text_drop_member("[1]", 3, "a", &b), -1);
	assert_int_equal(json_text_drop_member("{\"a\":1,", 7, "a", &b), -1);
	assert_string_equal(buf_cstr(&b), "keep");
	buf_release(&b);
}

static void check_project(const char *in, const char *const *keep, const char *want)
{
	char *s = dq(in), *w = dq(want);
	struct buf b = BUF_INIT;
	assert_int_equal(json_text_project(s, strlen(s), keep, &b), 0);
	assert_string_equal(buf_cstr(&b), w);
	buf_release(&b);
	free(s);
	free(w);
}

static void test_project(void **state)
{
	(void)state;
	const char *const keep[] = { "metadata.name", "spec.containers.*.name", "spec.nodeName", "status", NULL };
	check_project("{'kind':'Pod','metadata':{'name':'p','labels':{'a':'b'}},'spec':{'containers':[{'name':'c',"
		      "'env':[{'name':'E'}]},{'image':'i'},3],'nodeName':'n','volumes':[]},'status':{'phase':'Running'}}",
		      keep,
		      "{'metadata':{'name':'p'},'spec':{'containers':[{'name':'c'},{},3],'nodeName':'n'},"
		      "'status':{'phase':'Running'}}");
	/* A path through a scalar keeps the scalar; no path keeps nothing of an object. */
	check_project("{'spec':5,'x':{'y':1}}", keep, "{'spec':5}");
	check_project("{}", keep, "{}");
	const char *const star[] = { "*.name", NULL };
	check_project("{'a':{'name':1,'b':2},'c':[{'name':3}],'d':'s'}", star, "{'a':{'name':1},'c':[{}],'d':'s'}");
	const char *const none[] = { NULL };
	check_project("{'a':1}", none, "{}");
	check_project("[{'a':1},[2],3]", (const char *const[]){ "*", NULL }, "[{'a':1},[2],3]");
	struct buf b = BUF_INIT;
	assert_int_equal(json_text_project("{\"spec\":{\"nodeName\":", 20, keep, &b), -1);
	buf_release(&b);
}

/* json_text_load equals jansson's parse of json_text_project's text (keep NULL: of the input). */
static void check_load(const char *text, const char *const *keep)
{
	struct buf b = BUF_INIT;
	if (keep)
		assert_int_equal(json_text_project(text, strlen(text), keep, &b), 0);
	else
		buf_adds(&b, text);
	json_t *want = json_loads(buf_cstr(&b), JSON_DECODE_ANY, NULL), *got = json_text_load(text, strlen(text), keep);
	assert_non_null(want);
	assert_non_null(got);
	if (!json_equal(want, got)) {
		char *g = json_dumps(got, JSON_COMPACT | JSON_PRESERVE_ORDER);
		fail_msg("json_text_load(%s) = %s, want %s", text, g, buf_cstr(&b));
	}
	json_decref(want);
	json_decref(got);
	buf_release(&b);
}

static void test_load(void **state)
{
	(void)state;
	check_load("{\"a\":[1,-2,3.5,-1e-3,1E2,true,false,null,\"\"],\"b\":{\"c\":{}},\"d\":[]}", NULL);
	check_load("{\"s\":\"q\\\"b\\\\s\\/n\\nt\\t\\u00e9\\u20ac\\ud83d\\ude00x\",\"k\\u0041\":1}", NULL);
	check_load(" [ 1 , { \"x\" : 2 } ] ", NULL);
	check_load("\"just a string\"", NULL);
	check_load("9223372036854775807", NULL);
	const char *const keep[] = { "metadata.name", "spec.containers.*.name", "spec.nodeName", "status", NULL };
	check_load("{\"metadata\":{\"name\":\"p\",\"uid\":\"u\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"x\":1},"
		   "{\"y\":[1]},7,[8]],\"nodeName\":\"n\",\"volumes\":[1]},\"status\":{\"phase\":\"R\",\"c\":[{\"a\":1}]}}",
		   keep);
	check_load("{\"spec\":5,\"other\":{\"a\":1}}", keep);
	/* Malformed text, NUL escapes, lone surrogates and out-of-range numbers are refused. */
	const char *bad[] = { "{\"a\":1", "{\"a\" 1}", "[1,2", "{\"a\":tru}", "\"\\u0000\"", "\"\\ud800\"",
			      "\"\\udc00x\"", "\"\\q\"", "99999999999999999999", "1e999", "[1]x", "", "-", "{\"a\":01.2.3}",
			      "\"\\u12\"" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *j = json_text_load(bad[i], strlen(bad[i]), NULL);
		if (j)
			fail_msg("json_text_load accepted %s", bad[i]);
	}
}

/* pod_cells on the projection made with the pod strategy's cell_paths matches the whole pod's. */
static void check_pod_cells(const char *pod_text)
{
	char *s = dq(pod_text);
	json_t *full = J(s);
	struct buf b = BUF_INIT;
	assert_non_null(strategy_pod.cell_paths);
	assert_int_equal(json_text_project(s, strlen(s), strategy_pod.cell_paths, &b), 0);
	json_t *part = J(buf_cstr(&b)), *loaded = json_text_load(s, strlen(s), strategy_pod.cell_paths);
	assert_non_null(loaded);
	assert_true(json_equal(part, loaded));
	json_decref(loaded);
	json_t *c1 = json_array(), *c2 = json_array();
	strategy_pod.cells(full, 1800000000, c1);
	strategy_pod.cells(part, 1800000000, c2);
	assert_int_equal(json_array_size(c1), strategy_pod.ncolumns);
	assert_true(json_equal(c1, c2));
	assert_true(b.len < strlen(s));
	json_decref(full);
	json_decref(part);
	json_decref(c1);
	json_decref(c2);
	buf_release(&b);
	free(s);
}

static void test_pod_cells_projection(void **state)
{
	(void)state;
	check_pod_cells("{'kind':'Pod','metadata':{'name':'web-1','namespace':'ns','creationTimestamp':"
			"'2026-11-26T10:00:00Z','labels':{'app':'web'},'managedFields':[{'manager':'m'}]},"
			"'spec':{'nodeName':'n1','containers':[{'name':'a','image':'x','env':[{'name':'E','value':'v'}]},"
			"{'name':'b','image':'y'}],'readinessGates':[{'conditionType':'g'}]},"
			"'status':{'phase':'Running','podIP':'10.0.0.1','podIPs':[{'ip':'10.0.0.1'}],"
			"'conditions':[{'type':'Ready','status':'True'},{'type':'g','status':'True'}],"
			"'containerStatuses':[{'name':'a','ready':true,'restartCount':2,'state':{'running':{}},"
			"'lastState':{'terminated':{'finishedAt':'2026-11-26T11:00:00Z'}}},"
			"{'name':'b','ready':false,'restartCount':0,'state':{'waiting':{'reason':'CrashLoopBackOff'}}}]}}");
	check_pod_cells("{'kind':'Pod','metadata':{'name':'init','creationTimestamp':'2026-11-26T10:00:00Z',"
			"'deletionTimestamp':'2026-11-26T12:00:00Z'},'spec':{'initContainers':[{'name':'side','image':'s',"
			"'restartPolicy':'Always'},{'name':'setup','image':'s'}],'containers':[{'name':'main','image':'m'}]},"
			"'status':{'phase':'Pending','initContainerStatuses':[{'name':'side','started':true,'ready':true,"
			"'restartCount':1,'state':{'running':{}}},{'name':'setup','restartCount':0,'state':{'waiting':"
			"{'reason':'PodInitializing'}}}],'conditions':[{'type':'PodScheduled','status':'True'}]}}");
	check_pod_cells("{'kind':'Pod','metadata':{'name':'gated','creationTimestamp':'x'},'spec':{'containers':"
			"[{'name':'c','image':'i'}],'schedulingGates':[{'name':'g'}]},'status':{'phase':'Pending',"
			"'conditions':[{'type':'PodScheduled','status':'False','reason':'SchedulingGated'}],"
			"'nominatedNodeName':'n2'}}");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_skip),
		cmocka_unit_test(test_member),
		cmocka_unit_test(test_drop),
		cmocka_unit_test(test_project),
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_pod_cells_projection),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
