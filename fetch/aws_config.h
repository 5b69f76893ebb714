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
 * ignore it) and is skipped.
 *
 * A loader reads only what it needs (rf_aws_shared_load: the profile used,
 * its source_profile and its services section): every other section is
 * skipped unparsed, so a long line, a malformed setting or a huge section in
 * a profile nobody uses never fails the chain. The files are streamed (up to
 * RF_AWS_INI_BYTES_MAX), and the sections kept are bounded (line, value,
 * settings, sections); past a bound an error names the file, the line and
 * the profile. */
#ifndef RF_AWS_CONFIG_H
#define RF_AWS_CONFIG_H

#include "ringfeed.h"
#include <stdbool.h>
#include <stddef.h>

#define RF_AWS_INI_BYTES_MAX       (16u << 20) /* one shared file, streamed */
#define RF_AWS_INI_LINE_BYTES_MAX  16384       /* a line of a section kept (a session token fits) */
#define RF_AWS_INI_VALUE_BYTES_MAX 16384       /* a value with its continuation lines */
#define RF_AWS_INI_ENTRIES_MAX     8192        /* key = value lines kept of one file */
#define RF_AWS_INI_SECTIONS_MAX    1024        /* sections kept of one file */

typedef enum rf_aws_ini_kind { RF_AWS_INI_CREDENTIALS = 0, RF_AWS_INI_CONFIG } rf_aws_ini_kind;
typedef struct rf_aws_ini rf_aws_ini;

/* Parses text[0..len) (need not be NUL-terminated); shown names the file in
 * messages. Every section is kept. */
int rf_aws_ini_parse(const char *text, size_t len, rf_aws_ini_kind kind, const char *shown,
                     rf_aws_ini **out, rf_error *err);
/* The same, keeping only the sections named in keep (NULL-terminated, names
 * as lookups know them: "work", "services s3x"; keep NULL = every section):
 * the lines of the others are skipped, whatever they hold. */
int rf_aws_ini_parse_only(const char *text, size_t len, rf_aws_ini_kind kind, const char *shown,
                          const char *const *keep, rf_aws_ini **out, rf_error *err);
/* Streams and parses a file (keep as above): -ENOENT (err set) when it does
 * not exist, which the credential chain treats as "no such source". */
int rf_aws_ini_load(const char *path, rf_aws_ini_kind kind, const char *const *keep,
                    rf_aws_ini **out, rf_error *err);
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

/* profile: NULL = $AWS_PROFILE or "default". Keeps that profile, its
 * source_profile and its services section (read in a second pass when the
 * first names them). */
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
