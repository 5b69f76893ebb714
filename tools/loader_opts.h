/* loader_opts.h - command-line flags shared by the commands that open a
 * loader (read, bench): every rf_config key is a flag (--shuffle-window N is
 * the key shuffle_window), plus a few spellings of our own (--no-shuffle,
 * --truncate). Uses only ringfeed.h. */
#ifndef RF_LOADER_OPTS_H
#define RF_LOADER_OPTS_H

#include "ringfeed.h"
#include <stdio.h>

/* Tries argv[i] as a loader flag. Returns the number of arguments used (1 or
 * 2), 0 when it is not a loader flag, or -1 after printing an error. */
int rf_cli_loader_flag(rf_config *cfg, int argc, char **argv, int i, const char *cmd);
/* Options from the environment, before the flags (which override them):
 * RINGFEED_INJECT sets `inject` (the fault injector's spec). Returns 0 or -1
 * (printed). */
int rf_cli_loader_env(rf_config *cfg, const char *cmd);
/* Prints the loader flags (from rf_config_keys) for --help. */
void rf_cli_loader_help(FILE *f);
/* Reads a state file into the config (--resume). Returns 0 or -1 (printed). */
int rf_cli_resume(rf_config *cfg, const char *path, const char *cmd);
/* Writes the loader's state to path. Returns 0 or -1 (printed). */
int rf_cli_save_state(rf_loader *l, const char *path, const char *cmd);

#endif
