/* fuzz_azure.c - libFuzzer target for the Azure store's parsers of untrusted
 * bytes (fetch/azure.h): the first byte picks one. 'c': the rest is a
 * connection string (rf_az_parse_connection_string); anything else: a List
 * Blobs response body (rf_az_list_parse), whose accepted page appends only
 * az://fuzz/ URLs and whose refused page appends nothing and says why. */
#include "azure.h"
#include "fuzz.h"

static void conn_string(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	FUZZ_CHECK(s != NULL);
	memcpy(s, data, size);
	s[size] = '\0';
	rf_az_config c = {0};
	rf_error err = {0};
	int rc = rf_az_parse_connection_string(s, &c, &err);
	if (rc < 0)
		fuzz_check_error(rc, &err);
	else
		FUZZ_CHECK(c.account && c.endpoint);
	rf_az_config_free(&c);
	free(s);
}

static void listing(const uint8_t *data, size_t size)
{
	char *xml = malloc(size ? size : 1); /* exact size: overreads are caught */
	FUZZ_CHECK(xml != NULL);
	memcpy(xml, data, size);
	rf_url_list l = {0};
	rf_error err = {0};
	FUZZ_CHECK(rf_url_list_add(&l, "az://before/kept.rfs", 1, &err) == 0);
	char *marker = NULL;
	int rc = rf_az_list_parse(xml, size, "az://fuzz/", size % 2 == 0, &l, &marker, &err);
	if (rc < 0) {
		fuzz_check_error(rc, &err);
		FUZZ_CHECK(l.n == 1 && marker == NULL);
	} else {
		for (size_t i = 1; i < l.n; i++)
			FUZZ_CHECK(!strncmp(l.v[i].url, "az://fuzz/", 10));
	}
	free(marker);
	FUZZ_CHECK(strcmp(l.v[0].url, "az://before/kept.rfs") == 0);
	rf_url_list_free(&l);
	free(xml);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 0 && data[0] == 'c')
		conn_string(data + 1, size - 1);
	else
		listing(data, size);
	return 0;
}
