/* test_inject.c - the fault injection spec parser: the documented example,
 * accepted forms and their exact values, the canonical format round trip,
 * and every kind of malformed spec (each error names the key and position). */
#include "inject.h"
#include "testutil.h"
#include "util.h"

#include <stdio.h>

static void test_example(void **state)
{
	(void)state;
	rf_inject_spec s;
	rf_error err = {0};
	assert_int_equal(rf_inject_parse("seed=7,latency=20ms,jitter=10ms,stall=2s/10s,error=0.01,"
	                                 "reset=0.005,short=0.005,corrupt=0.001",
	                                 &s, &err),
	                 0);
	assert_true(s.seed == 7);
	assert_true(s.latency_ns == 20000000ull);
	assert_true(s.jitter_ns == 10000000ull);
	assert_true(s.stall_ns == 2000000000ull);
	assert_true(s.stall_period_ns == 10000000000ull);
	assert_true(s.error_p12 == 10000000000ull);
	assert_true(s.reset_p12 == 5000000000ull);
	assert_true(s.short_p12 == 5000000000ull);
	assert_true(s.corrupt_p12 == 1000000000ull);
}

static void test_accepted_forms(void **state)
{
	(void)state;
	rf_inject_spec s;
	rf_error err = {0};
	assert_int_equal(rf_inject_parse("latency=1.5s", &s, &err), 0);
	assert_true(s.latency_ns == 1500000000ull);
	assert_true(s.seed == 0 && s.stall_period_ns == 0 && s.error_p12 == 0);
	assert_int_equal(rf_inject_parse("latency=250us,jitter=7ns", &s, &err), 0);
	assert_true(s.latency_ns == 250000ull && s.jitter_ns == 7);
	assert_int_equal(rf_inject_parse("latency=0,jitter=0.000000001s", &s, &err), 0);
	assert_true(s.latency_ns == 0 && s.jitter_ns == 1);
	assert_int_equal(rf_inject_parse("latency=3600s", &s, &err), 0);
	assert_true(s.latency_ns == RF_INJECT_DURATION_NS_MAX);
	assert_int_equal(rf_inject_parse("latency=3600000000000ns", &s, &err), 0);
	assert_true(s.latency_ns == RF_INJECT_DURATION_NS_MAX);
	assert_int_equal(rf_inject_parse(" seed=18446744073709551615 , error=1 ", &s, &err), 0);
	assert_true(s.seed == UINT64_MAX);
	assert_true(s.error_p12 == RF_INJECT_PROB_ONE);
	assert_int_equal(rf_inject_parse("stall=0/10s,corrupt=0.000000000001", &s, &err), 0);
	assert_true(s.stall_ns == 0 && s.stall_period_ns == 10000000000ull);
	assert_true(s.corrupt_p12 == 1);
	assert_int_equal(rf_inject_parse("error=0.25,reset=0.25,short=0.25,corrupt=0.25", &s, &err),
	                 0);
	/* Order does not matter. */
	rf_inject_spec t;
	assert_int_equal(rf_inject_parse("corrupt=0.25,short=0.25,reset=0.25,error=0.25", &t, &err),
	                 0);
	assert_memory_equal(&s, &t, sizeof(s));
}

