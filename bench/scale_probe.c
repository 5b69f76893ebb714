/* scale_probe.c - what the loader costs as the shard count grows (built and
 * run by bench/scale_bench.sh against the build's libringfeed): rf_open time,
 * metadata held after open (RF_MEM_METADATA), time to the first batch, and
 * the cost of one stats snapshot (rf_stats_json, what every controller
 * interval and trace line pays). Prints one JSON object.
 *
 *   scale_probe [--budget 4GiB] [--name value ...] MANIFEST */
#include <ringfeed.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	rf_config *cfg = rf_config_new();
	rf_error err = {0};
	for (int i = 1; i < argc; i++) {
		int opt = !strncmp(argv[i], "--", 2) && i + 1 < argc;
		int rc = opt ? rf_config_set(cfg, argv[i] + 2, argv[i + 1], &err)
		             : rf_config_add_url(cfg, argv[i], &err);
		if (rc < 0) {
			fprintf(stderr, "scale_probe: %s\n", err.msg);
			return 2;
		}
		i += opt;
	}
	double t0 = now_s(), c0 = cpu_s();
	rf_loader *l = rf_open(cfg, &err);
	double t_open = now_s() - t0, c_open = cpu_s() - c0;
	rf_config_free(cfg);
	if (!l) {
		fprintf(stderr, "scale_probe: %s\n", err.msg);
		return 1;
	}
	rf_stats st;
	rf_stats_get(l, &st);
	unsigned long long meta = st.mem_bytes[RF_MEM_METADATA];
	rf_batch *b = NULL;
	int rc = rf_next(l, &b, -1);
	double t_first = now_s() - t0;
	if (rc == 0)
		rf_release(l, b);
	static char json[1 << 16];
	enum { SNAPSHOTS = 1000 };
	double s0 = now_s();
	for (int i = 0; i < SNAPSHOTS; i++)
		rf_stats_json(l, json, sizeof(json));
	double stats_us = (now_s() - s0) / SNAPSHOTS * 1e6;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("{\"open_s\": %.4f, \"open_cpu_s\": %.4f, \"first_batch_s\": %.4f, "
	       "\"metadata_bytes\": %llu, \"stats_json_us\": %.2f, \"maxrss_kib\": %ld}\n",
	       t_open, c_open, t_first, meta, stats_us, ru.ru_maxrss);
	rf_close(l);
	return rc == 0 ? 0 : 1;
}
