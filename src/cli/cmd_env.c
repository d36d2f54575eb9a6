/* SPDX-License-Identifier: MIT */
/* nccl-doctor env: print, or keep in an rc file, the recommended NCCL_*
 * settings for this node. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "ncd/check.h"
#include "ncd/node_report.h"
#include "ncd/error.h"
#include "ncd/rcfile.h"
#include "rcedit.h"

enum {
    OPT_FORMAT = CLI_OPT__NEXT,
    OPT_PROFILE,
    OPT_WRITE,
    OPT_REMOVE,
    OPT_DRY_RUN,
    OPT_SET,
    OPT_UNSET,
};

/* At most this many --set/--unset (tune's candidates have 8 variables). */
#define MAX_OVERRIDES 64

struct env_args {
    const char *write_to, *remove_from;
    enum ncd_env_format fmt;
    int profile, dry;
    /* --set NAME=VALUE / --unset NAME, in order: arg, and whether unset */
    const char *over[MAX_OVERRIDES];
    int over_unset[MAX_OVERRIDES];
    int nover;
};

/* A variable name the shell can export: [A-Za-z_][A-Za-z0-9_]*. */
static int shell_name(const char *s, size_t n)
{
    if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
            return 0;
    return 1;
}

static int add_override(struct env_args *a, const char *arg, int unset)
{
    size_t n = unset ? strlen(arg) : strcspn(arg, "=");
    if (!unset && !arg[n]) {
        cli_err("--set takes NAME=VALUE, not '%s'", arg);
        return -1;
    }
    if (!shell_name(arg, n) || n > 255) {
        cli_err("--%s: '%.*s' is not a variable name", unset ? "unset" : "set",
                (int)n, arg);
        return -1;
    }
    if (a->nover == MAX_OVERRIDES) {
        cli_err("at most %d --set/--unset", MAX_OVERRIDES);
        return -1;
    }
    a->over_unset[a->nover] = unset;
    a->over[a->nover++] = arg;
    return 0;
}

/* --set/--unset on top of the recommendation, later ones winning. */
static int apply_overrides(const struct env_args *a, json_t *env)
{
    for (int i = 0; i < a->nover; i++) {
        const char *arg = a->over[i];
        size_t n = a->over_unset[i] ? strlen(arg) : strcspn(arg, "=");
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)n, arg);
        json_t *v = a->over_unset[i] ? json_null() : json_string(arg + n + 1);
        if (!v || json_object_set_new(env, name, v)) /* keeps its place */
            return -1;
    }
    return 0;
}

static const struct option options[] = {
    {"format", required_argument, 0, OPT_FORMAT},
    {"profile", required_argument, 0, OPT_PROFILE},
    {"write", required_argument, 0, OPT_WRITE},
    {"remove", required_argument, 0, OPT_REMOVE},
    {"dry-run", no_argument, 0, OPT_DRY_RUN},
    {"set", required_argument, 0, OPT_SET},
    {"unset", required_argument, 0, OPT_UNSET},
    {0, 0, 0, 0},
};

const char ncd_cmd_env_usage[] =
     "usage: nccl-doctor env [--format env|docker|k8s|slurm]\n"
     "                       [--profile kubernetes|docker|ethernet|infiniband]\n"
     "                       [--write FILE [--dry-run] | --remove FILE]\n"
     "                       [--set NAME=VALUE]... [--unset NAME]...\n"
     "\n"
     "Prints the settings recommended for this node as export lines (or in\n"
     "another format).  --write FILE keeps them in one marked block\n"
     "(# >>> nccl-doctor >>> ... # <<< nccl-doctor <<<) that re-runs replace\n"
     "in place; the file is replaced atomically, a backup is kept, and\n"
     "nothing outside the block changes.  --remove takes the block out and\n"
     "gives back the original bytes.  Symbolic links are followed; a\n"
     "hard-linked or read-only file is left alone (--dry-run shows the new\n"
     "content); an edit made by another program meanwhile stops the update.\n"
     "--set NAME=VALUE and --unset NAME change the recommendation before it\n"
     "is printed or written (later ones win): `nccl-doctor tune` prints the\n"
     "command that keeps its winner this way.\n";

static int env_opt(int opt, const char *arg, void *data)
{
    struct env_args *a = data;
    int f;
    switch (opt) {
    case OPT_FORMAT:
        if ((f = ncd_env_format_parse(arg)) >= 0) {
            a->fmt = (enum ncd_env_format)f;
            return 0;
        }
        cli_err("--format takes sh, env, docker, k8s or slurm, not '%s'", arg);
        return -1;
    case OPT_PROFILE:
        a->profile = ncd_env_profile_parse(arg);
        if (a->profile < 0) {
            cli_err("--profile takes kubernetes, docker, ethernet or "
                    "infiniband, not '%s'",
                    arg);
            return -1;
        }
        return 0;
    case OPT_WRITE:
        a->write_to = arg;
        return 0;
    case OPT_REMOVE:
        a->remove_from = arg;
        return 0;
    case OPT_DRY_RUN:
        a->dry = 1;
        return 0;
    case OPT_SET:
        return add_override(a, arg, 0);
    case OPT_UNSET:
        return add_override(a, arg, 1);
    }
    return -1;
}

