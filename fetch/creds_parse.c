/* creds_parse.c - what the credential sources answer, parsed as untrusted
 * input (see creds.h): STS XML with expat (hardened as s3.c's listing
 * parser), container / IMDS / credential_process JSON with jansson, ISO 8601
 * times, and the command line of credential_process. A parsed key is
 * checked so that it can be sent at all: the access key goes into curl's
 * "key:secret" and the token into a header line. */
#include "creds.h"
#include "util.h"

#include <expat.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define XML_DEPTH_MAX  8
#define ACCESS_KEY_MAX 128
#define SECRET_KEY_MAX 256

void rf_creds_value_wipe(rf_creds_value *v)
{
	rf_secret_free(v->access_key);
	rf_secret_free(v->secret_key);
	rf_secret_free(v->session_token);
	memset(v, 0, sizeof(*v));
}

/* ------------------------------------------------------------ checks */

static bool all_chars(const char *s, size_t max, bool (*ok)(unsigned char))
{
	size_t n = strlen(s);
	if (n == 0 || n > max)
		return false;
	for (; *s; s++)
		if (!ok((unsigned char)*s))
			return false;
	return true;
}

static bool alnum(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool visible(unsigned char c)
{
	return c > 0x20 && c < 0x7f;
}

/* Keys that can be sent: checked before anything keeps them. */
static int check_value(const rf_creds_value *v, const char *what, rf_error *err)
{
	if (!v->access_key || !all_chars(v->access_key, ACCESS_KEY_MAX, alnum))
		return rf_fail(err, -EPROTO, "%s: AccessKeyId missing, empty or not alphanumeric",
		               what);
	if (!v->secret_key || !all_chars(v->secret_key, SECRET_KEY_MAX, visible))
		return rf_fail(err, -EPROTO, "%s: SecretAccessKey missing, empty or not printable",
		               what);
	if (v->session_token && !all_chars(v->session_token, RF_CREDS_TOKEN_BYTES_MAX, visible))
		return rf_fail(err, -EPROTO, "%s: session token empty, too long or not printable",
		               what);
	return 0;
}

/* ------------------------------------------------------------ time */

static bool digits(const char **p, int n, int *out)
{
	int v = 0;
	for (int i = 0; i < n; i++, (*p)++) {
		if (**p < '0' || **p > '9')
			return false;
		v = v * 10 + (**p - '0');
	}
	*out = v;
	return true;
}

int rf_creds_parse_time(const char *s, int64_t *unix_ms)
{
	struct tm tm = {0};
	int y, mo, d, h, mi, sec;
	const char *p = s;
	if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
	    !digits(&p, 2, &d) || (*p != 'T' && *p != 't' && *p != ' ') || !*p++ ||
	    !digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi) || *p++ != ':' ||
	    !digits(&p, 2, &sec))
		return -EINVAL;
	int ms = 0;
	if (*p == '.') {
		int n = 0;
		for (p++; *p >= '0' && *p <= '9'; p++, n++)
			if (n < 3)
				ms = ms * 10 + (*p - '0');
		if (n == 0)
			return -EINVAL;
		for (; n < 3; n++)
			ms *= 10;
	}
	bool utc =
	    !strcmp(p, "Z") || !strcmp(p, "z") || !strcmp(p, "+00:00") || !strcmp(p, "+0000");
	if (!utc || y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 ||
	    mi > 59 || sec > 60)
		return -EINVAL;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	time_t t = timegm(&tm);
	if (t == (time_t)-1)
		return -EINVAL;
	*unix_ms = (int64_t)t * 1000 + ms;
	return 0;
}

int64_t rf_creds_refresh_delay_ms(int64_t now_ms, int64_t obtained_ms, int64_t expires_ms)
{
	int64_t lifetime = expires_ms - obtained_ms;
	int64_t ahead = RF_MIN((int64_t)RF_CREDS_REFRESH_AHEAD_MS, RF_MAX(lifetime, 0) / 3);
	return RF_MAX(expires_ms - ahead - now_ms, 500);
}

/* ------------------------------------------------------------ STS XML */

