/* SPDX-License-Identifier: MIT */
#include "cmd.h"

int ncd_cmd_check(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_err("check: being written");
    return NCD_EXIT_TOOL;
}
