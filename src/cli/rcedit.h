/* SPDX-License-Identifier: MIT */
/*
 * `env --write FILE` / `env --remove FILE`: ncd_rc_update() with the
 * command line's signal handling.  While the update runs, SIGINT, SIGTERM,
 * SIGHUP and SIGQUIT (those not ignored when the command started) remove
 * the temporary file in flight (ncd_rc_guard_cleanup()) and then end the
 * process by the same signal, as if it had not been caught; the previous
 * handlers come back afterwards.
 *
 * Test-only: with NCD_TEST_RC_PAUSE=PATH in the environment, the update
 * stops just before its final check and rename, holding the complete
 * temporary file: the temporary file's name is written to PATH, and the
 * update goes on once PATH is removed (or is abandoned after 60 s).  The
 * tests use it to send signals, or to edit the file, at that exact point.
 */
#ifndef NCD_CLI_RCEDIT_H
#define NCD_CLI_RCEDIT_H

#include "ncd/rcfile.h"

/* Same arguments and returns as ncd_rc_update() with opts built from
 * dry_run. */
int cli_rc_update(struct ncd_ctx *ctx, const char *path, const char *body,
                  int dry_run, enum ncd_rc_action *action, char **preview);

#endif
