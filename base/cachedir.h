/* cachedir.h - the rules every on-disk cache of ringfeed keeps for its
 * directory (the index cache, engine/icache.c; the data cache,
 * fetch/cache_rec.c): a default under $RINGFEED_CACHE_DIR, $XDG_CACHE_HOME
 * or ~/.cache; an absolute path, created mode 0700 (parents too); never a
 * symlink; owned by this user and writable by nobody else (another user could
 * plant entries). A directory that breaks a rule disables that cache, with
 * one sentence saying why that starts with the cache's words ("index cache
 * disabled", "data cache off"). Internal. */
#ifndef RF_CACHEDIR_H
#define RF_CACHEDIR_H

#include "ringfeed.h"
#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>

/* The default directory into buf: $RINGFEED_CACHE_DIR + env_suffix when set
 * and not empty, else $XDG_CACHE_HOME/ringfeed/SUB (an absolute
 * XDG_CACHE_HOME only, as the XDG spec says), else $HOME/.cache/ringfeed/SUB.
 * 0, or -ENOENT (none of them set) / -ENAMETOOLONG. */
int rf_cachedir_default(const char *sub, const char *env_suffix, char *buf, size_t cap);

/* Opens dir (created first when create) as an O_DIRECTORY descriptor after
 * checking the rules, write access too when need_write. The descriptor, or a
 * negative errno with why saying "WORDS: ...". */
int rf_cachedir_open(const char *dir, const char *words, bool create, bool need_write,
                     rf_error *why);

/* A subdirectory of dirfd opened to be both listed and used as a base for
 * *at() calls: the listing (a DIR on a dup) and *fd. Never follows a
 * symlink. NULL (and *fd = -1) when it cannot be opened; the caller closes
 * both (closedir, close). */
DIR *rf_cachedir_sub(int dirfd, const char *name, int *fd);

#endif
