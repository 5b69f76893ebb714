/* consumer.c - the smallest complete ringfeed consumer, using only the
 * installed header and library:
 *
 *   cc consumer.c $(pkg-config --cflags --libs ringfeed) -o consumer
 *   ./consumer [--budget 256MiB] SHARDS|DIRS|MANIFESTS...
 *
 * It reads one epoch in shuffled order, touches every record, saves the
 * position halfway (as a trainer would at a checkpoint) and prints what it
 * saw. */
#include <ringfeed.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	rf_config *cfg = rf_config_new();
	rf_error err = {0};
	for (int i = 1; i < argc; i++) {
		int rc = !strncmp(argv[i], "--", 2) && i + 1 < argc
		             ? rf_config_set(cfg, argv[i] + 2, argv[i + 1], &err)
		             : rf_config_add_url(cfg, argv[i], &err);
		if (rc < 0) {
			fprintf(stderr, "consumer: %s\n", err.msg);
			return 2;
		}
		if (!strncmp(argv[i], "--", 2))
			i++;
	}
	rf_loader *l = rf_open(cfg, &err);
	rf_config_free(cfg);
	if (!l) {
		fprintf(stderr, "consumer: %s\n", err.msg);
		return 1;
	}
	unsigned long long batches = 0, records = 0, bytes = 0, sum = 0;
	unsigned char state[256];
	size_t state_len = 0;
	rf_batch *b;
	int rc;
	while ((rc = rf_next(l, &b, -1)) == 0) {
		for (uint32_t i = 0; i < b->records; i++) {
			const uint8_t *rec = b->payload + b->offsets[i];
			int64_t len = b->offsets[i + 1] - b->offsets[i];
			for (int64_t k = 0; k < len; k++)
				sum = sum * 31 + rec[k];
			bytes += (unsigned long long)len;
		}
		records += b->records;
		rf_release(l, b); /* batches may be released in any order */
		if (++batches == 2) {
			state_len = sizeof(state);
			rf_state_save(l, state, &state_len);
		}
	}
	if (rc != RF_END)
		fprintf(stderr, "consumer: %s\n", rf_last_error(l));
	rf_stats st;
	rf_stats_get(l, &st, sizeof(st));
	printf("batches=%llu records=%llu bytes=%llu checksum=%llx state_bytes=%zu "
	       "consumer_wait_s=%.3f peak_bytes=%llu\n",
	       batches, records, bytes, sum, state_len, st.consumer_wait_s,
	       (unsigned long long)st.mem_peak_total_bytes);
	rf_close(l);
	return rc == RF_END ? 0 : 1;
}
