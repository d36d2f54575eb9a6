/* SPDX-License-Identifier: MIT */
/* Signal-safe rc-file edits for `env --write/--remove` (see rcedit.h). */
#define _GNU_SOURCE
#include "rcedit.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct ncd_rc_guard guard;
static const int caught[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

static void on_signal(int sig)
{
    ncd_rc_guard_cleanup(&guard);
    /* SA_RESETHAND restored the default action: deliver it again once
     * this handler returns, so the exit status says which signal. */
    raise(sig);
}

/* NCD_TEST_RC_PAUSE (test-only, see rcedit.h). */
static int test_pause(void *arg, const char *tmp_path)
{
    const char *pause = arg;
    char part[4096];
    snprintf(part, sizeof part, "%s.part", pause);
    FILE *f = fopen(part, "w");
    if (!f)
        return 1;
    fprintf(f, "%s\n", tmp_path);
    if (fclose(f) != 0 || rename(part, pause) != 0)
        return 1;
    for (int i = 0; i < 6000; i++) { /* 60 s */
        if (access(pause, F_OK) != 0)
            return 0;
        struct timespec nap = {0, 10 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    return 1;
}

int cli_rc_update(struct ncd_ctx *ctx, const char *path, const char *body,
                  int dry_run, enum ncd_rc_action *action, char **preview)
{
    struct ncd_rc_opts o = {.dry_run = dry_run, .guard = &guard};
    const char *pause = getenv("NCD_TEST_RC_PAUSE");
    if (pause && *pause) {
        o.before_commit = test_pause;
        o.hook_arg = (void *)pause;
    }
    enum { N = sizeof caught / sizeof caught[0] };
    struct sigaction sa = {.sa_handler = on_signal,
                           .sa_flags = SA_RESETHAND},
                     old[N];
    int set[N] = {0};
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < N; i++)
        sigaddset(&sa.sa_mask, caught[i]);
    for (int i = 0; i < N; i++) {
        /* A signal ignored from the start (nohup, a background job) stays
         * ignored: it cannot interrupt the update. */
        if (sigaction(caught[i], NULL, &old[i]) == 0 &&
            old[i].sa_handler != SIG_IGN)
            set[i] = sigaction(caught[i], &sa, NULL) == 0;
    }
    int rc = ncd_rc_update(ctx, path, body, &o, action, preview);
    for (int i = 0; i < N; i++)
        if (set[i])
            sigaction(caught[i], &old[i], NULL);
    return rc;
}
