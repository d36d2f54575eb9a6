/* SPDX-License-Identifier: MIT */
/*
 * nccl-doctor tune: runs the same `perf` sweep under candidate
 * environments, several times each, and reports which settings are faster
 * than the current ones beyond the noise.
 *
 * Every run is a child `nccl-doctor perf ... --json` with the candidate's
 * environment, so both backends and every launcher work as perf does:
 *  - one host: tune -np N  ->  child `perf -np N`;
 *  - several hosts (mpirun/srun/torchrun/--rendezvous): every rank of tune
 *    starts its own child with --rendezvous on rank 0's host and a fresh
 *    port rank 0 picked; the tune ranks stay in step through the process
 *    group and rank 0 collects the results.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "launch.h"
#include "ncd/error.h"
#include "ncd/netif.h"
#include "ncd/perf.h"
#include "ncd/recommend.h"
#include "ncd/tune.h"

extern char **environ;

enum {
    OPT_NP = CLI_OPT__NEXT,
    OPT_RDV,
    OPT_REPS,
    OPT_CANDS,
    OPT_FAMILIES,
    OPT_METRIC,
    OPT_BACKEND,
    OPT_RUN_TIMEOUT,
};

#define MAX_PERF_ARGS 64

struct tune_cli {
    struct cli_common c;
    int np, reps, families, metric_avg, run_timeout_s;
    const char *cands_file, *backend;
    const char *perf_args[MAX_PERF_ARGS];
    int nperf;
    struct ncd_tune_set set;
};

/* What one rank reports after a run. */
struct run_report {
    int32_t status;   /* perf's exit status; -1 killed / timed out */
    int32_t pad;
    double busbw;     /* rank 0 only, GB/s */
    char error[200];
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Reads a whole file (small outputs of the child). */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 65536, n = 0;
    char *b = malloc(cap + 1);
    while (b) {
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (n < cap)
            break;
        char *nb = cap < (64u << 20) ? realloc(b, cap * 2 + 1) : NULL;
        if (!nb) {
            free(b);
            b = NULL;
            break;
        }
        b = nb;
        cap *= 2;
    }
    fclose(f);
    if (b) {
        b[n] = 0;
        if (len)
            *len = n;
    }
    return b;
}

/* busbw of a perf -J document: the mean of the out-of-place and in-place
 * busbw at the largest size, or nccl-tests' average over all rows. */
static int busbw_of(const char *text, int avg, double *out, char *err,
                    size_t errlen)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j) {
        snprintf(err, errlen, "perf's JSON is unreadable: %s (line %d)",
                 je.text, je.line);
        return -1;
    }
    int rc = -1;
    if (avg) {
        json_t *b = json_object_get(json_object_get(j, "average_bus_bandwidth"),
                                    "bandwidth");
        if (json_is_number(b)) {
            *out = json_number_value(b);
            rc = 0;
        }
    } else {
        json_t *res = json_object_get(j, "results"), *row;
        size_t i;
        double best_size = -1, sum = 0;
        int cnt = 0;
        json_array_foreach(res, i, row)
        {
            double sz = json_number_value(json_object_get(row, "size"));
            if (sz < best_size)
                continue;
            if (sz > best_size) {
                best_size = sz;
                sum = 0;
                cnt = 0;
            }
            static const char *side[] = {"out_of_place", "in_place"};
            for (int k = 0; k < 2; k++) {
                json_t *v = json_object_get(json_object_get(row, side[k]),
                                            "bus_bw");
                if (json_is_number(v)) {
                    sum += json_number_value(v);
                    cnt++;
                }
            }
        }
        if (cnt) {
            *out = sum / cnt;
            rc = 0;
        }
    }
    if (rc)
        snprintf(err, errlen, "perf's JSON has no bus bandwidth");
    json_decref(j);
    return rc;
}

