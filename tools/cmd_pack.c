/* cmd_pack.c - placeholder */
#include "commands.h"
#include <stdio.h>
int cmd_pack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "not yet\n");
	return 2;
}
