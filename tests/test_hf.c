/* test_hf.c - the Hugging Face Hub's pure pieces (fetch/hf.c): hf:// names
 * of the three repository types (models without a prefix, datasets/,
 * spaces/), API and resolve URLs for each with odd characters encoded, tree pages as the Hub
 * writes them (files kept with sizes, directories skipped, entries outside
 * the folder refused), the Link cursor that may not leave the endpoint, the
 * revision pin, and where the token comes from. */
#include "hf.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_parse(void **state)
{
	(void)state;
	rf_hf_ref r;
	rf_error err = {0};
	assert_int_equal(rf_hf_parse("hf://datasets/org/set/data/train", &r, &err), 0);
	assert_string_equal(r.repo, "org/set");
	assert_string_equal(r.revision, "main");
	assert_string_equal(r.path, "data/train");
	rf_hf_ref_free(&r);
	assert_int_equal(
	    rf_hf_parse("hf://datasets/HuggingFaceFW/fineweb-edu@refs%2Fconvert%2Fparquet/"
	                "default/train",
	                &r, &err),
	    0);
	assert_string_equal(r.repo, "HuggingFaceFW/fineweb-edu");
	assert_string_equal(r.revision, "refs/convert/parquet");
	assert_string_equal(r.path, "default/train");
	char *u = rf_hf_tree_url("https://huggingface.co", &r, r.revision);
	assert_string_equal(u,
	                    "https://huggingface.co/api/datasets/HuggingFaceFW/fineweb-edu/tree/"
	                    "refs%2Fconvert%2Fparquet/default/train?recursive=true&expand=false");
	free(u);
	u = rf_hf_revision_url("http://127.0.0.1:9", &r);
	assert_string_equal(u, "http://127.0.0.1:9/api/datasets/HuggingFaceFW/fineweb-edu/revision/"
	                       "refs%2Fconvert%2Fparquet");
	free(u);
	u = rf_hf_resolve_url("https://huggingface.co", &r,
	                      "0123456789abcdef0123456789abcdef01234567", "a b/+%/ü.tar");
	assert_string_equal(u, "https://huggingface.co/datasets/HuggingFaceFW/fineweb-edu/resolve/"
	                       "0123456789abcdef0123456789abcdef01234567/a%20b/%2B%25/%C3%BC.tar");
	free(u);
	rf_hf_ref_free(&r);
	assert_int_equal(rf_hf_parse("hf://datasets/org/set@v1.0", &r, &err), 0);
	assert_string_equal(r.revision, "v1.0");
	assert_string_equal(r.path, "");
	rf_hf_ref_free(&r);

	const char *bad[] = {"hf://models/org/m",
	                     "hf://datasets/org",
	                     "hf://datasets/-org/set",
	                     "hf://datasets/org/se..t/x",
	                     "hf://datasets/org/set@/x",
	                     "hf://datasets/org/set@a%2/x",
	                     "hf://datasets/org/set/../../x",
	                     "hf://datasets/org/set/a/./b",
	                     "hf://datasets/org/set@a%00b/x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (rf_hf_parse(bad[i], &r, &err) == 0)
			fail_msg("accepted %s", bad[i]);
		assert_non_null(strstr(err.msg, "hf://"));
		rf_hf_ref_free(&r);
	}
}

/* The three repository types huggingface_hub's HfFileSystem names: each
 * one's API collection and resolve prefix, and its listed names parsing
 * back to the same type. */
