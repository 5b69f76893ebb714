/* hf.h - the Hugging Face Hub's pure pieces (issue 29 item 3):
 * `hf://datasets/ORG/NAME[@REVISION]/PATH` names, the Hub's API and resolve
 * URLs, the tree listing's JSON pages and their `Link: <...>; rel="next"`
 * cursor, the revision answer that pins a branch or tag to one commit for
 * the whole open, and the token (HF_TOKEN, HF_TOKEN_PATH, $HF_HOME/token).
 * Not yet wired into the transport: the bearer-token store comes with the
 * auth seam, and with it the rule that the token never goes to the host a
 * resolve redirects to (the Hub's CDN).
 *
 * Untrusted throughout: names, pages and headers are bounded and checked,
 * a next-page link to another host is refused (the token would follow it),
 * errors name the repository, page and entry, never the token. Internal. */
#ifndef RF_HF_H
#define RF_HF_H

#include "ringfeed.h"
#include "url.h"
#include <stddef.h>
#include <stdint.h>

#define RF_HF_ENDPOINT     "https://huggingface.co"
#define RF_HF_NAME_MAX     96u        /* an org or dataset name (the Hub's limit) */
#define RF_HF_REV_MAX      256u       /* a branch, tag or commit */
#define RF_HF_PAGE_MAX     (8u << 20) /* one tree page's JSON */
#define RF_HF_PAGE_ENTRIES 10000u     /* entries on one page */
#define RF_HF_TOKEN_MAX    1024u

typedef struct rf_hf_ref {
	char repo[2 * RF_HF_NAME_MAX + 2]; /* ORG/NAME */
	char revision[RF_HF_REV_MAX + 1];  /* decoded; "main" when not given */
	char *path;                        /* inside the repository, no leading '/'; may be "" */
} rf_hf_ref;

/* Parses an hf://datasets/... name. */
int rf_hf_parse(const char *url, rf_hf_ref *out, rf_error *err);
void rf_hf_ref_free(rf_hf_ref *r);

/* The endpoint: HF_ENDPOINT when set (https, or http to a loopback host),
 * else huggingface.co; without a trailing '/'. Malloc'd. */
int rf_hf_endpoint(const char *env_value, char **out, rf_error *err);

/* {endpoint}/api/datasets/{repo}/revision/{revision}: the commit of a branch or tag. */
char *rf_hf_revision_url(const char *endpoint, const rf_hf_ref *r);
/* The commit (40 lower-case hex digits) from that answer's JSON ("sha"). */
int rf_hf_revision_parse(const char *json, size_t len, const char *what, char sha[41],
                         rf_error *err);
/* {endpoint}/api/datasets/{repo}/tree/{commit}/{path}?recursive=true&expand=false */
char *rf_hf_tree_url(const char *endpoint, const rf_hf_ref *r, const char *commit);
/* {endpoint}/datasets/{repo}/resolve/{commit}/{file} */
char *rf_hf_resolve_url(const char *endpoint, const rf_hf_ref *r, const char *commit,
                        const char *file);

/* hf://datasets/{repo}@{commit}/{file}: a listed file's name, pinned to the
 * commit (the path as it is, not encoded, as in every hf:// name). */
char *rf_hf_name(const rf_hf_ref *r, const char *commit, const char *file);

/* One tree page: every "file" entry is added to out as its pinned name
 * (rf_hf_name) with its size (directories are skipped: the listing is
 * recursive). what names the page in errors. Returns the files added. */
int rf_hf_tree_parse(const char *json, size_t len, const rf_hf_ref *r, const char *commit,
                     const char *what, rf_url_list *out, rf_error *err);

/* The next page from a Link header's value, if any: 1 and *next (malloc'd)
 * when there is one, 0 when none; refused when it leaves the endpoint. */
int rf_hf_link_next(const char *link, const char *endpoint, char **next, rf_error *err);

/* The token: HF_TOKEN, else the file HF_TOKEN_PATH, else $HF_HOME/token
 * (HF_HOME: ~/.cache/huggingface). The getenv-like function is the caller's
 * (tests). *token NULL: none (public datasets). *from names the source. */
int rf_hf_token_find(const char *(*env)(const char *), char **token, const char **from,
                     rf_error *err);

#endif
