/* cmd_inspect.c - `ringfeed inspect SHARD [--json]`: a shard's figures from
 * its layout (an .rfs footer and index, a Megatron .idx, a token file's
 * header), through rf_layout_open_config. */
#include "commands.h"
#include "flags.h"
#include "inspect_samples.h"
#include "json.h"
#include "packer.h"
#include "ringfeed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What inspect prints beside the layout. */
typedef struct inspect_info {
	const char *format;
	uint64_t payload_bytes;
} inspect_info;

static const char inspect_usage[] =
    "usage: ringfeed inspect SHARD [--json]\n"
    "Prints a shard's records, blocks, compressed and decoded bytes, ratio, largest\n"
    "block and record, and user metadata, from its index. The ratio is the records'\n"
    "payload bytes over the shard's file bytes (blocks, index and footer), the same\n"
    "figure `pack` prints for what it wrote. --json prints one object with\n"
    "keys shard, format, file_bytes, records, blocks, compressed_bytes, decoded_bytes,\n"
    "payload_bytes, ratio, largest_block_compressed_bytes, largest_block_decoded_bytes,\n"
    "largest_record_bytes, metadata.\n"
    "A WebDataset .tar or MDS .mds / .mds.zstd shard is read whole (it holds no index of\n"
    "its fields): its layout, samples, and per field the samples that have it, its bytes\n"
    "and its largest value (--json: shard, file_bytes, samples, layout, fields[]).\n"
    "SHARD is a local file (`--` ends the options); for URLs use `ringfeed verify`.\n"
    "Token files (a Megatron PREFIX.idx / PREFIX.bin, an llm.c or nanoGPT .bin)\n"
    "print their format, dtype, tokens, documents and size; --token-dtype T,\n"
    "--eot-token N, --seq-len L and --token-out T read them as `read` would.\n";

static void print_json(const char *path, const rf_shard_index *ix, const inspect_info *info,
                       double ratio)
{
	uint64_t payload = info->payload_bytes;
	printf("{\"shard\":");
	rf_json_fput(stdout, path);
	printf(",\"format\":\"%s\"", info->format);
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

/* A number or a string of the token formats' metadata (a flat JSON object
 * of known keys, written by the library): 0 / "" when absent. */
static long long meta_int(const char *meta, const char *key)
{
	char k[64];
	snprintf(k, sizeof(k), "\"%s\":", key);
	const char *p = strstr(meta, k);
	return p ? strtoll(p + strlen(k), NULL, 10) : 0;
}

static const char *meta_str(const char *meta, const char *key, char *buf, size_t cap)
{
	char k[64];
	snprintf(k, sizeof(k), "\"%s\":\"", key);
	const char *p = strstr(meta, k);
	buf[0] = '\0';
	if (p) {
		p += strlen(k);
		size_t n = strcspn(p, "\"");
		snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
	}
	return buf;
}

/* A token file: its figures are in the layout's metadata. */
static void print_tokens(const char *path, const rf_shard_index *ix, const inspect_info *info)
{
	const char *m = ix->metadata;
	char dtype[32], wdtype[32];
	long long seq_len = meta_int(m, "seq_len");
	bool mg = !strcmp(info->format, "megatron");
	printf("shard             %s\n", path);
	printf("format            %s\n", info->format);
	printf("file bytes        %llu\n", (unsigned long long)ix->file_bytes);
	printf("dtype             %s\n", meta_str(m, "dtype", dtype, sizeof(dtype)));
	printf("tokens            %lld\n", meta_int(m, "tokens"));
	if (mg)
		printf("sequences         %lld\n", meta_int(m, "sequences"));
	printf("documents         %lld%s\n", meta_int(m, "documents"),
	       mg ? "" : " (split at --eot-token; 0 without it)");
	if (seq_len)
		printf("records           %llu windows of %lld tokens (%s)\n",
		       (unsigned long long)ix->records, seq_len + 1,
		       meta_str(m, "window_dtype", wdtype, sizeof(wdtype)));
	else
		printf("records           %llu\n", (unsigned long long)ix->records);
	printf("units             %u (largest %u bytes stored)\n", ix->blocks,
	       ix->largest_block_compressed_bytes);
	printf("largest record    %u bytes\n", ix->largest_record_bytes);
}

static void print_text(const char *path, const rf_shard_index *ix, const inspect_info *info,
                       double ratio)
{
	uint64_t payload = info->payload_bytes;
	if (strcmp(info->format, "rfs") != 0) {
		print_tokens(path, ix, info);
		return;
	}
	printf("shard             %s\n", path);
	printf("format            %s\n", info->format);
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

/* The token files' options inspect takes (config keys, "--seq-len" for seq_len). */
static const char *const token_keys[] = {"seq_len", "token_dtype", "eot_token", "token_out"};
#define TOKEN_KEYS (sizeof(token_keys) / sizeof(token_keys[0]))

static int token_key(const char *flag)
{
	for (size_t k = 0; k < TOKEN_KEYS; k++) {
		char want[32];
		snprintf(want, sizeof(want), "--%s", token_keys[k]);
		for (char *c = want; *c; c++)
			*c = *c == '_' ? '-' : *c;
		if (!strcmp(flag, want))
			return (int)k;
	}
	return -1;
}

/* A config holding the token options given (NULL when none). */
static int token_config(const char *const *vals, rf_config **out)
{
	*out = NULL;
	rf_error err = {0};
	for (size_t k = 0; k < TOKEN_KEYS; k++) {
		if (!vals[k])
			continue;
		if (!*out && !(*out = rf_config_new()))
			return -1;
		if (rf_config_set(*out, token_keys[k], vals[k], &err) < 0) {
			fprintf(stderr, "ringfeed inspect: %s\n", err.msg);
			rf_config_free(*out);
			*out = NULL;
			return -1;
		}
	}
	return 0;
}

int cmd_inspect(int argc, char **argv)
{
	const char *path = NULL, *token_vals[TOKEN_KEYS] = {0};
	int json = 0, opts = 1, k;
	for (int i = 1; i < argc; i++) {
		if (opts && !strcmp(argv[i], "--"))
			opts = 0;
		else if (opts && (k = token_key(argv[i])) >= 0 && i + 1 < argc)
			token_vals[k] = argv[++i];
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
	rf_config *cfg = NULL;
	if (token_config(token_vals, &cfg) < 0)
		return 2;
	int rc = rf_layout_open_config(path, cfg, &lay, &err);
	rf_config_free(cfg);
	if (rc < 0) {
		fprintf(stderr, "ringfeed inspect: %s\n", err.msg);
		return 1;
	}
	if (rf_layout_has_fields(lay)) { /* samples of another format: through a loader */
		rf_layout_free(lay);
		return rf_inspect_samples(path, json);
	}
	const rf_shard_index *ix = rf_layout_index(lay);
	inspect_info info = {rf_layout_format(lay), rf_layout_payload_bytes(lay)};
	double ratio = rf_tool_ratio(info.payload_bytes, ix->file_bytes);
	if (json)
		print_json(path, ix, &info, ratio);
	else
		print_text(path, ix, &info, ratio);
	rf_layout_free(lay);
	return 0;
}
