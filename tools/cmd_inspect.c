/* cmd_inspect.c - placeholder */
#include "commands.h"
#include <stdio.h>
int cmd_inspect(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "not yet\n");
	return 2;
}
