/* SPDX-License-Identifier: MIT */
/* nccl-doctor env: print, or keep in an rc file, the recommended NCCL_*
 * settings for this node. */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "ncd/check.h"
#include "ncd/error.h"
#include "ncd/rcfile.h"
#include "rcedit.h"

enum {
    OPT_FORMAT = CLI_OPT__NEXT,
    OPT_PROFILE,
    OPT_WRITE,
    OPT_REMOVE,
    OPT_DRY_RUN,
    OPT_DEBUG,
};

enum fmt { FMT_SH, FMT_ENV, FMT_DOCKER, FMT_K8S, FMT_SLURM };

static void put_notes(struct ncd_strbuf *sb, const char *notes,
                      const char *prefix)
{
    for (const char *p = notes; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        ncd_sb_printf(sb, "%s%.*s\n", prefix, (int)n, p);
        p += n + (nl ? 1 : 0);
    }
}

/* YAML double-quoted scalar. */
static void yaml_quote(struct ncd_strbuf *sb, const char *v)
{
    ncd_sb_putc(sb, '"');
    for (; *v; v++) {
        if (*v == '"' || *v == '\\')
            ncd_sb_putc(sb, '\\');
        ncd_sb_putc(sb, *v);
    }
    ncd_sb_putc(sb, '"');
}

static void render(struct ncd_strbuf *sb, json_t *env, enum fmt f,
                   const char *notes)
{
    const char *k;
    json_t *v;
    switch (f) {
    case FMT_SH:
        put_notes(sb, notes, "# ");
        json_object_foreach(env, k, v)
        {
            if (json_is_string(v)) {
                ncd_sb_printf(sb, "export %s=", k);
                ncd_sb_shell_quote(sb, json_string_value(v));
                ncd_sb_putc(sb, '\n');
            } else {
                ncd_sb_printf(sb, "unset %s\n", k);
            }
        }
        break;
    case FMT_ENV: /* docker --env-file / systemd EnvironmentFile */
        put_notes(sb, notes, "# ");
        json_object_foreach(env, k, v)
        {
            if (json_is_string(v))
                ncd_sb_printf(sb, "%s=%s\n", k, json_string_value(v));
            else
                ncd_sb_printf(sb, "# remove %s\n", k);
        }
        break;
    case FMT_DOCKER: { /* docker run flags, continued lines, no dangling \ */
        put_notes(sb, notes, "# ");
        int first = 1;
        json_object_foreach(env, k, v)
        {
            if (json_is_string(v)) {
                ncd_sb_printf(sb, "%s-e %s=", first ? "" : " \\\n", k);
                ncd_sb_shell_quote(sb, json_string_value(v));
                first = 0;
            }
        }
        if (!first)
            ncd_sb_putc(sb, '\n');
        break;
    }
    case FMT_K8S:
        put_notes(sb, notes, "# ");
        ncd_sb_puts(sb, "env:\n");
        json_object_foreach(env, k, v)
        {
            if (json_is_string(v)) {
                ncd_sb_printf(sb, "  - name: %s\n    value: ", k);
                yaml_quote(sb, json_string_value(v));
                ncd_sb_putc(sb, '\n');
            } else {
                ncd_sb_printf(sb, "  # remove %s\n", k);
            }
        }
        break;
    case FMT_SLURM: {
        put_notes(sb, notes, "# ");
        ncd_sb_puts(sb, "#SBATCH --export=ALL");
        json_object_foreach(env, k, v)
        {
            if (json_is_string(v))
                ncd_sb_printf(sb, ",%s=%s", k, json_string_value(v));
        }
        ncd_sb_putc(sb, '\n');
        break;
    }
    }
}

struct env_args {
    const char *write_to, *remove_from;
    enum fmt fmt;
    int profile, dry, debug;
};

static int env_opt(int opt, const char *arg, void *data)
{
    struct env_args *a = data;
    static const struct {
        const char *name;
        enum fmt f;
    } fmts[] = {{"sh", FMT_SH},      {"export", FMT_SH},   {"env", FMT_ENV},
                {"docker", FMT_DOCKER}, {"k8s", FMT_K8S}, {"kubernetes", FMT_K8S},
                {"slurm", FMT_SLURM}};
    switch (opt) {
    case OPT_FORMAT:
        for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++)
            if (strcmp(arg, fmts[i].name) == 0) {
                a->fmt = fmts[i].f;
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
    case OPT_DEBUG:
        a->debug = 1;
        return 0;
    }
    return -1;
}

