/* SPDX-License-Identifier: MIT */
/* Check: the NCCL_* environment (and NCCL's config files, which the node's
 * ENV part applied as NCCL does at init) against the catalog in
 * data/nccl-vars.yaml. */
#define _GNU_SOURCE
#include "ncd/check.h"
#include "ncd/error.h"
#include "ncd/ncclvars.h"
#include "ncd/node.h"
#include "ncd/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int ncd_check_ncclenv(const struct ncd_node *n,
                      const struct ncd_check_opts *opts,
                      struct ncd_findings *out);

static const char *origin(const struct ncd_conf_result *conf,
                          const char *name, char *buf, size_t n)
{
    for (size_t i = 0; i < conf->n; i++)
        if (conf->v[i].applied && strcmp(conf->v[i].name, name) == 0) {
            snprintf(buf, n, "%s:%d", conf->v[i].file, conf->v[i].line);
            return buf;
        }
    return "environment";
}

static int check_var(const struct ncd_node *n,
                     const struct ncd_var_catalog *cat,
                     const struct ncd_conf_result *conf, const char *name,
                     const char *value, struct ncd_findings *out)
{
    struct ncd_finding *f = NULL;
    char ob[300];
    const char *from = origin(conf, name, ob, sizeof ob);
    for (size_t i = 0; i < cat->n_other; i++)
        if (strncmp(name, cat->other_prefix[i],
                    strlen(cat->other_prefix[i])) == 0)
            return 0;
    const struct ncd_var_def *d = ncd_var_find(cat, name);
    if (d) {
        struct ncd_var_verdict v;
        ncd_var_check_value(d, value, &v);
        if (v.sev <= NCD_SEV_OK)
            return 0;
        f = ncd_findings_add(out, "env.bad-value", NCD_CAT_ENV_INVALID, v.sev,
                             "%s=%s: %s", name, value, v.msg);
        if (!f)
            return NCD_ENOMEM;
        ncd_finding_evidence(f, "%s=%s (from %s)", name, value, from);
        ncd_finding_cause(f, "NCCL parses this variable as %s and does not "
                             "reject values it does not understand.%s%s",
                          d->type == NCD_VT_LEVEL ? "a case-sensitive level"
                          : d->type == NCD_VT_INT ||
                                  d->type == NCD_VT_FLAG1
                              ? "an integer (strtoll)"
                              : "one of fixed words",
                          d->doc ? " Note: " : "", d->doc ? d->doc : "");
        int active = 0;
        if (v.fix[0] && strcmp(name, "NCCL_IB_DISABLE") == 0 &&
            strtoll(v.fix, NULL, 0) != 0)
            active = n->rdma.active_ports;
        if (active > 0) {
            /* Never tell a node with a usable RDMA port to disable IB. */
            ncd_finding_fix(f, "NCCL reads '%s' as 0, so IB stays on, which "
                               "is right here: %d active RDMA port(s). "
                               "Remove the variable (1 forces TCP sockets, "
                               "for a comparison only).",
                            value, active);
            ncd_finding_env(f, name, NULL);
        } else if (v.fix[0]) {
            ncd_finding_fix(f, "Set %s=%s.", name, v.fix);
            ncd_finding_env(f, name, v.fix);
        }
        return 0;
    }
    const struct ncd_var_gone *g = ncd_var_find_gone(cat, name);
    if (g) {
        f = ncd_findings_add(
            out, g->removed ? "env.removed-variable" : "env.not-an-nccl-variable",
            NCD_CAT_ENV_INVALID, NCD_SEV_WARNING,
            g->removed ? "%s is no longer read by NCCL (removed in %s)"
                       : "%s is not an NCCL variable: setting it does nothing",
            name, g->removed);
        if (!f)
            return NCD_ENOMEM;
        ncd_finding_evidence(f, "%s=%s (from %s)", name, value, from);
        ncd_finding_cause(f, "%s", g->instead);
        if (g->rename) {
            ncd_finding_fix(f, "Use %s instead.", g->rename);
            ncd_finding_env(f, g->rename, value);
        } else {
            ncd_finding_fix(f, "Remove it; see the cause for what really "
                               "controls this.");
        }
        ncd_finding_env(f, name, NULL);
        return 0;
    }
    const char *sug = ncd_var_suggest(cat, name);
    if (sug) {
        f = ncd_findings_add(out, "env.misspelt-variable", NCD_CAT_ENV_INVALID,
                             NCD_SEV_WARNING,
                             "%s is not an NCCL variable: did you mean %s?",
                             name, sug);
        if (!f)
            return NCD_ENOMEM;
        ncd_finding_evidence(f, "%s=%s (from %s)", name, value, from);
        ncd_finding_cause(f, "NCCL ignores names it does not know, without a "
                             "message, so the setting has no effect.");
        ncd_finding_fix(f, "Rename it to %s.", sug);
        ncd_finding_env(f, sug, value);
        ncd_finding_env(f, name, NULL);
        return 0;
    }
    f = ncd_findings_add(out, "env.unknown-variable", NCD_CAT_ENV_INVALID,
                         NCD_SEV_INFO,
                         "%s is not in nccl-doctor's catalog of NCCL "
                         "variables",
                         name);
    if (!f)
        return NCD_ENOMEM;
    ncd_finding_evidence(f, "%s=%s (from %s)", name, value, from);
    ncd_finding_cause(f, "It may be an internal NCCL knob (NCCL has ~200 "
                         "parameters) or a typo; NCCL silently ignores "
                         "names it does not read. Check with "
                         "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV, which logs "
                         "'<VAR> set by environment to ...' for every "
                         "variable it reads.");
    return 0;
}

