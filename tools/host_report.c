/* host_report.c - see host_report.h. */
#include "host_report.h"

#include <jansson.h>
#include <stdint.h>

static double rf_mib(json_t *o, const char *key)
{
	return (double)json_integer_value(json_object_get(o, key)) / 1048576.0;
}

void rf_cli_host_line(FILE *f, const char *stats_json)
{
	if (!stats_json)
		return;
	json_t *root = json_loads(stats_json, 0, NULL);
	json_t *h = root ? json_object_get(root, "host_budget") : NULL;
	if (json_is_object(h)) {
		const char *name = json_string_value(json_object_get(h, "name"));
		fprintf(f,
		        "  host budget '%s': peak %.1f MiB of %.1f MiB on the host (%lld loader(s) "
		        "now); this loader held %.1f MiB at most (its minimum %.1f MiB), refused "
		        "%lld time(s) by the host total; %lld dead loader(s) reclaimed\n",
		        name ? name : "?", rf_mib(h, "peak_used_bytes"), rf_mib(h, "total_bytes"),
		        json_integer_value(json_object_get(h, "loaders")),
		        rf_mib(h, "peak_held_bytes"), rf_mib(h, "floor_bytes"),
		        json_integer_value(json_object_get(h, "refusals")),
		        json_integer_value(json_object_get(h, "reclaims")));
	}
	json_decref(root);
}
