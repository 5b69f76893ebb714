/* azure.c - the pure half of the Azure Blob store (azure.h): settings and
 * credentials from the environment, URLs, Shared Key signing, List Blobs
 * pages. No I/O: unit tested and fuzzed (fuzz/fuzz_azure.c). */
#include "azure.h"
#include "http_parse.h"

#include <ctype.h>
#include <errno.h>
#include <expat.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define AZURITE_ACCOUNT "devstoreaccount1"
#define AZURITE_KEY                                                                                \
	"Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
#define AZURITE_ENDPOINT "http://127.0.0.1:10000/devstoreaccount1"

/* ----------------------------------------------------------- settings */

void rf_az_config_free(rf_az_config *c)
{
	free(c->account);
	rf_secret_free(c->key);
	rf_secret_free(c->sas);
	free(c->endpoint);
	memset(c, 0, sizeof(*c));
}

static int set_str(char **dst, const char *v, size_t n, rf_error *err)
{
	rf_secret_free(*dst);
	*dst = strndup(v, n);
	return *dst ? 0 : rf_fail(err, -ENOMEM, "out of memory");
}

/* One "Name=Value" of a connection string (the value may hold '='). */
static int conn_field(rf_az_config *c, const char *f, size_t n, char **proto, char **suffix,
                      rf_error *err)
{
	const char *eq = memchr(f, '=', n);
	if (!eq)
		return n == 0 ? 0 : rf_fail(err, -EINVAL, "a connection string field without '='");
	size_t kn = (size_t)(eq - f), vn = n - kn - 1;
	const char *v = eq + 1;
#define IS(k) (kn == strlen(k) && !strncasecmp(f, k, kn))
	if (IS("AccountName"))
		return set_str(&c->account, v, vn, err);
	if (IS("AccountKey"))
		return set_str(&c->key, v, vn, err);
	if (IS("SharedAccessSignature"))
		return set_str(&c->sas, v + (vn && *v == '?'), vn - (vn && *v == '?'), err);
	if (IS("BlobEndpoint"))
		return set_str(&c->endpoint, v, vn, err);
	if (IS("DefaultEndpointsProtocol"))
		return set_str(proto, v, vn, err);
	if (IS("EndpointSuffix"))
		return set_str(suffix, v, vn, err);
	if (IS("UseDevelopmentStorage") && vn == 4 && !strncasecmp(v, "true", 4)) {
		int rc = set_str(&c->account, AZURITE_ACCOUNT, strlen(AZURITE_ACCOUNT), err);
		if (rc == 0)
			rc = set_str(&c->key, AZURITE_KEY, strlen(AZURITE_KEY), err);
		if (rc == 0 && !c->endpoint)
			rc = set_str(&c->endpoint, AZURITE_ENDPOINT, strlen(AZURITE_ENDPOINT), err);
		return rc;
	}
#undef IS
	return 0;
}

int rf_az_parse_connection_string(const char *s, rf_az_config *c, rf_error *err)
{
	if (strlen(s) > RF_AZ_CONN_BYTES_MAX)
		return rf_fail(err, -EINVAL, "connection string longer than %u bytes",
		               RF_AZ_CONN_BYTES_MAX);
	char *proto = NULL, *suffix = NULL;
	int rc = 0;
	for (const char *p = s; rc == 0 && *p;) {
		size_t n = strcspn(p, ";");
		rc = conn_field(c, p, n, &proto, &suffix, err);
		p += n + (p[n] == ';');
	}
	if (rc == 0 && !c->account)
		rc = rf_fail(err, -EINVAL, "connection string without AccountName");
	if (rc == 0 && !c->endpoint &&
	    asprintf(&c->endpoint, "%s://%s.blob.%s", proto ? proto : "https", c->account,
	             suffix ? suffix : "core.windows.net") < 0) {
		c->endpoint = NULL;
		rc = rf_fail(err, -ENOMEM, "out of memory");
	}
	free(proto);
	free(suffix);
	if (rc == 0 && c->endpoint) {
		size_t n = strlen(c->endpoint);
		while (n > 0 && c->endpoint[n - 1] == '/')
			c->endpoint[--n] = '\0';
	}
	return rc;
}

