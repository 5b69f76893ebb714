/* aws_config.h - the AWS shared files (~/.aws/credentials, ~/.aws/config)
 * read as the SDKs read them: INI sections, `key = value` lines, keys
 * case-insensitive, nested sub-sections (`s3 =` followed by indented
 * `key = value` lines). The files are untrusted input: bounded size, bounded
 * lines and entries; an error names the file and the line, never a value
 * (values may be secrets, and are wiped on free). Internal.
 *
 * Section names: in a credentials file `[NAME]` is profile NAME. In a config
 * file `[profile NAME]` and `[default]` (also `[profile default]`) are
 * profiles, `[services NAME]` and `[sso-session NAME]` keep their full name
 * ("services NAME"), and any other `[NAME]` is not a profile (the SDKs
 * ignore it) and is skipped. */
#ifndef RF_AWS_CONFIG_H
#define RF_AWS_CONFIG_H

#include "ringfeed.h"
#include <stdbool.h>
#include <stddef.h>

#define RF_AWS_INI_BYTES_MAX      (1u << 20) /* one shared file */
#define RF_AWS_INI_LINE_BYTES_MAX 4096
#define RF_AWS_INI_ENTRIES_MAX    8192 /* key = value lines of one file */
#define RF_AWS_INI_SECTIONS_MAX   1024

typedef enum rf_aws_ini_kind { RF_AWS_INI_CREDENTIALS = 0, RF_AWS_INI_CONFIG } rf_aws_ini_kind;
typedef struct rf_aws_ini rf_aws_ini;

/* Parses text[0..len) (need not be NUL-terminated); shown names the file in
 * messages. */
int rf_aws_ini_parse(const char *text, size_t len, rf_aws_ini_kind kind, const char *shown,
                     rf_aws_ini **out, rf_error *err);
/* Reads and parses a file: -ENOENT (err set) when it does not exist, which
 * the credential chain treats as "no such source". */
int rf_aws_ini_load(const char *path, rf_aws_ini_kind kind, rf_aws_ini **out, rf_error *err);
void rf_aws_ini_free(rf_aws_ini *ini); /* wipes every value */

/* The value of key (case-insensitive) in section, the last one when
 * repeated; NULL when absent. A key that opens a sub-section has the value
 * "" here. */
const char *rf_aws_ini_get(const rf_aws_ini *ini, const char *section, const char *key);
/* The value of key inside the sub-section `sub =` of section, e.g.
 * ("default", "s3", "addressing_style"). */
const char *rf_aws_ini_get_sub(const rf_aws_ini *ini, const char *section, const char *sub,
                               const char *key);
bool rf_aws_ini_has_section(const rf_aws_ini *ini, const char *section);

/* The shared files of this process as the SDKs find them: credentials at
 * $AWS_SHARED_CREDENTIALS_FILE else ~/.aws/credentials, config at
 * $AWS_CONFIG_FILE else ~/.aws/config ($HOME; a missing file is absent, not
 * an error), and the profile $AWS_PROFILE else "default". */
typedef struct rf_aws_shared {
	rf_aws_ini *credentials, *config; /* NULL when the file does not exist */
	char *credentials_path, *config_path;
	char *profile;
} rf_aws_shared;

/* profile: NULL = $AWS_PROFILE or "default". */
int rf_aws_shared_load(const char *profile, rf_aws_shared *out, rf_error *err);
void rf_aws_shared_free(rf_aws_shared *s);
/* A profile's key: the credentials file first, then the config file (as the
 * SDKs merge them). */
const char *rf_aws_profile_get(const rf_aws_shared *s, const char *profile, const char *key);
/* A nested key of the config file's profile (e.g. "s3", "endpoint_url"). */
const char *rf_aws_profile_get_sub(const rf_aws_shared *s, const char *profile, const char *sub,
                                   const char *key);
bool rf_aws_profile_exists(const rf_aws_shared *s, const char *profile);

#endif
