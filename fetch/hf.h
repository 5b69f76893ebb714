/* hf.h - the Hugging Face Hub's pure pieces (issue 29 item 3): the names
 * huggingface_hub's HfFileSystem takes, `hf://ORG/NAME[@REVISION]/PATH` (a
 * model repository: no prefix), `hf://datasets/ORG/NAME[@REVISION]/PATH` and
 * `hf://spaces/ORG/NAME[@REVISION]/PATH`; the Hub's API URLs
 * (`/api/{models,datasets,spaces}/...`) and resolve URLs (`/ORG/NAME/...`,
 * `/datasets/...`, `/spaces/...`, REPO_TYPES_URL_PREFIXES); the tree
 * listing's JSON pages and their `Link: <...>; rel="next"` cursor; the
 * revision answer that pins a branch or tag to one commit for the whole
 * open; and the token (HF_TOKEN, HF_TOKEN_PATH, $HF_HOME/token). The store
 * and its signer (the token never goes to the host a resolve redirects to,
 * the Hub's CDN) are hf_store.c's.
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
/* what a malformed name is told it should be */
#define RF_HF_FORMS "hf://[datasets/|spaces/]ORG/NAME[@REVISION]/PATH (no prefix: a model)"

/* A repository's type, as the Hub's URLs spell it (huggingface_hub's
 * REPO_TYPES_MAPPING): a model is the default and has no name prefix. */
typedef enum rf_hf_type {
	RF_HF_MODEL = 0,
	RF_HF_DATASET,
	RF_HF_SPACE,
} rf_hf_type;

/* "" / "datasets/" / "spaces/": before ORG/NAME in hf:// names and resolve URLs. */
const char *rf_hf_type_prefix(rf_hf_type t);
/* "models" / "datasets" / "spaces": the API's collection. */
const char *rf_hf_type_api(rf_hf_type t);

typedef struct rf_hf_ref {
	rf_hf_type type;
	char repo[2 * RF_HF_NAME_MAX + 2]; /* ORG/NAME */
	char revision[RF_HF_REV_MAX + 1];  /* decoded; "main" when not given */
	char *path;                        /* inside the repository, no leading '/'; may be "" */
} rf_hf_ref;

/* Parses an hf:// name of any of the three forms; hf://models/... is refused
 * (a model has no prefix). Errors name the forms expected. */
int rf_hf_parse(const char *url, rf_hf_ref *out, rf_error *err);
void rf_hf_ref_free(rf_hf_ref *r);

/* The endpoint: HF_ENDPOINT when set (https, or http to a loopback host),
 * else huggingface.co; without a trailing '/'. Malloc'd. */
int rf_hf_endpoint(const char *env_value, char **out, rf_error *err);

/* {endpoint}/api/{models|datasets|spaces}/{repo}/revision/{revision}: the
 * commit of a branch or tag. */
char *rf_hf_revision_url(const char *endpoint, const rf_hf_ref *r);
/* The commit (40 lower-case hex digits) from that answer's JSON ("sha"). */
int rf_hf_revision_parse(const char *json, size_t len, const char *what, char sha[41],
                         rf_error *err);
/* {endpoint}/api/{models|datasets|spaces}/{repo}/tree/{commit}/{path}?recursive=true&expand=false
 */
char *rf_hf_tree_url(const char *endpoint, const rf_hf_ref *r, const char *commit);
/* {endpoint}/[datasets/|spaces/]{repo}/resolve/{commit}/{file} */
char *rf_hf_resolve_url(const char *endpoint, const rf_hf_ref *r, const char *commit,
                        const char *file);

/* hf://[datasets/|spaces/]{repo}@{commit}/{file}: a listed file's name,
 * pinned to the commit (the path as it is, not encoded, as in every hf://
 * name). */
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
 * (tests). *token NULL: none (public repositories). *from names the source. */
int rf_hf_token_find(const char *(*env)(const char *), char **token, const char **from,
                     rf_error *err);

#endif