/* https://ACCOUNT.blob.core.windows.net/... -> ACCOUNT (malloc'd) or NULL. */
static char *https_account(const char *url)
{
	if (strncasecmp(url, "https://", 8) != 0)
		return NULL;
	const char *h = url + 8;
	size_t hn = strcspn(h, "/?#");
	size_t an = strcspn(h, ".");
	static const char sfx[] = ".blob.core.windows.net";
	if (an == 0 || an > 63 || hn != an + strlen(sfx) || strncasecmp(h + an, sfx, strlen(sfx)))
		return NULL;
	return strndup(h, an);
}

bool rf_az_claims(const char *url)
{
	if (!strncmp(url, "az://", 5))
		return true;
	char *a = https_account(url);
	free(a);
	return a != NULL;
}

static const char *container_start(const char *url)
{
	if (!strncmp(url, "az://", 5))
		return url + 5;
	const char *h = strstr(url, "://");
	if (!h)
		return NULL;
	const char *slash = strchr(h + 3, '/');
	return slash ? slash + 1 : NULL;
}

bool rf_az_is_prefix(const char *url)
{
	if (!rf_az_claims(url))
		return false;
	const char *c = container_start(url);
	if (!c || !*c)
		return true;
	const char *slash = strchr(c, '/');
	return !slash || !slash[1] || url[strlen(url) - 1] == '/';
}

static int hexval(int c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
	                              : -1;
}

/* Percent-decodes n bytes of s (malloc'd); NULL on a bad escape or a NUL. */
static char *pct_decode(const char *s, size_t n)
{
	char *o = malloc(n + 1), *w = o;
	for (size_t i = 0; o && i < n; i++) {
		int hi, lo;
		if (s[i] != '%') {
			*w++ = s[i];
		} else if (i + 2 < n && (hi = hexval(s[i + 1])) >= 0 &&
		           (lo = hexval(s[i + 2])) >= 0 && (hi || lo)) {
			*w++ = (char)(hi * 16 + lo);
			i += 2;
		} else {
			free(o);
			return NULL;
		}
	}
	if (o)
		*w = '\0';
	return o;
}

int rf_az_split(const char *url, char **container, char **blob, rf_error *err)
{
	*container = *blob = NULL;
	bool https = strncmp(url, "az://", 5) != 0;
	const char *c = container_start(url);
	if (!c || !*c || *c == '/')
		return rf_fail(err, -EINVAL, "no container in the Azure URL");
	size_t end = https ? rf_url_path_len(c) : strlen(c);
	size_t cn = strcspn(c, "/");
	if (cn > end)
		cn = end;
	const char *b = c[cn] == '/' ? c + cn + 1 : c + cn;
	size_t bn = (size_t)(c + end - b);
	*container = strndup(c, cn);
	*blob = https ? pct_decode(b, bn) : strndup(b, bn);
	if (!*container || !*blob || bn > 3 * RF_AZ_NAME_BYTES_MAX) {
		free(*container);
		free(*blob);
		*container = *blob = NULL;
		return rf_fail(err, -EINVAL, "bad Azure URL (a bad escape, or a name too long)");
	}
	return 0;
}

static const char *first_env(const char *a)
{
	const char *v = getenv(a);
	return v && *v ? v : NULL;
}

