/* icache.h - the index cache: bounded, on-disk, for what is costly to learn
 * about an object the loader cannot write beside (a tar's member index on a
 * read-only store). One file per entry under a directory of the user's
 * (default $RINGFEED_CACHE_DIR, else $XDG_CACHE_HOME/ringfeed/index, else
 * $HOME/.cache/ringfeed/index), named by a 64-bit hash of the key:
 *   key      the object's URL without userinfo, query and fragment (secrets
 *            never reach the disk or a file name), its size, its version
 *            (rf_source_validator), a format name and a format version;
 *   entry    header (magic, version, key length, payload length, payload
 *            CRC-32C, header CRC-32C), the full key, the payload.
 * It knows no format: the payload is the caller's bytes. Everything read
 * back is untrusted (another process or user may write there): every length
 * is bounded, the key must equal the asked one, the CRCs must hold, entries
 * are opened without following symlinks, and a directory that is not the
 * user's or that others may write disables the cache. A corrupt entry is a
 * miss and is removed; a cache that cannot be used is disabled with a
 * reason, never an error of the loader. Writes go to a temporary file
 * renamed into place (processes may share the directory); a put that takes
 * the directory past a bound (bytes, entries; as this process estimates it)
 * scans it once (at most RF_ICACHE_SCAN_MAX names) and removes the least
 * recently used entries (by mtime; a hit touches it) down to 7/8 of each
 * bound, so the scans are amortised over the puts. Not thread-safe: one
 * rf_icache per thread (the loader's open phase). Engine layer; base/ and
 * libc only. */
#ifndef RF_ICACHE_H
#define RF_ICACHE_H

#include "ringfeed.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RF_ICACHE_URL_BYTES_MAX       4096 /* a longer URL (once cleaned) is not cached */
#define RF_ICACHE_VALIDATOR_BYTES_MAX 256
#define RF_ICACHE_FORMAT_BYTES_MAX    32
#define RF_ICACHE_KEY_BYTES_MAX       (RF_ICACHE_URL_BYTES_MAX + 512) /* serialised */
#define RF_ICACHE_SCAN_MAX            65536 /* names one scan looks at (24 bytes each kept) */
#define RF_ICACHE_ENTRIES_MAX         RF_ICACHE_SCAN_MAX
#define RF_ICACHE_ENTRIES_DEFAULT     16384
#define RF_ICACHE_BYTES_DEFAULT       (512ull << 20)
#define RF_ICACHE_NAME_BYTES          21 /* 16 hex digits + ".idx" + NUL */

typedef struct rf_icache rf_icache;

/* What an entry is for. validator "" (unknown) means: not cacheable. */
typedef struct rf_icache_key {
	const char *url;         /* as given; cleaned before any use */
	uint64_t size;           /* the object's bytes */
	const char *validator;   /* rf_source_validator of the open source */
	const char *format;      /* the format's name ("tar"): letters, digits, '-', '_' */
	uint32_t format_version; /* bumped when the format's payload layout changes */
} rf_icache_key;

typedef struct rf_icache_counters {
	uint64_t hits, misses;
	uint64_t corrupt; /* entries found damaged or foreign (removed when damaged) */
	uint64_t puts;
	uint64_t evictions;
	uint64_t stale_drops; /* entries removed by rf_icache_drop */
} rf_icache_counters;

/* The default directory into buf: $RINGFEED_CACHE_DIR if set and not empty,
 * else $XDG_CACHE_HOME/ringfeed/index (an absolute XDG_CACHE_HOME only, as
 * the XDG spec says), else $HOME/.cache/ringfeed/index. 0, or -ENOENT (none
 * of them set) / -ENAMETOOLONG. */
int rf_icache_default_dir(char *buf, size_t cap);

/* Opens (creating it with mode 0700, parents too) the cache in dir (NULL or
 * "": the default directory) with bounds max_bytes (of entry files, 0 = the
 * default) and max_entries (0 = the default; at most RF_ICACHE_ENTRIES_MAX).
 * 0 with *out set; or a negative errno with *out NULL and why saying why the
 * cache is disabled (no directory, cannot create it, not owned by the user,
 * writable by others, not writable by the user, a symlink): the caller goes
 * on without a cache. */
int rf_icache_open(const char *dir, uint64_t max_bytes, uint32_t max_entries, rf_icache **out,
                   rf_error *why);
void rf_icache_close(rf_icache *c); /* NULL is fine */

/* Whether k may be cached: a non-empty validator of at most
 * RF_ICACHE_VALIDATOR_BYTES_MAX bytes, a format name, a URL that fits once
 * cleaned. */
bool rf_icache_cacheable(const rf_icache_key *k);
/* The entry's file name ("0123456789abcdef.idx") into name
 * (RF_ICACHE_NAME_BYTES); -EINVAL when k is not cacheable. */
int rf_icache_entry_name(const rf_icache_key *k, char name[RF_ICACHE_NAME_BYTES]);
/* url without userinfo, query and fragment into out; -ENAMETOOLONG when it
 * does not fit. */
int rf_icache_clean_url(const char *url, char *out, size_t cap);

/* Looks k up: 0 and *payload_bytes on a hit (header, key and lengths
 * checked; the payload's CRC is checked by rf_icache_get), -ENOENT on a miss
 * (none, damaged, another key, c NULL, k not cacheable). Reserve
 * *payload_bytes, then rf_icache_get. */
int rf_icache_stat(rf_icache *c, const rf_icache_key *k, uint64_t *payload_bytes);
/* Reads k's payload into buf (cap bytes, reserved by the caller): 0 and *len
 * on a hit (everything checked, the entry touched as recently used);
 * -ENOENT on a miss (a damaged entry is removed), -EFBIG when the payload is
 * larger than cap (left in place). */
int rf_icache_get(rf_icache *c, const rf_icache_key *k, void *buf, uint64_t cap, uint64_t *len);
/* Removes k's entry (checked to be k's): the layout it holds was found
 * stale (the object changed under the same key; a decode contradicted
 * it). 0, or -ENOENT when there is none. */
int rf_icache_drop(rf_icache *c, const rf_icache_key *k);
/* Stores payload under k (atomically replacing an older entry), then keeps
 * the directory within its bounds. 0, or a negative errno the caller may
 * ignore (-EINVAL: k not cacheable; -EFBIG: larger than the cache; I/O). */
int rf_icache_put(rf_icache *c, const rf_icache_key *k, const void *payload, uint64_t len);

void rf_icache_counters_get(const rf_icache *c, rf_icache_counters *out);

#endif