int ncd_cmd_env(int argc, char **argv)
{
    struct cli_common c;
    struct env_args a = {.fmt = NCD_ENV_SH, .profile = NCD_PROFILE_NONE};
    int pst = cli_parse("env", argc, argv, &c, options, env_opt, &a, NULL);
    if (pst != CLI_CONTINUE)
        return pst;
    const char *write_to = a.write_to, *remove_from = a.remove_from;
    enum ncd_env_format fmt = a.fmt;
    int profile = a.profile, dry = a.dry;
    if (write_to && remove_from) {
        cli_err("env: --write and --remove exclude each other");
        return NCD_EXIT_TOOL;
    }
    if ((write_to || remove_from) && fmt != NCD_ENV_SH) {
        cli_err("env: an rc file takes shell (export) lines; drop --format");
        return NCD_EXIT_TOOL;
    }
    struct ncd_ctx *ctx = cli_ctx_new(&c);
    if (!ctx)
        return NCD_EXIT_TOOL;
    int status = NCD_EXIT_TOOL;
    struct ncd_findings l = {0};
    struct ncd_node n = {0};
    struct ncd_check_opts co = {0};
    struct ncd_strbuf sb = {0}, notes = {0};
    json_t *env = NULL;
    char *preview = NULL;

    if (remove_from) {
        enum ncd_rc_action act;
        int rc = cli_rc_update(ctx, remove_from, NULL, dry, &act,
                               dry ? &preview : NULL);
        if (rc < 0) {
            cli_err("env --remove: %s: %s", ncd_strerror(rc),
                    ncd_ctx_errdetail(ctx));
            goto out;
        }
        if (dry && preview && act != NCD_RC_UNCHANGED)
            fputs(preview, stdout);
        fprintf(stderr, "nccl-doctor: %s%s\n", remove_from,
                act == NCD_RC_REMOVED
                    ? (dry ? ": would remove the block" : ": block removed")
                    : ": no nccl-doctor block, nothing to do");
        status = NCD_EXIT_OK;
        goto out;
    }

    if (cli_node_probe(ctx, "env", &c, NULL, ncd_checks_parts(&co), &n) < 0)
        goto out;
    int rc = ncd_run_checks(&n, &co, &l);
    if (rc < 0) {
        cli_err("env: %s", ncd_strerror(rc));
        goto out;
    }
    env = ncd_recommended_env(&n, &l);
    if (!env || ncd_env_profile_apply(&n, profile, env, &notes) < 0 ||
        apply_overrides(&a, env) < 0) {
        cli_err("env: out of memory");
        goto out;
    }
    if (json_object_size(env) == 0)
        ncd_sb_puts(&notes, "nothing to recommend: no usable network "
                            "interface (run `nccl-doctor check`)\n");
    if (c.json) {
        json_t *j = ncd_json_envelope(n.sys.host);
        if (j) {
            json_object_set(j, "recommended_env", env);
            json_object_set_new(j, "notes", ncd_json_string(ncd_sb_str(&notes)));
        }
        status = cli_print_json(j) < 0 ? NCD_EXIT_TOOL : NCD_EXIT_OK;
        goto out;
    }
    if (write_to) {
        struct ncd_strbuf body = {0};
        ncd_env_render(&body, env, NCD_ENV_SH, ncd_sb_str(&notes));
        enum ncd_rc_action act;
        rc = cli_rc_update(ctx, write_to, ncd_sb_str(&body), dry, &act,
                           dry ? &preview : NULL);
        ncd_sb_release(&body);
        if (rc < 0) {
            cli_err("env --write: %s: %s", ncd_strerror(rc),
                    ncd_ctx_errdetail(ctx));
            goto out;
        }
        if (dry && preview)
            fputs(preview, stdout);
        static const char *const what[] = {"already up to date", "created",
                                           "updated", "removed"};
        fprintf(stderr, "nccl-doctor: %s %s%s\n", write_to,
                dry && act != NCD_RC_UNCHANGED ? "would be " : "",
                what[act]);
        if (!dry && act != NCD_RC_UNCHANGED)
            fprintf(stderr, "nccl-doctor: open a new shell or run `. %s`\n",
                    write_to);
        status = NCD_EXIT_OK;
        goto out;
    }
    ncd_env_render(&sb, env, fmt, ncd_sb_str(&notes));
    status = cli_print_sb(&sb) < 0 ? NCD_EXIT_TOOL : NCD_EXIT_OK;
out:
    free(preview);
    json_decref(env);
    ncd_node_release(&n);
    ncd_sb_release(&sb);
    ncd_sb_release(&notes);
    ncd_findings_release(&l);
    ncd_ctx_free(ctx);
    return status;
}