int rf_az_config_resolve(const char *url, rf_az_config *c, rf_error *err)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->tried, sizeof(c->tried),
	         "connection string (AZURE_STORAGE_CONNECTION_STRING), account key, SAS");
	const char *cs = first_env("AZURE_STORAGE_CONNECTION_STRING");
	char *from_url = https_account(url);
	int rc = 0;
	if (cs) {
		rc = rf_az_parse_connection_string(cs, c, err);
		snprintf(c->source, sizeof(c->source), "the connection string");
	} else {
		const char *acct = from_url ? from_url : first_env("AZURE_STORAGE_ACCOUNT");
		const char *ep = first_env("AZURE_STORAGE_BLOB_ENDPOINT");
		const char *key = first_env("AZURE_STORAGE_KEY");
		const char *sas = first_env("AZURE_STORAGE_SAS_TOKEN");
		if (!acct)
			rc = rf_fail(err, -EINVAL,
			             "az:// needs an account: set AZURE_STORAGE_ACCOUNT or "
			             "AZURE_STORAGE_CONNECTION_STRING");
		if (rc == 0 && !(c->account = strdup(acct)))
			rc = -ENOMEM;
		if (rc == 0 && key && !(c->key = strdup(key)))
			rc = -ENOMEM;
		if (rc == 0 && !key && sas && !(c->sas = strdup(sas + (*sas == '?'))))
			rc = -ENOMEM;
		if (rc == 0 &&
		    (ep ? !(c->endpoint = strdup(ep))
		        : asprintf(&c->endpoint, "https://%s.blob.core.windows.net", acct) < 0)) {
			c->endpoint = NULL;
			rc = -ENOMEM;
		}
		snprintf(c->source, sizeof(c->source), "%s",
		         key   ? "the account key (AZURE_STORAGE_KEY)"
		         : sas ? "the SAS token (AZURE_STORAGE_SAS_TOKEN)"
		               : "Microsoft Entra ID");
		if (!key && !sas)
			snprintf(c->tried, sizeof(c->tried),
			         "connection string, account key, SAS "
			         "(none set)");
		if (rc == -ENOMEM)
			rf_fail(err, rc, "out of memory");
	}
	free(from_url);
	if (rc == 0)
		c->auth = c->key   ? RF_AZ_SHARED_KEY
		          : c->sas ? RF_AZ_SAS
		          : cs     ? RF_AZ_ANONYMOUS /* a connection string without either */
		                   : RF_AZ_ENTRA;
	if (rc < 0)
		rf_az_config_free(c);
	return rc;
}

/* ---------------------------------------------------------------- URLs */

static char *encode(const char *s, bool keep_slash)
{
	size_t cap = 3 * strlen(s) + 1;
	char *o = malloc(cap);
	if (o)
		rf_uri_encode(s, keep_slash, o, cap);
	return o;
}

int rf_az_object_url(const rf_az_config *c, const char *container, const char *blob, char **out,
                     rf_error *err)
{
	char *eb = encode(blob, true), *ec = encode(container, false);
	int rc = eb && ec
	             ? asprintf(out, "%s/%s/%s%s%s", c->endpoint, ec, eb,
	                        c->auth == RF_AZ_SAS ? "?" : "", c->auth == RF_AZ_SAS ? c->sas : "")
	             : -1;
	free(eb);
	free(ec);
	if (rc < 0) {
		*out = NULL;
		return rf_fail(err, -ENOMEM, "out of memory");
	}
	return 0;
}

int rf_az_list_url(const rf_az_config *c, const char *container, const char *prefix,
                   const char *marker, uint32_t max_results, char **out, rf_error *err)
{
	char *ec = encode(container, false), *ep = encode(prefix ? prefix : "", false);
	char *em = encode(marker ? marker : "", false);
	int rc = ec && ep && em
	             ? asprintf(out, "%s/%s?comp=list%s%s%s%s&maxresults=%u&restype=container%s%s",
	                        c->endpoint, ec, marker ? "&marker=" : "", marker ? em : "",
	                        *ep ? "&prefix=" : "", ep, max_results,
	                        c->auth == RF_AZ_SAS ? "&" : "", c->auth == RF_AZ_SAS ? c->sas : "")
	             : -1;
	free(ec);
	free(ep);
	free(em);
	if (rc < 0) {
		*out = NULL;
		return rf_fail(err, -ENOMEM, "out of memory");
	}
	return 0;
}

/* --------------------------------------------------------- Shared Key */

typedef struct qparam {
	char *name, *value;
} qparam;

static int qparam_cmp(const void *a, const void *b)
{
	return strcmp(((const qparam *)a)->name, ((const qparam *)b)->name);
}