/* First meaningful line of a child's stderr (its error). */
static void first_error(const char *path, char *out, size_t len)
{
    char *t = slurp(path, NULL);
    out[0] = 0;
    if (!t)
        return;
    char *save = NULL;
    for (char *l = strtok_r(t, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        if (*l && *l != '#') {
            snprintf(out, len, "%s", l);
            break;
        }
    free(t);
}

/*
 * Runs `perf` once with the candidate's environment.  Fills rep (status,
 * busbw when `want_json`, error).
 */
static void run_perf(struct tune_cli *T, const struct ncd_tune_cand *cand,
                     int np, const char *rdv, int nprocs, int proc,
                     int want_json, struct run_report *rep)
{
    memset(rep, 0, sizeof *rep);
    char outp[] = "/tmp/ncd-tune-out.XXXXXX", errp[] = "/tmp/ncd-tune-err.XXXXXX";
    int ofd = mkstemp(outp), efd = mkstemp(errp);
    if (ofd < 0 || efd < 0) {
        rep->status = -1;
        snprintf(rep->error, sizeof rep->error, "temporary file: %s",
                 strerror(errno));
        if (ofd >= 0) {
            close(ofd);
            unlink(outp);
        }
        if (efd >= 0) {
            close(efd);
            unlink(errp);
        }
        return;
    }
    const char *argv[MAX_PERF_ARGS + 16];
    int a = 0;
    char npbuf[16], rbuf[16], wbuf[16];
    argv[a++] = "nccl-doctor";
    argv[a++] = "perf";
    for (int i = 0; i < T->nperf; i++)
        argv[a++] = T->perf_args[i];
    if (T->backend) {
        argv[a++] = "--backend";
        argv[a++] = T->backend;
    }
    if (np > 1) {
        snprintf(npbuf, sizeof npbuf, "%d", np);
        argv[a++] = "-np";
        argv[a++] = npbuf;
    }
    if (rdv) {
        argv[a++] = "--rendezvous";
        argv[a++] = rdv;
    }
    if (want_json)
        argv[a++] = "--json";
    argv[a] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(ofd, STDOUT_FILENO);
        dup2(efd, STDERR_FILENO);
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0)
            dup2(nul, STDIN_FILENO);
        for (int i = 0; i < cand->nvars; i++) {
            if (cand->vars[i].unset)
                unsetenv(cand->vars[i].name);
            else
                setenv(cand->vars[i].name, cand->vars[i].value, 1);
        }
        if (rdv) {
            snprintf(rbuf, sizeof rbuf, "%d", proc);
            snprintf(wbuf, sizeof wbuf, "%d", nprocs);
            setenv("RANK", rbuf, 1);
            setenv("WORLD_SIZE", wbuf, 1);
        }
        execv("/proc/self/exe", (char *const *)argv);
        fprintf(stderr, "cannot run /proc/self/exe perf: %s\n",
                strerror(errno));
        _exit(127);
    }
    close(ofd);
    close(efd);
    if (pid < 0) {
        rep->status = -1;
        snprintf(rep->error, sizeof rep->error, "fork: %s", strerror(errno));
        unlink(outp);
        unlink(errp);
        return;
    }
    double end = now_s() + T->run_timeout_s;
    int ws = 0, done = 0, killed = 0;
    while (!done) {
        pid_t r = waitpid(pid, &ws, WNOHANG);
        if (r == pid) {
            done = 1;
        } else if (r < 0 && errno != EINTR) {
            break;
        } else if (now_s() > end && !killed) {
            kill(pid, SIGKILL);
            killed = 1;
        } else {
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    if (killed) {
        rep->status = -1;
        snprintf(rep->error, sizeof rep->error,
                 "perf ran longer than %d s and was killed (--run-timeout)",
                 T->run_timeout_s);
    } else if (!done || !WIFEXITED(ws)) {
        rep->status = -1;
        snprintf(rep->error, sizeof rep->error, "perf died (signal %d)",
                 done && WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
    } else {
        rep->status = WEXITSTATUS(ws);
        if (rep->status) {
            first_error(errp, rep->error, sizeof rep->error);
            if (!rep->error[0])
                first_error(outp, rep->error, sizeof rep->error);
            if (!rep->error[0])
                snprintf(rep->error, sizeof rep->error,
                         "perf exited with status %d", rep->status);
        } else if (want_json) {
            char *t = slurp(outp, NULL);
            if (!t || busbw_of(t, T->metric_avg, &rep->busbw, rep->error,
                               sizeof rep->error)) {
                rep->status = -1;
                if (!t)
                    snprintf(rep->error, sizeof rep->error,
                             "perf's output is missing");
            }
            free(t);
        }
    }
    unlink(outp);
    unlink(errp);
}

/* Interface names usable on this node, NUL-separated, "" terminated. */
static void usable_names(struct ncd_ctx *ctx, char *out, size_t len)
{
    memset(out, 0, len);
    struct ncd_netif_list nl = {0};
    struct ncd_recommendation rec = {0};
    size_t off = 0;
    if (ncd_netif_probe(ctx, &nl) == 0 && ncd_recommend(ctx, &nl, &rec) == 0)
        for (size_t i = 0; i < rec.n; i++) {
            const char *n = rec.ranks[i].ni->name;
            if (!rec.ranks[i].usable || off + strlen(n) + 2 > len)
                continue;
            memcpy(out + off, n, strlen(n) + 1);
            off += strlen(n) + 1;
        }
    ncd_recommendation_release(&rec);
    ncd_netif_list_release(&nl);
}

static int build_set(struct tune_cli *T, struct ncd_ctx *ctx, int local_only,
                     const char *common)
{
    if (T->cands_file) {
        size_t len;
        char *buf = slurp(T->cands_file, &len);
        if (!buf) {
            cli_err("tune: cannot read %s: %s", T->cands_file,
                    strerror(errno));
            return -1;
        }
        int rc = ncd_tune_parse_file(ctx, buf, len, &T->set);
        free(buf);
        if (rc) {
            cli_err("tune: %s: %s", T->cands_file, ncd_ctx_errdetail(ctx));
            return -1;
        }
        return 0;
    }
    struct ncd_netif_list nl = {0};
    struct ncd_recommendation rec = {0};
    int rc = ncd_netif_probe(ctx, &nl);
    if (rc == 0)
        rc = ncd_recommend(ctx, &nl, &rec);
    if (rc == 0)
        rc = ncd_tune_default_set(ctx, &nl, &rec, T->families, local_only,
                                  common, &T->set);
    ncd_recommendation_release(&rec);
    ncd_netif_list_release(&nl);
    if (rc && rc != NCD_ERANGE) {
        cli_err("tune: %s", ncd_strerror(rc));
        return -1;
    }
    return 0;
}

static int report(struct tune_cli *T, const char *host,
                  struct ncd_tune_runs *runs, const char *launcher)
{
    struct ncd_tune_stat stats[NCD_TUNE_MAX_CANDS];
    struct ncd_findings fl = {0};
    int win = ncd_tune_summarize(&T->set, runs, stats, &fl);
    const char *metric = T->metric_avg
                             ? "nccl-tests' average bus bandwidth"
                             : "bus bandwidth at the largest size";
    int status = NCD_EXIT_OK;
    json_t *env = ncd_findings_env_json(&fl, NCD_SEV_WARNING);
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
        ncd_sb_printf(&sb, "Tune: %d candidates x %d runs of `perf", T->set.n,
                      T->reps);
        for (int i = 0; i < T->nperf; i++)
            ncd_sb_printf(&sb, " %s", T->perf_args[i]);
        ncd_sb_printf(&sb, "` (%s)\n\n", launcher);
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
        } else {
            ncd_sb_puts(&sb, "\n  Keep the current settings.\n");
        }
        if (cli_print_sb(&sb) < 0)
            status = NCD_EXIT_TOOL;
        ncd_sb_release(&sb);
    }
    json_decref(env);
    if (status == NCD_EXIT_OK)
        status = cli_exit_for(&T->c, ncd_findings_worst(&fl));
    ncd_findings_release(&fl);
    return status;
}

/* One process, or -np N on this host: perf does the launching. */
static int tune_local(struct tune_cli *T, struct ncd_ctx *ctx)
{
    if (build_set(T, ctx, 1, NULL))
        return NCD_EXIT_TOOL;
    struct ncd_tune_runs *runs = calloc(NCD_TUNE_MAX_CANDS, sizeof *runs);
    if (!runs)
        return NCD_EXIT_TOOL;
    for (int r = 0; r < T->reps; r++)
        for (int i = 0; i < T->set.n; i++) { /* interleaved: drift hits all */
            struct run_report rep;
            run_perf(T, &T->set.c[i], T->np, NULL, 1, 0, 1, &rep);
            struct ncd_tune_runs *ru = &runs[i];
            if (rep.status == 0 && ru->n < NCD_TUNE_MAX_RUNS) {
                ru->busbw[ru->n++] = rep.busbw;
            } else if (rep.status) {
                if (!ru->failed)
                    snprintf(ru->error, sizeof ru->error, "%s", rep.error);
                ru->failed++;
            }
            if (T->c.verbose)
                fprintf(stderr, "tune: %s run %d: %s%.4g GB/s\n",
                        T->set.c[i].label, r + 1,
                        rep.status ? "failed, " : "", rep.busbw);
        }
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    int st = report(T, host, runs, T->np > 1 ? "-np" : "single process");
    free(runs);
    return st;
}

struct multi_arg {
    struct tune_cli *T;
};

static int pick_port(const char *host)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    socklen_t sl;
    if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        sl = sizeof *s6;
    } else {
        s4->sin_family = AF_INET;
        s4->sin_addr.s_addr = htonl(INADDR_ANY);
        sl = sizeof *s4;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int port = -1;
    if (bind(fd, (struct sockaddr *)&ss, sl) == 0 &&
        getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        port = ntohs(ss.ss_family == AF_INET6 ? s6->sin6_port
                                              : s4->sin_port);
    close(fd);
    return port;
}

static int tune_job(void *arg, struct ncd_ctx *ctx, const struct cli_job *job)
{
    struct tune_cli *T = ((struct multi_arg *)arg)->T;
    int n = job->nprocs, me = job->proc;
    if (!job->rdv_host[0]) {
        if (me == 0)
            cli_err("tune: several processes need a TCP rendezvous host for "
                    "their perf runs: pass --rendezvous HOST:PORT or set "
                    "MASTER_ADDR/MASTER_PORT");
        return NCD_EXIT_TOOL;
    }
    /* interfaces usable on every host */
    enum { NAMES = 512 };
    char *mine = calloc(1, NAMES), *all = calloc((size_t)n, NAMES);
    struct ncd_tune_set *sets = calloc((size_t)n, sizeof *sets);
    struct ncd_tune_runs *runs = calloc(NCD_TUNE_MAX_CANDS, sizeof *runs);
    struct run_report *reps = calloc((size_t)n, sizeof *reps);
    int st = NCD_EXIT_TOOL;
    if (!mine || !all || !sets || !runs || !reps)
        goto out;
    usable_names(ctx, mine, NAMES);
    if (ncd_pg_allgather(ctx, job->pg, mine, NAMES, all))
        goto pgfail;
    int bad = 0;
    if (me == 0) {
        /* intersect rank 0's names with everyone's */
        char common[NAMES];
        size_t off = 0;
        memset(common, 0, sizeof common);
        for (const char *p = all; *p; p += strlen(p) + 1) {
            int everywhere = 1;
            for (int r = 1; r < n && everywhere; r++) {
                int found = 0;
                for (const char *q = all + (size_t)r * NAMES; *q;
                     q += strlen(q) + 1)
                    found |= !strcmp(p, q);
                everywhere = found;
            }
            if (everywhere && off + strlen(p) + 2 <= sizeof common) {
                memcpy(common + off, p, strlen(p) + 1);
                off += strlen(p) + 1;
            }
        }
        bad = build_set(T, ctx, 0, common) != 0;
        if (bad)
            T->set.n = 0;
    }
    if (ncd_pg_allgather(ctx, job->pg, &T->set, sizeof T->set, sets))
        goto pgfail;
    T->set = sets[0];
    if (T->set.n < 0 || T->set.n > NCD_TUNE_MAX_CANDS)
        T->set.n = 0;
    for (int i = 0; i < T->set.n; i++) {
        struct ncd_tune_cand *c = &T->set.c[i];
        c->label[sizeof c->label - 1] = 0;
        if (c->nvars < 0 || c->nvars > NCD_TUNE_MAX_VARS)
            c->nvars = 0;
        for (int k = 0; k < c->nvars; k++) {
            c->vars[k].name[sizeof c->vars[k].name - 1] = 0;
            c->vars[k].value[sizeof c->vars[k].value - 1] = 0;
        }
    }
    if (T->set.n == 0)
        goto out; /* rank 0 said why */
    char rdv[300];
    for (int r = 0; r < T->reps; r++)
        for (int i = 0; i < T->set.n; i++) {
            int32_t port = me == 0 ? pick_port(job->rdv_host) : 0, *ports;
            ports = calloc((size_t)n, sizeof *ports);
            if (!ports)
                goto out;
            if (ncd_pg_allgather(ctx, job->pg, &port, sizeof port, ports)) {
                free(ports);
                goto pgfail;
            }
            port = ports[0];
            free(ports);
            if (port <= 0) {
                if (me == 0)
                    cli_err("tune: no free port on %s", job->rdv_host);
                goto out;
            }
            snprintf(rdv, sizeof rdv, strchr(job->rdv_host, ':')
                                          ? "[%s]:%d"
                                          : "%s:%d",
                     job->rdv_host, port);
            struct run_report rep;
            run_perf(T, &T->set.c[i], 0, rdv, n, me, me == 0, &rep);
            if (ncd_pg_allgather(ctx, job->pg, &rep, sizeof rep, reps))
                goto pgfail;
            if (me == 0) {
                struct ncd_tune_runs *ru = &runs[i];
                int failed = -1;
                for (int k = 0; k < n && failed < 0; k++)
                    if (reps[k].status)
                        failed = k;
                if (failed < 0 && ru->n < NCD_TUNE_MAX_RUNS) {
                    ru->busbw[ru->n++] = reps[0].busbw;
                } else if (failed >= 0) {
                    if (!ru->failed)
                        snprintf(ru->error, sizeof ru->error, "rank %d: %.200s",
                                 failed, reps[failed].error);
                    ru->failed++;
                }
                if (T->c.verbose)
                    fprintf(stderr, "tune: %s run %d: %s%.4g GB/s\n",
                            T->set.c[i].label, r + 1,
                            failed >= 0 ? "failed, " : "", reps[0].busbw);
            }
        }
    if (me == 0) {
        char host[256] = "";
        gethostname(host, sizeof host - 1);
        st = report(T, host, runs, job->launcher ? job->launcher : "");
    } else {
        st = NCD_EXIT_OK;
    }
    goto out;
pgfail:
    fprintf(stderr, "nccl-doctor tune (rank %d): %s\n", me,
            ncd_ctx_errdetail(ctx));
    st = NCD_EXIT_TOOL;
out:
    free(mine);
    free(all);
    free(sets);
    free(runs);
    free(reps);
    return st;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    long v;
    if (cli_parse_range(s, lo, hi, &v))
        return -1;
    *out = (int)v;
    return 0;
}

int ncd_cmd_tune(int argc, char **argv)
{
    static const struct option lo[] = {
        CLI_COMMON_OPTS,
        {"np", required_argument, 0, OPT_NP},
        {"rendezvous", required_argument, 0, OPT_RDV},
        {"reps", required_argument, 0, OPT_REPS},
        {"candidates", required_argument, 0, OPT_CANDS},
        {"families", required_argument, 0, OPT_FAMILIES},
        {"metric", required_argument, 0, OPT_METRIC},
        {"backend", required_argument, 0, OPT_BACKEND},
        {"run-timeout", required_argument, 0, OPT_RUN_TIMEOUT},
        {0, 0, 0, 0},
    };
    struct tune_cli *T = calloc(1, sizeof *T);
    if (!T)
        return NCD_EXIT_TOOL;
    cli_common_init(&T->c);
    T->reps = 3;
    T->families = NCD_TUNE_ALL;
    T->run_timeout_s = 300;
    const char *rdv = NULL;
    /* tune's options, then `--` and perf's options */
    int split = argc;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--")) {
            split = i;
            break;
        }
    char **av = calloc((size_t)split + 1, sizeof *av);
    int st = NCD_EXIT_TOOL;
    if (!av)
        goto out;
    for (int i = 0; i < split; i++)
        av[i] = strcmp(argv[i], "-np") == 0 ? (char *)"--np" : argv[i];
    optind = 1;
    int opt, bad = 0;
    while (!bad && (opt = getopt_long(split, av, "vh", lo, NULL)) != -1) {
        int r = cli_common_opt(&T->c, opt, optarg);
        if (r < 0) {
            bad = 1;
            break;
        }
        if (r)
            continue;
        switch (opt) {
        case 'h':
            cli_usage("tune", stdout);
            st = NCD_EXIT_OK;
            goto out;
        case OPT_NP:
            if (parse_int(optarg, 1, 1024, &T->np)) {
                cli_err("tune: -np takes 1..1024");
                bad = 1;
            }
            break;
        case OPT_RDV:
            rdv = optarg;
            break;
        case OPT_REPS:
            if (parse_int(optarg, 1, NCD_TUNE_MAX_RUNS, &T->reps)) {
                cli_err("tune: --reps takes 1..%d", NCD_TUNE_MAX_RUNS);
                bad = 1;
            }
            break;
        case OPT_CANDS:
            T->cands_file = optarg;
            break;
        case OPT_FAMILIES: {
            int m = ncd_tune_families_parse(optarg);
            if (m < 0) {
                cli_err("tune: --families takes a comma list of ifname, "
                        "ib, shm, sockets or all");
                bad = 1;
            }
            T->families = m;
            break;
        }
        case OPT_METRIC:
            if (!strcmp(optarg, "average"))
                T->metric_avg = 1;
            else if (!strcmp(optarg, "largest"))
                T->metric_avg = 0;
            else {
                cli_err("tune: --metric takes largest or average");
                bad = 1;
            }
            break;
        case OPT_BACKEND:
            if (strcmp(optarg, "socket") != 0 && strcmp(optarg, "nccl") != 0 &&
                strcmp(optarg, "auto") != 0) {
                cli_err("tune: --backend takes socket, nccl or auto, not "
                        "'%s'",
                        optarg);
                bad = 1;
            }
            T->backend = optarg;
            break;
        case OPT_RUN_TIMEOUT:
            if (parse_int(optarg, 1, 86400, &T->run_timeout_s)) {
                cli_err("tune: --run-timeout takes seconds");
                bad = 1;
            }
            break;
        default:
            cli_usage("tune", stderr);
            bad = 1;
        }
    }
    if (!bad && optind < split) {
        cli_err("tune: unexpected argument '%s' (perf's options go after "
                "`--`)",
                av[optind]);
        bad = 1;
    }
    if (bad)
        goto out;
    static const char *defaults[] = {"all_reduce", "-b", "256K", "-e", "4M",
                                     "-f", "4", "-n", "5", "-w", "1"};
    if (split + 1 < argc) {
        if (argc - split - 1 > MAX_PERF_ARGS - 8) {
            cli_err("tune: too many perf options");
            goto out;
        }
        for (int i = split + 1; i < argc; i++) {
            if (!strcmp(argv[i], "-np") || !strcmp(argv[i], "--np") ||
                !strcmp(argv[i], "--rendezvous") || !strcmp(argv[i], "--json") ||
                !strcmp(argv[i], "-J") || !strcmp(argv[i], "--output_file")) {
                cli_err("tune: give %s to tune itself, not to perf",
                        argv[i]);
                goto out;
            }
            T->perf_args[T->nperf++] = argv[i];
        }
    } else {
        for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
            T->perf_args[T->nperf++] = defaults[i];
    }
    struct ncd_ctx *ctx = cli_ctx_new(&T->c);
    if (!ctx)
        goto out;
    if (!ncd_ctx_is_live(ctx)) {
        cli_err("tune: runs benchmarks; it cannot run on a recorded "
                "--sysroot");
        ncd_ctx_free(ctx);
        goto out;
    }
    struct ncd_launch ln;
    int lr = ncd_perf_detect_launcher(ctx, &ln);
    if (lr < 0) {
        cli_err("tune: %s", ncd_ctx_errdetail(ctx));
    } else if (lr == 1 || rdv) {
        if (T->np) {
            cli_err("tune: -np with a launcher or --rendezvous: drop -np");
        } else {
            struct multi_arg ma = {T};
            struct cli_launch L = {.cmd = "tune",
                                   .rendezvous = rdv,
                                   .timeout_ms = (T->run_timeout_s + 60) *
                                                 1000,
                                   .argc = &argc,
                                   .argv = &argv};
            st = cli_launch_run(ctx, &L, tune_job, &ma);
        }
    } else {
        st = tune_local(T, ctx);
    }
    ncd_ctx_free(ctx);
out:
    free(av);
    free(T);
    return st;
}
