/* cmd_inspect.c - `ringfeed inspect SHARD [--json]`: a shard's figures from
 * its footer and index (reads nothing else). */
#include "commands.h"
#include "flags.h"
#include "inspect_samples.h"
#include "json.h"
#include "packer.h"
#include "ringfeed.h"

#include <stdio.h>
#include <string.h>

static const char inspect_usage[] =
    "usage: ringfeed inspect SHARD [--json]\n"
    "Prints a shard's records, blocks, compressed and decoded bytes, ratio, largest\n"
    "block and record, and user metadata, from its index. The ratio is the records'\n"
    "payload bytes over the shard's file bytes (blocks, index and footer), the same\n"
    "figure `pack` prints for what it wrote. --json prints one object with\n"
    "keys shard, file_bytes, records, blocks, compressed_bytes, decoded_bytes,\n"
    "payload_bytes, ratio, largest_block_compressed_bytes, largest_block_decoded_bytes,\n"
    "largest_record_bytes, metadata.\n"
    "A WebDataset .tar or MDS .mds / .mds.zstd shard is read whole (it holds no index of\n"
    "its fields): its layout, samples, and per field the samples that have it, its bytes\n"
    "and its largest value (--json: shard, file_bytes, samples, layout, fields[]).\n"
    "SHARD is a local file (`--` ends the options); for URLs use `ringfeed verify`.\n";

static void print_json(const char *path, const rf_shard_index *ix, uint64_t payload, double ratio)
{
	printf("{\"shard\":");
	rf_json_fput(stdout, path);
	printf(",\"file_bytes\":%llu,\"records\":%llu,\"blocks\":%u,\"compressed_bytes\":%llu,"
	       "\"decoded_bytes\":%llu,\"payload_bytes\":%llu,\"ratio\":%.4f,"
	       "\"largest_block_compressed_bytes\":%u,\"largest_block_decoded_bytes\":%u,"
	       "\"largest_record_bytes\":%u,\"metadata\":",
	       (unsigned long long)ix->file_bytes, (unsigned long long)ix->records, ix->blocks,
	       (unsigned long long)ix->compressed_bytes, (unsigned long long)ix->decoded_bytes,
	       (unsigned long long)payload, ratio, ix->largest_block_compressed_bytes,
	       ix->largest_block_decoded_bytes, ix->largest_record_bytes);
	rf_json_fput(stdout, ix->metadata);
	printf("}\n");
}

static void print_text(const char *path, const rf_shard_index *ix, uint64_t payload, double ratio)
{
	printf("shard             %s\n", path);
	printf("file bytes        %llu\n", (unsigned long long)ix->file_bytes);
	printf("records           %llu\n", (unsigned long long)ix->records);
	printf("blocks            %u\n", ix->blocks);
	printf("compressed bytes  %llu (blocks; index + footer add %llu)\n",
	       (unsigned long long)ix->compressed_bytes,
	       (unsigned long long)(ix->file_bytes - ix->compressed_bytes));
	printf("decoded bytes     %llu (record payload %llu)\n",
	       (unsigned long long)ix->decoded_bytes, (unsigned long long)payload);
	printf("ratio             %.3f (payload / file bytes)\n", ratio);
	printf("largest block     %u compressed, %u decoded\n", ix->largest_block_compressed_bytes,
	       ix->largest_block_decoded_bytes);
	printf("largest record    %u bytes\n", ix->largest_record_bytes);
	printf("metadata          ");
	rf_json_fput(stdout, ix->metadata);
	printf("\n");
}

int cmd_inspect(int argc, char **argv)
{
	const char *path = NULL;
	int json = 0, opts = 1;
	for (int i = 1; i < argc; i++) {
		if (opts && !strcmp(argv[i], "--"))
			opts = 0;
		else if (!opts || argv[i][0] != '-' || !argv[i][1]) {
			if (path) {
				fprintf(stderr, "ringfeed inspect: one SHARD at a time\n%s",
				        inspect_usage);
				return 2;
			}
			path = argv[i];
		} else if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(inspect_usage, stdout);
			return 0;
		} else {
			fprintf(stderr, "ringfeed inspect: unknown option '%s'\n%s", argv[i],
			        inspect_usage);
			return 2;
		}
	}
	if (!path) {
		fprintf(stderr, "ringfeed inspect: missing SHARD\n%s", inspect_usage);
		return 2;
	}
	if (strstr(path, "://")) {
		char shown[4200];
		fprintf(stderr,
		        "ringfeed inspect: %s: inspect reads local shards; use `ringfeed verify` "
		        "for URLs\n",
		        flag_shown(path, shown, sizeof(shown)));
		return 2;
	}
	rf_layout *lay = NULL;
	rf_error err = {0};
	char head[64];
	int n = rf_tool_read_head(path, head, sizeof(head), &err);
	if (n < 0) {
		fprintf(stderr, "ringfeed inspect: shard %s\n", err.msg);
		return 1;
	}
	if (rf_manifest_is(head, (size_t)n)) {
		fprintf(
		    stderr,
		    "ringfeed inspect: %s is a manifest; inspect takes one shard (verify accepts "
		    "manifests)\n",
		    path);
		return 2;
	}
	size_t len = strlen(path);
	if (len >= 4 && !strcmp(path + len - 4, ".rfm")) {
		fprintf(stderr, "ringfeed inspect: %s: not a manifest (no '%s' line)\n", path,
		        RF_MANIFEST_MAGIC);
		return 1;
	}
	if (rf_inspect_is_samples(path)) /* no index of its fields: read through a loader */
		return rf_inspect_samples(path, json);
	if (rf_layout_open(path, &lay, &err) < 0) {
		fprintf(stderr, "ringfeed inspect: %s\n", err.msg);
		return 1;
	}
	const rf_shard_index *ix = rf_layout_index(lay);
	uint64_t payload = rf_layout_payload_bytes(lay);
	double ratio = rf_tool_ratio(payload, ix->file_bytes);
	if (json)
		print_json(path, ix, payload, ratio);
	else
		print_text(path, ix, payload, ratio);
	rf_layout_free(lay);
	return 0;
}
