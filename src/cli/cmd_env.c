/* SPDX-License-Identifier: MIT */
#include "cmd.h"

int ncd_cmd_env(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_err("env: being written");
    return NCD_EXIT_TOOL;
}
