/* SPDX-License-Identifier: MIT */
/*
 * probe: from the matrix to findings, JSON and text.  Pure functions of a
 * struct ncd_probe_result (unit tests build results by hand).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/error.h"
#include "ncd/nccl.h"
#include "ncd/probe.h"
#include "probe/probe_int.h"

#define CELL(r, i, j) (&(r)->cells[(size_t)(i) * (size_t)(r)->nranks + (j)])

int ncd_probe_result_index(struct ncd_probe_result *r)
{
    free(r->host_of);
    free(r->hosts);
    r->nhosts = 0;
    r->host_of = calloc((size_t)r->nranks + 1, sizeof *r->host_of);
    r->hosts = calloc((size_t)r->nranks + 1, sizeof *r->hosts);
    if (!r->host_of || !r->hosts)
        return NCD_ENOMEM;
    for (int i = 0; i < r->nranks; i++) {
        int h;
        for (h = 0; h < r->nhosts; h++)
            if (!strcmp(r->hosts[h], r->ranks[i].host))
                break;
        if (h == r->nhosts)
            snprintf(r->hosts[r->nhosts++], sizeof r->hosts[0], "%s",
                     r->ranks[i].host);
        r->host_of[i] = h;
    }
    return 0;
}

void ncd_probe_result_release(struct ncd_probe_result *r)
{
    free(r->host_of);
    free(r->hosts);
    free(r->ranks);
    free(r->cells);
    memset(r, 0, sizeof *r);
}

static enum ncd_probe_status worse(enum ncd_probe_status a,
                                   enum ncd_probe_status b)
{
    return ncd_probe_status_badness(b) > ncd_probe_status_badness(a) ? b : a;
}

enum ncd_probe_status ncd_probe_host_status(const struct ncd_probe_result *r,
                                            int a, int b)
{
    enum ncd_probe_status s = NCD_PROBE_NOT_TRIED;
    for (int i = 0; i < r->nranks; i++) {
        if (r->host_of[i] != a)
            continue;
        for (int j = 0; j < r->nranks; j++)
            if (j != i && r->host_of[j] == b)
                s = worse(s,
                          (enum ncd_probe_status)CELL(r, i, j)->nccl.status);
    }
    return s;
}

static int first_rank_of(const struct ncd_probe_result *r, int h)
{
    for (int i = 0; i < r->nranks; i++)
        if (r->host_of[i] == h)
            return i;
    return 0;
}

/* ---- findings ------------------------------------------------------------ */

