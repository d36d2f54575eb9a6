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
                s = worse(s, (enum ncd_probe_status)CELL(r, i, j)->status);
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

static int failed(int st)
{
    return st != NCD_PROBE_OK && st != NCD_PROBE_NOT_TRIED;
}

static int in_range(const struct ncd_probe_rank *k, int port)
{
    return k->port_lo > 0 && port >= k->port_lo && port <= k->port_hi;
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

/* What the recommended interfaces achieve, over all pairs. */
static int rec_all_ok(const struct ncd_probe_result *r, char *common,
                      size_t len)
{
    common[0] = 0;
    for (int i = 0; i < r->nranks; i++) {
        if (!r->ranks[i].rec_ifname[0])
            return 0;
        if (i == 0)
            snprintf(common, len, "%s", r->ranks[i].rec_ifname);
        else if (strcmp(common, r->ranks[i].rec_ifname))
            common[0] = 0;
        for (int j = 0; j < r->nranks; j++)
            if (r->host_of[j] != r->host_of[i] &&
                CELL(r, i, j)->rec_status != NCD_PROBE_OK)
                return 0;
    }
    return 1;
}

static void reach_findings(const struct ncd_probe_result *r,
                           struct ncd_findings *out)
{
    int n = r->nranks, any_fail = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j && failed(CELL(r, i, j)->status) &&
                CELL(r, i, j)->status != NCD_PROBE_NO_ADDR)
                any_fail = 1;
    char common[32];
    int rec_ok = rec_all_ok(r, common, sizeof common);
    int handled_target[NCD_PROBE_MAX_RANKS] = {0};

    /* 1. a port filter on a host: its data port fails from every peer while
     *    its control port (outside the ephemeral range) answers */
    for (int h = 0; h < r->nhosts && any_fail; h++) {
        int peers = 0, data_fail = 0, ctl_ok = 0, kind = 0;
        int t = first_rank_of(r, h);
        for (int j = 0; j < n; j++) {
            if (r->host_of[j] != h)
                continue;
            for (int i = 0; i < n; i++) {
                if (r->host_of[i] == h)
                    continue;
                const struct ncd_probe_cell *c = CELL(r, i, j);
                peers++;
                if (failed(c->status) && c->status != NCD_PROBE_NO_ADDR) {
                    data_fail++;
                    kind = c->status;
                    if (c->ctl_status == NCD_PROBE_OK)
                        ctl_ok++;
                }
            }
        }
        if (!peers || data_fail != peers || ctl_ok != data_fail)
            continue;
        const struct ncd_probe_rank *k = &r->ranks[t];
        int inr = in_range(k, k->tcp_port);
        struct ncd_finding *f = ncd_findings_add(
            out, "net.unreachable.port-filtered", NCD_CAT_NET_UNREACHABLE,
            NCD_SEV_ERROR,
            inr ? "A firewall on %s blocks its ephemeral ports %d-%d, where "
                  "NCCL listens"
                : "A firewall on %s blocks the port NCCL listens on (%d; "
                  "ephemeral range %d-%d)",
            k->host, inr ? k->port_lo : k->tcp_port,
            inr ? k->port_hi : k->port_lo, inr ? k->port_hi : k->port_hi);
        if (!f)
            return;
        for (int j = 0; j < n; j++) {
            if (r->host_of[j] != h)
                continue;
            handled_target[j] = 1;
            for (int i = 0; i < n; i++) {
                if (r->host_of[i] == h)
                    continue;
                const struct ncd_probe_cell *c = CELL(r, i, j);
                ncd_finding_evidence(
                    f, "%s -> %s %s:%d (ephemeral port): %s; control port "
                       "%d on the same address: ok",
                    r->ranks[i].host, k->host, r->ranks[j].nccl_addr,
                    c->port, ncd_probe_status_name(c->status),
                    r->ranks[j].ctl_port);
            }
        }
        ncd_finding_evidence(f, "%s: net.ipv4.ip_local_port_range = %d %d",
                             k->host, k->port_lo, k->port_hi);
        ncd_finding_cause(
            f, "NCCL's bootstrap and Socket transport listen on ports the "
               "kernel draws from net.ipv4.ip_local_port_range; %s's "
               "firewall %s connections to them, so every peer's connect "
               "%s (\"connect to ... failed : %s\").",
            k->host, kind == NCD_PROBE_REFUSED ? "rejects" : "drops",
            kind == NCD_PROBE_REFUSED ? "is refused" : "times out",
            kind == NCD_PROBE_REFUSED ? "Connection refused"
                                      : "Connection timed out");
        ncd_finding_fix(
            f, "On %s allow TCP %d-%d from the other nodes, e.g. `nft add "
               "rule inet filter input ip saddr <cluster subnet> tcp dport "
               "%d-%d accept` (firewalld: firewall-cmd --permanent "
               "--zone=trusted --add-source=<cluster subnet>), or trust the "
               "data interface%s%s.",
            k->host, k->port_lo, k->port_hi, k->port_lo, k->port_hi,
            k->nccl_if[0] ? " " : "", k->nccl_if);
    }

    /* 2. NCCL's interface does not reach, the recommended one does */
    if (any_fail && rec_ok) {
        int bad = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                if (i != j && !handled_target[j] &&
                    failed(CELL(r, i, j)->status))
                    bad = 1;
        if (bad) {
            struct ncd_finding *f = ncd_findings_add(
                out, "net.iface-choice.unreachable", NCD_CAT_NET_IFACE_CHOICE,
                NCD_SEV_ERROR,
                "The interface NCCL picks does not reach the other hosts; "
                "%s does",
                common[0] ? common : "the recommended interface");
            if (!f)
                return;
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++) {
                    if (i == j || handled_target[j])
                        continue;
                    const struct ncd_probe_cell *c = CELL(r, i, j);
                    if (!failed(c->status))
                        continue;
                    handled_target[j] = 1;
                    ncd_finding_evidence(
                        f, "%s -> %s via NCCL's %s: %s:%d %s (%s); via %s "
                           "(%s): ok",
                        r->ranks[i].host, r->ranks[j].host,
                        r->ranks[i].nccl_if[0] ? r->ranks[i].nccl_if : "-",
                        r->ranks[j].nccl_addr, c->port,
                        ncd_probe_status_name(c->status), c->detail,
                        r->ranks[i].rec_if, r->ranks[j].rec_addr);
                }
            for (int h = 0; h < r->nhosts; h++) {
                const struct ncd_probe_rank *k =
                    &r->ranks[first_rank_of(r, h)];
                ncd_finding_evidence(f, "%s: NCCL picks %s %s (%s); "
                                        "recommended %s %s",
                                     k->host, k->nccl_if[0] ? k->nccl_if : "-",
                                     k->nccl_addr, k->nccl_pass, k->rec_if,
                                     k->rec_addr);
            }
            ncd_finding_cause(
                f, "NCCL takes the first matching interface in its pass "
                   "order, not the one that reaches the peers; the ranks "
                   "then fail to connect (or hang) at init.");
            if (common[0]) {
                ncd_finding_fix(f, "Set NCCL_SOCKET_IFNAME=%s for every "
                                   "rank: probe connected every pair on it.",
                                common);
                ncd_finding_env(f, "NCCL_SOCKET_IFNAME", common);
            } else {
                struct ncd_strbuf sb = {0};
                for (int h = 0; h < r->nhosts; h++) {
                    const struct ncd_probe_rank *k =
                        &r->ranks[first_rank_of(r, h)];
                    ncd_sb_printf(&sb, "%s%s on %s", h ? ", " : "",
                                  k->rec_ifname, k->host);
                }
                ncd_finding_fix(f, "Set NCCL_SOCKET_IFNAME per host (%s), "
                                   "or a comma list of these names.",
                                ncd_sb_str(&sb));
                ncd_sb_release(&sb);
            }
        }
    }

    /* 3. the rest, per ordered host pair, with asymmetry */
    for (int a = 0; a < r->nhosts; a++)
        for (int b = 0; b < r->nhosts; b++) {
            enum ncd_probe_status s = ncd_probe_host_status(r, a, b);
            if (!failed(s) || s == NCD_PROBE_NO_ADDR)
                continue;
            /* skip when every failing cell was already explained */
            int i0 = -1, j0 = -1;
            for (int i = 0; i < n && i0 < 0; i++)
                for (int j = 0; j < n; j++)
                    if (r->host_of[i] == a && r->host_of[j] == b && i != j &&
                        failed(CELL(r, i, j)->status) && !handled_target[j]) {
                        i0 = i;
                        j0 = j;
                        break;
                    }
            if (i0 < 0)
                continue;
            const struct ncd_probe_cell *c = CELL(r, i0, j0);
            enum ncd_probe_status back = ncd_probe_host_status(r, b, a);
            int asym = a != b && back == NCD_PROBE_OK;
            const char *what =
                s == NCD_PROBE_WRONG_PEER ? "net.iface-choice.duplicate-address"
                : asym                    ? "net.unreachable.asymmetric"
                                          : "net.unreachable.pair";
            struct ncd_finding *f = ncd_findings_add(
                out, what,
                s == NCD_PROBE_WRONG_PEER ? NCD_CAT_NET_IFACE_CHOICE
                                          : NCD_CAT_NET_UNREACHABLE,
                NCD_SEV_ERROR, "%s cannot connect to %s on %s:%d: %s%s",
                r->hosts[a], r->hosts[b], r->ranks[j0].nccl_addr, c->port,
                ncd_probe_status_name((enum ncd_probe_status)c->status),
                asym ? " (the other way works)" : "");
            if (!f)
                return;
            ncd_finding_evidence(f, "rank %d (%s, from %s via %s) -> rank %d "
                                    "(%s, %s %s:%d): %s",
                                 i0, r->ranks[i0].host,
                                 c->src_addr[0] ? c->src_addr : "-",
                                 r->ranks[i0].nccl_if, j0, r->ranks[j0].host,
                                 r->ranks[j0].nccl_if, r->ranks[j0].nccl_addr,
                                 c->port, c->detail);
            if (a != b)
                ncd_finding_evidence(f, "%s -> %s: %s", r->hosts[b],
                                     r->hosts[a],
                                     ncd_probe_status_name(back));
            if (c->ctl_status)
                ncd_finding_evidence(
                    f, "control port %d on the same address: %s",
                    r->ranks[j0].ctl_port,
                    ncd_probe_status_name(
                        (enum ncd_probe_status)c->ctl_status));
            switch (s) {
            case NCD_PROBE_REFUSED:
                ncd_finding_cause(f, "The address answers with a reset: "
                                     "nothing listens there, or a firewall "
                                     "REJECTs the port.");
                ncd_finding_fix(f, "Check `nft list ruleset` / `iptables "
                                   "-S` on %s for reject rules.",
                                r->hosts[b]);
                break;
            case NCD_PROBE_TIMEOUT:
                ncd_finding_cause(f, "Packets to that address vanish: a "
                                     "firewall that drops, a security "
                                     "group, or a route into the wrong "
                                     "network.");
                ncd_finding_fix(f, "Allow TCP between the nodes on %s's "
                                   "data interface (firewall/security "
                                   "group), or choose a reachable one with "
                                   "NCCL_SOCKET_IFNAME.",
                                r->hosts[b]);
                break;
            case NCD_PROBE_NO_ROUTE:
                ncd_finding_cause(f, "%s has no route to that address: the "
                                     "interfaces are on different networks.",
                                  r->hosts[a]);
                ncd_finding_fix(f, "Use an interface on a network every host "
                                   "shares (NCCL_SOCKET_IFNAME), or add the "
                                   "route.");
                break;
            case NCD_PROBE_WRONG_PEER:
                ncd_finding_cause(f, "The address %s leads to another "
                                     "process than rank %d: the same "
                                     "address exists on several hosts "
                                     "(docker0 172.17.0.1, a NAT).",
                                  r->ranks[j0].nccl_addr, j0);
                ncd_finding_fix(f, "Exclude that interface: "
                                   "NCCL_SOCKET_IFNAME=^docker,lo or name "
                                   "the data interface.");
                break;
            default:
                ncd_finding_cause(f, "The connection broke while probing.");
                break;
            }
        }

    /* 4. MTU: DF probes lost at a size both ends' MTU allows, or MTUs that
     *    differ between the two ends */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            const struct ncd_probe_cell *c = CELL(r, i, j);
            if (i == j || c->status != NCD_PROBE_OK)
                continue;
            int mi = r->ranks[i].mtu, mj = r->ranks[j].mtu;
            if (!(c->mtu_lost || (mi && mj && mi != mj)))
                continue;
            if (ncd_findings_find(out, "net.unreachable.mtu"))
                goto mtu_done;
            int lost = 0;
            for (int x = 0; x < n * n; x++)
                if (r->cells[x].status == NCD_PROBE_OK && r->cells[x].mtu_lost)
                    lost = 1;
            struct ncd_finding *f = ncd_findings_add(
                out, "net.unreachable.mtu", NCD_CAT_NET_UNREACHABLE,
                lost ? NCD_SEV_ERROR : NCD_SEV_WARNING,
                "MTU mismatch between %s (%s mtu %d) and %s (%s mtu %d)",
                r->ranks[i].host, r->ranks[i].nccl_if, mi, r->ranks[j].host,
                r->ranks[j].nccl_if, mj);
            if (!f)
                return;
            for (int x = 0; x < n; x++)
                for (int y = 0; y < n; y++) {
                    const struct ncd_probe_cell *d = CELL(r, x, y);
                    if (x == y || d->status != NCD_PROBE_OK ||
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
            ncd_finding_fix(f, "Set one MTU on every node's data "
                               "interface, e.g. `ip link set %s mtu %d` on "
                               "%s (and in the switch/VPC config).",
                            mi > mj ? r->ranks[j].nccl_if
                                    : r->ranks[i].nccl_if,
                            mi > mj ? mi : mj,
                            mi > mj ? r->ranks[j].host : r->ranks[i].host);
        }
mtu_done:
    (void)0;
}

