/* SPDX-License-Identifier: MIT */
/*
 * nccl-doctor probe: every rank reports its host and interface choices,
 * every pair of ranks connects both ways on the address NCCL would use;
 * rank 0 prints the reachability matrix and the findings.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_doc.h"
#include "cmd.h"
#include "cli_job.h"
#include "ncd/check.h"
#include "ncd/error.h"
#include "ncd/job.h"
#include "ncd/perf.h"
#include "ncd/probe.h"
#include "ncd/sysops.h"

enum {
    OPT_NP = CLI_OPT__NEXT,
    OPT_RDV,
    OPT_TIMEOUT,
    OPT_BURST,
    OPT_NO_MTU,
    OPT_RDV_TIMEOUT,
};

struct probe_cli {
    struct cli_common c;
    struct ncd_probe_opts o;
    char ver_src[600];
};

static int pg_allgather(void *arg, const void *mine, size_t len, void *all)
{
    void **a = arg;
    return ncd_pg_allgather(a[0], a[1], mine, len, all);
}

static int probe_job(void *arg, struct ncd_ctx *ctx, const struct ncd_job *job)
{
    struct probe_cli *P = arg;
    struct ncd_probe_opts o = P->o;
    o.token = ncd_pg_token(job->pg);
    o.rdv_addr = ncd_pg_local_addr(job->pg);
    struct ncd_probe *p = NULL;
    int rc = ncd_probe_new(ctx, &o, job->proc, job->nprocs, &p);
    if (rc) {
        cli_msg("", "nccl-doctor probe (rank %d): %s%s%s", job->proc,
                ncd_strerror(rc), *ncd_ctx_errdetail(ctx) ? ": " : "",
                ncd_ctx_errdetail(ctx));
        return NCD_EXIT_TOOL;
    }
    void *ag[2] = {ctx, job->pg};
    const struct ncd_probe_result *res = NULL;
    rc = ncd_probe_run(ctx, p, pg_allgather, ag, &res);
    if (rc) {
        const struct ncd_probe_rank *s = ncd_probe_self(p);
        cli_msg("nccl-doctor probe: ", "rank %d (%s) stopped: %s%s%s",
                job->proc, s->host, ncd_strerror(rc),
                *ncd_ctx_errdetail(ctx) ? ": " : "", ncd_ctx_errdetail(ctx));
        ncd_probe_free(p);
        return NCD_EXIT_TOOL;
    }
    int status = NCD_EXIT_OK;
    struct ncd_findings fl = {0};
    if (ncd_probe_analyze(res, &fl)) {
        ncd_probe_free(p);
        return NCD_EXIT_TOOL;
    }
    if (job->proc == 0) {
        if (P->c.json) {
            json_t *env = ncd_json_envelope(res->ranks[0].host);
            json_t *body = ncd_probe_json(res);
            if (!env || !body) {
                json_decref(env);
                json_decref(body);
                status = NCD_EXIT_TOOL;
                goto out;
            }
            json_object_update(env, body);
            json_decref(body);
            json_object_set_new(env, "launcher",
                                json_string(job->plan->launcher));
            json_object_set_new(env, "findings", ncd_findings_to_json(&fl));
            json_object_set_new(env, "recommended_env",
                                ncd_findings_env_json(&fl, NCD_SEV_WARNING));
            if (cli_print_json(env) < 0)
                status = NCD_EXIT_TOOL;
        } else {
            struct ncd_strbuf sb = {0};
            struct ncd_text_style st = cli_text_style(&P->c);
            ncd_probe_render_text(&sb, res, &st);
            ncd_render_findings_text(&sb, &fl, &st);
            json_t *env = ncd_findings_env_json(&fl, NCD_SEV_WARNING);
            if (env && json_object_size(env)) {
                ncd_sb_puts(&sb, "\n  Recommended:\n");
                const char *k;
                json_t *v;
                json_object_foreach(env, k, v)
                {
                    if (json_is_string(v)) {
                        ncd_sb_printf(&sb, "    export %s=", k);
                        ncd_sb_shell_quote(&sb, json_string_value(v));
                        ncd_sb_putc(&sb, '\n');
                    } else {
                        ncd_sb_printf(&sb, "    unset %s\n", k);
                    }
                }
            }
            json_decref(env);
            if (cli_print_sb(&sb) < 0)
                status = NCD_EXIT_TOOL;
            ncd_sb_release(&sb);
        }
    }
    if (status == NCD_EXIT_OK)
        status = cli_exit_for(&P->c, ncd_findings_worst(&fl));
out:
    ncd_findings_release(&fl);
    ncd_probe_free(p);
    return status;
}

int ncd_cmd_probe(int argc, char **argv)
{
    static const struct option lo[] = {
        CLI_COMMON_OPTS,
        {"np", required_argument, 0, OPT_NP},
        {"rendezvous", required_argument, 0, OPT_RDV},
        {"timeout", required_argument, 0, OPT_TIMEOUT},
        {"rendezvous-timeout", required_argument, 0, OPT_RDV_TIMEOUT},
        {"burst", required_argument, 0, OPT_BURST},
        {"no-mtu", no_argument, 0, OPT_NO_MTU},
        {0, 0, 0, 0},
    };
    struct probe_cli P;
    memset(&P, 0, sizeof P);
    cli_common_init(&P.c);
    ncd_probe_opts_default(&P.o);
    long np = 0, rdv_timeout_s = 60;
    const char *rdv = NULL;
    char **av = cli_np_argv(argc, argv); /* "-np N" as mpirun spells it */
    if (!av)
        return NCD_EXIT_TOOL;
    optind = 1;
    int opt, bad = 0;
    long v;
    while (!bad && (opt = cli_getopt("probe", argc, av, CLI_COMMON_SHORT,
                                     lo)) != -1) {
        int r = cli_common_opt(&P.c, opt, optarg);
        if (r < 0) {
            bad = 1;
            break;
        }
        if (r == 2) {
            free(av);
            return NCD_EXIT_OK;
        }
        if (r)
            continue;
        switch (opt) {
        case 'h': {
            int hst = cli_usage("probe", stdout);
            free(av);
            return hst;
        }
        case OPT_NP:
            if (cli_parse_range(optarg, 1, NCD_PROBE_MAX_RANKS, &np)) {
                cli_err("probe: -np takes 1..%d", NCD_PROBE_MAX_RANKS);
                bad = 1;
            }
            break;
        case OPT_RDV:
            rdv = optarg;
            break;
        case OPT_TIMEOUT:
            if (cli_parse_range(optarg, 1, 600000, &v)) {
                cli_err("probe: --timeout takes milliseconds, 1..600000");
                bad = 1;
            }
            P.o.timeout_ms = (int)v;
            break;
        case OPT_RDV_TIMEOUT:
            if (cli_parse_range(optarg, 1, 3600, &rdv_timeout_s)) {
                cli_err("probe: --rendezvous-timeout takes seconds, 1..3600");
                bad = 1;
            }
            break;
        case OPT_BURST: {
            size_t b;
            if (ncd_perf_parse_size(optarg, &b) || b > (1ul << 30)) {
                cli_err("probe: --burst takes a size up to 1G (e.g. 4M), "
                        "0 = none");
                bad = 1;
            }
            P.o.burst_bytes = b;
            break;
        }
        case OPT_NO_MTU:
            P.o.mtu_probe = 0;
            break;
        default:
            cli_usage_hint("probe");
            bad = 1;
        }
    }
    if (!bad && optind < argc) {
        cli_err("probe: unexpected argument '%s'", av[optind]);
        bad = 1;
    }
    free(av);
    if (bad)
        return NCD_EXIT_TOOL;
    struct ncd_ctx *ctx = cli_ctx_new(&P.c);
    if (!ctx)
        return NCD_EXIT_TOOL;
    if (ncd_sys_require_live(ctx, "probe") < 0) {
        cli_err("probe: connects to other ranks; it cannot run on a "
                "recorded --sysroot");
        ncd_ctx_free(ctx);
        return NCD_EXIT_TOOL;
    }
    if (cli_nccl_version(ctx, P.c.nccl_version, &P.o.nccl_version, P.ver_src,
                         sizeof P.ver_src) < 0) {
        ncd_ctx_free(ctx);
        return NCD_EXIT_TOOL;
    }
    P.o.nccl_version_src = P.ver_src;
    struct ncd_job_request req = {.np = (int)np, .rendezvous = rdv};
    struct ncd_job_plan plan;
    if (ncd_job_resolve(ctx, &req, &plan)) {
        cli_err("probe: %s", ncd_ctx_errdetail(ctx));
        ncd_ctx_free(ctx);
        return NCD_EXIT_TOOL;
    }
    /* --rendezvous-timeout bounds the whole rendezvous; every later
     * exchange waits at most for one step of pair tests */
    long step_ms = 4L * P.o.timeout_ms + 3000;
    long timeout_ms = rdv_timeout_s * 1000 > step_ms ? rdv_timeout_s * 1000
                                                     : step_ms;
    struct ncd_job_opts jo = {.timeout_ms = (int)(rdv_timeout_s * 1000),
                              .exchange_timeout_ms = (int)timeout_ms,
                              .straggler_ms = (int)timeout_ms + 5000,
                              .fail_status = NCD_EXIT_TOOL,
                              .argc = &argc,
                              .argv = &argv};
    int err;
    int st = cli_job_run(ctx, "probe", &plan, &jo, probe_job, &P, &err);
    if (plan.kind == NCD_JOB_SINGLE)
        fputs("nccl-doctor probe: started alone, so there was no other rank "
              "to reach.  Launch it across ranks:\n"
              "  one host:    nccl-doctor probe -np 4\n"
              "  a launcher:  mpirun -np 8 nccl-doctor probe   (or srun, "
              "torchrun, paddle.distributed.launch)\n"
              "  by hand:     on every host, WORLD_SIZE=N RANK=i nccl-doctor "
              "probe --rendezvous HOST0:PORT\n",
              stderr);
    ncd_ctx_free(ctx);
    return st;
}
