/* SPDX-License-Identifier: MIT */
/*
 * The CUDA error catalogue against the rules: every row of
 * data/cuda-errors.tsv (scripts/cuda-errors.py: each cudaError_t with its
 * libcudart message, each CUresult) is turned into the log lines that
 * print it:
 *
 *   nccl        "host:1:2 [0] init.cc:100 NCCL WARN Cuda failure 'msg'"
 *   nccl-num    "host:1:2 [0] NCCL WARN Cuda failure N 'msg'"
 *   nccl-nvls   "CUDA error N 'msg'." (the end of NCCL's NVLS message, split)
 *   nccl-tests  "host: Test CUDA failure common.cu:900 'msg'"
 *   pytorch     "RuntimeError: CUDA error: msg"
 *   thc         "RuntimeError: cuda runtime error (N) : msg at file:line" (PyTorch 1.x)
 *   thc-fail    "THCudaCheck FAIL file=f line=N error=N : msg" (PyTorch 1.x)
 *   paddle      "ExternalError: CUDA error(N), msg. [Hint: ...]"
 *   cupy        "...CUDARuntimeError: cudaErrorX: msg"
 *   driver rows "...XlaRuntimeError: INTERNAL: ...: CUDA_ERROR_X" (JAX) and
 *               "cupy.cuda.driver.CUDADriverError: CUDA_ERROR_X"
 *
 * Each line is classified by the built-in rules (ncd_rules_classify, as
 * explain does per line) and must be claimed by the row's rule or, where a
 * hand rule of higher priority is more specific, by a rule of the row's
 * category (or one the row's refined_by column names).  Prints coverage per form; --lines FILE writes every line for
 * a batch `nccl-doctor explain --json` run (cuda_catalog.sh).
 *
 * Usage: explain_cuda_catalog [--lines FILE] [--verbose] TSV
 * Exit: 0 all lines claimed as expected, 1 otherwise, 77 when the TSV is
 * missing.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/ctx.h"
#include "ncd/explain.h"
#include "ncd/finding.h"

enum { F_NCCL, F_NCCL_NUM, F_NVLS, F_TESTS, F_PYTORCH, F_THC, F_THC_FAIL, F_PADDLE, F_CUPY, F_JAX,
       F_CUPY_DRV, F__N };
static const char *const fname[F__N] = {"nccl",   "nccl-num", "nccl-nvls", "nccl-tests", "pytorch",
                                        "thc",    "thc-fail", "paddle",     "cupy",
                                        "jax",    "cupy-driver"};

enum { C_API, C_NUM, C_NAME, C_MSG, C_CLASS, C_CAT, C_RULE, C_REFINED, C__N };

static int line_for(int f, char **col, char *out, size_t n)
{
    int drv = strcmp(col[C_API], "driver") == 0;
    if (drv != (f == F_JAX || f == F_CUPY_DRV))
        return 0;
    switch (f) {
    case F_NCCL:
        return snprintf(out, n, "node1:1:2 [0] init.cc:100 NCCL WARN Cuda failure '%s'",
                        col[C_MSG]);
    case F_NCCL_NUM:
        return snprintf(out, n, "node1:1:2 [0] NCCL WARN Cuda failure %s '%s'", col[C_NUM],
                        col[C_MSG]);
    case F_NVLS:
        return snprintf(out, n, "CUDA error %s '%s'.", col[C_NUM], col[C_MSG]);
    case F_TESTS:
        return snprintf(out, n, "node1: Test CUDA failure common.cu:900 '%s'", col[C_MSG]);
    case F_PYTORCH:
        return snprintf(out, n, "RuntimeError: CUDA error: %s", col[C_MSG]);
    case F_THC:
        return snprintf(out, n,
                        "RuntimeError: cuda runtime error (%s) : %s at "
                        "/pytorch/aten/src/THC/THCCachingHostAllocator.cpp:278",
                        col[C_NUM], col[C_MSG]);
    case F_THC_FAIL:
        return snprintf(out, n,
                        "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=383 "
                        "error=%s : %s",
                        col[C_NUM], col[C_MSG]);
    case F_PADDLE:
        return snprintf(out, n,
                        "ExternalError: CUDA error(%s), %s. [Hint: please search for the "
                        "error code on the CUDA documentation.]",
                        col[C_NUM], col[C_MSG]);
    case F_CUPY:
        return snprintf(out, n, "cupy_backends.cuda.api.runtime.CUDARuntimeError: %s: %s",
                        col[C_NAME], col[C_MSG]);
    case F_JAX:
        return snprintf(out, n,
                        "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to launch "
                        "CUDA kernel: %s",
                        col[C_NAME]);
    case F_CUPY_DRV:
        return snprintf(out, n, "cupy.cuda.driver.CUDADriverError: %s", col[C_NAME]);
    }
    return 0;
}

static int claimed_ok(const struct ncd_rules *rules, long ri, char **col, int *by_rule)
{
    struct ncd_rule_info info;
    *by_rule = 0;
    if (ri < 0 || ncd_rules_info(rules, (size_t)ri, &info) != 0)
        return 0;
    if (strcmp(info.id, col[C_RULE]) == 0) {
        *by_rule = 1;
        return 1;
    }
    int cat = ncd_category_parse(col[C_CAT]);
    if (cat >= 0 && (int)info.category == cat)
        return 1;
    /* a hand rule the classes file names as more specific */
    size_t il = strlen(info.id);
    for (const char *s = col[C_REFINED]; *s;) {
        size_t l = strcspn(s, ",");
        if (l == il && memcmp(s, info.id, l) == 0)
            return 1;
        s += l + (s[l] == ',');
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *tsv = NULL, *lines_path = NULL;
    int verbose = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--lines") == 0 && i + 1 < argc)
            lines_path = argv[++i];
        else if (strcmp(argv[i], "--verbose") == 0)
            verbose = 1;
        else
            tsv = argv[i];
    }
    if (!tsv) {
        fprintf(stderr, "usage: explain_cuda_catalog [--lines FILE] [--verbose] TSV\n");
        return 2;
    }
    FILE *in = fopen(tsv, "r");
    if (!in) {
        printf("catalogue %s missing: skipped\n", tsv);
        return 77;
    }
    FILE *lines = lines_path ? fopen(lines_path, "w") : NULL;
    if (lines_path && !lines) {
        perror(lines_path);
        fclose(in);
        return 1;
    }
    struct ncd_ctx *ctx = NULL;
    struct ncd_rules *rules = NULL;
    if (ncd_ctx_new("/", NULL, &ctx) < 0 || ncd_rules_new(&rules) < 0 ||
        ncd_rules_load_builtin(ctx, rules) < 0) {
        fprintf(stderr, "cannot load rules: %s\n", ctx ? ncd_ctx_errdetail(ctx) : "no context");
        ncd_rules_free(rules);
        ncd_ctx_free(ctx);
        fclose(in);
        if (lines)
            fclose(lines);
        return 1;
    }
    long total[F__N] = {0}, ok[F__N] = {0}, own[F__N] = {0};
    long rows = 0, fails = 0, unknown_rule = 0;
    char *buf = NULL;
    size_t cap = 0;
    while (getline(&buf, &cap, in) > 0) {
        buf[strcspn(buf, "\n")] = '\0';
        if (buf[0] == '#' || buf[0] == '\0')
            continue;
        char *col[C__N];
        int nc = 0;
        for (char *s = buf; nc < C__N; nc++) {
            col[nc] = s;
            char *t = strchr(s, '\t');
            if (!t) {
                nc++;
                break;
            }
            *t = '\0';
            s = t + 1;
        }
        if (nc != C__N) {
            printf("FAIL malformed row (%d columns): %s\n", nc, buf);
            fails++;
            continue;
        }
        rows++;
        int known = 0;
        struct ncd_rule_info info;
        for (size_t r = 0; ncd_rules_info(rules, r, &info) == 0; r++)
            if (strcmp(info.id, col[C_RULE]) == 0)
                known = 1;
        if (!known) {
            printf("FAIL %s %s: rule %s is not loaded\n", col[C_API], col[C_NAME], col[C_RULE]);
            unknown_rule++;
            fails++;
        }
        for (int f = 0; f < F__N; f++) {
            char line[1024];
            if (line_for(f, col, line, sizeof line) <= 0)
                continue;
            total[f]++;
            long ri = ncd_rules_classify(rules, line, strlen(line));
            int by_rule;
            if (claimed_ok(rules, ri, col, &by_rule)) {
                ok[f]++;
                own[f] += by_rule;
                if (verbose && !by_rule) {
                    struct ncd_rule_info ci;
                    ncd_rules_info(rules, (size_t)ri, &ci);
                    printf("ok (hand rule %s) %s\n", ci.id, line);
                }
            } else {
                struct ncd_rule_info ci;
                const char *who = ri >= 0 && ncd_rules_info(rules, (size_t)ri, &ci) == 0
                                      ? ci.id
                                      : "(no rule)";
                printf("FAIL %s [%s]: want %s (%s), got %s\n", line, fname[f], col[C_RULE],
                       col[C_CAT], who);
                fails++;
            }
            if (lines)
                fprintf(lines, "%s\n", line);
        }
    }
    free(buf);
    fclose(in);
    if (lines)
        fclose(lines);
    printf("cuda catalogue: %ld errors\n", rows);
    for (int f = 0; f < F__N; f++)
        if (total[f])
            printf("coverage %-12s %ld/%ld claimed (%ld by the catalogue rule, %ld by a hand "
                   "rule of the category or refined_by)\n",
                   fname[f], ok[f], total[f], own[f], ok[f] - own[f]);
    ncd_rules_free(rules);
    ncd_ctx_free(ctx);
    return fails || rows == 0 ? 1 : 0;
}
