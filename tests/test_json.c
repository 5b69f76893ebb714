/* test_json.c - base/json: the one JSON string writer (escapes, the cut at
 * the buffer's end, the quoted and FILE* forms agree). */
#include "json.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_escapes(void **state)
{
	(void)state;
	char buf[64];
	assert_int_equal(rf_json_escape(buf, sizeof(buf), "a\"b\\c\n\x01\x1f\x7f é"), 12);
	assert_string_equal(buf, "a\\\"b\\\\c\\u000a\\u0001\\u001f\x7f é");
	assert_string_equal(rf_json_quote(buf, sizeof(buf), "x\ty"), "\"x\\u0009y\"");
	assert_string_equal(rf_json_quote(buf, sizeof(buf), ""), "\"\"");
}

/* The text is cut before a character whose escape might not fit: at least 7
 * bytes stay free after each character written (the longest escape and the
 * NUL), so an escape is never cut in half. */
static void test_cut_at_bounds(void **state)
{
	(void)state;
	char buf[16];
	memset(buf, 'X', sizeof(buf));
	assert_int_equal(rf_json_escape(buf, 10, "abcdef"), 3);
	assert_string_equal(buf, "abc");
	assert_int_equal(rf_json_escape(buf, 10, "\n\n\n"), 1);
	assert_string_equal(buf, "\\u000a");
	assert_int_equal(rf_json_escape(buf, 8, "\""), 1);
	assert_string_equal(buf, "\\\"");
	assert_string_equal(rf_json_quote(buf, 12, "abcdefgh"), "\"abc\"");
	assert_string_equal(rf_json_quote(buf, sizeof(buf), "\n\n\n\n\n"), "\"\\u000a\\u000a\"");
}

/* The FILE* form writes the whole text, however long, as the quoted form. */
static void test_fput_whole(void **state)
{
	(void)state;
	size_t n = 5000;
	char *s = malloc(n + 1);
	for (size_t i = 0; i < n; i++)
		s[i] = (char)(i % 3 == 0 ? '\n' : i % 3 == 1 ? '"' : 'z');
	s[n] = '\0';
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	rf_json_fput(f, s);
	fclose(f);
	size_t cap = 6 * n + 16; /* room for all of it */
	char *want = malloc(cap);
	rf_json_quote(want, cap, s);
	assert_string_equal(out, want);
	assert_int_equal(len, strlen(want));
	assert_int_equal(len, 2 + (n + 2) / 3 * 6 + (n + 1) / 3 * 2 + n / 3);
	free(want);
	free(out);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_escapes),
	    cmocka_unit_test(test_cut_at_bounds),
	    cmocka_unit_test(test_fput_whole),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
