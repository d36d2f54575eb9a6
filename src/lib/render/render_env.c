/* SPDX-License-Identifier: MIT */
/* The recommended environment (check.h), the `env --profile` presets, and
 * the formats of `env` (node_report.h). */
#define _GNU_SOURCE
#include "ncd/check.h"
#include "ncd/error.h"
#include "ncd/node_report.h"
#include "ncd/recommend.h"

#include <stdio.h>
#include <string.h>

json_t *ncd_recommended_env(const struct ncd_node *n,
                            const struct ncd_findings *l)
{
    json_t *env = json_object();
    if (!env)
        return NULL;
    int rdma = 0;
    if (ncd_node_has(n, NCD_PART_NET)) {
        const char *names[8], *values[8];
        int ne = ncd_recommend_env(&n->net.rec, names, values);
        for (int i = 0; i < ne; i++)
            json_object_set_new(env, names[i], ncd_json_string(values[i]));
        rdma = n->net.rec.rdma_active_ports;
    }
    /* A usable RDMA port is a decision too: never carry a suggestion to
     * disable IB (e.g. the intent behind NCCL_IB_DISABLE=true) into the
     * node's recommendation. */
    json_t *more = ncd_findings_env_json(l, NCD_SEV_WARNING);
    const char *k;
    json_t *v;
    json_object_foreach(more, k, v)
    {
        if (rdma > 0 && strcmp(k, "NCCL_IB_DISABLE") == 0 &&
            !json_is_null(v))
            continue; /* unsetting it is fine */
        if (!json_object_get(env, k))
            json_object_set(env, k, v);
    }
    json_decref(more);
    return env;
}

int ncd_env_profile_parse(const char *s)
{
    static const char *const names[] = {"none", "ethernet", "infiniband",
                                        "docker", "kubernetes"};
    for (int i = 0; i < 5; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    if (strcmp(s, "k8s") == 0)
        return NCD_PROFILE_KUBERNETES;
    if (strcmp(s, "ib") == 0)
        return NCD_PROFILE_INFINIBAND;
    return -1;
}

int ncd_env_debug_apply(enum ncd_env_profile p, int debug, json_t *env,
                        struct ncd_strbuf *notes)
{
    if (!debug) {
        if (p == NCD_PROFILE_KUBERNETES)
            ncd_sb_puts(notes, "NCCL_DEBUG=INFO is left out (add --debug): "
                               "every rank then logs its set-up and each "
                               "connection into the pod log, which floods "
                               "log collectors on large jobs; turn it on to "
                               "diagnose a failing job with `nccl-doctor "
                               "explain`.\n");
        return notes->oom ? NCD_ENOMEM : 0;
    }
    if (!json_object_get(env, "NCCL_DEBUG"))
        json_object_set_new(env, "NCCL_DEBUG", json_string("INFO"));
    if (!json_object_get(env, "NCCL_DEBUG_SUBSYS"))
        json_object_set_new(env, "NCCL_DEBUG_SUBSYS",
                            json_string("INIT,BOOTSTRAP,ENV,NET"));
    ncd_sb_puts(notes, "NCCL_DEBUG=INFO: every rank logs its set-up and each "
                       "connection (hundreds of lines per rank); keep it for "
                       "diagnosis (`nccl-doctor explain` reads these logs), "
                       "not for every job.\n");
    return notes->oom ? NCD_ENOMEM : 0;
}

int ncd_env_profile_apply(const struct ncd_node *n, enum ncd_env_profile p,
                          json_t *env, struct ncd_strbuf *notes)
{
    const char *hca = n->rdma.hca_list;
    switch (p) {
    case NCD_PROFILE_NONE:
        break;
    case NCD_PROFILE_ETHERNET:
        json_object_set_new(env, "NCCL_IB_DISABLE", json_string("1"));
        /* NSOCKS_PERTHREAD does nothing while SOCKET_NTHREADS resolves to
         * 0 (the default off AWS/GCP); threads x sockets <= 64 (NCCL
         * src/transport/net_socket.cc). */
        json_object_set_new(env, "NCCL_SOCKET_NTHREADS", json_string("4"));
        json_object_set_new(env, "NCCL_NSOCKS_PERTHREAD", json_string("4"));
        ncd_sb_puts(notes, "TCP only: 4 helper threads x 4 sockets per peer "
                           "is a starting point for 25-100 Gb/s links; "
                           "measure with `nccl-doctor tune`.\n");
        break;
    case NCD_PROFILE_INFINIBAND:
        json_object_del(env, "NCCL_IB_DISABLE");
        if (hca[0]) {
            json_object_set_new(env, "NCCL_IB_HCA", ncd_json_string(hca));
            ncd_sb_puts(notes, "NCCL_IB_HCA lists this node's ACTIVE ports "
                               "exactly ('=' avoids mlx5_1 also matching "
                               "mlx5_10).\n");
        } else {
            ncd_sb_puts(notes, "No ACTIVE RDMA port on this node: NCCL will "
                               "fall back to sockets. Check `ibstat`, the "
                               "subnet manager and the cabling.\n");
        }
        ncd_sb_puts(notes, "NCCL_SOCKET_IFNAME still matters: it carries the "
                           "bootstrap and IB's out-of-band connection "
                           "setup.\n");
        break;
    case NCD_PROFILE_DOCKER:
        ncd_sb_puts(notes, "docker run needs: --shm-size=1g (or --ipc=host) "
                           "--ulimit memlock=-1 --ulimit stack=67108864 "
                           "--network=host (or the host's NIC via macvlan/"
                           "SR-IOV) --gpus all; for RDMA also --device=/dev/"
                           "infiniband --cap-add=IPC_LOCK.\n");
        break;
    case NCD_PROFILE_KUBERNETES:
        ncd_sb_puts(notes, "pod spec: hostNetwork: true (or an SR-IOV/RDMA "
                           "device plugin), a /dev/shm emptyDir with medium: "
                           "Memory, securityContext.capabilities.add: "
                           "[IPC_LOCK] for RDMA.\n");
        ncd_sb_puts(notes, "Without hostNetwork the pod's eth0 is a veth on "
                           "the CNI overlay: it works but is slower than the "
                           "host NIC.\n");
        break;
    }
    return notes->oom ? NCD_ENOMEM : 0;
}

int ncd_env_format_parse(const char *s)
{
    static const struct {
        const char *name;
        enum ncd_env_format f;
    } fmts[] = {{"sh", NCD_ENV_SH},         {"export", NCD_ENV_SH},
                {"env", NCD_ENV_FILE},      {"docker", NCD_ENV_DOCKER},
                {"k8s", NCD_ENV_K8S},       {"kubernetes", NCD_ENV_K8S},
                {"slurm", NCD_ENV_SLURM}};
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++)
        if (strcmp(s, fmts[i].name) == 0)
            return (int)fmts[i].f;
    return -1;
}

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

