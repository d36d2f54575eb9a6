/* SPDX-License-Identifier: MIT */
#include "cmd.h"

int ncd_cmd_ifaces(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_err("ifaces: being written");
    return NCD_EXIT_TOOL;
}