static void perf_findings(const struct ncd_probe_result *r,
                          struct ncd_findings *out)
{
    int n = r->nranks, m = 0;
    float *v = calloc((size_t)n * (size_t)n + 1, sizeof *v);
    if (!v)
        return;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j && r->host_of[i] != r->host_of[j] &&
                CELL(r, i, j)->status == NCD_PROBE_OK &&
                CELL(r, i, j)->bw_gbps > 0)
                v[m++] = CELL(r, i, j)->bw_gbps;
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
            const struct ncd_probe_cell *c = CELL(r, i, j),
                                       *d = CELL(r, j, i);
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
    size_t before = out->n;
    ifname_findings(r, out);
    version_findings(r, out);
    reach_findings(r, out);
    hostname_findings(r, out);
    perf_findings(r, out);
    int bad = 0, tried = 0;
    for (int i = 0; i < r->nranks; i++)
        for (int j = 0; j < r->nranks; j++)
            if (i != j) {
                tried++;
                if (CELL(r, i, j)->status != NCD_PROBE_OK)
                    bad = 1;
            }
    if (!bad) {
        struct ncd_finding *f = ncd_findings_add(
            out, "net.unreachable.none", NCD_CAT_NET_UNREACHABLE, NCD_SEV_OK,
            "Every rank reaches every rank on NCCL's interface (%d pairs)",
            tried);
        if (!f)
            return NCD_ENOMEM;
    }
    (void)before;
    ncd_findings_sort(out);
    return 0;
}