static void ifname_findings(const struct ncd_probe_result *r,
                            struct ncd_findings *out)
{
    /* NCCL_SOCKET_IFNAME that matches nothing on a host */
    for (int h = 0; h < r->nhosts; h++) {
        const struct ncd_probe_rank *k = &r->ranks[first_rank_of(r, h)];
        if (k->nccl_if[0])
            continue;
        struct ncd_finding *f;
        if (k->ifname_set) {
            f = ncd_findings_add(out, "net.ifname.no-match-host",
                                 NCD_CAT_NET_IFNAME, NCD_SEV_ERROR,
                                 "NCCL_SOCKET_IFNAME=%s matches no usable "
                                 "interface on %s",
                                 k->socket_ifname, k->host);
            if (!f)
                return;
            ncd_finding_cause(f, "NCCL on %s finds no socket interface "
                                 "(\"Bootstrap : no socket interface "
                                 "found\"): every rank there fails at init, "
                                 "and the others wait for it.",
                              k->host);
            if (k->rec_ifname[0]) {
                ncd_finding_fix(f, "On %s set NCCL_SOCKET_IFNAME=%s (its "
                                   "interface %s, %s), or unset it.",
                                k->host, k->rec_ifname, k->rec_if,
                                k->rec_addr);
                ncd_finding_env(f, "NCCL_SOCKET_IFNAME", k->rec_ifname);
            }
        } else {
            f = ncd_findings_add(out, "net.iface-choice.none-host",
                                 NCD_CAT_NET_IFACE_CHOICE, NCD_SEV_ERROR,
                                 "NCCL finds no usable interface on %s",
                                 k->host);
            if (!f)
                return;
            ncd_finding_cause(f, "No interface of %s is UP and RUNNING with "
                                 "an address NCCL accepts.",
                              k->host);
            ncd_finding_fix(f, "Bring up the data interface of %s (ip link "
                               "set DEV up) and give it an address.",
                            k->host);
        }
        for (int i = 0; i < r->nranks; i++)
            if (r->host_of[i] != h)
                ncd_finding_evidence(
                    f, "%s: NCCL_SOCKET_IFNAME=%s, NCCL picks %s (%s)",
                    r->ranks[i].host,
                    r->ranks[i].ifname_set ? r->ranks[i].socket_ifname
                                           : "(unset)",
                    r->ranks[i].nccl_if[0] ? r->ranks[i].nccl_if : "nothing",
                    r->ranks[i].nccl_addr);
        ncd_finding_evidence(f, "%s: NCCL_SOCKET_IFNAME=%s, NCCL picks "
                                "nothing; nccl-doctor recommends %s",
                             k->host,
                             k->ifname_set ? k->socket_ifname : "(unset)",
                             k->rec_if[0] ? k->rec_if : "nothing");
    }
    /* NCCL_SOCKET_IFNAME set differently across hosts */
    int differ = 0;
    for (int i = 1; i < r->nranks; i++)
        if (r->ranks[i].ifname_set != r->ranks[0].ifname_set ||
            strcmp(r->ranks[i].socket_ifname, r->ranks[0].socket_ifname))
            differ = 1;
    if (differ) {
        struct ncd_finding *f = ncd_findings_add(
            out, "net.ifname.differs", NCD_CAT_NET_IFNAME, NCD_SEV_WARNING,
            "NCCL_SOCKET_IFNAME differs between ranks");
        if (!f)
            return;
        for (int h = 0; h < r->nhosts; h++) {
            const struct ncd_probe_rank *k = &r->ranks[first_rank_of(r, h)];
            ncd_finding_evidence(f, "%s: NCCL_SOCKET_IFNAME=%s -> %s", k->host,
                                 k->ifname_set ? k->socket_ifname : "(unset)",
                                 k->nccl_if[0] ? k->nccl_if : "no interface");
        }
        ncd_finding_cause(f, "A job's ranks usually get one environment; a "
                             "value set on some hosts only (a .bashrc, a "
                             "node image) makes them pick different "
                             "networks.");
        ncd_finding_fix(f, "Set the same NCCL_SOCKET_IFNAME for every rank "
                           "in the launcher (mpirun -x, srun --export, the "
                           "torchrun wrapper).");
    }
    /* interface names NCCL picks differ across hosts (informational unless
     * something fails) */
    int names_differ = 0;
    for (int i = 1; i < r->nranks; i++)
        if (strcmp(r->ranks[i].nccl_if, r->ranks[0].nccl_if) &&
            r->ranks[i].nccl_if[0] && r->ranks[0].nccl_if[0])
            names_differ = 1;
    if (names_differ) {
        struct ncd_finding *f = ncd_findings_add(
            out, "net.iface-choice.inconsistent", NCD_CAT_NET_IFACE_CHOICE,
            NCD_SEV_INFO, "NCCL picks differently named interfaces on "
                          "different hosts");
        if (!f)
            return;
        for (int h = 0; h < r->nhosts; h++) {
            const struct ncd_probe_rank *k = &r->ranks[first_rank_of(r, h)];
            ncd_finding_evidence(f, "%s: %s %s (%s)", k->host, k->nccl_if,
                                 k->nccl_addr, k->nccl_pass);
        }
        ncd_finding_cause(f, "Not wrong by itself when the hosts differ, "
                             "but a name NCCL_SOCKET_IFNAME would have to "
                             "list for every host.");
    }
}

static void version_findings(const struct ncd_probe_result *r,
                             struct ncd_findings *out)
{
    int v0 = 0, differ = 0;
    for (int i = 0; i < r->nranks; i++) {
        int v = r->ranks[i].nccl_version;
        if (!v || strstr(r->ranks[i].nccl_version_src, "not found"))
            continue; /* only versions found on (or given for) the hosts */
        if (!v0)
            v0 = v;
        else if (v != v0)
            differ = 1;
    }
    if (!differ)
        return;
    struct ncd_finding *f = ncd_findings_add(
        out, "version.mismatch.hosts", NCD_CAT_VERSION_MISMATCH,
        NCD_SEV_ERROR, "Ranks load different NCCL versions");
    if (!f)
        return;
    for (int h = 0; h < r->nhosts; h++) {
        const struct ncd_probe_rank *k = &r->ranks[first_rank_of(r, h)];
        char vb[16];
        ncd_nccl_version_str(k->nccl_version, vb, sizeof vb);
        ncd_finding_evidence(f, "%s: NCCL %s (%s)", k->host,
                             k->nccl_version ? vb : "not found",
                             k->nccl_version_src);
    }
    ncd_finding_cause(f, "NCCL checks the version at init (\"Mismatched "
                         "NCCL version detected\"); mixed versions also "
                         "pick different protocols and hang.");
    ncd_finding_fix(f, "Install the same NCCL everywhere (same container "
                       "image, same pip nvidia-nccl-cu* wheel).");
}