int ncd_check_ncclenv(const struct ncd_node *n,
                      const struct ncd_check_opts *opts,
                      struct ncd_findings *out)
{
    (void)opts;
    const struct ncd_conf_result *cp = &n->env.conf;
    const struct ncd_var_catalog *cat = &n->catalog;
    struct ncd_finding *f;
    int rc = 0;
    /* Config-file settings, and the ones the environment overrides. */
    for (size_t i = 0; i < cp->n; i++) {
        const struct ncd_conf_entry *e = &cp->v[i];
        if (e->bad) {
            f = ncd_findings_add(out, "env.conf-bad-line", NCD_CAT_ENV_INVALID,
                                 NCD_SEV_WARNING,
                                 "%s:%d is not a VAR=value line NCCL can use",
                                 e->file, e->line);
            if (!f) {
                rc = NCD_ENOMEM;
                goto done;
            }
            ncd_finding_evidence(f, "%s:%d: %s%s%s", e->file, e->line,
                                 e->name, e->value[0] ? "=" : "", e->value);
            ncd_finding_cause(f, "NCCL does not trim spaces: 'NCCL_X = 1' "
                                 "sets a variable named 'NCCL_X ' to ' 1'. "
                                 "Comments must start in column 0.");
            ncd_finding_fix(f, "Write NAME=value with no spaces.");
        }
    }
    if (cp->conf_file_error[0]) {
        f = ncd_findings_add(out, "env.conf-file-unreadable",
                             NCD_CAT_ENV_INVALID, NCD_SEV_WARNING,
                             "NCCL_CONF_FILE=%s cannot be read: NCCL "
                             "silently ignores it",
                             ncd_node_getenv(n, "NCCL_CONF_FILE"));
        if (!f) {
            rc = NCD_ENOMEM;
            goto done;
        }
        ncd_finding_evidence(f, "%s", cp->conf_file_error);
        ncd_finding_cause(f, "NCCL reads NCCL_CONF_FILE (2.23+) instead of "
                             "~/.nccl.conf, without '~' expansion, and says "
                             "nothing when it cannot open it.");
        ncd_finding_fix(f, "Point it at a readable file with an absolute "
                           "path, or unset it.");
    }
    if (cp->n_files) {
        f = ncd_findings_add(out, "env.conf-file", NCD_CAT_ENV_INVALID,
                             NCD_SEV_INFO,
                             "NCCL will read settings from %s%s%s",
                             cp->files_read[0], cp->n_files > 1 ? " and " : "",
                             cp->n_files > 1 ? cp->files_read[1] : "");
        if (!f) {
            rc = NCD_ENOMEM;
            goto done;
        }
        for (size_t i = 0; i < cp->n; i++)
            if (!cp->v[i].bad)
                ncd_finding_evidence(f, "%s:%d: %s=%s%s", cp->v[i].file,
                                     cp->v[i].line, cp->v[i].name,
                                     cp->v[i].value,
                                     cp->v[i].applied
                                         ? ""
                                         : "  (overridden by the environment "
                                           "or an earlier file)");
        ncd_finding_cause(f, "Precedence: environment > NCCL_CONF_FILE or "
                             "~/.nccl.conf > /etc/nccl.cp-> Settings in "
                             "these files apply to every job of this user / "
                             "host, which is easy to forget.");
    }
    for (size_t i = 0; i < n->env.n; i++) {
        const char *name = n->env.v[i].name, *value = n->env.v[i].value;
        if (strncmp(name, "NCCL_", 5) != 0) {
            if (strncasecmp(name, "NCCL_", 5) == 0) {
                f = ncd_findings_add(
                    out, "env.misspelt-variable", NCD_CAT_ENV_INVALID,
                    NCD_SEV_WARNING,
                    "%s is not read by NCCL: variable names are "
                    "case-sensitive",
                    name);
                if (!f) {
                    rc = NCD_ENOMEM;
                    break;
                }
                ncd_finding_evidence(f, "%s=%s", name, value);
                ncd_finding_fix(f, "Use upper case.");
            }
            continue;
        }
        if ((rc = check_var(n, cat, cp, name, value, out)) < 0)
            break;
    }
done:
    return rc < 0 ? rc : 0;
}