/* ---- JSON ----------------------------------------------------------------- */

static json_t *str_or_null(const char *s)
{
    return s && *s ? json_string(s) : json_null();
}

static json_t *cell_json(const struct ncd_probe_cell *c)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "status", json_string(ncd_probe_status_name(
                                         (enum ncd_probe_status)c->status)));
    json_object_set_new(o, "errno", json_integer(c->err));
    json_object_set_new(o, "detail", str_or_null(c->detail));
    json_object_set_new(o, "port", json_integer(c->port));
    json_object_set_new(o, "source_address", str_or_null(c->src_addr));
    json_object_set_new(o, "control_port_status",
                        json_string(ncd_probe_status_name(
                            (enum ncd_probe_status)c->ctl_status)));
    json_object_set_new(o, "recommended_status",
                        json_string(ncd_probe_status_name(
                            (enum ncd_probe_status)c->rec_status)));
    json_object_set_new(o, "connect_us", json_real(c->connect_us));
    json_object_set_new(o, "rtt_us", json_real(c->rtt_us));
    json_object_set_new(o, "bw_gbps", json_real(c->bw_gbps));
    json_object_set_new(o, "recommended_bw_gbps", json_real(c->rec_bw_gbps));
    json_object_set_new(o, "mtu_ok", json_integer(c->mtu_ok));
    json_object_set_new(o, "mtu_lost", json_integer(c->mtu_lost));
    json_object_set_new(o, "resolved", str_or_null(c->resolved));
    json_object_set_new(o, "resolve_error", str_or_null(c->resolve_err));
    return o;
}

