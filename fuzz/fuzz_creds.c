/* fuzz_creds.c - libFuzzer target for what credential sources answer
 * (fetch/creds.h): the first byte picks the parser (STS XML, process JSON,
 * container/IMDS JSON, an ISO 8601 time, a credential_process command
 * line); the rest is the input. Checks: an error carries a message and
 * leaves nothing; accepted credentials are sendable (no ':' in the key, no
 * control character or blank in the secret or token). */
#include "creds.h"
#include "fuzz.h"

static void check_value(const rf_creds_value *v)
{
	FUZZ_CHECK(v->access_key && *v->access_key && !strchr(v->access_key, ':'));
	FUZZ_CHECK(v->secret_key && *v->secret_key);
	for (const char *s = v->secret_key; *s; s++)
		FUZZ_CHECK(*s > 0x20 && *s < 0x7f);
	for (const char *s = v->session_token; s && *s; s++)
		FUZZ_CHECK(*s > 0x20 && *s < 0x7f);
}

static void parse_creds(int which, const char *data, size_t size)
{
	rf_creds_value v;
	rf_error err = {0};
	int rc = which == 0
	             ? rf_creds_parse_sts(data, size, &v, &err)
	             : rf_creds_parse_json(
	                   data, size, which == 1 ? RF_CREDS_JSON_PROCESS : RF_CREDS_JSON_CONTAINER,
	                   &v, &err);
	if (rc < 0) {
		fuzz_check_error(rc, &err);
		FUZZ_CHECK(!v.access_key && !v.secret_key && !v.session_token);
		return;
	}
	check_value(&v);
	rf_creds_value_wipe(&v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	int which = data[0] % 5;
	const char *rest = (const char *)data + 1;
	if (which < 3) {
		parse_creds(which, rest, size - 1);
		return 0;
	}
	char *s = fuzz_cstr(data + 1, size - 1);
	if (which == 3) {
		int64_t t = -1;
		int rc = rf_creds_parse_time(s, &t);
		FUZZ_CHECK(rc == -EINVAL || (rc == 0 && t >= 0));
	} else {
		char **argv = NULL;
		rf_error err = {0};
		int rc = rf_creds_split_command(s, &argv, &err);
		if (rc < 0) {
			fuzz_check_error(rc, &err);
			FUZZ_CHECK(argv == NULL);
		} else {
			FUZZ_CHECK(argv && argv[0]);
			size_t n = 0;
			for (; argv[n]; n++)
				FUZZ_CHECK(strlen(argv[n]) <= size);
			FUZZ_CHECK(n <= RF_CREDS_PROCESS_ARGS_MAX);
			rf_creds_argv_free(argv);
		}
	}
	free(s);
	return 0;
}