/* YAML double-quoted scalar (YAML 1.2 5.7 escapes): a raw line break
 * there would fold into a space, other control characters are not
 * allowed at all. */
static void yaml_quote(struct ncd_strbuf *sb, const char *v)
{
    ncd_sb_putc(sb, '"');
    for (; *v; v++) {
        unsigned char c = (unsigned char)*v;
        if (c == '"' || c == '\\')
            ncd_sb_printf(sb, "\\%c", c);
        else if (c == '\n')
            ncd_sb_puts(sb, "\\n");
        else if (c == '\t')
            ncd_sb_puts(sb, "\\t");
        else if (c < 0x20 || c == 0x7f)
            ncd_sb_printf(sb, "\\x%02x", c);
        else
            ncd_sb_putc(sb, *v);
    }
    ncd_sb_putc(sb, '"');
}

/* Whether `v` can stand in `#SBATCH --export=...,NAME=v`: sbatch splits
 * the list at commas and the #SBATCH line at white space, and handles
 * quotes itself. */
static int slurm_plain(const char *v)
{
    for (; *v; v++)
        if (*v == ',' || *v == '\'' || *v == '"' || *v == '\\' ||
            (unsigned char)*v <= ' ' || *v == 0x7f)
            return 0;
    return 1;
}

void ncd_env_render(struct ncd_strbuf *sb, json_t *env,
                    enum ncd_env_format f, const char *notes)
{
    const char *k;
    json_t *v;
    switch (f) {
    case NCD_ENV_SH:
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
    case NCD_ENV_FILE: /* docker --env-file / systemd EnvironmentFile */
        put_notes(sb, notes, "# ");
        json_object_foreach(env, k, v)
        {
            if (!json_is_string(v))
                ncd_sb_printf(sb, "# remove %s\n", k);
            else if (strchr(json_string_value(v), '\n'))
                ncd_sb_printf(sb, "# %s left out: its value has a line break, "
                                  "which an env file cannot hold\n",
                              k);
            else
                ncd_sb_printf(sb, "%s=%s\n", k, json_string_value(v));
        }
        break;
    case NCD_ENV_DOCKER: { /* docker run flags, continued lines, no dangling \ */
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
    case NCD_ENV_K8S:
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
    case NCD_ENV_SLURM: {
        put_notes(sb, notes, "# ");
        ncd_sb_puts(sb, "#SBATCH --export=ALL");
        int rest = 0;
        json_object_foreach(env, k, v)
        {
            if (json_is_string(v) && slurm_plain(json_string_value(v)))
                ncd_sb_printf(sb, ",%s=%s", k, json_string_value(v));
            else
                rest = 1;
        }
        ncd_sb_putc(sb, '\n');
        if (!rest)
            break;
        /* what --export cannot carry: shell lines for the job script
         * (after the #SBATCH lines; --export=ALL passes them on to srun) */
        ncd_sb_puts(sb, "# in the job script (--export cannot carry these "
                        "values):\n");
        json_object_foreach(env, k, v)
        {
            if (!json_is_string(v)) {
                ncd_sb_printf(sb, "unset %s\n", k);
            } else if (!slurm_plain(json_string_value(v))) {
                ncd_sb_printf(sb, "export %s=", k);
                ncd_sb_shell_quote(sb, json_string_value(v));
                ncd_sb_putc(sb, '\n');
            }
        }
        break;
    }
    }
}