json_t *ncd_probe_json(const struct ncd_probe_result *r)
{
    json_t *o = json_object(), *ranks = json_array(), *hosts = json_array(),
           *m = json_object(), *mc = json_array(), *rm = json_array();
    if (!o || !ranks || !hosts || !m || !mc || !rm)
        goto oom;
    for (int i = 0; i < r->nranks; i++) {
        const struct ncd_probe_rank *k = &r->ranks[i];
        json_t *x = json_object(), *addrs = json_array();
        char vb[16];
        for (int a = 0; a < k->n_addrs; a++)
            json_array_append_new(addrs, json_string(k->addrs[a]));
        json_object_set_new(x, "rank", json_integer(k->rank));
        json_object_set_new(x, "pid", json_integer(k->pid));
        json_object_set_new(x, "host", json_string(k->host));
        json_object_set_new(x, "nccl_interface", str_or_null(k->nccl_if));
        json_object_set_new(x, "nccl_address", str_or_null(k->nccl_addr));
        json_object_set_new(x, "nccl_pass", str_or_null(k->nccl_pass));
        json_object_set_new(x, "recommended_interface",
                            str_or_null(k->rec_if));
        json_object_set_new(x, "recommended_address",
                            str_or_null(k->rec_addr));
        json_object_set_new(x, "NCCL_SOCKET_IFNAME",
                            k->ifname_set ? json_string(k->socket_ifname)
                                          : json_null());
        json_object_set_new(
            x, "nccl_version",
            k->nccl_version
                ? json_string(ncd_nccl_version_str(k->nccl_version, vb,
                                                   sizeof vb))
                : json_null());
        json_object_set_new(x, "nccl_version_source",
                            str_or_null(k->nccl_version_src));
        json_object_set_new(x, "mtu", json_integer(k->mtu));
        json_object_set_new(x, "ephemeral_ports",
                            k->port_lo ? json_pack("[ii]", k->port_lo,
                                                   k->port_hi)
                                       : json_null());
        json_object_set_new(x, "port", json_integer(k->tcp_port));
        json_object_set_new(x, "control_port", json_integer(k->ctl_port));
        json_object_set_new(x, "addresses", addrs);
        json_object_set_new(x, "rendezvous_address", str_or_null(k->rdv_addr));
        json_object_set_new(x, "rendezvous_interface", str_or_null(k->rdv_if));
        json_object_set_new(x, "listen_error", str_or_null(k->listen_error));
        json_array_append_new(ranks, x);
    }
    for (int h = 0; h < r->nhosts; h++)
        json_array_append_new(hosts, json_string(r->hosts[h]));
    for (int a = 0; a < r->nhosts; a++) {
        json_t *row = json_array();
        for (int b = 0; b < r->nhosts; b++) {
            enum ncd_probe_status s = ncd_probe_host_status(r, a, b);
            if (s == NCD_PROBE_NOT_TRIED) {
                json_array_append_new(row, json_null());
                continue;
            }
            /* the worst cell of the pair stands for it */
            const struct ncd_probe_cell *best = NULL;
            for (int i = 0; i < r->nranks && !best; i++)
                for (int j = 0; j < r->nranks; j++)
                    if (i != j && r->host_of[i] == a && r->host_of[j] == b &&
                        CELL(r, i, j)->status == (int)s) {
                        best = CELL(r, i, j);
                        break;
                    }
            json_array_append_new(row, best ? cell_json(best) : json_null());
        }
        json_array_append_new(mc, row);
    }
    json_object_set_new(m, "hosts", json_copy(hosts));
    json_object_set_new(m, "cells", mc);
    for (int i = 0; i < r->nranks; i++) {
        json_t *row = json_array();
        for (int j = 0; j < r->nranks; j++)
            json_array_append_new(row, i == j ? json_null()
                                              : cell_json(CELL(r, i, j)));
        json_array_append_new(rm, row);
    }
    json_object_set_new(o, "ranks", ranks);
    json_object_set_new(o, "hosts", hosts);
    json_object_set_new(o, "matrix", m);
    json_object_set_new(o, "rank_matrix", rm);
    json_object_set_new(o, "timeout_ms", json_integer(r->timeout_ms));
    json_object_set_new(o, "burst_bytes",
                        json_integer((json_int_t)r->burst_bytes));
    return o;
oom:
    json_decref(o);
    json_decref(ranks);
    json_decref(hosts);
    json_decref(m);
    json_decref(mc);
    json_decref(rm);
    return NULL;
}

