/* SPDX-License-Identifier: MIT */
/*
 * A progress line on stderr for long commands (tune; perf may share it):
 * shown only when stderr is a terminal, redrawn in place ("\r" + erase
 * line), with the elapsed time and an ETA from the mean time per step,
 * and erased before any other output.  Never on stdout.
 */
#ifndef NCD_CLI_PROGRESS_H
#define NCD_CLI_PROGRESS_H

struct cli_progress {
    int on;       /* stderr is a terminal and the caller wants it */
    int shown;    /* a line is on the screen */
    double t0;    /* start, seconds (CLOCK_MONOTONIC) */
};

/* Starts: on when `want` and stderr is a terminal. */
void cli_progress_start(struct cli_progress *p, int want);

/* Redraws the line: "<text> [done/total, elapsed Xs, ETA Ys]" (printf
 * format); the ETA is left out until one step is done.  Texts longer
 * than the terminal are not cut: the line is then left out, as a wrapped
 * line could not be redrawn. */
void cli_progress_show(struct cli_progress *p, int done, int total,
                       const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Erases the line, if one is shown (before other output, and at the end). */
void cli_progress_clear(struct cli_progress *p);

#endif