static void test_repo_types(void **state)
{
	(void)state;
	rf_hf_ref r;
	rf_error err = {0};
	const char *sha = "0123456789abcdef0123456789abcdef01234567";
	const char *ep = "https://huggingface.co";
	static const struct {
		const char *name, *repo, *path, *rev;
		rf_hf_type type;
		const char *revision_url, *tree_url, *resolve_url, *listed;
	} cases[] = {
	    {"hf://org/model/weights/a b.bin", "org/model", "weights/a b.bin", "main", RF_HF_MODEL,
	     "https://huggingface.co/api/models/org/model/revision/main",
	     "https://huggingface.co/api/models/org/model/tree/"
	     "0123456789abcdef0123456789abcdef01234567/weights/"
	     "a%20b.bin?recursive=true&expand=false",
	     "https://huggingface.co/org/model/resolve/0123456789abcdef0123456789abcdef01234567/"
	     "weights/a%20b.bin",
	     "hf://org/model@0123456789abcdef0123456789abcdef01234567/weights/a b.bin"},
	    {"hf://spaces/org/app@v2/data/", "org/app", "data/", "v2", RF_HF_SPACE,
	     "https://huggingface.co/api/spaces/org/app/revision/v2",
	     "https://huggingface.co/api/spaces/org/app/tree/"
	     "0123456789abcdef0123456789abcdef01234567/data?recursive=true&expand=false",
	     "https://huggingface.co/spaces/org/app/resolve/"
	     "0123456789abcdef0123456789abcdef01234567/"
	     "data/",
	     "hf://spaces/org/app@0123456789abcdef0123456789abcdef01234567/data/"},
	    {"hf://datasets/org/set", "org/set", "", "main", RF_HF_DATASET,
	     "https://huggingface.co/api/datasets/org/set/revision/main",
	     "https://huggingface.co/api/datasets/org/set/tree/"
	     "0123456789abcdef0123456789abcdef01234567?recursive=true&expand=false",
	     "https://huggingface.co/datasets/org/set/resolve/"
	     "0123456789abcdef0123456789abcdef01234567/",
	     "hf://datasets/org/set@0123456789abcdef0123456789abcdef01234567/"},
	    /* an organisation that merely starts like a prefix is a model's */
	    {"hf://datasetsx/m/f", "datasetsx/m", "f", "main", RF_HF_MODEL,
	     "https://huggingface.co/api/models/datasetsx/m/revision/main", NULL, NULL, NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(rf_hf_parse(cases[i].name, &r, &err), 0);
		assert_int_equal(r.type, cases[i].type);
		assert_string_equal(r.repo, cases[i].repo);
		assert_string_equal(r.path, cases[i].path);
		assert_string_equal(r.revision, cases[i].rev);
		char *u = rf_hf_revision_url(ep, &r);
		assert_string_equal(u, cases[i].revision_url);
		free(u);
		if (cases[i].tree_url) {
			u = rf_hf_tree_url(ep, &r, sha);
			assert_string_equal(u, cases[i].tree_url);
			free(u);
			u = rf_hf_resolve_url(ep, &r, sha, r.path);
			assert_string_equal(u, cases[i].resolve_url);
			free(u);
			u = rf_hf_name(&r, sha, r.path);
			assert_string_equal(u, cases[i].listed);
			rf_hf_ref back;
			assert_int_equal(rf_hf_parse(u, &back, &err), 0);
			assert_int_equal(back.type, r.type);
			assert_string_equal(back.repo, r.repo);
			assert_string_equal(back.revision, sha);
			rf_hf_ref_free(&back);
			free(u);
		}
		rf_hf_ref_free(&r);
	}

	/* a model's tree page lists model names */
	assert_int_equal(rf_hf_parse("hf://org/model/", &r, &err), 0);
	const char *page = "[{\"type\":\"file\",\"size\":7,\"path\":\"config.json\"},"
	                   "{\"type\":\"directory\",\"size\":0,\"path\":\"onnx\"}]";
	rf_url_list l = {0};
	assert_int_equal(rf_hf_tree_parse(page, strlen(page), &r, sha, "p", &l, &err), 1);
	assert_string_equal(l.v[0].url,
	                    "hf://org/model@0123456789abcdef0123456789abcdef01234567/config.json");
	rf_url_list_free(&l);
	rf_hf_ref_free(&r);

	/* a malformed name is told the forms */
	const char *bad[] = {"hf://",           "hf://org",           "hf://datasets/",
	                     "hf://spaces/org", "hf://-org/m/x",      "hf://org/m--x/y",
	                     "s3://b/k",        "hf:/org/model/file", "hf://datasets//set/x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (rf_hf_parse(bad[i], &r, &err) == 0)
			fail_msg("accepted %s", bad[i]);
		if (!strstr(err.msg, RF_HF_FORMS))
			fail_msg("%s: %s", bad[i], err.msg);
		rf_hf_ref_free(&r);
	}
	/* HfFileSystem would read this as the model "models/org": a mistake here */
	assert_int_equal(rf_hf_parse("hf://models/org/m/x", &r, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "a model repository has no prefix: "
	                                "hf://ORG/NAME[@REVISION]/PATH"));
	rf_hf_ref_free(&r);
}

static void test_tree(void **state)
{
	(void)state;
	rf_hf_ref r;
	rf_error err = {0};
	assert_int_equal(rf_hf_parse("hf://datasets/org/set/data", &r, &err), 0);
	const char *page =
	    "[{\"type\":\"directory\",\"oid\":\"x\",\"size\":0,\"path\":\"data/sub\"},"
	    "{\"type\":\"file\",\"oid\":\"y\",\"size\":1234,\"path\":\"data/sub/a 1.tar\","
	    "\"lfs\":{\"oid\":\"z\",\"size\":1234,\"pointerSize\":130}},"
	    "{\"type\":\"file\",\"oid\":\"w\",\"size\":5,\"path\":\"data/b.tar\"}]";
	rf_url_list l = {0};
	const char *sha = "0123456789abcdef0123456789abcdef01234567";
	assert_int_equal(rf_hf_tree_parse(page, strlen(page), &r, sha, "page 1", &l, &err), 2);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.v[0].url,
	                    "hf://datasets/org/set@"
	                    "0123456789abcdef0123456789abcdef01234567/data/sub/a 1.tar");
	assert_int_equal(l.v[0].size_hint, 1234);
	assert_int_equal(l.v[1].size_hint, 5);
	/* a refused page leaves the list as it was */
	const char *outside = "[{\"type\":\"file\",\"size\":5,\"path\":\"data/ok\"},"
	                      "{\"type\":\"file\",\"size\":5,\"path\":\"datax/evil\"}]";
	assert_true(rf_hf_tree_parse(outside, strlen(outside), &r, sha, "page 2", &l, &err) < 0);
	assert_non_null(strstr(err.msg, "page 2: entry 1"));
	assert_int_equal(l.n, 2);
	const char *dots = "[{\"type\":\"file\",\"size\":5,\"path\":\"data/../../etc\"}]";
	assert_true(rf_hf_tree_parse(dots, strlen(dots), &r, sha, "p", &l, &err) < 0);
	const char *nosize = "[{\"type\":\"file\",\"path\":\"data/x\"}]";
	assert_true(rf_hf_tree_parse(nosize, strlen(nosize), &r, sha, "p", &l, &err) < 0);
	assert_non_null(strstr(err.msg, "no size"));
	assert_true(rf_hf_tree_parse("{}", 2, &r, sha, "p", &l, &err) < 0);
	rf_url_list_free(&l);
	rf_hf_ref_free(&r);

	char got[41];
	const char *rev =
	    "{\"id\":\"org/set\",\"sha\":\"0123456789abcdef0123456789abcdef01234567\"}";
	assert_int_equal(rf_hf_revision_parse(rev, strlen(rev), "revision", got, &err), 0);
	assert_string_equal(got, sha);
	assert_true(rf_hf_revision_parse("{\"sha\":\"main\"}", 14, "revision", got, &err) < 0);
}

