/* SPDX-License-Identifier: MIT */
/* libFuzzer target: probe's rank records and result rows as the allgather
 * delivers them from other ranks, then the analysis and both renderers.
 * Input: NRANKS MODE ...
 *   MODE bit 0 clear: a structured matrix (per rank 6 bytes: host, NCCL's
 *   interface, the recommended one, port range, NCCL version,
 *   NCCL_SOCKET_IFNAME; per ordered pair 8 bytes: the six connection
 *   statuses, bandwidth, name resolution);
 *   MODE bit 0 set: the bytes themselves, repeated to fill the records and
 *   rows (what a broken or hostile peer could send).
 * Properties, checked with abort(): sanitizing accepts records that say
 * their rank; the analysis succeeds, is a pure function (twice: the same
 * findings, byte for byte) and grows with causes, not pairs (a bound on
 * the count independent of the number of pairs); every finding has a
 * title and a known category; a matrix where every pair connects on NCCL's
 * address gives no reachability error (but an MTU black hole, which lets
 * connections through); JSON and text render. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/finding.h"
#include "ncd/probe.h"
#include "ncd/strbuf.h"
#include "probe/probe_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_probe_result: property violated: %s\n", what);
        abort();
    }
}

static const char *const IFS[] = {"eno1", "ens3", "", "ib0"};

static void structured(struct ncd_probe_result *r, const uint8_t *d,
                       size_t n)
{
    size_t at = 0;
#define NEXT() (at < n ? d[at++] : 0)
    for (int i = 0; i < r->nranks; i++) {
        struct ncd_probe_rank *k = &r->ranks[i];
        int host = NEXT() % 4, nif = NEXT() % 4, rec = NEXT() % 3,
            ports = NEXT() % 3, ver = NEXT() % 3, flags = NEXT();
        k->rank = i;
        snprintf(k->host, sizeof k->host, "h%d", host);
        snprintf(k->boot_id, sizeof k->boot_id, "boot-%d",
                 flags & 0x80 ? i : host);
        snprintf(k->nccl_if, sizeof k->nccl_if, "%s", IFS[nif]);
        if (nif != 2)
            snprintf(k->nccl_addr, sizeof k->nccl_addr, "10.%d.%d.1", nif,
                     host);
        snprintf(k->nccl_pass, sizeof k->nccl_pass, "any interface");
        const char *rif = rec == 0 ? k->nccl_if : rec == 1 ? "ens3" : "";
        snprintf(k->rec_if, sizeof k->rec_if, "%s", rif);
        snprintf(k->rec_ifname, sizeof k->rec_ifname, "%s", rif);
        if (*rif)
            snprintf(k->rec_addr, sizeof k->rec_addr, "10.%d.%d.1",
                     rec == 0 ? nif : 1, host);
        k->port_lo = ports == 0 ? 32768 : ports == 1 ? 41000 : 0;
        k->port_hi = ports == 0 ? 60999 : ports == 1 ? 41099 : 0;
        k->tcp_port = ports == 1 ? 41017 : 40000 + i;
        k->ctl_port = 30000;
        k->rec_port = rec == 1 ? 45000 + i : 0;
        k->rec_ctl_port = rec == 1 ? 30001 : 0;
        k->nccl_version = ver == 0 ? 22809 : ver == 1 ? 22105 : 0;
        snprintf(k->nccl_version_src, sizeof k->nccl_version_src,
                 "libnccl.so.2");
        k->ifname_set = flags & 1;
        if (flags & 1)
            snprintf(k->socket_ifname, sizeof k->socket_ifname, "%s",
                     flags & 2 ? "ens3" : "eth9");
        k->mtu = flags & 4 ? 9000 : 1500;
        k->n_addrs = 1;
        snprintf(k->addrs[0], sizeof k->addrs[0], "%s",
                 k->nccl_addr[0] ? k->nccl_addr : "10.9.9.9");
    }
    for (int i = 0; i < r->nranks; i++)
        for (int j = 0; j < r->nranks; j++) {
            struct ncd_probe_cell *c = &r->cells[i * r->nranks + j];
            int v[6];
            for (int x = 0; x < 6; x++)
                v[x] = NEXT() % 9;
            int bw = NEXT(), res = NEXT();
            if (i == j)
                continue;
            c->nccl.status = v[0];
            c->nccl.ctl_status = v[1];
            c->nccl.src_status = v[2];
            c->rec.status = v[3];
            c->rec.ctl_status = v[4];
            c->rec.src_status = v[5];
            c->nccl.bw_gbps = (float)bw / 16.0f;
            c->rec.bw_gbps = (float)(bw ^ 0x55) / 16.0f;
            c->rtt_us = (float)res;
            c->mtu_ok = res & 1 ? 1500 : 0;
            c->mtu_lost = res & 2 ? 9000 : 0;
            snprintf(c->nccl.detail, sizeof c->nccl.detail, "d%d", v[0]);
            const struct ncd_probe_rank *t = &r->ranks[j];
            snprintf(c->resolved, sizeof c->resolved, "%s",
                     res & 4 ? "" : res & 8 ? "127.0.1.1" : t->addrs[0]);
            if (res & 4)
                snprintf(c->resolve_err, sizeof c->resolve_err,
                         "Name or service not known");
        }
#undef NEXT
}

static void raw(struct ncd_probe_result *r, const uint8_t *d, size_t n)
{
    unsigned char *p = (unsigned char *)r->ranks;
    size_t rl = (size_t)r->nranks * sizeof *r->ranks;
    size_t cl = (size_t)r->nranks * (size_t)r->nranks * sizeof *r->cells;
    for (size_t x = 0; x < rl; x++)
        p[x] = n ? d[x % n] : 0;
    p = (unsigned char *)r->cells;
    for (size_t x = 0; x < cl; x++)
        p[x] = n ? d[(x + rl) % n] : 0;
    for (int i = 0; i < r->nranks; i++)
        r->ranks[i].rank = i;
}

static char *findings_text(const struct ncd_findings *fl)
{
    struct ncd_strbuf sb = {0};
    for (size_t i = 0; i < fl->n; i++) {
        const struct ncd_finding *f = &fl->v[i];
        ncd_sb_printf(&sb, "%s|%d|%d|%s|%s|%s\n", f->id, (int)f->category,
                      (int)f->severity, f->title, f->cause ? f->cause : "",
                      f->fix ? f->fix : "");
        for (size_t e = 0; e < f->n_evidence; e++)
            ncd_sb_printf(&sb, "  %s\n", f->evidence[e]);
        for (size_t e = 0; e < f->n_env; e++)
            ncd_sb_printf(&sb, "  %s=%s\n", f->env[e].name,
                          f->env[e].value ? f->env[e].value : "(unset)");
    }
    char *s = strdup(ncd_sb_str(&sb));
    ncd_sb_release(&sb);
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    struct ncd_probe_result r;
    memset(&r, 0, sizeof r);
    r.nranks = 1 + data[0] % 8;
    r.timeout_ms = 1000;
    r.burst_bytes = 1 << 20;
    r.ranks = calloc((size_t)r.nranks, sizeof *r.ranks);
    r.cells = calloc((size_t)r.nranks * (size_t)r.nranks, sizeof *r.cells);
    if (!r.ranks || !r.cells) {
        free(r.ranks);
        free(r.cells);
        return 0;
    }
    if (data[1] & 1)
        raw(&r, data + 2, size - 2);
    else
        structured(&r, data + 2, size - 2);
    check(ncd__probe_sanitize(&r) == 0, "records that say their rank pass");
    check(ncd_probe_result_index(&r) == 0, "index");
    struct ncd_findings a = {0}, b = {0};
    check(ncd_probe_analyze(&r, &a) == 0, "analyze succeeds");
    check(ncd_probe_analyze(&r, &b) == 0, "analyze succeeds twice");
    char *ta = findings_text(&a), *tb = findings_text(&b);
    check(ta && tb && !strcmp(ta, tb), "analyze is a pure function");
    free(ta);
    free(tb);
    /* causes, not pairs: per host a bounded number of host findings, 17
     * pair findings at most, and the one-off kinds */
    check(a.n <= (size_t)(8 * r.nhosts + 17 + 8), "findings grow with causes");
    int all_ok = 1;
    for (int i = 0; i < r.nranks; i++)
        for (int j = 0; j < r.nranks; j++)
            if (i != j && r.cells[i * r.nranks + j].nccl.status !=
                              NCD_PROBE_OK)
                all_ok = 0;
    for (size_t i = 0; i < a.n; i++) {
        const struct ncd_finding *f = &a.v[i];
        check(f->title && *f->title, "every finding has a title");
        check(strcmp(ncd_category_name(f->category), "?") != 0,
              "a known category");
        /* (an MTU black hole passes small packets: connects, then hangs) */
        if (all_ok && f->severity == NCD_SEV_ERROR &&
            strcmp(f->id, "net.unreachable.mtu") &&
            (!strncmp(f->id, "net.unreachable.", 16) ||
             !strcmp(f->id, "net.iface-choice.unreachable"))) {
            fprintf(stderr, "%s: %s\n", f->id, f->title);
            check(0, "no reachability error when every pair connects");
        }
    }
    json_t *j = ncd_probe_json(&r);
    check(j != NULL, "JSON renders");
    char *dump = json_dumps(j, 0);
    check(dump != NULL, "JSON serialises");
    free(dump);
    json_decref(j);
    struct ncd_strbuf sb = {0};
    struct ncd_text_style st;
    memset(&st, 0, sizeof st);
    st.verbose = data[1] & 2;
    ncd_probe_render_text(&sb, &r, &st);
    check(ncd_sb_str(&sb)[0] != 0, "text renders");
    ncd_sb_release(&sb);
    ncd_findings_release(&a);
    ncd_findings_release(&b);
    ncd_probe_result_release(&r);
    return 0;
}