typedef struct sts_parse {
	XML_Parser p;
	rf_error *err;
	int rc, depth;
	char path[XML_DEPTH_MAX][48];
	char *text;
	size_t text_len;
	bool overflow, is_error;
	rf_creds_value v;
	bool have_expiration;
	int64_t expires_ms;
	char code[64], message[160];
} sts_parse;

static void sts_stop(sts_parse *sp, const char *what)
{
	if (sp->rc == 0)
		sp->rc = rf_fail(sp->err, -EPROTO, "bad STS response: %s", what);
	XML_StopParser(sp->p, XML_FALSE);
}

static void XMLCALL sts_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
	sts_parse *sp = ud;
	if (sp->rc)
		return;
	if (sp->depth == XML_DEPTH_MAX || strlen(name) >= sizeof(sp->path[0]))
		return sts_stop(sp, "elements nested too deep or named too long");
	if (sp->depth == 0) {
		sp->is_error = !strcmp(name, "ErrorResponse");
		if (!sp->is_error && strcmp(name, "AssumeRoleResponse") != 0 &&
		    strcmp(name, "AssumeRoleWithWebIdentityResponse") != 0)
			return sts_stop(sp, "root element is not an AssumeRole response");
	}
	strcpy(sp->path[sp->depth++], name);
	sp->text_len = 0;
	sp->overflow = false;
}

static void XMLCALL sts_text(void *ud, const XML_Char *s, int len)
{
	sts_parse *sp = ud;
	if (sp->rc || len <= 0)
		return;
	if ((size_t)len > RF_CREDS_TOKEN_BYTES_MAX - sp->text_len) {
		sp->overflow = true;
		return;
	}
	memcpy(sp->text + sp->text_len, s, (size_t)len);
	sp->text_len += (size_t)len;
}

static void sts_keep(sts_parse *sp, char **field)
{
	if (memchr(sp->text, 0, sp->text_len))
		return sts_stop(sp, "a NUL in a credential");
	rf_secret_free(*field);
	if (!(*field = strdup(sp->text)))
		return sts_stop(sp, "out of memory");
}

static void sts_field(sts_parse *sp, const char *name, const char *parent)
{
	if (sp->is_error) {
		if (sp->depth == 3 && !strcmp(parent, "Error") && !strcmp(name, "Code"))
			snprintf(sp->code, sizeof(sp->code), "%.63s", sp->text);
		else if (sp->depth == 3 && !strcmp(parent, "Error") && !strcmp(name, "Message"))
			snprintf(sp->message, sizeof(sp->message), "%.159s", sp->text);
		return;
	}
	if (sp->depth != 4 || strcmp(parent, "Credentials") != 0)
		return;
	if (!strcmp(name, "AccessKeyId"))
		sts_keep(sp, &sp->v.access_key);
	else if (!strcmp(name, "SecretAccessKey"))
		sts_keep(sp, &sp->v.secret_key);
	else if (!strcmp(name, "SessionToken"))
		sts_keep(sp, &sp->v.session_token);
	else if (!strcmp(name, "Expiration")) {
		if (rf_creds_parse_time(sp->text, &sp->expires_ms) < 0)
			return sts_stop(sp, "an Expiration that is not an ISO 8601 UTC time");
		sp->have_expiration = true;
	}
}

static void XMLCALL sts_end(void *ud, const XML_Char *name)
{
	sts_parse *sp = ud;
	if (sp->rc)
		return;
	sp->text[sp->text_len] = '\0';
	if (sp->overflow)
		return sts_stop(sp, "an element's text is too long");
	sts_field(sp, name, sp->depth >= 2 ? sp->path[sp->depth - 2] : "");
	explicit_bzero(sp->text, sp->text_len);
	sp->depth--;
	sp->text_len = 0;
}

static void XMLCALL sts_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                                const XML_Char *pubid, int has_internal_subset)
{
	sts_stop(ud, "a DOCTYPE (refused: no DTDs or entities)");
}

static void XMLCALL sts_entity(void *ud, const XML_Char *name, int is_param, const XML_Char *value,
                               int value_len, const XML_Char *base, const XML_Char *sysid,
                               const XML_Char *pubid, const XML_Char *notation)
{
	sts_stop(ud, "an entity declaration (refused)");
}

