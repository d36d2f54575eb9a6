/* SPDX-License-Identifier: MIT */
/* tune's report: the candidates' table with spread and ratio, the verdict,
 * the command that keeps the winner, findings, JSON, and the --plot
 * picture.  Used by cmd_tune.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_job.h"
#include "progress.h"
#include "cli_doc.h"
#include "cmd.h"
#include "ncd/error.h"
#include "ncd/job.h"
#include "ncd/perf.h"
#include "ncd/plot.h"
#include "ncd/readall.h"
#include "ncd/sysops.h"
#include "ncd/tune.h"

#include "tune_cli.h"

/* --plot: the candidates' curves into the file.  0, or -1 after a
 * message. */
static int write_plot(struct tune_cli *T, int winner)
{
    struct ncd_plot p = {0};
    struct ncd_strbuf sb = {0};
    int rc = ncd_tune_plot(&T->set, T->runs, winner, &p);
    if (!rc)
        ncd_plot_svg(&p, &sb);
    if (rc || sb.oom) {
        cli_err("tune: --plot: out of memory");
        rc = -1;
    } else if (ncd_write_file_atomic(T->plot_file, ncd_sb_str(&sb), sb.len,
                                     0644)) {
        cli_err("tune: --plot: cannot write %s: %s", T->plot_file,
                strerror(errno));
        rc = -1;
    }
    ncd_sb_release(&sb);
    ncd_plot_release(&p);
    return rc;
}

int tune_report(struct tune_cli *T, const char *host, const char *launcher,
                int sig)
{
    struct ncd_tune_runs *runs = T->runs;
    struct ncd_tune_stat stats[NCD_TUNE_MAX_CANDS];
    struct ncd_findings fl = {0};
    int win = ncd_tune_summarize(&T->set, runs, sig != 0, stats, &fl);
    const char *metric = T->metric_avg
                             ? "nccl-tests' average bus bandwidth"
                             : "bus bandwidth at the largest size";
    int status = NCD_EXIT_OK;
    json_t *env = ncd_findings_env_json(&fl, NCD_SEV_WARNING);
    struct ncd_strbuf scope = {0};
    ncd_tune_scope_text(&T->scope, &scope);
    cli_progress_clear(&T->prog);
    if (T->c.json) {
        json_t *j = ncd_json_envelope(host), *body = ncd_tune_json(
                                                    &T->set, runs, stats, win);
        if (!j || !body) {
            json_decref(j);
            json_decref(body);
            json_decref(env);
            ncd_findings_release(&fl);
            return NCD_EXIT_TOOL;
        }
        json_object_update(j, body);
        json_decref(body);
        json_t *m = json_object();
        json_object_set_new(m, "backend",
                            json_string(T->scope.backend ==
                                                NCD_PERF_BACKEND_NCCL
                                            ? "nccl"
                                            : "socket"));
        json_object_set_new(m, "one_host", json_boolean(T->scope.one_host));
        json_object_set_new(m, "text", json_string(ncd_sb_str(&scope)));
        json_object_set_new(j, "measured", m);
        char signame[32] = "";
        if (sig)
            snprintf(signame, sizeof signame, "SIG%s", sigabbrev_np(sig));
        json_object_set_new(j, "interrupted",
                            sig ? json_string(signame) : json_null());
        json_object_set_new(j, "runs_done", json_integer(T->done));
        json_object_set_new(j, "runs_planned", json_integer(T->total));
        json_object_set_new(j, "metric", json_string(metric));
        json_object_set_new(j, "repetitions", json_integer(T->reps));
        json_object_set_new(j, "launcher", json_string(launcher));
        json_t *pa = json_array();
        for (int i = 0; i < T->nperf; i++)
            json_array_append_new(pa, json_string(T->perf_args[i]));
        json_object_set_new(j, "perf_args", pa);
        json_object_set_new(j, "findings", ncd_findings_to_json(&fl));
        json_object_set_new(j, "recommended_env", json_incref(env));
        if (cli_print_json(j) < 0)
            status = NCD_EXIT_TOOL;
    } else {
        struct ncd_strbuf sb = {0};
        struct ncd_text_style st = cli_text_style(&T->c);
        int nskip = 0;
        for (int i = 0; i < T->set.n; i++)
            nskip += T->set.c[i].skip[0] != 0;
        ncd_sb_printf(&sb, "Tune: %d candidate%s x %d run%s", T->set.n - nskip,
                      T->set.n - nskip == 1 ? "" : "s", T->reps,
                      T->reps == 1 ? "" : "s");
        if (nskip)
            ncd_sb_printf(&sb, " (%d more skipped)", nskip);
        ncd_sb_puts(&sb, " of `perf");
        for (int i = 0; i < T->nperf; i++)
            ncd_sb_printf(&sb, " %s", T->perf_args[i]);
        ncd_sb_printf(&sb, "` (%s)\n%s\n\n", launcher, ncd_sb_str(&scope));
        ncd_tune_render_text(&sb, &T->set, runs, stats, win, metric);
        ncd_sb_putc(&sb, '\n');
        ncd_render_findings_text(&sb, &fl, &st);
        if (win >= 0) {
            ncd_sb_printf(&sb, "\n  Winning settings (%.2fx):\n",
                          stats[win].ratio);
            for (int i = 0; i < T->set.c[win].nvars; i++) {
                const struct ncd_tune_var *v = &T->set.c[win].vars[i];
                if (v->unset) {
                    ncd_sb_printf(&sb, "    unset %s\n", v->name);
                } else {
                    ncd_sb_printf(&sb, "    export %s=", v->name);
                    ncd_sb_shell_quote(&sb, v->value);
                    ncd_sb_putc(&sb, '\n');
                }
            }
            ncd_sb_puts(&sb, "\n  Keep them (the block `nccl-doctor env "
                             "--write` manages):\n    ");
            ncd_tune_keep_command(&T->set.c[win], &sb);
            ncd_sb_putc(&sb, '\n');
        } else if (sig) {
            ncd_sb_printf(&sb,
                          "\n  Interrupted (SIG%s) after %d of %d run%s: no "
                          "settings chosen; the stopped run counts against "
                          "no candidate.\n",
                          sigabbrev_np(sig), T->done, T->total,
                          T->total == 1 ? "" : "s");
        } else {
            ncd_sb_puts(&sb, "\n  Keep the current settings.\n");
        }
        if (cli_print_sb(&sb) < 0)
            status = NCD_EXIT_TOOL;
        ncd_sb_release(&sb);
    }
    json_decref(env);
    ncd_sb_release(&scope);
    /* interrupted: the plot still shows what was measured */
    if (T->plot_file && write_plot(T, win) < 0 && !sig)
        status = NCD_EXIT_TOOL;
    if (sig)
        status = 128 + sig; /* as a shell reports a job stopped by sig */
    else if (status == NCD_EXIT_OK)
        status = cli_exit_for(&T->c, ncd_findings_worst(&fl));
    ncd_findings_release(&fl);
    return status;
}

