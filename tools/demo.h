/* demo.h - the built-in demo dataset: deterministic token-like records
 * (little-endian u16 token ids, Zipf-like, 256..8192-byte records) in .rfs
 * shards with a manifest. Used by `ringfeed pack --demo` and `ringfeed bench`. */
#ifndef RF_DEMO_H
#define RF_DEMO_H

#include <stdint.h>

#define RF_DEMO_MARKER ".ringfeed-demo"

/* Makes sure dir holds the demo dataset of about decoded_bytes record payload
 * in `shards` shards (dir/shard-NNNNNN.rfs + dir/manifest.rfm). A marker file,
 * written last and recording the parameters, makes a complete dataset a
 * no-op next time. Uses every core (up to 8). Prints errors on stderr and a
 * progress line there when `progress`. Returns 0 or a negative errno. */
int rf_demo_ensure(const char *dir, uint64_t decoded_bytes, unsigned shards, int progress);

#endif