static int sts_finish(sts_parse *sp, rf_creds_value *out)
{
	if (sp->is_error)
		return rf_fail(sp->err, -EACCES, "STS error %s: %s",
		               sp->code[0] ? sp->code : "(no code)", sp->message);
	if (!sp->have_expiration || !sp->v.session_token)
		return rf_fail(sp->err, -EPROTO,
		               "bad STS response: Credentials without SessionToken or Expiration");
	RF_TRY(check_value(&sp->v, "bad STS response", sp->err));
	*out = sp->v;
	out->expires_ms = sp->expires_ms;
	memset(&sp->v, 0, sizeof(sp->v));
	return 0;
}

static int sts_run(sts_parse *sp, const char *xml, size_t len, rf_creds_value *out)
{
	XML_SetUserData(sp->p, sp);
	XML_SetElementHandler(sp->p, sts_start, sts_end);
	XML_SetCharacterDataHandler(sp->p, sts_text);
	XML_SetStartDoctypeDeclHandler(sp->p, sts_doctype);
	XML_SetEntityDeclHandler(sp->p, sts_entity);
	enum XML_Status st = XML_Parse(sp->p, xml, (int)len, XML_TRUE);
	if (sp->rc)
		return sp->rc;
	if (st != XML_STATUS_OK)
		return rf_fail(sp->err, -EPROTO, "bad STS response: %s at line %lu",
		               XML_ErrorString(XML_GetErrorCode(sp->p)),
		               (unsigned long)XML_GetCurrentLineNumber(sp->p));
	if (!sp->path[0][0])
		return rf_fail(sp->err, -EPROTO, "empty STS response");
	return sts_finish(sp, out);
}

int rf_creds_parse_sts(const char *xml, size_t len, rf_creds_value *out, rf_error *err)
{
	memset(out, 0, sizeof(*out));
	if (len > RF_CREDS_BODY_BYTES_MAX)
		return rf_fail(err, -EPROTO, "STS response over %u bytes", RF_CREDS_BODY_BYTES_MAX);
	sts_parse *sp = calloc(1, sizeof(*sp));
	if (sp)
		sp->text = malloc(RF_CREDS_TOKEN_BYTES_MAX + 1);
	if (!sp || !sp->text) {
		if (sp)
			free(sp->text);
		free(sp);
		return rf_fail(err, -ENOMEM, "out of memory");
	}
	sp->err = err;
	int rc = -ENOMEM;
	if ((sp->p = XML_ParserCreate("UTF-8"))) {
		rc = sts_run(sp, xml, len, out);
		XML_ParserFree(sp->p);
	} else {
		rf_fail(err, rc, "out of memory");
	}
	rf_creds_value_wipe(&sp->v);
	explicit_bzero(sp->text, RF_CREDS_TOKEN_BYTES_MAX + 1);
	free(sp->text);
	free(sp);
	return rc;
}

/* ------------------------------------------------------------ JSON */

static int json_field(json_t *o, const char *name, bool required, char **out, const char *what,
                      rf_error *err)
{
	json_t *v = json_object_get(o, name);
	if (!v)
		return required ? rf_fail(err, -EPROTO, "%s: no %s", what, name) : 0;
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
		return rf_fail(err, -EPROTO, "%s: %s is not a string", what, name);
	if (json_string_length(v) > RF_CREDS_TOKEN_BYTES_MAX)
		return rf_fail(err, -EPROTO, "%s: %s is too long", what, name);
	if (!(*out = strdup(json_string_value(v))))
		return rf_fail(err, -ENOMEM, "out of memory");
	return 0;
}

