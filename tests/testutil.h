/* testutil.h - helpers shared by the cmocka tests: temporary directories,
 * running the CLI, reading files. */
#ifndef RF_TESTUTIL_H
#define RF_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the three includes above first. */
#include <cmocka.h>

/* A fresh directory under $TMPDIR (removed by rf_test_rmtree). */
char *rf_test_tmpdir(const char *tag);
void rf_test_rmtree(const char *path);
/* Runs a shell command; captures stdout into *out (malloc'd, may be NULL).
 * Returns the exit status (or -1). */
int rf_test_sh(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The CLI under test ($RF_CLI). */
const char *rf_test_cli(void);
/* Reads a whole file (malloc'd); returns length or -1. */
long rf_test_read_file(const char *path, unsigned char **out);
int rf_test_write_file(const char *path, const void *buf, size_t len);
/* A test-server variable written by scripts/servers.sh (RF_NGINX_URL, ...).
 * When it is missing: under scripts/test.sh (RF_REQUIRE_SERVERS=1) the test
 * fails; otherwise it is skipped with a message saying how to start them. */
const char *rf_test_server_env(const char *name);
/* Skips the running case, saying why; the binary then reports skip (77,
 * CTest's SKIP_RETURN_CODE) unless a case failed, so a case not run is never
 * reported as passed. Use with rf_test_run_group. */
#define rf_test_skip(...)                                                                          \
	do {                                                                                       \
		print_message(__VA_ARGS__);                                                        \
		rf_test_mark_skipped();                                                            \
		skip();                                                                            \
	} while (0)
void rf_test_mark_skipped(void);
/* cmocka_run_group_tests's count of failed cases as an exit code: 1 when a
 * case failed, else 77 when one was skipped, else 0. */
int rf_test_exit_code(int failed);
#define rf_test_run_group(tests, setup, teardown)                                                  \
	rf_test_exit_code(cmocka_run_group_tests(tests, setup, teardown))

/* ----------------------------------------- .rfs datasets of the engine tests */

#define RF_TEST_SHARDS_MAX 16
struct rf_config;

/* Shards shard-NN.rfs in a fresh directory, and every record's id (FNV-1a
 * of its bytes, rf_test_rec_id) in packed order. */
typedef struct rf_test_dataset {
	char *dir;
	char path[RF_TEST_SHARDS_MAX][600];
	uint32_t nshards;
	uint64_t total; /* records */
	uint64_t *ids;  /* record hash per record in packed order */
} rf_test_dataset;

/* Writes record r of shard s into buf (cap bytes); returns its length. */
typedef size_t (*rf_test_record_fn)(uint32_t s, uint32_t r, uint8_t *buf, size_t cap, void *arg);
uint64_t rf_test_rec_id(const uint8_t *p, uint32_t len);
/* nshards shards of `records` records each (at most record_cap bytes),
 * blocks of block_bytes, zstd level 1; tag names the directory. */
void rf_test_dataset_make(rf_test_dataset *d, const char *tag, uint32_t nshards, uint32_t records,
                          size_t record_cap, uint64_t block_bytes, rf_test_record_fn make,
                          void *arg);
void rf_test_dataset_free(rf_test_dataset *d);
/* A config naming every shard of d, then the "key=value" settings kv
 * (NULL-terminated; NULL for none); a setting refused fails the case. */
struct rf_config *rf_test_config(const rf_test_dataset *d, const char *const *kv);

#endif
