/* cache.h - the data cache: a source wrapper (like the fault injector) that
 * keeps the byte ranges a loader reads of remote objects on local disk, so
 * later epochs and other loaders on the host read them at local speed.
 *
 * Layout under the cache directory (default $RINGFEED_CACHE_DIR/data, else
 * $XDG_CACHE_HOME/ringfeed/data, else ~/.cache/ringfeed/data; the user's
 * own, mode 0700, not writable by others, no symlinks followed):
 *   U/          U = 16 hex digits of FNV-1a of the object's URL without
 *               userinfo, query and fragment (no secret reaches a name)
 *   U/V.dat     V = FNV-1a of the object's version (rf_source_validator):
 *               a sparse file, the object's bytes at their own offsets
 *   U/V.rec     the record: a header (magic, version, the clean URL and the
 *               validator, the object's size; CRC-32C) then appended
 *               entries, each a range present with its data's CRC-32C and
 *               the entry's own CRC-32C.
 * A range is marked present (its entry appended) only after its bytes were
 * written and fdatasync'd; every hit's bytes are checked against the CRC,
 * and a mismatch is a miss (the store is read, counted). A new version of an
 * object is a new V: the files of other versions under U are removed when
 * the first range of the new one is recorded. Errors of the cache are never
 * errors of a read: a cache that cannot be used is off with one reason. */
#ifndef RF_CACHE_H
#define RF_CACHE_H

#include "source.h"
#include <stddef.h>
#include <stdint.h>

/* auto (the default): readwrite for remote objects where the directory is
 * usable, else off quietly (the reason in the stats). */
enum { RF_CACHE_OFF = 0, RF_CACHE_READ, RF_CACHE_READWRITE, RF_CACHE_AUTO };

#define RF_CACHE_REC_MAGIC       "RFDCACHE"
#define RF_CACHE_REC_VERSION     1u
#define RF_CACHE_REC_HEADER      32u /* magic 8, version 4, url 4, validator 4, size 8, crc 4 */
#define RF_CACHE_ENTRY_MAGIC     0x45444652u /* "RFDE" */
#define RF_CACHE_ENTRY_BYTES     32u         /* magic 4, len 4, offset 8, data crc 4, 0 8, crc 4 */
#define RF_CACHE_URL_BYTES_MAX   4096u
#define RF_CACHE_REC_BYTES_MAX   (32u << 20) /* ~1M entries: a longer record is not read */
#define RF_CACHE_RANGE_BYTES_MAX (64u << 20) /* a longer read is not cached */
#define RF_CACHE_WRITES_MAX      16u         /* ranges waiting to be written (write-behind) */
#define RF_CACHE_STAGING_MAX     (64u << 20) /* their copies, in bytes (reserved from the budget) */
#define RF_CACHE_FREE_FLOOR_PCT  5u          /* never fill the disk past 95% */
#define RF_CACHE_NAME_BYTES      22          /* "0123456789abcdef.rec" + NUL */

/* One range of a record. */
typedef struct rf_cache_entry {
	uint64_t offset;
	uint32_t len;
	uint32_t crc; /* CRC-32C of the bytes */
} rf_cache_entry;

/* "off", "read", "readwrite" or "auto" into *mode; -EINVAL otherwise. */
int rf_cache_mode_parse(const char *s, uint32_t *mode);
/* The default directory into buf (see above); 0, -ENOENT or -ENAMETOOLONG. */
int rf_cache_default_dir(char *buf, size_t cap);
/* The URL without userinfo, query and fragment; 0 or -ENAMETOOLONG. */
int rf_cache_clean_url(const char *url, char *out, size_t cap);

/* Record format (cache_rec.c). Serialises the header of (url, validator,
 * size) into out; its length, or -EINVAL (too long for cap). */
int rf_cache_rec_header_make(const char *url, const char *validator, uint64_t size, uint8_t *out,
                             size_t cap);
/* Checks a record's header (untrusted bytes read from disk) against the
 * object asked for: its length when it is that object's, -EBADMSG when it
 * is damaged or another object's (a hash collision, a planted file). */
