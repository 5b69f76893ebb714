/* fuzz_gcs.c - libFuzzer target for the GCS store's parser of untrusted
 * bytes (fetch/gcs.h): a JSON API listing page (rf_gcs_list_parse). An
 * accepted page appends only gs://fuzz/ URLs of names under the prefix "p/"
 * and a next-page token of visible ASCII; a refused page appends nothing,
 * gives no token and says why. (Token answers: fuzz_gcs_auth.) */
#include "fuzz.h"
#include "gcs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *json = malloc(size ? size : 1); /* exact size: overreads are caught */
	FUZZ_CHECK(json != NULL);
	memcpy(json, data, size);
	rf_url_list l = {0};
	rf_error err = {0};
	FUZZ_CHECK(rf_url_list_add(&l, "gs://before/kept.rfs", 1, &err) == 0);
	char *next = NULL;
	int rc = rf_gcs_list_parse(json, size, "gs://fuzz/", "p/", &l, &next, &err);
	if (rc < 0) {
		fuzz_check_error(rc, &err);
		FUZZ_CHECK(l.n == 1 && next == NULL);
	} else {
		for (size_t i = 1; i < l.n; i++)
			FUZZ_CHECK(!strncmp(l.v[i].url, "gs://fuzz/p/", 12));
		for (const char *p = next; p && *p; p++)
			FUZZ_CHECK(*p > 0x20 && *p < 0x7f);
	}
	free(next);
	FUZZ_CHECK(strcmp(l.v[0].url, "gs://before/kept.rfs") == 0);
	rf_url_list_free(&l);
	free(json);
	return 0;
}
