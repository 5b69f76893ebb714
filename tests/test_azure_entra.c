/* test_azure_entra.c - where the Azure store's Entra ID tokens come from
 * (fetch/azure_entra.c, fetch/azure.c's choice of RF_AZ_ENTRA): the chain's
 * order from the environment, the token requests each source builds (the
 * workload identity form with the federated token file's contents, re-read;
 * App Service's GET with its secret header; the metadata GET), the tried
 * line, the answers each endpoint gives (App Service's expires_on as a
 * string or a number), and the refusals of bad ids, hosts, identity headers
 * and token files, none of which shows the assertion or the header. */
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
    "IDENTITY_ENDPOINT",
    "IDENTITY_HEADER",
    "IDENTITY_SERVER_THUMBPRINT",
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
	assert_non_null(strstr(e.tried, "SAS, workload identity; not reached: app service managed "
	                                "identity, managed identity"));
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
	                             "app service managed identity (IDENTITY_ENDPOINT not set), "
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

#define APP_SECRET "6A0F3C1E-app-service-secret-77D2"

static void app_env(const char *endpoint)
{
	setenv("IDENTITY_ENDPOINT", endpoint, 1);
	setenv("IDENTITY_HEADER", APP_SECRET, 1);
}

static void test_app_service(void **state)
{
	(void)state;
	rf_error err = {0};
	rf_az_entra e;
	/* App Service's variables, no workload identity: tried before IMDS */
	app_env("http://127.0.0.1:41741/MSI/token/");
	setenv("AZURE_TENANT_ID", "72f988bf-86f1-41af-91ab-2d7cd011db47", 1);
	assert_int_equal(rf_az_entra_pick(&e, "x", &err), 0);
	assert_false(e.src.anonymous_on_failure); /* on App Service a failure is a refusal */
	assert_null(e.imds_url);
	assert_string_equal(e.app_url, "http://127.0.0.1:41741/MSI/token/?api-version=2019-08-01"
	                               "&resource=https%3A%2F%2Fstorage.azure.com%2F");
	assert_string_equal(
	    e.tried, "x, workload identity (AZURE_FEDERATED_TOKEN_FILE not set), app service "
	             "managed identity (http://127.0.0.1:41741/MSI/token/); not "
	             "reached: managed identity");
	assert_string_equal(e.src.name,
	                    "app service managed identity (http://127.0.0.1:41741/MSI/token/)");
	rf_bearer_request req = {0};
	assert_int_equal(e.src.request(e.src.ctx, 1000, &req, &err), 0);
	assert_string_equal(req.url, e.app_url);
	assert_null(req.post);
	assert_string_equal(req.headers[0], "X-IDENTITY-HEADER: " APP_SECRET);
	assert_null(req.headers[1]);
	assert_null(strstr(req.url, APP_SECRET));
	assert_null(strstr(e.tried, APP_SECRET));
	assert_null(strstr(e.src.name, APP_SECRET));
	free(req.url);
	rf_az_entra_free(&e);
	assert_null(e.app_header);

	/* a user-assigned identity; Container Apps' localhost, App Service on
	 * Linux's link-local agent and an https one are all accepted */
	setenv("AZURE_CLIENT_ID", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", 1);
	const char *good[] = {"http://localhost:42356/msi/token",
	                      "http://169.254.129.3:8081/msi/token", "http://[::1]:5000/token",
	                      "https://identity.example.net/token"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		setenv("IDENTITY_ENDPOINT", good[i], 1);
		assert_int_equal(rf_az_entra_pick(&e, "x", &err), 0);
		assert_non_null(strstr(e.app_url, good[i]));
		assert_non_null(
		    strstr(e.app_url, "&client_id=0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"));
		assert_non_null(strstr(e.src.name, "user-assigned AZURE_CLIENT_ID"));
		rf_az_entra_free(&e);
	}

	/* workload identity comes first when it is all there */
	workload_env(path_of("fed"));
	assert_int_equal(rf_az_entra_pick(&e, "x", &err), 0);
	assert_non_null(e.token_url);
	assert_null(e.app_url);
	rf_az_entra_free(&e);
	clear_env();

	/* half of App Service's pair, or Service Fabric's form: IMDS, named */
	setenv("IDENTITY_ENDPOINT", "http://127.0.0.1:1/t", 1);
	assert_int_equal(rf_az_entra_pick(&e, "x", &err), 0);
	assert_non_null(e.imds_url);
	assert_non_null(strstr(e.tried, "app service managed identity (IDENTITY_HEADER not set), "
	                                "managed identity (http://169.254.169.254)"));
	rf_az_entra_free(&e);
	app_env("https://127.0.0.1:2377/metadata/identity/oauth2/token");
	setenv("IDENTITY_SERVER_THUMBPRINT", "AB12", 1);
	assert_int_equal(rf_az_entra_pick(&e, "x", &err), 0);
	assert_non_null(e.imds_url);
	assert_non_null(strstr(e.tried, "IDENTITY_SERVER_THUMBPRINT set: Service Fabric's form, "
	                                "not supported"));
	rf_az_entra_free(&e);
	clear_env();
}

/* Where the identity header is never sent, and headers it cannot be: the
 * refusal names the variable, never the secret. */
static void expect_app_refusal(const char *endpoint, const char *secret, const char *words)
{
	rf_error err = {0};
	rf_az_entra e;
	setenv("IDENTITY_ENDPOINT", endpoint, 1);
	setenv("IDENTITY_HEADER", secret, 1);
	assert_int_equal(rf_az_entra_pick(&e, "x", &err), -EINVAL);
	assert_non_null(strstr(err.msg, words));
	assert_null(strstr(err.msg, secret));
	rf_az_entra_free(&e);
	clear_env();
}

static void test_app_service_refusals(void **state)
{
	(void)state;
	const char *not_sent = "IDENTITY_ENDPOINT is not an https:// URL or an http:// one to a "
	                       "loopback or link-local address";
	expect_app_refusal("http://10.0.0.4:8081/msi/token", APP_SECRET, not_sent);
	expect_app_refusal("http://127.0.0.1.evil.example/msi", APP_SECRET, not_sent);
	expect_app_refusal("http://169.253.1.1/msi", APP_SECRET, not_sent);
	expect_app_refusal("http://1270.0.0.1/msi", APP_SECRET, not_sent);
	expect_app_refusal("http://127.0.0.256/msi", APP_SECRET, not_sent);
	expect_app_refusal("http://user@127.0.0.1:1/msi", APP_SECRET, not_sent);
	expect_app_refusal("http://127.0.0.1:1/msi?x=1", APP_SECRET, not_sent);
	expect_app_refusal("http://127.0.0.1:1/m si", APP_SECRET, not_sent);
	expect_app_refusal("ftp://127.0.0.1/msi", APP_SECRET, not_sent);
	expect_app_refusal("http://127.0.0.1:99999/msi", APP_SECRET, not_sent);
	char *long_url = malloc(RF_AZ_HOST_URL_MAX + 2);
	assert_non_null(long_url);
	memset(long_url, 'a', RF_AZ_HOST_URL_MAX + 1);
	memcpy(long_url, "https://h/", 10);
	long_url[RF_AZ_HOST_URL_MAX + 1] = '\0';
	expect_app_refusal(long_url, APP_SECRET, not_sent);
	long_url[RF_AZ_HOST_URL_MAX] = '\0'; /* the longest taken */
	rf_error err = {0};
	rf_az_entra e;
	app_env(long_url);
	assert_int_equal(rf_az_entra_pick(&e, "x", &err), 0);
	rf_az_entra_free(&e);
	clear_env();
	free(long_url);
	/* a header line cannot carry it: refused, not shown */
	expect_app_refusal("http://127.0.0.1:1/msi", "sec\r\nret", "IDENTITY_HEADER is not 1 to");
	expect_app_refusal("http://127.0.0.1:1/msi", "sec ret", "IDENTITY_HEADER is not 1 to");
	char big[RF_AZ_APP_SECRET_MAX + 2];
	memset(big, 's', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	expect_app_refusal("http://127.0.0.1:1/msi", big, "IDENTITY_HEADER is not 1 to 512 bytes");
	setenv("AZURE_CLIENT_ID", "c&resource=x", 1);
	expect_app_refusal("http://127.0.0.1:1/msi", APP_SECRET, "AZURE_CLIENT_ID is not an id");
}

/* App Service's answer (api-version 2019-08-01): expires_on in Unix
 * seconds, a string (App Service) or a number (Azure ML), no expires_in. */
static void test_app_service_answer(void **state)
{
	(void)state;
	rf_error err = {0};
	char *tok = NULL;
	int64_t exp_ms = 0;
	const char *s =
	    "{\"access_token\":\"eyJ0eXAi.eyJhdWQi.c2ln\",\"expires_on\":\"1700003600\","
	    "\"resource\":\"https://storage.azure.com/\",\"token_type\":\"Bearer\","
	    "\"client_id\":\"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\"}";
	assert_int_equal(
	    rf_oauth_token_parse(s, strlen(s), "app", 1700000000000, &tok, &exp_ms, &err), 0);
	assert_string_equal(tok, "eyJ0eXAi.eyJhdWQi.c2ln");
	assert_int_equal(exp_ms, 1700003600000);
	rf_secret_free(tok);
	const char *n =
	    "{\"access_token\":\"t\",\"expires_on\":1700000060,\"token_type\":\"Bearer\"}";
	assert_int_equal(
	    rf_oauth_token_parse(n, strlen(n), "app", 1700000000000, &tok, &exp_ms, &err), 0);
	assert_int_equal(exp_ms, 1700000060000);
	rf_secret_free(tok);
	/* the 2017-09-01 date form is not Unix seconds: refused, not guessed */
	const char *d = "{\"access_token\":\"t\",\"expires_on\":\"11/16/2023 10:00:00 PM +00:00\","
	                "\"token_type\":\"Bearer\"}";
	assert_int_equal(
	    rf_oauth_token_parse(d, strlen(d), "app", 1700000000000, &tok, &exp_ms, &err), -EPROTO);
	assert_null(tok);
	assert_non_null(strstr(err.msg, "app: no \"expires_in\" (or \"expires_on\")"));
	/* already expired */
	const char *old = "{\"access_token\":\"t\",\"expires_on\":\"1699999999\"}";
	assert_int_equal(
	    rf_oauth_token_parse(old, strlen(old), "app", 1700000000000, &tok, &exp_ms, &err),
	    -EPROTO);
	/* App Service's error object: no token, and none of its words */
	const char *e =
	    "{\"error\":{\"code\":\"UnauthorizedAccess\",\"message\":\"X-IDENTITY-HEADER "
	    "sec ret\"}}";
	assert_int_equal(
	    rf_oauth_token_parse(e, strlen(e), "app", 1700000000000, &tok, &exp_ms, &err), -EPROTO);
	assert_null(strstr(err.msg, "sec ret"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_workload_identity),   cmocka_unit_test(test_managed_identity),
	    cmocka_unit_test(test_app_service),         cmocka_unit_test(test_app_service_refusals),
	    cmocka_unit_test(test_app_service_answer),  cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_token_file_refusals), cmocka_unit_test(test_config_chooses_entra),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
