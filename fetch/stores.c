/* stores.c - the table of object stores behind the remote kind (bucket
 * URLs: credentials, signing, listing) and its lookups. A store is one
 * file and a row here (store.h); the stores call only source.c. */
#include "store.h"
#include "util.h"

/* Object stores behind the remote kind (bucket URLs: credentials, signing,
 * listing), tried in order. A store is one file and a row here (store.h). */
static const rf_store *const rf_stores[] = {
    &rf_store_gcs, /* before S3, which also knows gs:// (the HMAC path gcs hands it) */
    &rf_store_s3,
    &rf_store_azure,
    &rf_store_hf,
};
_Static_assert(RF_ARRAY_LEN(rf_stores) <= RF_STORES_MAX, "too many stores");

const rf_store *rf_store_of(const char *url, size_t *row)
{
	for (size_t i = 0; i < RF_ARRAY_LEN(rf_stores); i++) {
		if (rf_stores[i]->claims(url)) {
			if (row)
				*row = i;
			return rf_stores[i];
		}
	}
	return NULL;
}

const rf_store *rf_store_at(size_t row)
{
	return row < RF_ARRAY_LEN(rf_stores) ? rf_stores[row] : NULL;
}

bool rf_store_is_prefix(const char *url)
{
	const rf_store *s = rf_store_of(url, NULL);
	return s && s->is_prefix(url);
}