static int json_fields(json_t *o, rf_creds_json_kind kind, rf_creds_value *v, const char *what,
                       rf_error *err)
{
	if (kind == RF_CREDS_JSON_PROCESS) {
		json_t *ver = json_object_get(o, "Version");
		if (!json_is_integer(ver) || json_integer_value(ver) != 1)
			return rf_fail(err, -EPROTO, "%s: Version is not 1", what);
	} else {
		json_t *code = json_object_get(o, "Code");
		if (code && (!json_is_string(code) || strcmp(json_string_value(code), "Success")))
			return rf_fail(err, -EACCES, "%s: Code is not Success", what);
	}
	const char *token = kind == RF_CREDS_JSON_PROCESS ? "SessionToken" : "Token";
	char *expiration = NULL;
	int rc = json_field(o, "AccessKeyId", true, &v->access_key, what, err);
	if (rc == 0)
		rc = json_field(o, "SecretAccessKey", true, &v->secret_key, what, err);
	if (rc == 0)
		rc = json_field(o, token, false, &v->session_token, what, err);
	if (rc == 0)
		rc = json_field(o, "Expiration", kind != RF_CREDS_JSON_PROCESS, &expiration, what,
		                err);
	if (rc == 0 && expiration && rf_creds_parse_time(expiration, &v->expires_ms) < 0)
		rc = rf_fail(err, -EPROTO, "%s: Expiration is not an ISO 8601 UTC time", what);
	free(expiration);
	if (rc == 0 && kind != RF_CREDS_JSON_PROCESS && !v->session_token)
		rc = rf_fail(err, -EPROTO, "%s: no Token", what);
	return rc == 0 ? check_value(v, what, err) : rc;
}

int rf_creds_parse_json(const char *json, size_t len, rf_creds_json_kind kind, rf_creds_value *out,
                        rf_error *err)
{
	const char *what =
	    kind == RF_CREDS_JSON_PROCESS ? "credential_process output" : "credentials response";
	memset(out, 0, sizeof(*out));
	if (len > RF_CREDS_BODY_BYTES_MAX)
		return rf_fail(err, -EPROTO, "%s over %u bytes", what, RF_CREDS_BODY_BYTES_MAX);
	json_error_t jerr;
	json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!o)
		return rf_fail(err, -EPROTO, "%s is not JSON (line %d column %d)", what, jerr.line,
		               jerr.column); /* jerr.text may quote the input: not shown */
	int rc = json_is_object(o) ? json_fields(o, kind, out, what, err)
	                           : rf_fail(err, -EPROTO, "%s is not a JSON object", what);
	json_decref(o);
	if (rc < 0)
		rf_creds_value_wipe(out);
	return rc;
}

/* ------------------------------------------------------------ commands */

void rf_creds_argv_free(char **argv)
{
	for (char **a = argv; a && *a; a++)
		free(*a);
	free(argv);
}

/* One word from *p (quotes and backslashes resolved) into out. */
static int next_word(const char **p, char *out, rf_error *err)
{
	const char *s = *p;
	size_t n = 0;
	char quote = 0;
	for (; *s && (quote || (*s != ' ' && *s != '\t')); s++) {
		if (!quote && (*s == '\'' || *s == '"')) {
			quote = *s;
		} else if (quote && *s == quote) {
			quote = 0;
		} else if (*s == '\\' && quote != '\'' && s[1]) {
			out[n++] = *++s;
		} else {
			out[n++] = *s;
		}
	}
	if (quote)
		return rf_fail(err, -EINVAL, "credential_process: an unterminated %c quote", quote);
	out[n] = '\0';
	*p = s;
	return 0;
}

int rf_creds_split_command(const char *cmd, char ***argv_out, rf_error *err)
{
	*argv_out = NULL;
	size_t len = strlen(cmd);
	if (len > 4096)
		return rf_fail(err, -EINVAL, "credential_process: command longer than 4096 bytes");
	char **argv = calloc(RF_CREDS_PROCESS_ARGS_MAX + 1, sizeof(*argv));
	char *word = malloc(len + 1);
	int rc = argv && word ? 0 : rf_fail(err, -ENOMEM, "out of memory");
	size_t n = 0;
	const char *p = cmd;
	while (rc == 0) {
		p += strspn(p, " \t");
		if (!*p)
			break;
		if (n == RF_CREDS_PROCESS_ARGS_MAX) {
			rc = rf_fail(err, -E2BIG, "credential_process: more than %u arguments",
			             RF_CREDS_PROCESS_ARGS_MAX);
			break;
		}
		rc = next_word(&p, word, err);
		if (rc == 0 && !(argv[n++] = strdup(word)))
			rc = rf_fail(err, -ENOMEM, "out of memory");
	}
	if (rc == 0 && n == 0)
		rc = rf_fail(err, -EINVAL, "credential_process: an empty command");
	free(word);
	if (rc < 0) {
		rf_creds_argv_free(argv);
		return rc;
	}
	*argv_out = argv;
	return 0;
}