static void hostname_findings(const struct ncd_probe_result *r,
                              struct ncd_findings *out)
{
    for (int h = 0; h < r->nhosts; h++) {
        int t = first_rank_of(r, h);
        const struct ncd_probe_rank *k = &r->ranks[t];
        /* the same name on ranks with different boot ids */
        for (int i = 0; i < r->nranks; i++) {
            if (r->host_of[i] != h || !k->boot_id[0] ||
                !r->ranks[i].boot_id[0] ||
                !strcmp(k->boot_id, r->ranks[i].boot_id))
                continue;
            struct ncd_finding *f = ncd_findings_add(
                out, "net.hostname.duplicate", NCD_CAT_NET_HOSTNAME,
                NCD_SEV_ERROR, "Two machines are both called %s", k->host);
            if (f) {
                ncd_finding_evidence(f, "rank %d: boot_id %s", t, k->boot_id);
                ncd_finding_evidence(f, "rank %d: boot_id %s", i,
                                     r->ranks[i].boot_id);
                ncd_finding_cause(f, "NCCL groups ranks by host hash "
                                     "(host name + boot id): identical "
                                     "names confuse launchers and logs.");
                ncd_finding_fix(f, "Give every node its own host name "
                                   "(hostnamectl set-hostname).");
            }
            break;
        }
        /* how every rank resolves this host's name */
        int differ = 0, unresolved = 0, loopback = 0, foreign = 0;
        const char *first = NULL;
        for (int i = 0; i < r->nranks; i++) {
            const struct ncd_probe_cell *c = CELL(r, i, t);
            if (!c->resolved[0]) {
                unresolved = 1;
                continue;
            }
            if (!strncmp(c->resolved, "127.", 4) ||
                !strcmp(c->resolved, "::1"))
                loopback = 1;
            else {
                int mine = 0;
                for (int a = 0; a < k->n_addrs; a++)
                    if (!strcmp(k->addrs[a], c->resolved))
                        mine = 1;
                if (!mine && k->n_addrs)
                    foreign = 1;
            }
            if (!first)
                first = c->resolved;
            else if (strcmp(first, c->resolved))
                differ = 1;
        }
        if (r->nhosts < 2)
            loopback = 0; /* harmless when every rank is on this host */
        if (!differ && !unresolved && !foreign && !loopback)
            continue;
        enum ncd_severity sev =
            differ || foreign ? NCD_SEV_WARNING : NCD_SEV_INFO;
        struct ncd_finding *f = ncd_findings_add(
            out, differ ? "net.hostname.resolves-differently"
                 : foreign ? "net.hostname.foreign-address"
                 : unresolved ? "net.hostname.unresolved"
                              : "net.hostname.loopback",
            NCD_CAT_NET_HOSTNAME, sev,
            differ ? "The name %s resolves differently on different hosts"
            : foreign
                ? "The name %s resolves to an address %s does not have"
            : unresolved ? "The name %s does not resolve on every host"
                         : "The name %s resolves to a loopback address",
            k->host, k->host);
        if (!f)
            return;
        for (int hh = 0; hh < r->nhosts; hh++) {
            const struct ncd_probe_cell *c = CELL(r, first_rank_of(r, hh), t);
            ncd_finding_evidence(f, "on %s: %s -> %s", r->hosts[hh], k->host,
                                 c->resolved[0] ? c->resolved
                                                : c->resolve_err);
        }
        if (k->n_addrs) {
            struct ncd_strbuf sb = {0};
            for (int a = 0; a < k->n_addrs; a++)
                ncd_sb_printf(&sb, "%s%s", a ? ", " : "", k->addrs[a]);
            ncd_finding_evidence(f, "%s's addresses: %s", k->host,
                                 ncd_sb_str(&sb));
            ncd_sb_release(&sb);
        }
        ncd_finding_cause(
            f, "Launchers (MASTER_ADDR, mpirun host lists, Slurm) and "
               "NCCL_COMM_ID connect by name: a name that means another "
               "address on some hosts sends their ranks elsewhere "
               "(/etc/hosts copies out of date, 127.0.1.1 entries).");
        ncd_finding_fix(f, "Make /etc/hosts (or DNS) agree on every node: "
                           "%s should resolve to %s everywhere.",
                        k->host,
                        k->nccl_addr[0] && strncmp(k->nccl_addr, "127.", 4) &&
                                strcmp(k->nccl_addr, "::1")
                            ? k->nccl_addr
                        : k->n_addrs ? k->addrs[0]
                                     : "its data address");
    }
}

