/* fuzz_s3list.c - libFuzzer target for the S3 ListObjectsV2 response parser
 * (fetch/s3.h): the input is a response body. An accepted page appends only
 * s3://BUCKET/ URLs; a refused page appends nothing and says why. */
#include "fuzz.h"
#include "s3.h"
#include "url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *xml = malloc(size ? size : 1); /* exact size: overreads are caught */
	FUZZ_CHECK(xml != NULL);
	memcpy(xml, data, size);
	rf_url_list l = {0};
	rf_error err = {0};
	FUZZ_CHECK(rf_url_list_add(&l, "s3://before/kept.rfs", 1, &err) == 0);
	bool truncated = true;
	char *token = (char *)"unchanged";
	int rc = rf_s3_list_parse(xml, size, "fuzz-bucket", &l, &truncated, &token, &err);
	if (rc < 0) {
		fuzz_check_error(rc, &err);
		FUZZ_CHECK(l.n == 1);
	} else {
		for (size_t i = 1; i < l.n; i++) {
			FUZZ_CHECK(!strncmp(l.v[i].url, "s3://fuzz-bucket/", 17));
			const char *v = l.v[i].validator; /* "etag:" + short printable ASCII */
			FUZZ_CHECK(!v || (!strncmp(v, "etag:", 5) && strlen(v) > 5 &&
			                  strlen(v) <= 5 + RF_HTTP_VALIDATOR_BYTES_MAX));
			for (size_t j = 0; v && v[j]; j++)
				FUZZ_CHECK(v[j] >= 0x20 && v[j] <= 0x7e);
		}
		FUZZ_CHECK(token == NULL || truncated);
	}
	if (token && strcmp(token, "unchanged") != 0)
		free(token);
	FUZZ_CHECK(strcmp(l.v[0].url, "s3://before/kept.rfs") == 0);
	rf_url_list_free(&l);
	free(xml);
	return 0;
}
