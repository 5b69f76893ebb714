/* fuzz_tfrecord_example.c - libFuzzer target for the bounded protobuf
 * reader (shards/protobuf.c): the input is one record's data, walked as a
 * tf.train.Example. An accepted Example's every feature has a key of 1..255
 * bytes without a NUL, a kind, a count and an encoding size that agree
 * (rf_example_encode writes exactly out_bytes into a buffer of that size);
 * a refused one names a byte inside the input. */
#include "fuzz.h"
#include "protobuf.h"
#include "util.h"

typedef struct walk {
	const uint8_t *buf;
	size_t len;
	uint32_t n;
} walk;

static int feature(void *ctx, const rf_ex_feature *f)
{
	walk *w = ctx;
	FUZZ_CHECK(f->key_len >= 1 && f->key_len <= RF_EX_KEY_MAX &&
	           !memchr(f->key, 0, f->key_len));
	FUZZ_CHECK(f->key >= w->buf && f->key + f->key_len <= w->buf + w->len);
	FUZZ_CHECK(f->kind >= RF_EX_NONE && f->kind <= RF_EX_INT64);
	FUZZ_CHECK(f->list >= w->buf && f->list + f->list_len <= w->buf + w->len);
	if (f->kind == RF_EX_FLOAT)
		FUZZ_CHECK(f->out_bytes == 4ull * f->values);
	if (f->kind == RF_EX_INT64)
		FUZZ_CHECK(f->out_bytes == 8ull * f->values);
	if (f->kind == RF_EX_NONE)
		FUZZ_CHECK(f->out_bytes == 0);
	FUZZ_CHECK(f->out_bytes <= 8ull * f->list_len + 4);
	uint8_t *out = malloc(f->out_bytes ? f->out_bytes : 1); /* exact: ASan sees overruns */
	FUZZ_CHECK(out != NULL);
	rf_example_encode(f, out);
	if (f->kind == RF_EX_BYTES && f->values != 1) {
		uint32_t n = rf_load_le32(out);
		uint64_t sum = 4 + 4ull * n;
		FUZZ_CHECK(n == f->values);
		for (uint32_t i = 0; i < n; i++)
			sum += rf_load_le32(out + 4 + 4ull * i);
		FUZZ_CHECK(sum == f->out_bytes);
	}
	free(out);
	w->n++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *p = malloc(size ? size : 1);
	FUZZ_CHECK(p != NULL);
	memcpy(p, data, size);
	walk w = {.buf = p, .len = size};
	rf_pb_error e = {0};
	uint32_t n = 0;
	int rc = rf_example_walk(p, size, feature, &w, &n, &e);
	if (rc < 0)
		FUZZ_CHECK(e.what && e.what[0] && e.at < size + 1);
	else
		FUZZ_CHECK(rc == 0 && n == w.n);
	free(p);
	return 0;
}