int ncd_cmd_env(int argc, char **argv)
{
    static const struct option lo[] = {
        {"format", required_argument, 0, OPT_FORMAT},
        {"profile", required_argument, 0, OPT_PROFILE},
        {"write", required_argument, 0, OPT_WRITE},
        {"remove", required_argument, 0, OPT_REMOVE},
        {"dry-run", no_argument, 0, OPT_DRY_RUN},
        {"debug", no_argument, 0, OPT_DEBUG},
        {0, 0, 0, 0},
    };
    struct cli_common c;
    struct env_args a = {.fmt = FMT_SH, .profile = NCD_PROFILE_NONE};
    int pst = cli_parse("env", argc, argv, &c, lo, env_opt, &a, NULL);
    if (pst != CLI_CONTINUE)
        return pst;
    const char *write_to = a.write_to, *remove_from = a.remove_from;
    enum fmt fmt = a.fmt;
    int profile = a.profile, dry = a.dry;
    if (write_to && remove_from) {
        cli_err("env: --write and --remove exclude each other");
        return NCD_EXIT_TOOL;
    }
    if ((write_to || remove_from) && fmt != FMT_SH) {
        cli_err("env: an rc file takes shell (export) lines; drop --format");
        return NCD_EXIT_TOOL;
    }
    struct ncd_ctx *ctx = cli_ctx_new(&c);
    if (!ctx)
        return NCD_EXIT_TOOL;
    int status = NCD_EXIT_TOOL;
    struct ncd_findings l = {0};
    struct ncd_strbuf sb = {0}, notes = {0};
    json_t *facts = json_object(), *env = NULL;
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
        cli_err("%s%s", remove_from,
                act == NCD_RC_REMOVED
                    ? (dry ? ": would remove the block" : ": block removed")
                    : ": no nccl-doctor block, nothing to do");
        status = NCD_EXIT_OK;
        goto out;
    }

    struct ncd_check_opts o;
    char src[600];
    if (!facts || cli_nccl_version(ctx, c.nccl_version, &o, src, sizeof src) < 0)
        goto out;
    int rc = ncd_run_checks(ctx, &o, &l, facts);
    if (rc < 0) {
        cli_err("env: %s", ncd_strerror(rc));
        goto out;
    }
    env = ncd_recommended_env(facts, &l);
    if (!env || ncd_env_profile_apply(ctx, profile, env, &notes) < 0 ||
        ncd_env_debug_apply(profile, a.debug, env, &notes) < 0) {
        cli_err("env: out of memory");
        goto out;
    }
    if (json_object_size(env) == 0)
        ncd_sb_puts(&notes, "nothing to recommend: no usable network "
                            "interface (run `nccl-doctor check`)\n");
    if (c.json) {
        json_t *j = ncd_json_envelope(cli_hostname(ctx));
        if (j) {
            json_object_set(j, "recommended_env", env);
            json_object_set_new(j, "notes", ncd_json_string(ncd_sb_str(&notes)));
        }
        status = cli_print_json(j) < 0 ? NCD_EXIT_TOOL : NCD_EXIT_OK;
        goto out;
    }
    if (write_to) {
        struct ncd_strbuf body = {0};
        render(&body, env, FMT_SH, ncd_sb_str(&notes));
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
        cli_err("%s %s%s", write_to,
                dry && act != NCD_RC_UNCHANGED ? "would be " : "",
                what[act]);
        if (!dry && act != NCD_RC_UNCHANGED)
            cli_err("open a new shell or run `. %s`", write_to);
        status = NCD_EXIT_OK;
        goto out;
    }
    render(&sb, env, fmt, ncd_sb_str(&notes));
    status = cli_print_sb(&sb) < 0 ? NCD_EXIT_TOOL : NCD_EXIT_OK;
out:
    free(preview);
    json_decref(env);
    json_decref(facts);
    ncd_sb_release(&sb);
    ncd_sb_release(&notes);
    ncd_findings_release(&l);
    ncd_ctx_free(ctx);
    return status;
}
