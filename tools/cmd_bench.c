/* cmd_bench.c - placeholder until the bench command lands. */
#include "commands.h"
#include <stdio.h>
int cmd_bench(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "ringfeed bench: not yet\n");
	return 2;
}