static void test_link(void **state)
{
	(void)state;
	char *next = NULL;
	rf_error err = {0};
	const char *ep = "https://huggingface.co";
	assert_int_equal(rf_hf_link_next(NULL, ep, &next, &err), 0);
	assert_int_equal(
	    rf_hf_link_next("<https://huggingface.co/api/datasets/o/s/tree/main?cursor=abc>; "
	                    "rel=\"next\"",
	                    ep, &next, &err),
	    1);
	assert_string_equal(next, "https://huggingface.co/api/datasets/o/s/tree/main?cursor=abc");
	free(next);
	assert_int_equal(
	    rf_hf_link_next("<https://huggingface.co/x>; rel=\"prev\"", ep, &next, &err), 0);
	/* another host, or a look-alike: never followed */
	assert_int_equal(rf_hf_link_next("<https://evil.example/x>; rel=\"next\"", ep, &next, &err),
	                 -EPERM);
	assert_non_null(strstr(err.msg, "not followed"));
	assert_int_equal(rf_hf_link_next("<https://huggingface.co.evil.example/x>; rel=\"next\"",
	                                 ep, &next, &err),
	                 -EPERM);
	assert_int_equal(
	    rf_hf_link_next("<https://huggingface.co@evil/x>; rel=\"next\"", ep, &next, &err),
	    -EPERM);
	assert_null(next);

	char *e = NULL;
	assert_int_equal(rf_hf_endpoint(NULL, &e, &err), 0);
	assert_string_equal(e, "https://huggingface.co");
	free(e);
	assert_int_equal(rf_hf_endpoint("http://127.0.0.1:8080/", &e, &err), 0);
	assert_string_equal(e, "http://127.0.0.1:8080");
	free(e);
	assert_true(rf_hf_endpoint("http://hub.example", &e, &err) < 0);
	assert_true(rf_hf_endpoint("https://u:p@hub.example", &e, &err) < 0);
}