/* "\nname:value" for each query parameter, names lower case and sorted,
 * values decoded (Shared Key's canonicalized resource). */
static char *canonical_query(const char *q)
{
	qparam ps[32];
	size_t n = 0;
	char *out = strdup("");
	for (const char *p = q; out && *p;) {
		size_t len = strcspn(p, "&");
		const char *eq = memchr(p, '=', len);
		size_t nl = eq ? (size_t)(eq - p) : len;
		if (n == 32 || nl == 0) {
			free(out);
			out = NULL;
			break;
		}
		ps[n].name = strndup(p, nl);
		ps[n].value = eq ? pct_decode(eq + 1, len - nl - 1) : strdup("");
		if (!ps[n].name || !ps[n].value) {
			free(ps[n].name);
			free(ps[n].value);
			free(out);
			out = NULL;
			break;
		}
		for (char *c = ps[n].name; *c; c++)
			*c = (char)tolower((unsigned char)*c);
		n++;
		p += len + (p[len] == '&');
	}
	if (out)
		qsort(ps, n, sizeof(ps[0]), qparam_cmp);
	for (size_t i = 0; i < n; i++) {
		char *next = NULL;
		if (out && asprintf(&next, "%s\n%s:%s", out, ps[i].name, ps[i].value) < 0)
			next = NULL;
		free(out);
		out = next;
		free(ps[i].name);
		free(ps[i].value);
	}
	return out;
}

