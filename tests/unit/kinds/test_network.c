/* IPv4 helpers (ursa/ipnet.h), the Network, Endpoints and EndpointSlice strategies, and the
 * Service's cluster IP checks. */
#include "kinds_test.h"
#include "ursa/ipnet.h"

#define NOW "2024-05-01T12:00:00Z"

static json_t *obj(const char *body)
{
	json_t *o = J(body);
	json_t *meta = json_object_get(o, "metadata");
	if (!meta) {
		meta = J("{'name':'x','namespace':'default'}");
		json_object_set_new(o, "metadata", meta);
	}
	json_object_set_new(meta, "creationTimestamp", json_string("2024-05-01T11:59:30Z"));
	return o;
}

static void test_ipv4_parse(void **state)
{
	(void)state;
	uint32_t ip = 0;
	assert_int_equal(ipv4_parse("10.96.0.10", &ip), 0);
	assert_int_equal(ip, 0x0a60000a);
	assert_int_equal(ipv4_parse("255.255.255.255", &ip), 0);
	assert_int_equal(ip, 0xffffffffu);
	static const char *const bad[] = { "", "1.2.3", "1.2.3.4.5", "256.1.1.1", "01.2.3.4", "1.2.3.4 ", "a.b.c.d",
					   "1..2.3", "1.2.3.4/8", "1234.1.1.1", "-1.2.3.4" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(ipv4_parse(bad[i], &ip), -1);
	struct buf b = BUF_INIT;
	ipv4_format(0x0a60000a, &b);
	assert_string_equal(b.ptr, "10.96.0.10");
	buf_release(&b);
}

static void test_cidr(void **state)
{
	(void)state;
	struct ipv4_net n;
	const char *why = NULL;
	assert_int_equal(ipv4_cidr_parse("10.96.0.0/16", &n, &why), 0);
	assert_int_equal(n.base, 0x0a600000);
	assert_int_equal(n.prefix, 16);
	assert_int_equal(ipv4_net_size(n), 65536);
	assert_true(ipv4_net_usable(n, 0x0a600001));
	assert_false(ipv4_net_usable(n, 0x0a600000));  /* network address */
	assert_false(ipv4_net_usable(n, 0x0a60ffff));  /* broadcast */
	assert_false(ipv4_net_usable(n, 0x0a610001));  /* outside */
	assert_int_equal(ipv4_cidr_parse("10.96.0.1/16", &n, &why), -1);
	assert_non_null(strstr(why, "host bits"));
	assert_int_equal(ipv4_cidr_parse("10.96.0.0", &n, NULL), -1);
	assert_int_equal(ipv4_cidr_parse("10.96.0.0/33", &n, NULL), -1);
	assert_int_equal(ipv4_cidr_parse("10.96.0.0/016", &n, NULL), -1);
	assert_int_equal(ipv4_cidr_parse("0.0.0.0/0", &n, NULL), 0);
}

static bool taken_odd(void *ud, uint32_t off)
{
	(void)ud;
	return off % 2 == 1;
}

static void test_next_free(void **state)
{
	(void)state;
	uint64_t size = 256; /* a /24: band 16 */
	uint8_t bits[32] = { 0 };
	assert_int_equal(ipv4_range_band(size), 16);
	assert_int_equal(ipv4_range_band(65536), 256);
	assert_int_equal(ipv4_range_next_free(bits, size, 0, NULL, NULL), 16); /* dynamic: above the band */
	assert_int_equal(ipv4_range_next_free(bits, size, 100, NULL, NULL), 100);
	assert_int_equal(ipv4_range_next_free(bits, size, 100, taken_odd, NULL), 100);
	assert_int_equal(ipv4_range_next_free(bits, size, 101, taken_odd, NULL), 102);
	/* the upper part full: wraps, then the low band, never 0 nor 255 */
	for (uint32_t off = 16; off < 255; off++)
		bits[off / 8] |= (uint8_t)(1u << (off % 8));
	assert_int_equal(ipv4_range_next_free(bits, size, 200, NULL, NULL), 1);
	for (uint32_t off = 1; off < 16; off++)
		bits[off / 8] |= (uint8_t)(1u << (off % 8));
	assert_int_equal(ipv4_range_next_free(bits, size, 200, NULL, NULL), 0);
	bits[254 / 8] &= (uint8_t) ~(1u << (254 % 8));
	assert_int_equal(ipv4_range_next_free(bits, size, 17, NULL, NULL), 254);
}

static void test_network_kind(void **state)
{
	(void)state;
	json_t *n = obj("{'metadata':{'name':'default'}}");
	struct field_errors e = run_validate(&strategy_network, n, NULL);
	expect_no_errors(&e);
	assert_string_equal(json_path_str(n, "spec.serviceCIDR"), IPNET_DEFAULT_SERVICE_CIDR);
	assert_string_equal(json_path_str(n, "spec.type"), "flat");
	json_t *n2 = obj("{'metadata':{'name':'default'},'spec':{'serviceCIDR':'10.0.0.0/8','type':'vpc'}}");
	e = run_validate(&strategy_network, n2, NULL);
	expect_cause(&e, "spec.serviceCIDR", "FieldValueInvalid");
	expect_cause(&e, "spec.type", "FieldValueNotSupported");
	field_errors_release(&e);
	json_t *n3 = obj("{'metadata':{'name':'default'},'spec':{'serviceCIDR':'10.100.0.0/16'}}");
	e = run_validate(&strategy_network, n3, n);
	assert_non_null(strstr(expect_cause(&e, "spec.serviceCIDR", "FieldValueInvalid"), "immutable"));
	field_errors_release(&e);
	json_object_set_new(n, "status", J("{'phase':'Ready','dnsServiceIP':'10.96.0.10'}"));
	json_t *cells = cells_of(&strategy_network, n, T(NOW));
	assert_string_equal(cell_s(cells, 2), "10.96.0.0/16");
	assert_string_equal(cell_s(cells, 3), "10.96.0.10");
	assert_string_equal(cell_s(cells, 4), "Ready");
	json_decref(cells), json_decref(n), json_decref(n2), json_decref(n3);
}

static void test_endpoints_cells(void **state)
{
	(void)state;
	json_t *ep = obj("{'subsets':[{'addresses':[{'ip':'10.0.0.1'},{'ip':'10.0.0.2'}],'ports':[{'port':80},"
			 "{'port':443,'name':'https'}]},{'addresses':[{'ip':'10.0.0.3'}],'ports':[{'port':8080}]}]}");
	struct field_errors e = run_validate(&strategy_endpoints, ep, NULL);
	expect_no_errors(&e);
	assert_string_equal(json_path_str(json_array_get(json_path(json_array_get(json_object_get(ep, "subsets"), 0),
									"ports"), 0), "protocol"), "TCP");
	json_t *cells = cells_of(&strategy_endpoints, ep, T(NOW));
	assert_string_equal(cell_s(cells, 1), "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 2 more...");
	json_decref(cells);
	json_t *none = obj("{}");
	cells = cells_of(&strategy_endpoints, none, T(NOW));
	assert_string_equal(cell_s(cells, 1), "<none>");
	json_decref(cells);
	json_t *notready = obj("{'subsets':[{'notReadyAddresses':[{'ip':'10.0.0.1'}],'ports':[{'port':80}]}]}");
	cells = cells_of(&strategy_endpoints, notready, T(NOW));
	assert_string_equal(cell_s(cells, 1), "");
	json_decref(cells);
	json_t *headless = obj("{'subsets':[{'addresses':[{'ip':'10.0.0.9'}]}]}");
	cells = cells_of(&strategy_endpoints, headless, T(NOW));
	assert_string_equal(cell_s(cells, 1), "10.0.0.9");
	json_decref(cells);
	json_t *bad = obj("{'subsets':[{'addresses':[{'ip':'nope'}],'ports':[{'port':70000}]}]}");
	e = run_validate(&strategy_endpoints, bad, NULL);
	expect_cause(&e, "subsets[0].addresses[0].ip", "FieldValueInvalid");
	expect_cause(&e, "subsets[0].ports[0].port", "FieldValueInvalid");
	field_errors_release(&e);
	json_decref(ep), json_decref(none), json_decref(notready), json_decref(headless), json_decref(bad);
}

static void test_slice(void **state)
{
	(void)state;
	json_t *s = obj("{'addressType':'IPv4','ports':[{'name':'','port':80},{'name':'b','port':81},{'name':'c',"
			"'port':82},{'name':'d','port':83}],'endpoints':[{'addresses':['10.0.0.1']},{'addresses':"
			"['10.0.0.2']}]}");
	struct field_errors e = run_validate(&strategy_endpointslice, s, NULL);
	expect_no_errors(&e);
	json_t *cells = cells_of(&strategy_endpointslice, s, T(NOW));
	assert_string_equal(cell_s(cells, 1), "IPv4");
	assert_string_equal(cell_s(cells, 2), "80,81,82 + 1 more...");
	assert_string_equal(cell_s(cells, 3), "10.0.0.1,10.0.0.2");
	json_decref(cells);
	json_t *empty = obj("{'addressType':'IPv4','endpoints':[]}");
	cells = cells_of(&strategy_endpointslice, empty, T(NOW));
	assert_string_equal(cell_s(cells, 2), "<unset>");
	assert_string_equal(cell_s(cells, 3), "<unset>");
	json_decref(cells);
	json_t *bad = obj("{'addressType':'IPv5','endpoints':[{'addresses':[]}]}");
	e = run_validate(&strategy_endpointslice, bad, NULL);
	expect_cause(&e, "addressType", "FieldValueNotSupported");
	expect_cause(&e, "endpoints[0].addresses", "FieldValueInvalid");
	field_errors_release(&e);
	json_decref(s), json_decref(empty), json_decref(bad);
}

static void test_service_ips(void **state)
{
	(void)state;
	json_t *svc = obj("{'spec':{'clusterIP':'10.96.0.300','ports':[{'port':80}]}}");
	struct field_errors e = run_validate(&strategy_service, svc, NULL);
	expect_cause(&e, "spec.clusterIP", "FieldValueInvalid");
	field_errors_release(&e);
	json_t *ok = obj("{'spec':{'clusterIP':'None','ports':[{'port':80}]}}");
	e = run_validate(&strategy_service, ok, NULL);
	expect_no_errors(&e);
	json_t *mismatch = obj("{'spec':{'clusterIP':'10.96.0.5','clusterIPs':['10.96.0.6'],'ports':[{'port':80}]}}");
	e = run_validate(&strategy_service, mismatch, NULL);
	expect_cause(&e, "spec.clusterIPs[0]", "FieldValueInvalid");
	field_errors_release(&e);
	json_decref(svc), json_decref(ok), json_decref(mismatch);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipv4_parse), cmocka_unit_test(test_cidr),	 cmocka_unit_test(test_next_free),
		cmocka_unit_test(test_network_kind), cmocka_unit_test(test_endpoints_cells), cmocka_unit_test(test_slice),
		cmocka_unit_test(test_service_ips),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
