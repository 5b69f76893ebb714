/* fuzz_manifest.c - libFuzzer target for the manifest parser. The input is
 * the manifest text, parsed with a base of each kind (none, a directory, a
 * URL prefix), so path joining runs too. An accepted manifest must hold
 * what the parser promises: bounded count, sound entries, exact sums. */
#include "fuzz.h"
#include "manifest.h"

static const char *const bases[] = {NULL, "/data/set", "http://host:8080/bucket/"};

static void check_manifest(const rf_manifest *m)
{
	uint64_t bytes = 0, records = 0;
	FUZZ_CHECK(m->count <= RF_MANIFEST_ENTRIES_MAX);
	for (size_t i = 0; i < m->count; i++) {
		const rf_manifest_entry *e = &m->entry[i];
		FUZZ_CHECK(e->url && e->url[0] != '\0');
		FUZZ_CHECK(strpbrk(e->url, "\t\r\n") == NULL);
		FUZZ_CHECK(e->bytes >= RF_FOOTER_BYTES && e->records <= UINT32_MAX);
		/* sums that wrap would be a wrong total: the parser must refuse them */
		FUZZ_CHECK(!__builtin_add_overflow(bytes, e->bytes, &bytes));
		FUZZ_CHECK(!__builtin_add_overflow(records, e->records, &records));
	}
	FUZZ_CHECK(bytes == m->bytes && records == m->records);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* an exact-size copy: the parser works on (buf, len), never past it */
	char *buf = malloc(size ? size : 1);
	FUZZ_CHECK(buf != NULL);
	memcpy(buf, data, size);
	(void)rf_manifest_is(buf, size);
	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		rf_manifest *m = NULL;
		rf_error err = {0};
		int rc = rf_manifest_parse(buf, size, bases[i], "fuzz.manifest", &m, &err);
		if (rc < 0) {
			fuzz_check_error(rc, &err);
			FUZZ_CHECK(m == NULL);
			continue;
		}
		check_manifest(m);
		rf_manifest_free(m);
	}
	free(buf);
	return 0;
}
