/* fuzz_mix_file.c - libFuzzer target for the mixture file parser (text and
 * JSON), with no base, a directory and a URL prefix. An accepted file must
 * hold what the parser promises: bounded sources and options, sources without
 * control characters, a positive total weight, only remote sources under a
 * URL base, and every weight within the schedule's range. */
#include "fuzz.h"
#include "mix.h"
#include "mix_file.h"

#include <strings.h>

static const char *const bases[] = {NULL, "/data/mix", "https://host/bucket/mix/"};

static void check_file(const rf_mix_file *f, const char *base)
{
	uint64_t sum = 0;
	FUZZ_CHECK(f->count >= 1 && f->count <= RF_MIX_SOURCES_MAX);
	for (uint32_t i = 0; i < f->count; i++) {
		const rf_mix_entry *s = &f->src[i];
		FUZZ_CHECK(s->source && s->source[0] != '\0');
		for (const char *p = s->source; *p; p++)
			FUZZ_CHECK((unsigned char)*p >= 0x20 && *p != 0x7f);
		if (base && base[0] == 'h')
			FUZZ_CHECK(strstr(s->source, "://") != NULL &&
			           strncasecmp(s->source, "file:", 5) != 0);
		FUZZ_CHECK(s->weight <= RF_MIX_WEIGHT_MAX);
		FUZZ_CHECK(s->noptions <= RF_MIX_OPTIONS_MAX);
		for (uint32_t j = 0; j < s->noptions; j++)
			FUZZ_CHECK(s->option[j].key[0] != '\0' &&
			           strlen(s->option[j].key) <= RF_MIX_OPTION_KEY_MAX);
		sum += s->weight;
	}
	FUZZ_CHECK(sum > 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);
	FUZZ_CHECK(buf != NULL);
	memcpy(buf, data, size);
	(void)rf_mix_file_is(buf, size);
	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		rf_mix_file *f = NULL;
		rf_error err = {0};
		int rc = rf_mix_file_parse(buf, size, bases[i], "fuzz.mix", &f, &err);
		if (rc < 0) {
			fuzz_check_error(rc, &err);
			FUZZ_CHECK(f == NULL);
			continue;
		}
		check_file(f, bases[i]);
		/* a parsed file's weights make a schedule or a clear refusal */
		if (f->count <= 64) {
			uint64_t w[64];
			for (uint32_t j = 0; j < f->count; j++)
				w[j] = f->src[j].weight;
			rf_mix *m = NULL;
			rc = rf_mix_new(&m, f->count, w, 1, &err);
			if (rc < 0)
				fuzz_check_error(rc, &err);
			rf_mix_free(m);
		}
		rf_mix_file_free(f);
	}
	free(buf);
	return 0;
}