/* DF probes lost at a size both ends' MTU allows, or MTUs that differ
 * between the two ends (NCCL's address: the UDP echo listens there). */
static void mtu_findings(const struct ncd_probe_result *r,
                         struct ncd_findings *out)
{
    int n = r->nranks;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            const struct ncd_probe_cell *c = CELL(r, i, j);
            if (i == j || c->nccl.status != NCD_PROBE_OK)
                continue;
            int mi = r->ranks[i].mtu, mj = r->ranks[j].mtu;
            if (!(c->mtu_lost || (mi && mj && mi != mj)))
                continue;
            if (ncd_findings_find(out, "net.unreachable.mtu"))
                goto mtu_done;
            int lost = 0;
            for (int x = 0; x < n * n; x++)
                if (r->cells[x].nccl.status == NCD_PROBE_OK &&
                    r->cells[x].mtu_lost)
                    lost = 1;
            /* the same MTU at both ends and DF packets lost: a hop in
             * between (switch, tunnel, VPC) carries less */
            int path = mi == mj || !mi || !mj, mx = mi > mj ? mi : mj;
            struct ncd_finding *f =
                path ? ncd_findings_add(
                           out, "net.unreachable.mtu", NCD_CAT_NET_UNREACHABLE,
                           lost ? NCD_SEV_ERROR : NCD_SEV_WARNING,
                           "Large packets are lost between %s and %s (both "
                           "mtu %d): a hop between them carries less",
                           r->ranks[i].host, r->ranks[j].host, mx)
                     : ncd_findings_add(
                           out, "net.unreachable.mtu", NCD_CAT_NET_UNREACHABLE,
                           lost ? NCD_SEV_ERROR : NCD_SEV_WARNING,
                           "MTU mismatch between %s (%s mtu %d) and %s (%s "
                           "mtu %d)",
                           r->ranks[i].host, r->ranks[i].nccl_if, mi,
                           r->ranks[j].host, r->ranks[j].nccl_if, mj);
            if (!f)
                return;
            for (int x = 0; x < n; x++)
                for (int y = 0; y < n; y++) {
                    const struct ncd_probe_cell *d = CELL(r, x, y);
                    if (x == y || d->nccl.status != NCD_PROBE_OK ||
                        (!d->mtu_ok && !d->mtu_lost))
                        continue;
                    ncd_finding_evidence(
                        f, "%s -> %s: DF packets up to %d bytes arrive%s",
                        r->ranks[x].host, r->ranks[y].host, d->mtu_ok,
                        d->mtu_lost ? "" : " (all sizes tried)");
                    if (d->mtu_lost)
                        ncd_finding_evidence(
                            f, "%s -> %s: a DF packet of %d bytes is lost",
                            r->ranks[x].host, r->ranks[y].host, d->mtu_lost);
                }
            ncd_finding_cause(
                f, "Small messages pass and large ones vanish: NCCL "
                   "connects, then hangs or times out in the first large "
                   "collective.  Both ends of a link need the same MTU "
                   "(and every switch in between must carry it).");
            if (path)
                ncd_finding_fix(f, "Raise the MTU of the switches/tunnel "
                                   "between %s and %s to %d, or lower %s on "
                                   "every node to what arrives (`ip link "
                                   "set %s mtu %d`).",
                                r->ranks[i].host, r->ranks[j].host, mx,
                                r->ranks[i].nccl_if, r->ranks[i].nccl_if,
                                c->mtu_ok ? c->mtu_ok : 1500);
            else
                ncd_finding_fix(f, "Set one MTU on every node's data "
                                   "interface, e.g. `ip link set %s mtu %d` "
                                   "on %s (and in the switch/VPC config).",
                                mi > mj ? r->ranks[j].nccl_if
                                        : r->ranks[i].nccl_if,
                                mx,
                                mi > mj ? r->ranks[j].host : r->ranks[i].host);
        }
mtu_done:
    (void)0;
}

