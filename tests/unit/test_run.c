/* SPDX-License-Identifier: MIT */
/*
 * `run` (include/ncd/run.h): launcher detection from command words, the
 * redaction of secret-looking arguments, the environment rows (user
 * settings and aliases win), the log directory rules, and that the logs
 * are created with O_EXCL (a file already there is never replaced).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/run.h"

static void test_detect(void **state)
{
    (void)state;
    struct {
        const char *argv[8];
        const char *want;
        int pytorch;
    } cases[] = {
        {{"torchrun", "--nproc-per-node", "8", "train.py"}, "torchrun", 1},
        {{"/opt/venv/bin/python3.11", "-m", "torch.distributed.run", "x.py"},
         "torchrun",
         1},
        {{"python", "-m", "torch.distributed.launch", "x.py"}, "torchrun", 1},
        {{"mpirun", "-np", "2", "torchrun", "x.py"}, "torchrun", 1},
        {{"accelerate", "launch", "x.py"}, "torchrun", 1},
        {{"python", "-m", "paddle.distributed.launch", "--gpus", "0,1", "t.py"},
         "paddle.distributed.launch",
         0},
        {{"mpirun", "-np", "4", "./all_reduce_perf"}, "mpirun", 0},
        {{"srun", "python", "train.py"}, "srun", 0},
        {{"python3", "train.py"}, "python", 0},
        {{"./a.out"}, "command", 0},
        /* "-m" needs a module after it */
        {{"python", "-m"}, "python", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int pt = -1;
        const char *got =
            ncd_run_detect((char *const *)cases[i].argv, &pt);
        if (strcmp(got, cases[i].want) || pt != cases[i].pytorch)
            fail_msg("case %zu (%s): got %s/%d", i, cases[i].argv[0], got,
                     pt);
    }
}

static void test_redact(void **state)
{
    (void)state;
    char out[128];
    assert_int_equal(ncd_run_redact_word("--api-key=abc", 0, out, sizeof out),
                     0);
    assert_string_equal(out, "--api-key=<redacted>");
    assert_int_equal(ncd_run_redact_word("HF_TOKEN=x", 0, out, sizeof out), 0);
    assert_string_equal(out, "HF_TOKEN=<redacted>");
    assert_int_equal(ncd_run_redact_word("--password", 0, out, sizeof out), 1);
    assert_string_equal(out, "--password");
    assert_int_equal(ncd_run_redact_word("hunter2", 1, out, sizeof out), 0);
    assert_string_equal(out, "<redacted>");
    assert_int_equal(ncd_run_redact_word("--nproc=8", 0, out, sizeof out), 0);
    assert_string_equal(out, "--nproc=8");
    assert_int_equal(ncd_run_redact_word("-", 0, out, sizeof out), 0);
    assert_int_equal(ncd_run_redact_word("train.py", 0, out, sizeof out), 0);
    assert_string_equal(out, "train.py");
    /* credentials inside a URL argument (user trial: run.json kept them) */
    assert_int_equal(
        ncd_run_redact_word("https://u:pw@x/y", 0, out, sizeof out), 0);
    assert_string_equal(out, "https://<redacted>@x/y");
    assert_int_equal(ncd_run_redact_word("--data=s3://AKIAXX:sec@bucket/k",
                                         0, out, sizeof out),
                     0);
    assert_string_equal(out, "--data=s3://<redacted>@bucket/k");
    assert_int_equal(ncd_run_redact_word("--dist-url", 0, out, sizeof out),
                     0);
    assert_int_equal(ncd_run_redact_word("user@host", 0, out, sizeof out), 0);
    assert_string_equal(out, "user@host");
}

static const char *var(const struct ncd_run_plan *p, const char *name,
                       int *kept)
{
    for (int i = 0; i < p->nvars; i++)
        if (!strcmp(p->vars[i].name, name)) {
            *kept = p->vars[i].kept;
            return p->vars[i].value;
        }
    return NULL;
}

static void test_env(void **state)
{
    (void)state;
    char *envp[] = {"PATH=/bin", "NCCL_DEBUG=WARN",
                    "TORCH_NCCL_DEBUG_INFO_TEMP_FILE=/x/fr", NULL};
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new(NULL, envp, &ctx), 0);
    struct ncd_run_plan p;
    memset(&p, 0, sizeof p);
    snprintf(p.dir, sizeof p.dir, "/logs/50%%");
    ncd_run_env(ctx, &p);
    int kept = -1;
    assert_string_equal(var(&p, "NCCL_DEBUG", &kept), "WARN");
    assert_int_equal(kept, 1);
    assert_string_equal(var(&p, "NCCL_DEBUG_SUBSYS", &kept),
                        "INIT,BOOTSTRAP,ENV,NET,GRAPH");
    assert_int_equal(kept, 0);
    /* NCCL expands %: the directory's own % is doubled */
    assert_string_equal(var(&p, "NCCL_DEBUG_FILE", &kept),
                        "/logs/50%%/nccl.%h.%p.log");
    assert_null(var(&p, "TORCH_FR_BUFFER_SIZE", &kept));
    p.pytorch = 1;
    ncd_run_env(ctx, &p);
    assert_string_equal(var(&p, "TORCH_FR_BUFFER_SIZE", &kept), "2000");
    assert_string_equal(var(&p, "TORCH_NCCL_TRACE_BUFFER_SIZE", &kept),
                        "2000");
    /* the user set the old name of the dump prefix: the new one stays
     * unset, the old one as the user set it */
    assert_null(var(&p, "TORCH_FR_DUMP_TEMP_FILE", &kept));
    assert_string_equal(var(&p, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", &kept),
                        "/x/fr");
    assert_int_equal(kept, 1);
    ncd_ctx_free(ctx);
}

static void test_dir_and_excl(void **state)
{
    (void)state;
    char tmp[] = "/tmp/ncd-test-run.XXXXXX";
    assert_non_null(mkdtemp(tmp));
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new(NULL, NULL, &ctx), 0);
    char p[4096], out[4096];
    snprintf(p, sizeof p, "%s/a/b", tmp);
    assert_int_equal(ncd_run_make_dir(ctx, p, out, sizeof out), 0);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_string_equal(out, p);
    /* empty: used again; with a file: refused */
    assert_int_equal(ncd_run_make_dir(ctx, p, out, sizeof out), 0);
    char f[4200];
    snprintf(f, sizeof f, "%s/stdout.log", p);
    int fd = open(f, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "mine\n", 5), 5);
    close(fd);
    assert_int_equal(ncd_run_make_dir(ctx, p, out, sizeof out), NCD_EEXISTS);
    assert_int_equal(ncd_run_make_dir(ctx, f, out, sizeof out), NCD_EINVAL);
    /* a plan pointing at that directory: exec refuses, the file stays */
    char *argv[] = {"/bin/true", NULL};
    struct ncd_run_opts o = {.out_fd = -1, .err_fd = -1};
    struct ncd_run_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.argv = argv;
    snprintf(plan.path, sizeof plan.path, "/bin/true");
    snprintf(plan.dir, sizeof plan.dir, "%s", p);
    struct ncd_run_result res;
    assert_int_equal(ncd_run_exec(ctx, &plan, &o, &res), NCD_EEXISTS);
    char buf[16] = "";
    fd = open(f, O_RDONLY);
    assert_int_equal(read(fd, buf, sizeof buf - 1), 5);
    close(fd);
    assert_string_equal(buf, "mine\n");
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    assert_int_equal(system(cmd), 0);
    ncd_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detect),
        cmocka_unit_test(test_redact),
        cmocka_unit_test(test_env),
        cmocka_unit_test(test_dir_and_excl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
