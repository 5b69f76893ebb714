/* test_gcs.c - the GCS store's pure half (fetch/gcs.c): which endpoint
 * (option, STORAGE_EMULATOR_HOST, default) and whether a token may go
 * there; media and listing URLs with names encoded as one segment; listing
 * pages taken, and refused without a trace in the list; the credential
 * chain's order and the words it leaves for a refusal (fetch/gcs_creds.c). */
#include "gcs.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_endpoint(void **state)
{
	(void)state;
	rf_error err = {0};
	char *ep = NULL;
	unsetenv("STORAGE_EMULATOR_HOST");
	assert_int_equal(rf_gcs_endpoint(NULL, &ep, &err), 0);
	assert_string_equal(ep, "https://storage.googleapis.com");
	assert_true(rf_gcs_endpoint_takes_token(ep));
	free(ep);
	setenv("STORAGE_EMULATOR_HOST", "localhost:4443", 1);
	assert_int_equal(rf_gcs_endpoint(NULL, &ep, &err), 0);
	assert_string_equal(ep, "http://localhost:4443"); /* http:// added, as the SDKs do */
	assert_true(rf_gcs_endpoint_takes_token(ep));     /* loopback */
	free(ep);
	assert_int_equal(rf_gcs_endpoint("https://gcs.example/", &ep, &err), 0); /* option wins */
	assert_string_equal(ep, "https://gcs.example");
	free(ep);
	setenv("STORAGE_EMULATOR_HOST", "gcs-emulator:4443", 1);
	assert_int_equal(rf_gcs_endpoint(NULL, &ep, &err), 0);
	assert_false(rf_gcs_endpoint_takes_token(ep)); /* plain http over a network */
	free(ep);
	setenv("STORAGE_EMULATOR_HOST", "ftp://x", 1);
	assert_true(rf_gcs_endpoint(NULL, &ep, &err) < 0);
	assert_non_null(strstr(err.msg, "STORAGE_EMULATOR_HOST"));
	assert_null(ep);
	unsetenv("STORAGE_EMULATOR_HOST");
	assert_false(rf_gcs_endpoint_takes_token("https://user:pw@host"));
}

static void test_urls(void **state)
{
	(void)state;
	rf_error err = {0};
	char *u = NULL;
	assert_int_equal(rf_gcs_object_url("http://h:1", "b", "odd dir+a%b/ünï/x..rfs", &u, &err),
	                 0);
	assert_string_equal(u, "http://h:1/storage/v1/b/b/o/"
	                       "odd%20dir%2Ba%25b%2F%C3%BCn%C3%AF%2Fx..rfs?alt=media");
	free(u);
	assert_int_equal(rf_gcs_list_url("https://s", "b", "p q/", NULL, 2, &u, &err), 0);
	assert_string_equal(u, "https://s/storage/v1/b/b/o?prefix=p%20q%2F&maxResults=2"
	                       "&fields=items%28name%2Csize%2Cetag%29%2CnextPageToken");
	free(u);
	assert_int_equal(rf_gcs_list_url("https://s", "b", "", "T+/=", 1000, &u, &err), 0);
	assert_non_null(strstr(u, "&pageToken=T%2B%2F%3D"));
	free(u);
	char *long_name = malloc(RF_URL_BYTES_MAX);
	memset(long_name, 'a', RF_URL_BYTES_MAX - 1);
	long_name[RF_URL_BYTES_MAX - 1] = '\0';
	assert_int_equal(rf_gcs_object_url("https://s", "b", long_name, &u, &err), -ENAMETOOLONG);
	free(long_name);
}

static void test_list_pages(void **state)
{
	(void)state;
	rf_error err = {0};
	rf_url_list l = {0};
	char *next = NULL;
	const char *page = "{\"items\": [{\"name\": \"d/a b.rfs\", \"size\": \"10\", \"etag\": "
	                   "\"CAE=\"}, {\"name\": \"d/ü\", \"size\": \"0\"}], "
	                   "\"nextPageToken\": \"tok1\"}";
	assert_int_equal(rf_gcs_list_parse(page, strlen(page), "gs://b/", "d/", &l, &next, &err),
	                 0);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.v[0].url, "gs://b/d/a b.rfs");
	assert_int_equal(l.v[0].size_hint, 10);
	assert_string_equal(l.v[0].validator, "etag:CAE=");
	assert_string_equal(l.v[1].url, "gs://b/d/ü");
	assert_string_equal(next, "tok1");
	free(next);
	const char *last = "{\"kind\": \"storage#objects\"}"; /* an empty page, the end */
	assert_int_equal(rf_gcs_list_parse(last, strlen(last), "gs://b/", "d/", &l, &next, &err),
	                 0);
	assert_null(next);
	assert_int_equal(l.n, 2);
	/* refused pages leave the list as it was and name the item */
	const char *bad[] = {
	    "[1]",
	    ("{\"items\": [{\"name\": \"d/x\", \"size\": \"1\"}, {\"name\": \"e/y\", \"size\": "
	     "\"1\"}]}"),
	    "{\"items\": [{\"name\": \"d/x\", \"size\": 1}]}",
	    "{\"items\": [{\"name\": \"d/x\", \"size\": \"-1\"}]}",
	    "{\"items\": [{\"name\": \"d/\\n\", \"size\": \"1\"}]}",
	    "{\"items\": [{\"name\": \"d/\\u0000x\", \"size\": \"1\"}]}",
	    "{\"items\": [], \"nextPageToken\": \"a b\"}",
	    "{\"items\": {}}",
	    "{\"items\": [{\"name\": \"d/x\", \"size\": \"1\"}], \"items\": []}",
	    "{\"error\": {\"code\": 403, \"message\": \"SECRET echo\"}}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_true(rf_gcs_list_parse(bad[i], strlen(bad[i]), "gs://b/", "d/", &l, &next,
		                              &err) < 0);
		assert_int_equal(l.n, 2);
		assert_null(next);
		assert_null(strstr(err.msg, "SECRET"));
	}
	assert_int_equal(
	    rf_gcs_list_parse(bad[1], strlen(bad[1]), "gs://b/", "d/", &l, &next, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "item 1"));
	assert_int_equal(
	    rf_gcs_list_parse(bad[9], strlen(bad[9]), "gs://b/", "d/", &l, &next, &err), -EACCES);
	rf_url_list_free(&l);
}