static void test_format_round_trip(void **state)
{
	(void)state;
	const char *specs[] = {
	    ("seed=7,latency=20ms,jitter=10ms,stall=2s/10s,error=0.01,reset=0.005,short=0.005,"
	     "corrupt=0.001"),
	    "latency=1.5s,jitter=7ns",
	    "seed=18446744073709551615,error=1",
	    "stall=250us/1s,corrupt=0.000000000001",
	    "latency=123456789ns",
	};
	for (size_t i = 0; i < RF_ARRAY_LEN(specs); i++) {
		rf_inject_spec a, b;
		rf_error err = {0};
		char buf[RF_INJECT_SPEC_BYTES_MAX];
		assert_int_equal(rf_inject_parse(specs[i], &a, &err), 0);
		int n = rf_inject_format(&a, buf, sizeof(buf));
		assert_true(n > 0);
		assert_int_equal(rf_inject_parse(buf, &b, &err), 0);
		assert_memory_equal(&a, &b, sizeof(a));
	}
	rf_inject_spec a;
	assert_int_equal(rf_inject_parse("seed=7,latency=20ms", &a, NULL), 0);
	char buf[300];
	assert_true(rf_inject_format(&a, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "seed=7,latency=20ms,jitter=0,error=0.0,reset=0.0,short=0.0,"
	                         "corrupt=0.0");
	char tiny[10];
	assert_int_equal(rf_inject_format(&a, tiny, sizeof(tiny)), -ENOSPC);
}

typedef struct bad_case {
	const char *spec;
	const char *want1, *want2; /* substrings of the message (NULL: none) */
} bad_case;

static void test_malformed(void **state)
{
	(void)state;
	static const bad_case cases[] = {
	    {"", "empty spec", NULL},
	    {"foo=1", "unknown key 'foo'", "position 1"},
	    {"seed=7,bogus=2", "unknown key 'bogus'", "position 8"},
	    {"Seed=1", "unknown key 'Seed'", "known: seed"},
	    {"averyveryverylongkeyname=1", "unknown key 'averyveryverylon'", "position 1"},
	    {"seed", "'seed' at position 1 is not key=value", NULL},
	    {"=5", "not key=value", "position 1"},
	    {"seed=7,,latency=1ms", "empty item", "position 8"},
	    {"seed=7,", "empty item", "position 8"},
	    {",seed=7", "empty item", "position 1"},
	    {"seed=7, ,error=0", "empty item", "position 8"},
	    {"latency=", "empty value for 'latency'", "position 9"},
	    {"latency=20", "'20' for 'latency'", "position 9"},
	    {"latency=20m", "'20m' for 'latency'", "duration"},
	    {"latency=-1ms", "'-1ms' for 'latency'", NULL},
	    {"latency=1.ms", "'1.ms' for 'latency'", NULL},
	    {"latency=.5ms", "'.5ms' for 'latency'", NULL},
	    {"latency=1e3ms", "'1e3ms' for 'latency'", NULL},
	    {"latency=20 ms", "'20 ms' for 'latency'", NULL},
	    {"latency=2h", "'2h' for 'latency'", NULL},
	    {"latency=3601s", "'3601s' for 'latency'", "at most 1 hour"},
	    {"latency=99999999999999999999s", "for 'latency'", NULL},
	    {"latency=0.5ns", "'0.5ns' for 'latency'", NULL},
	    {"latency=0.0000000001s", "for 'latency'", NULL},
	    {"jitter=abc", "'abc' for 'jitter'", "position 8"},
	    {"stall=2s", "'2s' for 'stall'", "STALL/PERIOD"},
	    {"stall=10s/2s", "'10s/2s' for 'stall'", NULL},
	    {"stall=2s/2s", "'2s/2s' for 'stall'", NULL},
	    {"stall=2s/0", "'2s/0' for 'stall'", NULL},
	    {"stall=2s/10s/3s", "for 'stall'", NULL},
	    {"stall=/10s", "for 'stall'", NULL},
	    {"error=1.5", "'1.5' for 'error'", "probability"},
	    {"error=1.0000000000001", "for 'error'", NULL},
	    {"error=-0.1", "'-0.1' for 'error'", NULL},
	    {"error=0.0000000000001", "for 'error'", NULL},
	    {"error=1e-3", "'1e-3' for 'error'", NULL},
	    {"error=nan", "'nan' for 'error'", NULL},
	    {"error=0x1", "'0x1' for 'error'", NULL},
	    {"error=50%", "'50%' for 'error'", NULL},
	    {"reset=0.1,short=x", "'x' for 'short'", "position 17"},
	    {"corrupt=2", "'2' for 'corrupt'", NULL},
	    {"error=0.6,reset=0.5", "add up to 1.1", "more than 1"},
	    {"error=0.25,reset=0.25,short=0.25,corrupt=0.26", "add up to", NULL},
	    {"seed=7,seed=8", "'seed' at position 8 is given twice", NULL},
	    {"seed=-1", "'-1' for 'seed'", NULL},
	    {"seed=18446744073709551616", "for 'seed'", NULL},
	    {"seed=1.5", "'1.5' for 'seed'", NULL},
	    {"seed=7;latency=1ms", "for 'seed'", NULL},
	    {"seed=0123456789012345678901234567890123456789012345678901234567890123456789",
	     "too long a value for 'seed'", NULL},
	};
	for (size_t i = 0; i < RF_ARRAY_LEN(cases); i++) {
		rf_inject_spec s;
		rf_error err = {0};
		int rc = rf_inject_parse(cases[i].spec, &s, &err);
		if (rc != -EINVAL || !strstr(err.msg, cases[i].want1) ||
		    (cases[i].want2 && !strstr(err.msg, cases[i].want2)))
			fail_msg("spec '%s': rc %d, message '%s'", cases[i].spec, rc, err.msg);
		assert_non_null(strstr(err.msg, "inject"));
	}
	rf_inject_spec s;
	rf_error err = {0};
	assert_int_equal(rf_inject_parse(NULL, &s, &err), -EINVAL);
	char longspec[RF_INJECT_SPEC_BYTES_MAX + 20];
	memset(longspec, ' ', sizeof(longspec) - 1);
	memcpy(longspec, "seed=1,", 7);
	longspec[sizeof(longspec) - 1] = '\0';
	assert_int_equal(rf_inject_parse(longspec, &s, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "longer than 512"));
	/* No error pointer: still a clean -EINVAL. */
	assert_int_equal(rf_inject_parse("nope", &s, NULL), -EINVAL);
}

static void test_shared_parsers(void **state)
{
	(void)state;
	uint64_t v = 0;
	assert_int_equal(rf_inject_parse_duration("20ms", 4, &v), 0);
	assert_true(v == 20000000ull);
	assert_int_equal(rf_inject_parse_duration("20msXX", 4, &v), 0); /* length-bounded */
	assert_int_equal(rf_inject_parse_duration("", 0, &v), -EINVAL);
	assert_int_equal(rf_inject_parse_duration("5000s", 5, &v), -ERANGE);
	assert_int_equal(rf_inject_parse_prob("0.5", 3, &v), 0);
	assert_true(v == RF_INJECT_PROB_ONE / 2);
	assert_int_equal(rf_inject_parse_prob("1.01", 4, &v), -EINVAL);
	assert_int_equal(rf_inject_parse_prob("", 0, &v), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_example),           cmocka_unit_test(test_accepted_forms),
	    cmocka_unit_test(test_format_round_trip), cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_shared_parsers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
