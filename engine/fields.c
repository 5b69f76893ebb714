/* fields.c - multi-field samples in the engine: the batch's field lookup.
 * (The dataset's field names and the collation of fields into ragged
 * sections join it when the engine's format seam is wired.) */
#include "util.h"

#include <string.h>

RF_API const rf_batch_field *rf_batch_field_get(const rf_batch *b, const char *name)
{
	if (!b || !name)
		return NULL;
	for (uint32_t f = 0; f < b->fields; f++)
		if (strcmp(b->field[f].name, name) == 0)
			return &b->field[f];
	return NULL;
}