int rf_az_string_to_sign(const char *method, const char *url, const char *account,
                         const char *range, const char *date, char **out)
{
	const char *h = strstr(url, "://");
	const char *path = h ? h + 3 + strcspn(h + 3, "/?#") : url;
	size_t pn = strcspn(path, "?#");
	const char *q = path[pn] == '?' ? path + pn + 1 : "";
	char *cq = canonical_query(q);
	int rc =
	    cq ? asprintf(
	             out,
	             "%s\n\n\n\n\n\n\n\n\n\n\n%s\nx-ms-date:%s\n%s%s%sx-ms-version:%s\n/%s%.*s%s",
	             method, range ? range : "", date, range ? "x-ms-range:" : "",
	             range ? range : "", range ? "\n" : "", RF_AZ_API_VERSION, account, (int)pn,
	             *path ? path : "/", cq)
	       : -1;
	free(cq);
	if (rc < 0) {
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

int rf_az_signature(const char *key_b64, const char *sts, char *out, size_t cap)
{
	size_t kn = strlen(key_b64);
	if (kn == 0 || kn % 4 || kn > 256 || cap < RF_AZ_SIGNATURE_BYTES)
		return -EINVAL;
	unsigned char key[200], mac[EVP_MAX_MD_SIZE];
	int n = EVP_DecodeBlock(key, (const unsigned char *)key_b64, (int)kn);
	if (n < 0)
		return -EINVAL;
	n -= (key_b64[kn - 1] == '=') + (key_b64[kn - 2] == '=');
	unsigned int mn = 0;
	bool ok = HMAC(EVP_sha256(), key, n, (const unsigned char *)sts, strlen(sts), mac, &mn);
	explicit_bzero(key, sizeof(key));
	if (!ok)
		return -EIO;
	EVP_EncodeBlock((unsigned char *)out, mac, (int)mn);
	return 0;
}

/* ------------------------------------------------------- List Blobs */

#define XML_DEPTH_MAX 8
#define XML_TEXT_MAX  (3 * RF_AZ_NAME_BYTES_MAX)

typedef struct az_parse {
	XML_Parser p;
	const char *prefix_url;
	bool encode_names;
	rf_url_list *out;
	rf_error *err;
	int rc, depth;
	char path[XML_DEPTH_MAX][32];
	char text[XML_TEXT_MAX + 1];
	size_t text_len;
	bool text_overflow, is_error, have_name, have_size;
	char name[RF_AZ_NAME_BYTES_MAX + 1];
	char etag[RF_HTTP_VALIDATOR_BYTES_MAX + 1];
	uint64_t size;
	char *marker;
	char code[64];
} az_parse;

static void az_stop(az_parse *ap, int code, const char *what)
{
	if (ap->rc == 0)
		ap->rc = rf_fail(ap->err, code, "bad List Blobs response: %s", what);
	XML_StopParser(ap->p, XML_FALSE);
}

/* The element path from the root is exactly a/b/c/d (NULLs end it). */
static bool az_at(const az_parse *ap, const char *a, const char *b, const char *c, const char *d)
{
	const char *want[4] = {a, b, c, d};
	int n = d ? 4 : c ? 3 : b ? 2 : 1;
	if (ap->depth != n)
		return false;
	for (int i = 0; i < n; i++)
		if (strcmp(ap->path[i], want[i]) != 0)
			return false;
	return true;
}

static void XMLCALL az_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
	az_parse *ap = ud;
	(void)attrs;
	if (ap->rc)
		return;
	if (ap->depth == XML_DEPTH_MAX || strlen(name) >= sizeof(ap->path[0]))
		return az_stop(ap, -EPROTO, "elements nested too deep or named too long");
	if (ap->depth == 0) {
		ap->is_error = !strcmp(name, "Error");
		if (!ap->is_error && strcmp(name, "EnumerationResults") != 0)
			return az_stop(ap, -EPROTO, "root element is not EnumerationResults");
	}
	strcpy(ap->path[ap->depth++], name);
	ap->text_len = 0;
	ap->text_overflow = false;
	if (az_at(ap, "EnumerationResults", "Blobs", "Blob", NULL)) {
		ap->have_name = ap->have_size = false;
		ap->etag[0] = '\0';
	}
}

static void XMLCALL az_text(void *ud, const XML_Char *s, int len)
{
	az_parse *ap = ud;
	if (ap->rc || len <= 0)
		return;
	if ((size_t)len > XML_TEXT_MAX - ap->text_len) {
		ap->text_overflow = true;
		return;
	}
	memcpy(ap->text + ap->text_len, s, (size_t)len);
	ap->text_len += (size_t)len;
}

static void az_end_blob(az_parse *ap)
{
	if (!ap->have_name || !ap->have_size)
		return az_stop(ap, -EPROTO, "a Blob without Name or Content-Length");
	if (ap->out->n >= RF_AZ_LIST_KEYS_MAX)
		return az_stop(ap, -E2BIG, "more than 1000000 blobs under the prefix");
	char *name = ap->encode_names ? encode(ap->name, true) : strdup(ap->name);
	char *url = NULL;
	if (!name || asprintf(&url, "%s%s", ap->prefix_url, name) < 0)
		url = NULL;
	free(name);
	if (!url) {
		ap->rc = rf_fail(ap->err, -ENOMEM, "out of memory");
		XML_StopParser(ap->p, XML_FALSE);
		return;
	}
	char version[RF_HTTP_VALIDATOR_BYTES_MAX + 8]; /* as the HEAD's */
	rf_http_validator_make(ap->etag, false, NULL, version, sizeof(version));
	int rc = rf_url_list_add_version(ap->out, url, ap->size, version, ap->err);
	free(url);
	if (rc < 0) {
		ap->rc = rc;
		XML_StopParser(ap->p, XML_FALSE);
	}
}

/* EnumerationResults/Blobs/Blob/Properties/field */
static bool az_property(const az_parse *ap, const char *field)
{
	return ap->depth == 5 && !strcmp(ap->path[4], field) &&
	       !strcmp(ap->path[3], "Properties") && !strcmp(ap->path[2], "Blob") &&
	       !strcmp(ap->path[1], "Blobs");
}

static void az_end_field(az_parse *ap, const char *t)
{
	if (az_at(ap, "EnumerationResults", "Blobs", "Blob", "Name")) {
		if (ap->text_len == 0 || ap->text_len > RF_AZ_NAME_BYTES_MAX ||
		    memchr(t, 0, ap->text_len))
			return az_stop(ap, -EPROTO, "an empty, too long or NUL-holding Name");
		memcpy(ap->name, t, ap->text_len + 1);
		ap->have_name = true;
	} else if (az_property(ap, "Content-Length")) {
		if (!rf_dec_u64(t, &ap->size))
			return az_stop(ap, -EPROTO,
			               "a Content-Length that is not a decimal number");
		ap->have_size = true;
	} else if (az_property(ap, "Etag")) {
		if (ap->text_overflow || memchr(t, 0, ap->text_len) ||
		    !rf_http_validator_value(t, ap->etag, sizeof(ap->etag)))
			ap->etag[0] = '\0';
	} else if (az_at(ap, "EnumerationResults", "NextMarker", NULL, NULL)) {
		free(ap->marker);
		ap->marker = NULL;
		if (ap->text_len > 4096 || (ap->text_len && !(ap->marker = strdup(t))))
			return az_stop(ap, -EPROTO, "an oversized NextMarker");
	} else if (az_at(ap, "Error", "Code", NULL, NULL)) {
		snprintf(ap->code, sizeof(ap->code), "%.63s", t);
	}
}

static void XMLCALL az_end(void *ud, const XML_Char *name)
{
	az_parse *ap = ud;
	(void)name;
	if (ap->rc)
		return;
	ap->text[ap->text_len] = '\0';
	if (ap->text_overflow && ap->depth >= 2 && ap->depth != 5)
		return az_stop(ap, -EPROTO, "an element's text is too long");
	if (az_at(ap, "EnumerationResults", "Blobs", "Blob", NULL))
		az_end_blob(ap);
	else
		az_end_field(ap, ap->text);
	ap->depth--;
	ap->text_len = 0;
}

static void XMLCALL az_doctype(void *ud, const XML_Char *n, const XML_Char *s, const XML_Char *p,
                               int internal)
{
	(void)n, (void)s, (void)p, (void)internal;
	az_stop(ud, -EPROTO, "a DOCTYPE (refused)");
}

int rf_az_list_parse(const char *xml, size_t len, const char *prefix_url, bool encode_names,
                     rf_url_list *out, char **next_marker, rf_error *err)
{
	*next_marker = NULL;
	if (len > RF_AZ_LIST_BODY_MAX)
		return rf_fail(err, -EPROTO, "List Blobs response over %u bytes",
		               RF_AZ_LIST_BODY_MAX);
	az_parse *ap = calloc(1, sizeof(*ap));
	if (!ap)
		return rf_fail(err, -ENOMEM, "out of memory");
	size_t n0 = out->n;
	*ap = (az_parse){.p = XML_ParserCreate("UTF-8"),
	                 .prefix_url = prefix_url,
	                 .encode_names = encode_names,
	                 .out = out,
	                 .err = err};
	int rc = -ENOMEM;
	if (ap->p) {
		XML_SetUserData(ap->p, ap);
		XML_SetElementHandler(ap->p, az_start, az_end);
		XML_SetCharacterDataHandler(ap->p, az_text);
		XML_SetStartDoctypeDeclHandler(ap->p, az_doctype);
		enum XML_Status st = XML_Parse(ap->p, xml, (int)len, XML_TRUE);
		if (ap->rc)
			rc = ap->rc;
		else if (st != XML_STATUS_OK)
			rc = rf_fail(err, -EPROTO, "bad List Blobs response: %s at line %lu",
			             XML_ErrorString(XML_GetErrorCode(ap->p)),
			             (unsigned long)XML_GetCurrentLineNumber(ap->p));
		else if (ap->is_error)
			rc = rf_fail(err,
			             !strcmp(ap->code, "ContainerNotFound") ? -ENOENT
			             : strstr(ap->code, "Auth")             ? -EACCES
			                                                    : -EIO,
			             "List Blobs refused: %s", ap->code[0] ? ap->code : "an Error");
		else
			rc = 0;
		XML_ParserFree(ap->p);
	}
	if (rc == 0)
		*next_marker = ap->marker;
	else
		free(ap->marker);
	if (rc < 0)
		rf_url_list_truncate(out, n0);
	free(ap);
	return rc;
}