static void test_chain(void **state)
{
	(void)state;
	rf_error err = {0};
	rf_gcs_creds c;
	char *dir = rf_test_tmpdir("gcs");
	unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
	setenv("CLOUDSDK_CONFIG", dir, 1);
	unsetenv("GCE_METADATA_HOST");
	/* nothing: the metadata server, last, with what was tried */
	assert_int_equal(rf_gcs_creds_pick(&c, &err), 0);
	assert_true(c.src.anonymous_on_failure);
	assert_non_null(
	    strstr(c.tried, "GOOGLE_APPLICATION_CREDENTIALS (not set), gcloud ADC file"));
	assert_non_null(strstr(c.tried, "metadata server (http://169.254.169.254)"));
	rf_gcs_creds_free(&c);
	/* the ADC file (authorized_user) */
	char path[600];
	snprintf(path, sizeof(path), "%s/application_default_credentials.json", dir);
	const char *adc = "{\"type\": \"authorized_user\", \"client_id\": \"i\", "
	                  "\"client_secret\": \"SECRET1\", \"refresh_token\": \"SECRET2\"}";
	assert_int_equal(rf_test_write_file(path, adc, strlen(adc)), 0);
	assert_int_equal(rf_gcs_creds_pick(&c, &err), 0);
	assert_false(c.src.anonymous_on_failure);
	assert_non_null(strstr(c.src.name, "gcloud ADC file"));
	assert_null(strstr(c.src.name, "SECRET"));
	rf_bearer_request req = {0};
	assert_int_equal(c.src.request(c.src.ctx, 1000, &req, &err), 0);
	assert_string_equal(req.url, "https://oauth2.googleapis.com/token");
	assert_non_null(strstr(req.post, "refresh_token=SECRET2"));
	free(req.url);
	free(req.post);
	rf_gcs_creds_free(&c);
	/* GOOGLE_APPLICATION_CREDENTIALS set wins, and must be readable */
	snprintf(path, sizeof(path), "%s/missing.json", dir);
	setenv("GOOGLE_APPLICATION_CREDENTIALS", path, 1);
	assert_int_equal(rf_gcs_creds_pick(&c, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "missing.json"));
	rf_gcs_creds_free(&c);
	setenv("GOOGLE_APPLICATION_CREDENTIALS", dir, 1); /* a directory */
	assert_true(rf_gcs_creds_pick(&c, &err) < 0);
	rf_gcs_creds_free(&c);
	/* a metadata host that is not host[:port] */
	unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
	setenv("CLOUDSDK_CONFIG", "/nonexistent-gcloud", 1);
	setenv("GCE_METADATA_HOST", "evil/host?x", 1);
	assert_int_equal(rf_gcs_creds_pick(&c, &err), -EINVAL);
	rf_gcs_creds_free(&c);
	setenv("GCE_METADATA_HOST", "127.0.0.1:8080", 1);
	assert_int_equal(rf_gcs_creds_pick(&c, &err), 0);
	req = (rf_bearer_request){0};
	assert_int_equal(c.src.request(c.src.ctx, 1000, &req, &err), 0);
	assert_string_equal(req.url, "http://127.0.0.1:8080" RF_GCS_METADATA_PATH);
	assert_string_equal(req.headers[0], "Metadata-Flavor: Google");
	assert_null(req.post);
	free(req.url);
	rf_gcs_creds_free(&c);
	unsetenv("GCE_METADATA_HOST");
	unsetenv("CLOUDSDK_CONFIG");
	rf_test_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_endpoint),
	    cmocka_unit_test(test_urls),
	    cmocka_unit_test(test_list_pages),
	    cmocka_unit_test(test_chain),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
