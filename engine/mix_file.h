/* mix_file.h - the mixture file: a list of sources, each a dataset ringfeed
 * reads (a path, directory, manifest or URL) with a weight and its own
 * options. Two spellings (docs/format.md, "Mixture file"):
 *
 *   # ringfeed mixture v1
 *   0.6<TAB>s3://bucket/web/
 *   0.2<TAB>code/manifest.rfm<TAB>columns=text
 *
 * or JSON: {"mixture": 1, "sources": [{"source": "...", "weight": "0.6",
 * "options": {"columns": "text"}}]}. Relative sources resolve against the
 * file's directory (or URL prefix). Every line and value is checked and
 * bounded; errors name the file and the line (or the JSON source number).
 * Internal. */
#ifndef RF_MIX_FILE_H
#define RF_MIX_FILE_H

#include "ringfeed.h"
#include <stddef.h>
#include <stdint.h>

#define RF_MIX_FILE_MAGIC     "# ringfeed mixture v1"
#define RF_MIX_FILE_MAX       (16u << 20) /* bytes of a mixture file */
#define RF_MIX_OPTIONS_MAX    32u         /* options of one source */
#define RF_MIX_OPTION_KEY_MAX 64u         /* bytes of an option's name */

typedef struct rf_mix_option {
	char *key, *value;
} rf_mix_option;

typedef struct rf_mix_entry {
	char *source;    /* joined with the file's base when relative */
	uint64_t weight; /* millionths (rf_mix_weight_parse) */
	uint32_t line;   /* the text line, or the JSON source number (1-based) */
	uint32_t noptions;
	rf_mix_option *option;
} rf_mix_entry;

typedef struct rf_mix_file {
	uint32_t count;
	rf_mix_entry *src;
	uint64_t bytes; /* heap bytes it holds */
} rf_mix_file;

/* True when buf starts like a mixture file (the magic line or a JSON object
 * with a "mixture" key first). */
int rf_mix_file_is(const char *buf, size_t len);

/* Parses len bytes (no NUL needed). base: the directory or URL prefix that
 * relative sources join (NULL: as written). name: for errors. */
int rf_mix_file_parse(const char *buf, size_t len, const char *base, const char *name,
                      rf_mix_file **out, rf_error *err);
void rf_mix_file_free(rf_mix_file *f);

#endif