/* ---- text ----------------------------------------------------------------- */

void ncd_probe_render_text(struct ncd_strbuf *out,
                           const struct ncd_probe_result *r,
                           const struct ncd_text_style *st)
{
    ncd_sb_printf(out, "Probe: %d rank%s on %d host%s (connect timeout %d "
                       "ms, burst %zu bytes)\n\n",
                  r->nranks, r->nranks == 1 ? "" : "s", r->nhosts,
                  r->nhosts == 1 ? "" : "s", r->timeout_ms, r->burst_bytes);
    ncd_sb_printf(out, "  %-4s %-16s %-26s %-10s %-9s %s\n", "rank", "host",
                  "NCCL interface", "recommend", "NCCL", "NCCL_SOCKET_IFNAME");
    for (int i = 0; i < r->nranks; i++) {
        const struct ncd_probe_rank *k = &r->ranks[i];
        char ni[96], vb[16];
        snprintf(ni, sizeof ni, "%s %s", k->nccl_if[0] ? k->nccl_if : "-",
                 k->nccl_addr);
        ncd_sb_printf(out, "  %-4d %-16s %-26s %-10s %-9s %s\n", i, k->host,
                      ni, k->rec_if[0] ? k->rec_if : "-",
                      k->nccl_version
                          ? ncd_nccl_version_str(k->nccl_version, vb,
                                                 sizeof vb)
                          : "?",
                      k->ifname_set ? k->socket_ifname : "(unset)");
    }
    if (r->nhosts > 1 || r->nranks > 1) {
        ncd_sb_puts(out, "\n  Reachability on NCCL's interfaces "
                         "(row connects to column):\n");
        ncd_sb_printf(out, "  %-16s", "");
        for (int b = 0; b < r->nhosts; b++)
            ncd_sb_printf(out, " %-12.12s", r->hosts[b]);
        ncd_sb_putc(out, '\n');
        for (int a = 0; a < r->nhosts; a++) {
            ncd_sb_printf(out, "  %-16.16s", r->hosts[a]);
            for (int b = 0; b < r->nhosts; b++) {
                enum ncd_probe_status s = ncd_probe_host_status(r, a, b);
                const char *txt =
                    s == NCD_PROBE_NOT_TRIED ? "-" : ncd_probe_status_name(s);
                const char *col = "";
                if (s == NCD_PROBE_OK)
                    col = ncd_severity_color(NCD_SEV_OK, st);
                else if (s != NCD_PROBE_NOT_TRIED)
                    col = ncd_severity_color(NCD_SEV_ERROR, st);
                ncd_sb_printf(out, " %s%-12s%s", col, txt,
                              *col ? ncd_color_reset(st) : "");
            }
            ncd_sb_putc(out, '\n');
        }
        /* every pair for small jobs (or -v); else the failures and a
         * summary of the others */
        int all = r->nranks <= 8 || st->verbose, shown = 0, nok = 0;
        float bwmin = 0, bwmax = 0, rttmax = 0;
        ncd_sb_printf(out, "\n  Pairs%s (from -> to: status, connect, round "
                           "trip, burst bandwidth, DF probes):\n",
                      all ? "" : " that failed");
        for (int i = 0; i < r->nranks; i++)
            for (int j = 0; j < r->nranks; j++) {
                if (i == j)
                    continue;
                const struct ncd_probe_cell *c = CELL(r, i, j);
                if (!all && c->status == NCD_PROBE_OK) {
                    if (!nok++ || c->bw_gbps < bwmin)
                        bwmin = c->bw_gbps;
                    if (c->bw_gbps > bwmax)
                        bwmax = c->bw_gbps;
                    if (c->rtt_us > rttmax)
                        rttmax = c->rtt_us;
                    continue;
                }
                shown++;
                ncd_sb_printf(out, "    %d(%s) -> %d(%s) %s:%d  %s", i,
                              r->ranks[i].host, j, r->ranks[j].host,
                              r->ranks[j].nccl_addr[0] ? r->ranks[j].nccl_addr
                                                       : "-",
                              c->port,
                              ncd_probe_status_name(
                                  (enum ncd_probe_status)c->status));
                if (c->status == NCD_PROBE_OK) {
                    ncd_sb_printf(out, "  %.0f us, rtt %.0f us, %.3f GB/s",
                                  (double)c->connect_us, (double)c->rtt_us,
                                  (double)c->bw_gbps);
                    if (c->mtu_ok || c->mtu_lost)
                        ncd_sb_printf(out, ", DF ok to %d%s", c->mtu_ok,
                                      c->mtu_lost ? " (larger lost)" : "");
                } else if (c->detail[0]) {
                    ncd_sb_printf(out, " (%s)", c->detail);
                }
                if (c->rec_status != NCD_PROBE_NOT_TRIED &&
                    strcmp(r->ranks[j].rec_addr, r->ranks[j].nccl_addr))
                    ncd_sb_printf(out, "; via %s %s: %s", r->ranks[i].rec_if,
                                  r->ranks[j].rec_addr,
                                  ncd_probe_status_name(
                                      (enum ncd_probe_status)c->rec_status));
                ncd_sb_putc(out, '\n');
            }
        if (!all && !shown)
            ncd_sb_puts(out, "    (none)\n");
        if (!all && nok) {
            ncd_sb_printf(out, "    %d pairs ok: ", nok);
            if (r->burst_bytes)
                ncd_sb_printf(out, "burst %.3f-%.3f GB/s, ", (double)bwmin,
                              (double)bwmax);
            ncd_sb_printf(out, "round trip <= %.0f us (-v lists every "
                               "pair)\n",
                          (double)rttmax);
        }
    }
    ncd_sb_putc(out, '\n');
}
