/* fuzz_hf.c - libFuzzer target for the Hugging Face Hub's parsers: the first
 * byte picks an hf:// name (then the URLs built from it), a tree page (of a
 * dataset, a model or a space: bits 2-3), a Link header or a revision
 * answer. Accepted input must give what the parsers promise: names within
 * bounds whose listed form parses back to the same repository and type,
 * files inside the listed folder with sizes, a next page only on the
 * endpoint, a 40-hex-digit commit. */
#include "fuzz.h"
#include "hf.h"

static const char *const ep = "https://huggingface.co";
static const char *const sha = "0123456789abcdef0123456789abcdef01234567";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	char *s = fuzz_cstr(data + 1, size - 1);
	size_t len = size - 1;
	rf_error err = {0};
	rf_hf_ref r;
	int rc;
	switch (data[0] & 3) {
	case 0:
		rc = rf_hf_parse(s, &r, &err);
		if (rc < 0) {
			fuzz_check_error(rc, &err);
		} else {
			FUZZ_CHECK(strlen(r.repo) <= 2 * RF_HF_NAME_MAX + 1 && strchr(r.repo, '/'));
			FUZZ_CHECK(r.revision[0] != '\0' && strlen(r.revision) <= RF_HF_REV_MAX);
			FUZZ_CHECK(strstr(r.path, "/../") == NULL &&
			           strncmp(r.path, "../", 3) != 0);
			char *u1 = rf_hf_tree_url(ep, &r, r.revision),
			     *u2 = rf_hf_revision_url(ep, &r);
			char *u3 = rf_hf_resolve_url(ep, &r, sha, r.path);
			char *u4 = rf_hf_name(&r, sha, r.path);
			FUZZ_CHECK(u1 && u2 && u3 && u4);
			/* the listed form of the same file names the same repository */
			rf_hf_ref back;
			FUZZ_CHECK(rf_hf_parse(u4, &back, &err) == 0);
			FUZZ_CHECK(back.type == r.type && !strcmp(back.repo, r.repo) &&
			           !strcmp(back.revision, sha) && !strcmp(back.path, r.path));
			rf_hf_ref_free(&back);
			free(u4);
			FUZZ_CHECK(strncmp(u1, ep, strlen(ep)) == 0 &&
			           strncmp(u3, ep, strlen(ep)) == 0);
			for (const char *p = u3; *p; p++)
				FUZZ_CHECK((unsigned char)*p > 0x20 && *p != 0x7f && *p != '?' &&
				           *p != '#');
			free(u1);
			free(u2);
			free(u3);
		}
		rf_hf_ref_free(&r);
		break;
	case 1: {
		static const char *const folders[] = {
		    "hf://datasets/org/set/data", "hf://org/set/data", "hf://spaces/org/set/data"};
		static const char *const prefixes[] = {
		    "hf://datasets/org/set@0123456789abcdef0123456789abcdef01234567/data",
		    "hf://org/set@0123456789abcdef0123456789abcdef01234567/data",
		    "hf://spaces/org/set@0123456789abcdef0123456789abcdef01234567/data"};
		unsigned kind = (data[0] >> 2 & 3) % 3;
		rf_url_list l = {0};
		FUZZ_CHECK(rf_hf_parse(folders[kind], &r, &err) == 0);
		rf_hf_type type = r.type;
		rc = rf_hf_tree_parse((const char *)data + 1, len, &r, sha, "page", &l, &err);
		if (rc < 0) {
			fuzz_check_error(rc, &err);
			FUZZ_CHECK(l.n == 0);
		} else {
			FUZZ_CHECK((size_t)rc == l.n && l.n <= RF_HF_PAGE_ENTRIES);
			const char *pre = prefixes[kind];
			for (size_t i = 0; i < l.n; i++) {
				FUZZ_CHECK(strncmp(l.v[i].url, pre, strlen(pre)) == 0 &&
				           strstr(l.v[i].url, "/../") == NULL);
				/* a listed name reads back as the same file at the commit */
				rf_hf_ref back;
				FUZZ_CHECK(rf_hf_parse(l.v[i].url, &back, &err) == 0);
				FUZZ_CHECK(back.type == type && !strcmp(back.repo, "org/set") &&
				           !strcmp(back.revision, sha));
				FUZZ_CHECK(!strcmp(back.path, l.v[i].url + strlen(pre) - 4) &&
				           back.path[0] && back.path[strlen(back.path) - 1] != '/');
				rf_hf_ref_free(&back);
			}
		}
		rf_url_list_free(&l);
		rf_hf_ref_free(&r);
		break;
	}
	case 2: {
		char *next = NULL;
		rc = rf_hf_link_next(s, ep, &next, &err);
		if (rc < 0) {
			fuzz_check_error(rc, &err);
			FUZZ_CHECK(next == NULL);
		} else if (rc == 1) {
			FUZZ_CHECK(strncmp(next, "https://huggingface.co/", 23) == 0);
			free(next);
		} else {
			FUZZ_CHECK(next == NULL);
		}
		break;
	}
	default: {
		char got[41];
		rc = rf_hf_revision_parse((const char *)data + 1, len, "rev", got, &err);
		if (rc < 0)
			fuzz_check_error(rc, &err);
		else
			FUZZ_CHECK(strlen(got) == 40);
		break;
	}
	}
	free(s);
	return 0;
}
