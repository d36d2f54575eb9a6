/* SPDX-License-Identifier: MIT */
/* Progress line on stderr (progress.h). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cli_progress_start(struct cli_progress *p, int want)
{
    memset(p, 0, sizeof *p);
    p->on = want && isatty(STDERR_FILENO);
    p->t0 = now_s();
}

/* "1h02m", "3m05s", "42s" */
static void dur(char *out, size_t len, double s)
{
    long t = s < 0 ? 0 : (long)(s + 0.5);
    if (t >= 3600)
        snprintf(out, len, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60)
        snprintf(out, len, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(out, len, "%lds", t);
}

void cli_progress_show(struct cli_progress *p, int done, int total,
                       const char *fmt, ...)
{
    if (!p->on)
        return;
    char text[512], el[32], eta[32] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    double e = now_s() - p->t0;
    dur(el, sizeof el, e);
    if (done > 0 && total > done) {
        char d[32];
        dur(d, sizeof d, e / done * (total - done));
        snprintf(eta, sizeof eta, ", ETA %s", d);
    }
    char line[700];
    int n = snprintf(line, sizeof line, "%s [%d/%d, %s%s]", text, done,
                     total, el, eta);
    struct winsize ws;
    int cols = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col
                   ? ws.ws_col
                   : 80;
    if (n < 0 || n >= cols || n >= (int)sizeof line) /* no wrap, no cut */
        n = snprintf(line, sizeof line, "[%d/%d, %s%s]", done, total, el,
                     eta);
    fprintf(stderr, "\r\033[K%s", line);
    fflush(stderr);
    p->shown = 1;
}

void cli_progress_clear(struct cli_progress *p)
{
    if (!p->on || !p->shown)
        return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    p->shown = 0;
}