static const char *vals[8][2];
static const char *fake_env(const char *k)
{
	for (int i = 0; i < 8 && vals[i][0]; i++)
		if (strcmp(vals[i][0], k) == 0)
			return vals[i][1];
	return NULL;
}

static void test_token(void **state)
{
	(void)state;
	char dir[] = "/tmp/rf-hf-XXXXXX", path[256];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/token", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("hf_filetoken\n", f);
	fclose(f);
	char *t = NULL;
	const char *from = NULL;
	rf_error err = {0};
	memset(vals, 0, sizeof(vals));
	vals[0][0] = "HF_HOME", vals[0][1] = dir;
	assert_int_equal(rf_hf_token_find(fake_env, &t, &from, &err), 0);
	assert_string_equal(t, "hf_filetoken");
	assert_string_equal(from, "$HF_HOME/token");
	free(t);
	vals[1][0] = "HF_TOKEN", vals[1][1] = " hf_envtoken ";
	assert_int_equal(rf_hf_token_find(fake_env, &t, &from, &err), 0);
	assert_string_equal(t, "hf_envtoken");
	assert_string_equal(from, "HF_TOKEN");
	free(t);
	vals[1][1] = "hf_bad\ttoken";
	assert_true(rf_hf_token_find(fake_env, &t, &from, &err) < 0);
	assert_null(strstr(err.msg, "hf_bad"));
	vals[1][0] = "HF_TOKEN_PATH", vals[1][1] = "/nonexistent/rf-token";
	assert_true(rf_hf_token_find(fake_env, &t, &from, &err) < 0);
	assert_non_null(strstr(err.msg, "HF_TOKEN_PATH"));
	/* nothing anywhere: no token, not an error (public datasets) */
	memset(vals, 0, sizeof(vals));
	vals[0][0] = "HF_HOME", vals[0][1] = "/nonexistent/rf-hf-home";
	assert_int_equal(rf_hf_token_find(fake_env, &t, &from, &err), 0);
	assert_null(t);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse), cmocka_unit_test(test_repo_types),
	    cmocka_unit_test(test_tree),  cmocka_unit_test(test_link),
	    cmocka_unit_test(test_token),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
