/* cmd_verify.c - placeholder */
#include "commands.h"
#include <stdio.h>
int cmd_verify(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "not yet\n");
	return 2;
}
