/* test_azure_entra.c - where the Azure store's Entra ID tokens come from
 * (fetch/azure_entra.c, fetch/azure.c's choice of RF_AZ_ENTRA): the chain's
 * order from the environment, the token requests each source builds (the
 * workload identity form with the federated token file's contents, re-read;
 * the metadata GET), the tried line, and the refusals of bad ids, hosts and
 * token files, none of which shows the assertion. */
#include "azure.h"
#include "oauth.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dir;

static const char *const vars[] = {
    "AZURE_STORAGE_CONNECTION_STRING",
    "AZURE_STORAGE_KEY",
    "AZURE_STORAGE_SAS_TOKEN",
    "AZURE_FEDERATED_TOKEN_FILE",
    "AZURE_CLIENT_ID",
    "AZURE_TENANT_ID",
    "AZURE_AUTHORITY_HOST",
    "AZURE_POD_IDENTITY_AUTHORITY_HOST",
};

static int setup(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	dir = rf_test_tmpdir("azure_entra");
	return dir ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	rf_test_rmtree(dir);
	free(dir);
	return 0;
}

static char *path_of(const char *name)
{
	static char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

static void workload_env(const char *file)
{
	setenv("AZURE_FEDERATED_TOKEN_FILE", file, 1);
	setenv("AZURE_CLIENT_ID", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", 1);
	setenv("AZURE_TENANT_ID", "contoso.onmicrosoft.com", 1);
}

static void clear_env(void)
{
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

static void test_workload_identity(void **state)
{
	(void)state;
	rf_error err = {0};
	rf_az_entra e;
	const char *tok = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2ln";
	char text[128];
	snprintf(text, sizeof(text), "%s\n", tok); /* as Kubernetes writes it */
	assert_int_equal(rf_test_write_file(path_of("fed"), text, strlen(text)), 0);
	workload_env(path_of("fed"));
	setenv("AZURE_AUTHORITY_HOST", "http://localhost:8123/", 1);
	assert_int_equal(rf_az_entra_pick(&e, "connection string, account key, SAS", &err), 0);
	assert_non_null(e.src.request);
	assert_false(e.src.anonymous_on_failure);
	assert_string_equal(e.token_url,
	                    "http://localhost:8123/contoso.onmicrosoft.com/oauth2/v2.0/token");
	assert_non_null(strstr(e.tried, "SAS, workload identity; not reached: managed identity"));
	assert_non_null(strstr(e.src.name, "workload identity"));

	rf_bearer_request req = {0};
	assert_int_equal(e.src.request(e.src.ctx, 1000, &req, &err), 0);
	assert_string_equal(req.url, e.token_url);
	assert_string_equal(req.headers[0], "Content-Type: application/x-www-form-urlencoded");
	assert_non_null(strstr(req.post, "grant_type=client_credentials"));
	assert_non_null(strstr(req.post, "client_id=0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"));
	assert_non_null(strstr(req.post, "client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3A"
	                                 "client-assertion-type%3Ajwt-bearer"));
	assert_non_null(strstr(req.post, "scope=https%3A%2F%2Fstorage.azure.com%2F.default"));
	char want[160];
	snprintf(want, sizeof(want), "client_assertion=%s&", tok); /* no newline */
	assert_non_null(strstr(req.post, want));
	free(req.url);
	rf_secret_free(req.post);

	/* the file is read anew for each token (Kubernetes rotates it) */
	assert_int_equal(rf_test_write_file(path_of("fed"), "second.token.x", 14), 0);
	req = (rf_bearer_request){0};
	assert_int_equal(e.src.request(e.src.ctx, 2000, &req, &err), 0);
	assert_non_null(strstr(req.post, "client_assertion=second.token.x&"));
	free(req.url);
	rf_secret_free(req.post);
	rf_az_entra_free(&e);
	clear_env();
}

static void test_managed_identity(void **state)
{
	(void)state;
	rf_error err = {0};
	rf_az_entra e;
	/* workload identity needs all three: without the file, managed identity */
	setenv("AZURE_CLIENT_ID", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", 1);
	setenv("AZURE_TENANT_ID", "72f988bf-86f1-41af-91ab-2d7cd011db47", 1);
	assert_int_equal(rf_az_entra_pick(&e, "x", &err), 0);
	assert_true(e.src.anonymous_on_failure);
	assert_string_equal(e.imds_url,
	                    "http://169.254.169.254/metadata/identity/oauth2/token"
	                    "?api-version=2018-02-01&resource=https%3A%2F%2Fstorage."
	                    "azure.com%2F&client_id=0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
	assert_string_equal(e.tried, "x, workload identity (AZURE_FEDERATED_TOKEN_FILE not set), "
	                             "managed identity (http://169.254.169.254)");
	rf_bearer_request req = {0};
	assert_int_equal(e.src.request(e.src.ctx, 1000, &req, &err), 0);
	assert_string_equal(req.url, e.imds_url);
	assert_null(req.post);
	assert_string_equal(req.headers[0], "Metadata: true");
	assert_int_equal(req.connect_timeout_ms, RF_BEARER_CONNECT_MS_METADATA);
	free(req.url);
	rf_az_entra_free(&e);
	clear_env();

	/* system-assigned, the host overridden as the SDKs allow */
	setenv("AZURE_POD_IDENTITY_AUTHORITY_HOST", "http://127.0.0.1:9/", 1);
	assert_int_equal(rf_az_entra_pick(&e, "x", &err), 0);
	assert_string_equal(e.imds_url, "http://127.0.0.1:9/metadata/identity/oauth2/token"
	                                "?api-version=2018-02-01&resource=https%3A%2F%2Fstorage."
	                                "azure.com%2F");
	assert_non_null(strstr(e.tried, "workload identity (AZURE_FEDERATED_TOKEN_FILE not set)"));
	rf_az_entra_free(&e);
	clear_env();
}

static void expect_refusal(int code, const char *words)
{
	rf_error err = {0};
	rf_az_entra e;
	assert_int_equal(rf_az_entra_pick(&e, "x", &err), code);
	assert_non_null(strstr(err.msg, words));
	rf_az_entra_free(&e);
}

static void test_refusals(void **state)
{
	(void)state;
	workload_env(path_of("fed"));
	setenv("AZURE_TENANT_ID", "a/../b", 1);
	expect_refusal(-EINVAL, "AZURE_TENANT_ID is not an id");
	setenv("AZURE_TENANT_ID", "tid", 1);
	setenv("AZURE_CLIENT_ID", "c&scope=x", 1);
	expect_refusal(-EINVAL, "AZURE_CLIENT_ID is not an id");
	setenv("AZURE_CLIENT_ID", "cid", 1);
	/* the assertion is a secret: not in clear to another machine */
	setenv("AZURE_AUTHORITY_HOST", "http://10.1.2.3:80", 1);
	expect_refusal(-EINVAL, "the federated token is not sent there (AZURE_AUTHORITY_HOST)");
	setenv("AZURE_AUTHORITY_HOST", "https://user@login.example", 1);
	expect_refusal(-EINVAL, "AZURE_AUTHORITY_HOST is not http(s)://HOST[:PORT]");
	setenv("AZURE_AUTHORITY_HOST", "ftp://login.example", 1);
	expect_refusal(-EINVAL, "AZURE_AUTHORITY_HOST is not http(s)://HOST[:PORT]");
	unsetenv("AZURE_AUTHORITY_HOST");
	unsetenv("AZURE_FEDERATED_TOKEN_FILE");
	setenv("AZURE_POD_IDENTITY_AUTHORITY_HOST", "http://h/ x", 1);
	expect_refusal(-EINVAL, "AZURE_POD_IDENTITY_AUTHORITY_HOST is not");
	clear_env();
}

/* A bad token file fails the request naming the file, never its bytes. */
static void expect_file_refusal(const char *content, size_t len, int code, const char *words)
{
	rf_error err = {0};
	rf_az_entra e;
	if (content)
		assert_int_equal(rf_test_write_file(path_of("fed"), content, len), 0);
	workload_env(path_of(content ? "fed" : "missing"));
	assert_int_equal(rf_az_entra_pick(&e, "x", &err), 0); /* the file is read per token */
	rf_bearer_request req = {0};
	assert_int_equal(e.src.request(e.src.ctx, 1000, &req, &err), code);
	if (code == 0) {
		assert_non_null(req.post);
		free(req.url);
		rf_secret_free(req.post);
	} else {
		assert_null(req.url);
		assert_null(req.post);
		assert_non_null(strstr(err.msg, words));
		assert_null(strstr(err.msg, "sec ret"));
	}
	rf_az_entra_free(&e);
	clear_env();
}

static void test_token_file_refusals(void **state)
{
	(void)state;
	expect_file_refusal(NULL, 0, -ENOENT, "/missing: No such file");
	expect_file_refusal(" \n", 2, -EINVAL, "is empty");
	expect_file_refusal("a sec ret", 9, -EINVAL, "not visible ASCII (at 1)");
	size_t big = RF_OAUTH_TOKEN_MAX + 1;
	char *b = malloc(big);
	assert_non_null(b);
	memset(b, 'a', big);
	expect_file_refusal(b, big, -EFBIG, "is over 16384 bytes");
	expect_file_refusal(b, big - 1, 0, ""); /* the most it takes */
	free(b);
}

static void test_config_chooses_entra(void **state)
{
	(void)state;
	rf_error err = {0};
	rf_az_config c;
	setenv("AZURE_STORAGE_ACCOUNT", "acct", 1);
	assert_int_equal(rf_az_config_resolve("az://c/p", &c, &err), 0);
	assert_int_equal(c.auth, RF_AZ_ENTRA);
	assert_string_equal(c.tried, "connection string, account key, SAS (none set)");
	rf_az_config_free(&c);
	setenv("AZURE_STORAGE_SAS_TOKEN", "sv=1&sig=x", 1);
	assert_int_equal(rf_az_config_resolve("az://c/p", &c, &err), 0);
	assert_int_equal(c.auth, RF_AZ_SAS);
	rf_az_config_free(&c);
	unsetenv("AZURE_STORAGE_SAS_TOKEN");
	/* a connection string with neither key nor SAS: anonymous, as the SDKs */
	setenv("AZURE_STORAGE_CONNECTION_STRING", "AccountName=acct;BlobEndpoint=http://h/a", 1);
	assert_int_equal(rf_az_config_resolve("az://c/p", &c, &err), 0);
	assert_int_equal(c.auth, RF_AZ_ANONYMOUS);
	rf_az_config_free(&c);
	unsetenv("AZURE_STORAGE_ACCOUNT");
	clear_env();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_workload_identity),
	    cmocka_unit_test(test_managed_identity),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_token_file_refusals),
	    cmocka_unit_test(test_config_chooses_entra),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
