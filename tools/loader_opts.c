/* loader_opts.c - see loader_opts.h. */
#include "loader_opts.h"
#include "flags.h"

/* Largest state file (ringfeed.h: a few bytes, plus 16 per segment of a
 * re-split epoch, at most 4096 of them). */
#define RF_CLI_STATE_MAX (96u + 16u * 4096u)

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int rf_cli_set(rf_config *cfg, const char *key, const char *value, const char *cmd)
{
	rf_error err = {0};
	if (rf_config_set(cfg, key, value, &err) < 0) {
		fprintf(stderr, "ringfeed %s: %s\n", cmd, err.msg);
		return -1;
	}
	return 0;
}

/* "--shuffle-window" -> "shuffle_window" when it names a config key. */
static int rf_cli_key(const char *flag, char *key, size_t cap)
{
	if (strncmp(flag, "--", 2) != 0 || strlen(flag + 2) >= cap)
		return 0;
	size_t n = 0;
	for (const char *p = flag + 2; *p && *p != '='; p++)
		key[n++] = *p == '-' ? '_' : *p;
	key[n] = '\0';
	for (const char *k = rf_config_keys(); *k; k += strlen(k) + 1) {
		if (!strcmp(k, key))
			return 1;
		k += strlen(k) + 1; /* skip the help text */
	}
	return 0;
}

int rf_cli_loader_flag(rf_config *cfg, int argc, char **argv, int i, const char *cmd)
{
	const char *a = argv[i];
	if (!strcmp(a, "--no-shuffle"))
		return rf_cli_set(cfg, "shuffle", "0", cmd) < 0 ? -1 : 1;
	if (!strcmp(a, "--truncate"))
		return rf_cli_set(cfg, "truncate", "1", cmd) < 0 ? -1 : 1;
	if (!strcmp(a, "--tfrecord-raw")) /* an option's flag, as --truncate */
		return rf_cli_set(cfg, "tfrecord_raw", "1", cmd) < 0 ? -1 : 1;
	if (!strcmp(a, "--no-sign-request")) /* the AWS CLI's name */
		return rf_cli_set(cfg, "s3_no_sign", "1", cmd) < 0 ? -1 : 1;
	char key[64];
	if (!rf_cli_key(a, key, sizeof(key)))
		return 0;
	const char *eq = strchr(a, '=');
	if (eq)
		return rf_cli_set(cfg, key, eq + 1, cmd) < 0 ? -1 : 1;
	if (i + 1 >= argc) {
		fprintf(stderr, "ringfeed %s: %s needs a value\n", cmd, a);
		return -1;
	}
	return rf_cli_set(cfg, key, argv[i + 1], cmd) < 0 ? -1 : 2;
}

int rf_cli_loader_env(rf_config *cfg, const char *cmd)
{
	const char *inject = getenv("RINGFEED_INJECT");
	if (inject && *inject && rf_cli_set(cfg, "inject", inject, cmd) < 0) {
		fprintf(stderr, "ringfeed %s: (from RINGFEED_INJECT)\n", cmd);
		return -1;
	}
	return 0;
}

/* One loader flag's help line: the key's help text, without an empty
 * "(default: )" (options that have none), plus what the flag alone means. */
static void rf_cli_help_line(FILE *f, const char *key, const char *help)
{
	char flag[64];
	snprintf(flag, sizeof(flag), "--%s", key);
	for (char *p = flag; *p; p++)
		if (*p == '_')
			*p = '-';
	static const char none[] = " (default: )";
	size_t n = strlen(help), cut = strlen(none);
	int len = n >= cut && !strcmp(help + n - cut, none) ? (int)(n - cut) : (int)n;
	fprintf(f, "  %-24s %.*s%s\n", flag, len, help,
	        !strcmp(key, "truncate")       ? "; --truncate alone is --truncate=1"
	        : !strcmp(key, "tfrecord_raw") ? "; --tfrecord-raw alone is --tfrecord-raw=1"
	                                       : "");
}

void rf_cli_loader_help(FILE *f)
{
	fprintf(f, "loader options (each also settable as --name=value):\n");
	for (const char *k = rf_config_keys(); *k;) {
		const char *help = k + strlen(k) + 1;
		rf_cli_help_line(f, k, help);
		k = help + strlen(help) + 1;
	}
	fprintf(f, "  %-24s %s\n", "--no-shuffle", "same as --shuffle 0 (manifest / shard order)");
	fprintf(f, "  %-24s %s\n", "--no-sign-request", "same as --s3-no-sign 1 (anonymous S3)");
	fprintf(
	    f,
	    "environment: RINGFEED_INJECT=SPEC sets --inject (fault injection, testing);\n"
	    "  AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, AWS_REGION / AWS_DEFAULT_REGION and the\n"
	    "  AWS credential chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,\n"
	    "  web identity, AWS_PROFILE's files, container credentials, IMDS) stand in for the\n"
	    "  --s3-* flags not given\n");
}

int rf_cli_resume(rf_config *cfg, const char *path, const char *cmd)
{
	char shown[4200];
	flag_shown(path, shown, sizeof(shown));
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		fprintf(stderr, "ringfeed %s: %s: cannot open: %m\n", cmd, shown);
		return -1;
	}
	static unsigned char buf[RF_CLI_STATE_MAX + 1]; /* one more: a longer file is refused */
	size_t n = fread(buf, 1, sizeof(buf), fp);
	fclose(fp);
	rf_error err = {0};
	if (rf_config_set_resume(cfg, buf, n, &err) < 0) {
		fprintf(stderr, "ringfeed %s: %s: %s\n", cmd, shown, err.msg);
		return -1;
	}
	return 0;
}

int rf_cli_save_state(rf_loader *l, const char *path, const char *cmd)
{
	size_t len = 0;
	if (rf_state_save(l, NULL, &len) < 0 || len > RF_CLI_STATE_MAX) {
		fprintf(stderr, "ringfeed %s: cannot save the state\n", cmd);
		return -1;
	}
	static unsigned char buf[RF_CLI_STATE_MAX];
	if (rf_state_save(l, buf, &len) < 0) {
		fprintf(stderr, "ringfeed %s: cannot save the state\n", cmd);
		return -1;
	}
	FILE *fp = fopen(path, "wb");
	bool ok = fp && fwrite(buf, 1, len, fp) == len;
	if (fp && fclose(fp) != 0)
		ok = false;
	if (!ok) {
		char shown[4200];
		fprintf(stderr, "ringfeed %s: %s: cannot write: %m\n", cmd,
		        flag_shown(path, shown, sizeof(shown)));
		return -1;
	}
	return 0;
}
