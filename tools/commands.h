/* commands.h - the ringfeed subcommands. Each lives in its own tools/cmd_*.c
 * and uses the library only through ringfeed.h. */
#ifndef RF_COMMANDS_H
#define RF_COMMANDS_H

typedef int (*rf_command_fn)(int argc, char **argv);

int cmd_pack(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_index(int argc, char **argv);
int cmd_read(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_plan(int argc, char **argv);
/* plan_mix.c: `ringfeed plan --mixture FILE`, each source's passes an epoch */
#include <stdbool.h>
bool rf_plan_is_mixture(int argc, char **argv);
int rf_plan_mixture(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_cache(int argc, char **argv);

#endif