static void perf_findings(const struct ncd_probe_result *r, int use_rec,
                          struct ncd_findings *out)
{
    int n = r->nranks, m = 0;
    float *v = calloc((size_t)n * (size_t)n + 1, sizeof *v);
    if (!v)
        return;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j && r->host_of[i] != r->host_of[j] &&
                ncd__probe_path(CELL(r, i, j), use_rec)->status ==
                    NCD_PROBE_OK &&
                ncd__probe_path(CELL(r, i, j), use_rec)->bw_gbps > 0)
                v[m++] = ncd__probe_path(CELL(r, i, j), use_rec)->bw_gbps;
    if (m < 3) {
        free(v);
        return;
    }
    for (int a = 0; a < m; a++)
        for (int b = a + 1; b < m; b++)
            if (v[b] < v[a]) {
                float t = v[a];
                v[a] = v[b];
                v[b] = t;
            }
    float med = v[m / 2];
    free(v);
    /* a slow link is slow both ways: one slow direction alone is usually
     * a busy CPU during that burst, not the path */
    struct ncd_finding *f = NULL;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            const struct ncd_probe_conn
                *c = ncd__probe_path(CELL(r, i, j), use_rec),
                *d = ncd__probe_path(CELL(r, j, i), use_rec);
            if (r->host_of[i] == r->host_of[j] ||
                c->status != NCD_PROBE_OK || d->status != NCD_PROBE_OK ||
                c->bw_gbps <= 0 || d->bw_gbps <= 0 ||
                c->bw_gbps * 3 > med || d->bw_gbps * 3 > med)
                continue;
            if (!f)
                f = ncd_findings_add(out, "perf.config.slow-pair",
                                     NCD_CAT_PERF_CONFIG, NCD_SEV_WARNING,
                                     "Some host pairs are more than 3x "
                                     "slower both ways than the median "
                                     "(%.3f GB/s)",
                                     (double)med);
            if (!f)
                return;
            ncd_finding_evidence(f, "%s <-> %s: %.3f / %.3f GB/s",
                                 r->ranks[i].host, r->ranks[j].host,
                                 (double)c->bw_gbps, (double)d->bw_gbps);
        }
    if (f) {
        ncd_finding_cause(f, "A ring runs at the speed of its slowest link: "
                             "one slow pair slows every collective.");
        ncd_finding_fix(f, "Check those links (speed, duplex, bonding, a "
                           "slower path or a busy switch port).");
    }
}

int ncd_probe_analyze(const struct ncd_probe_result *r,
                      struct ncd_findings *out)
{
    char common[32];
    int use_rec = ncd__probe_use_rec(r, common, sizeof common);
    ifname_findings(r, out);
    version_findings(r, out);
    if (ncd__probe_reach_findings(r, use_rec, common, out))
        return NCD_ENOMEM;
    mtu_findings(r, out);
    hostname_findings(r, out);
    perf_findings(r, use_rec, out);
    int bad = 0, tried = 0;
    for (int i = 0; i < r->nranks; i++)
        for (int j = 0; j < r->nranks; j++)
            if (i != j) {
                tried++;
                if (CELL(r, i, j)->nccl.status != NCD_PROBE_OK)
                    bad = 1;
            }
    if (!bad && r->nhosts == 1 && r->nranks > 1) {
        /* one host: the kernel routes its own addresses through loopback,
         * so nothing crossed the network -- not an "ok" about it */
        struct ncd_finding *f = ncd_findings_add(
            out, "net.unreachable.none", NCD_CAT_NET_UNREACHABLE, NCD_SEV_INFO,
            "Every rank reaches every rank on NCCL's interface (%d pairs), "
            "but all ranks are on one host (%s): the network was not tested",
            tried, r->hosts[0]);
        if (!f)
            return NCD_ENOMEM;
        ncd_finding_cause(f, "Connections between addresses of one host never "
                             "leave it (the kernel routes them through "
                             "loopback): the link, its MTU and firewall rules "
                             "on the interface were not exercised.");
        ncd_finding_fix(f, "Run probe with ranks on the hosts the job uses "
                           "(mpirun, srun, torchrun, or --rendezvous "
                           "HOST:PORT with WORLD_SIZE and RANK).");
    } else if (!bad) {
        struct ncd_finding *f = ncd_findings_add(
            out, "net.unreachable.none", NCD_CAT_NET_UNREACHABLE, NCD_SEV_OK,
            "Every rank reaches every rank on NCCL's interface (%d pairs)",
            tried);
        if (!f)
            return NCD_ENOMEM;
    }
    ncd_findings_sort(out);
    return 0;
}
