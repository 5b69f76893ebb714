/* fuzz_awsconfig.c - libFuzzer target for the AWS shared-file parser
 * (fetch/aws_config.h). The first byte picks the file kind (bit 0) and
 * whether only the sections "default" and "dev" are kept, the others skipped
 * unread, as rf_aws_shared_load reads a profile (bit 1); the rest is the
 * file. Checks: an error carries a message; a parsed file answers lookups,
 * and every value found is a string no longer than the input. */
#include "aws_config.h"
#include "fuzz.h"

static void look(const rf_aws_ini *ini, size_t len)
{
	static const char *const sections[] = {"default", "dev", "services s", "a"};
	static const char *const keys[] = {"aws_access_key_id", "region", "s3", "k", "role_arn"};
	for (size_t i = 0; i < sizeof(sections) / sizeof(*sections); i++) {
		for (size_t k = 0; k < sizeof(keys) / sizeof(*keys); k++) {
			const char *v = rf_aws_ini_get(ini, sections[i], keys[k]);
			FUZZ_CHECK(!v || strlen(v) <= len);
			v = rf_aws_ini_get_sub(ini, sections[i], "s3", keys[k]);
			FUZZ_CHECK(!v || strlen(v) <= len);
		}
		(void)rf_aws_ini_has_section(ini, sections[i]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	rf_aws_ini_kind kind = data[0] & 1 ? RF_AWS_INI_CONFIG : RF_AWS_INI_CREDENTIALS;
	static const char *const keep[] = {"default", "dev", NULL};
	rf_aws_ini *ini = NULL;
	rf_error err = {0};
	int rc = rf_aws_ini_parse_only((const char *)data + 1, size - 1, kind, "fuzz",
	                               data[0] & 2 ? keep : NULL, &ini, &err);
	if (rc < 0) {
		fuzz_check_error(rc, &err);
		FUZZ_CHECK(ini == NULL);
		return 0;
	}
	FUZZ_CHECK(ini != NULL);
	look(ini, size);
	rf_aws_ini_free(ini);
	return 0;
}