int rf_cache_rec_header_check(const uint8_t *p, size_t n, const char *url, const char *validator,
                              uint64_t size);
void rf_cache_entry_make(const rf_cache_entry *e, uint8_t out[RF_CACHE_ENTRY_BYTES]);
/* Walks the entries in p[0..n) (after the header): fn for each valid one in
 * file order (a later entry of an offset replaces an earlier); damaged bytes
 * (a torn append, garbage) are stepped over. An entry is valid when its
 * magic and CRC hold, len > 0, len <= RF_CACHE_RANGE_BYTES_MAX and the range
 * lies inside size. Returns the bytes consumed (a trailing part of an entry
 * is left for the next call); *bad counts bytes stepped over. */
size_t rf_cache_rec_entries(const uint8_t *p, size_t n, uint64_t size,
                            void (*fn)(void *ctx, const rf_cache_entry *e), void *ctx,
                            uint64_t *bad);
/* "U" and "V.rec" / "V.dat" names for (clean url, validator). */
void rf_cache_names(const char *url, const char *validator, char dir[RF_CACHE_NAME_BYTES],
                    char rec[RF_CACHE_NAME_BYTES], char dat[RF_CACHE_NAME_BYTES]);
/* Whether name is one the cache writes ("16 hex" or "16 hex.rec|.dat"):
 * the cache never removes anything else. */
bool rf_cache_is_dir_name(const char *name);
bool rf_cache_is_file_name(const char *name);

/* Opens (creating it, 0700) and checks the directory as the index cache
 * does: the user's own, not writable by others, no symlink; writable for
 * readwrite. Returns the fd, or -errno with why saying why the cache is off. */
int rf_cache_dir_open(const char *dir, uint32_t mode, rf_error *why);

/* Per fetch layer (cache.c). */
typedef struct rf_cache rf_cache;
/* Never fails for a reason of the directory: the cache is then off with
 * that reason (rf_cache_counters_add says it); -ENOMEM only. */
int rf_cache_new(const rf_fetch_options *opt, rf_cache **out);
void rf_cache_free(rf_cache *c); /* waits for the pending writes (bounded) */
bool rf_cache_on(const rf_cache *c);
/* Wraps a remote source (taking ownership). */
int rf_cache_wrap(rf_fetch *f, rf_cache *c, rf_source *inner, const char *url, rf_source **out,
                  rf_error *err);
void rf_cache_counters_add(rf_cache *c, rf_fetch_counters *out);

#define RF_CACHE_BYTES_DEFAULT (16ull << 30)

/* The bound (cache_evict.c): least recently used object versions go when
 * the directory's files pass cache_bytes - 1/16, or leave less than room
 * under it (down to - 1/8, and room under it), never one
 * a loader of the host has open (a shared OFD lock on this byte of its
 * .rec, taken by rf_cache_in_use_mark, which also makes its use time now;
 * false when an evictor is removing it: read it uncached). */
#define RF_CACHE_INUSE_BYTE (1ll << 62)
bool rf_cache_in_use_mark(int rec_fd, int dat_fd);
typedef struct rf_cache_evicted {
	uint64_t total;   /* the cache's bytes on disk after the pass */
	uint64_t objects; /* versions removed, and their bytes */
	uint64_t bytes;
	uint64_t in_use; /* candidates skipped: a loader has them open */
	bool failed;     /* the directory could not be listed */
} rf_cache_evicted;
void rf_cache_evict(int dirfd, uint64_t max_bytes, uint64_t room, rf_cache_evicted *out);

/* fetch.c reaches the cache only through this row (data, as the wrapper
 * row of the injector), so the two files never call each other in a circle. */
typedef struct rf_cache_row {
	int (*create)(const rf_fetch_options *opt, rf_cache **out);
	void (*destroy)(rf_cache *c);
	bool (*on)(const rf_cache *c);
	int (*wrap)(rf_fetch *f, rf_cache *c, rf_source *inner, const char *url, rf_source **out,
	            rf_error *err);
	void (*counters_add)(rf_cache *c, rf_fetch_counters *out);
} rf_cache_row;
extern const rf_cache_row rf_data_cache;

#endif
