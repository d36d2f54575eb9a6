/* SPDX-License-Identifier: MIT */
/* probe: findings from hand-built results, the host matrix, JSON; tune:
 * candidate files, statistics, noise and the winner. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <net/if.h>
#include <stdio.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/netif.h"
#include "ncd/probe.h"
#include "ncd/recommend.h"
#include "ncd/tune.h"

/* A result of `hosts` hosts, one rank each, every pair ok, NCCL on ens3
 * (recommended ens3 too), ephemeral range 32768-60999, NCCL 2.21.5. */
static struct ncd_probe_result *mk(int n)
{
    struct ncd_probe_result *r = calloc(1, sizeof *r);
    r->nranks = n;
    r->ranks = calloc((size_t)n, sizeof *r->ranks);
    r->cells = calloc((size_t)n * (size_t)n, sizeof *r->cells);
    r->timeout_ms = 1000;
    for (int i = 0; i < n; i++) {
        struct ncd_probe_rank *k = &r->ranks[i];
        k->rank = i;
        snprintf(k->host, sizeof k->host, "node%d", i);
        snprintf(k->boot_id, sizeof k->boot_id, "boot-%d", i);
        snprintf(k->nccl_if, sizeof k->nccl_if, "ens3");
        snprintf(k->nccl_addr, sizeof k->nccl_addr, "10.0.0.%d", i + 1);
        snprintf(k->rec_if, sizeof k->rec_if, "ens3");
        snprintf(k->rec_addr, sizeof k->rec_addr, "10.0.0.%d", i + 1);
        snprintf(k->rec_ifname, sizeof k->rec_ifname, "ens3");
        snprintf(k->nccl_version_src, sizeof k->nccl_version_src,
                 "/usr/lib/libnccl.so.2");
        k->nccl_version = 22105;
        k->mtu = 1500;
        k->port_lo = 32768;
        k->port_hi = 60999;
        k->tcp_port = 40000 + i;
        k->ctl_port = 32767;
        k->n_addrs = 1;
        snprintf(k->addrs[0], sizeof k->addrs[0], "10.0.0.%d", i + 1);
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            struct ncd_probe_cell *c = &r->cells[i * n + j];
            snprintf(c->resolved, sizeof c->resolved, "10.0.0.%d", j + 1);
            if (i == j)
                continue;
            c->nccl.status = NCD_PROBE_OK;
            c->nccl.ctl_status = NCD_PROBE_OK;
            c->nccl.src_status = NCD_PROBE_OK;
            c->nccl.bw_gbps = 1.0f;
            c->nccl.port = 40000 + j;
            c->rec = c->nccl; /* the peer recommends NCCL's address */
            c->rtt_us = 50;
            c->mtu_ok = 1500;
            snprintf(c->resolved, sizeof c->resolved, "10.0.0.%d", j + 1);
        }
    assert_int_equal(ncd_probe_result_index(r), 0);
    return r;
}

static void rel(struct ncd_probe_result *r)
{
    ncd_probe_result_release(r);
    free(r);
}

static struct ncd_probe_cell *cell(struct ncd_probe_result *r, int i, int j)
{
    return &r->cells[i * r->nranks + j];
}

static void test_all_ok(void **state)
{
    (void)state;
    struct ncd_probe_result *r = mk(3);
    struct ncd_findings fl = {0};
    assert_int_equal(ncd_probe_analyze(r, &fl), 0);
    assert_int_equal(ncd_findings_worst(&fl), NCD_SEV_OK);
    assert_non_null(ncd_findings_find(&fl, "net.unreachable.none"));
    assert_int_equal(ncd_probe_host_status(r, 0, 1), NCD_PROBE_OK);
    assert_int_equal(ncd_probe_host_status(r, 0, 0), NCD_PROBE_NOT_TRIED);
    ncd_findings_release(&fl);
    rel(r);
}

/* All ranks on one host: every pair "ok", but over loopback -- the
 * finding must not be an ok about the network (user trial). */
static void test_one_host_not_ok(void **state)
{
    (void)state;
    struct ncd_probe_result *r = mk(3);
    for (int i = 0; i < 3; i++)
        snprintf(r->ranks[i].host, sizeof r->ranks[i].host, "node0");
    assert_int_equal(ncd_probe_result_index(r), 0);
    struct ncd_findings fl = {0};
    assert_int_equal(ncd_probe_analyze(r, &fl), 0);
    const struct ncd_finding *f = ncd_findings_find(&fl, "net.unreachable.none");
    assert_non_null(f);
    assert_int_equal(f->severity, NCD_SEV_INFO);
    assert_non_null(strstr(f->title, "one host"));
    struct ncd_strbuf sb = {0};
    struct ncd_text_style st = {0};
    ncd_probe_render_text(&sb, r, &st);
    assert_non_null(sb.buf);
    assert_null(strstr(sb.buf, "DF ok"));
    assert_non_null(strstr(sb.buf, "same host"));
    ncd_sb_release(&sb);
    ncd_findings_release(&fl);
    rel(r);
}

/* Which path set() changes. */
enum { NCCL = 1, REC = 2, BOTH = 3 };

/* The tests of rank i -> rank j: data port, control port, control port from
 * a fixed source port (OK, TIMEOUT...). */
static void set(struct ncd_probe_result *r, int i, int j, int which, int st,
                int ctl, int src)
{
    struct ncd_probe_conn *v[2] = {&cell(r, i, j)->nccl, &cell(r, i, j)->rec};
    for (int k = 0; k < 2; k++) {
        if (!(which & (1 << k)))
            continue;
        v[k]->status = st;
        v[k]->ctl_status = ctl;
        v[k]->src_status = src;
        if (st != NCD_PROBE_OK)
            v[k]->bw_gbps = 0;
    }
}

/* The findings, as "id: title" in order, are exactly `want` (NULL-ended). */
static void expect(const struct ncd_findings *fl, const char *const *want)
{
    size_t n = 0;
    while (want[n])
        n++;
    int ok = fl->n == n;
    for (size_t i = 0; ok && i < n; i++) {
        char line[1024];
        snprintf(line, sizeof line, "%s: %s", fl->v[i].id, fl->v[i].title);
        ok = !strcmp(line, want[i]);
    }
    if (ok)
        return;
    print_message("got %zu findings:\n", fl->n);
    for (size_t i = 0; i < fl->n; i++)
        print_message("  %s: %s\n", fl->v[i].id, fl->v[i].title);
    print_message("want %zu:\n", n);
    for (size_t i = 0; i < n; i++)
        print_message("  %s\n", want[i]);
    fail();
}

static void analyze_expect(struct ncd_probe_result *r,
                           const char *const *want)
{
    struct ncd_findings fl = {0};
    assert_int_equal(ncd_probe_analyze(r, &fl), 0);
    expect(&fl, want);
    ncd_findings_release(&fl);
}

/* node1's firewall drops its ephemeral range: every peer times out on the
 * data port and gets through on the control port */
static void test_port_filter(void **state)
{
    (void)state;
    struct ncd_probe_result *r = mk(3);
    r->ranks[1].port_lo = 41000;
    r->ranks[1].port_hi = 41099;
    r->ranks[1].tcp_port = 41017;
    for (int i = 0; i < 3; i++)
        if (i != 1) {
            set(r, i, 1, BOTH, NCD_PROBE_TIMEOUT, NCD_PROBE_OK, NCD_PROBE_OK);
            cell(r, i, 1)->nccl.port = 41017;
        }
    struct ncd_findings fl = {0};
    assert_int_equal(ncd_probe_analyze(r, &fl), 0);
    struct ncd_finding *f = ncd_findings_find(&fl, "net.unreachable.port-filtered");
    assert_non_null(f);
    assert_int_equal(f->severity, NCD_SEV_ERROR);
    assert_non_null(strstr(f->title, "node1"));
    assert_non_null(strstr(f->title, "41000-41099"));
    assert_non_null(strstr(f->fix, "41000-41099"));
    /* explained once: no generic pair finding for the same cells */
    assert_null(ncd_findings_find(&fl, "net.unreachable.pair"));
    assert_null(ncd_findings_find(&fl, "net.unreachable.asymmetric"));
    assert_int_equal(ncd_probe_host_status(r, 0, 1), NCD_PROBE_TIMEOUT);
    assert_int_equal(ncd_probe_host_status(r, 1, 0), NCD_PROBE_OK);
    ncd_findings_release(&fl);
    /* the control port also times out: not a port filter but a dead path;
     * node1 still connects out */
    for (int i = 0; i < 3; i++)
        if (i != 1)
            set(r, i, 1, BOTH, NCD_PROBE_TIMEOUT, NCD_PROBE_TIMEOUT,
                NCD_PROBE_TIMEOUT);
    assert_int_equal(ncd_probe_analyze(r, &fl), 0);
    assert_null(ncd_findings_find(&fl, "net.unreachable.port-filtered"));
    f = ncd_findings_find(&fl, "net.unreachable.host");
    assert_non_null(f);
    assert_string_equal(f->title, "node1 cannot be reached by any other host "
                                  "on ens3 (timed-out); it connects out");
    ncd_findings_release(&fl);
    /* two hosts: which end is at fault cannot be told: one pair finding */
    rel(r);
    r = mk(2);
    set(r, 0, 1, BOTH, NCD_PROBE_TIMEOUT, NCD_PROBE_TIMEOUT, NCD_PROBE_TIMEOUT);
    assert_int_equal(ncd_probe_analyze(r, &fl), 0);
    f = ncd_findings_find(&fl, "net.unreachable.asymmetric");
    assert_non_null(f);
    assert_non_null(strstr(f->title, "timed-out (the other way works)"));
    ncd_findings_release(&fl);
    rel(r);
}

/* NCCL picks eno1 on separate networks, ens3 connects */
static void test_iface_choice(void **state)
{
    (void)state;
    struct ncd_probe_result *r = mk(2);
    for (int i = 0; i < 2; i++) {
        snprintf(r->ranks[i].nccl_if, sizeof r->ranks[i].nccl_if, "eno1");
        snprintf(r->ranks[i].nccl_addr, sizeof r->ranks[i].nccl_addr,
                 "192.168.%d.1", i);
    }
    set(r, 0, 1, NCCL, NCD_PROBE_NO_ROUTE, NCD_PROBE_NO_ROUTE,
        NCD_PROBE_NO_ROUTE);
    set(r, 1, 0, NCCL, NCD_PROBE_NO_ROUTE, NCD_PROBE_NO_ROUTE,
        NCD_PROBE_NO_ROUTE);
    struct ncd_findings fl = {0};
    assert_int_equal(ncd_probe_analyze(r, &fl), 0);
    struct ncd_finding *f = ncd_findings_find(&fl, "net.iface-choice.unreachable");
    assert_non_null(f);
    assert_int_equal(f->category, NCD_CAT_NET_IFACE_CHOICE);
    assert_int_equal(f->n_env, 1);
    assert_string_equal(f->env[0].name, "NCCL_SOCKET_IFNAME");
    assert_string_equal(f->env[0].value, "ens3");
    ncd_findings_release(&fl);
    /* the recommended one is dead one way: switch, and that way is the
     * problem left on it */
    set(r, 0, 1, REC, NCD_PROBE_NO_ROUTE, NCD_PROBE_NO_ROUTE,
        NCD_PROBE_NO_ROUTE);
    static const char *const want[] = {
        "net.iface-choice.unreachable: The interface NCCL picks does not "
        "reach the other hosts; ens3 does",
        "net.unreachable.asymmetric: node0 cannot connect to node1 on "
        "10.0.0.2:40001: no-route (the other way works)",
        NULL};
    analyze_expect(r, want);
    /* dead both ways: no interface advice, a pair error on NCCL's */
    set(r, 1, 0, REC, NCD_PROBE_NO_ROUTE, NCD_PROBE_NO_ROUTE,
        NCD_PROBE_NO_ROUTE);
    static const char *const want2[] = {
        "net.unreachable.pair: node0 cannot connect to node1 on "
        "192.168.1.1:40001: no-route (nor the other way)",
        NULL};
    analyze_expect(r, want2);
    rel(r);
}

static void test_ifname_one_host(void **state)
{
    (void)state;
    struct ncd_probe_result *r = mk(2);
    r->ranks[0].ifname_set = 1;
    snprintf(r->ranks[0].socket_ifname, sizeof r->ranks[0].socket_ifname, "ens3");
    r->ranks[1].ifname_set = 1;
    snprintf(r->ranks[1].socket_ifname, sizeof r->ranks[1].socket_ifname, "eth0");
    r->ranks[1].nccl_if[0] = 0;
    r->ranks[1].nccl_addr[0] = 0;
    set(r, 0, 1, BOTH, NCD_PROBE_NO_ADDR, 0, 0);
    set(r, 1, 0, BOTH, NCD_PROBE_NO_ADDR, 0, 0);
    struct ncd_findings fl = {0};
    assert_int_equal(ncd_probe_analyze(r, &fl), 0);
    struct ncd_finding *f = ncd_findings_find(&fl, "net.ifname.no-match-host");
    assert_non_null(f);
    assert_non_null(strstr(f->title, "node1"));
    assert_non_null(strstr(f->title, "eth0"));
    assert_string_equal(f->env[0].value, "ens3");
    assert_non_null(ncd_findings_find(&fl, "net.ifname.differs"));
    assert_int_equal(ncd_findings_worst(&fl), NCD_SEV_ERROR);
    ncd_findings_release(&fl);
    rel(r);
}

static void test_versions_hostnames(void **state)
{
    (void)state;
    struct ncd_probe_result *r = mk(3);
    r->ranks[2].nccl_version = 21805;
    /* node2's name means another address on node0 */
    snprintf(cell(r, 0, 2)->resolved, sizeof cell(r, 0, 2)->resolved,
             "10.0.0.99");
    struct ncd_findings fl = {0};
    assert_int_equal(ncd_probe_analyze(r, &fl), 0);
    struct ncd_finding *f = ncd_findings_find(&fl, "version.mismatch.hosts");
    assert_non_null(f);
    assert_int_equal(f->category, NCD_CAT_VERSION_MISMATCH);
    assert_non_null(ncd_findings_find(&fl, "net.hostname.resolves-differently"));
    ncd_findings_release(&fl);
    /* a version that was not found on a host is not a mismatch */
    snprintf(r->ranks[2].nccl_version_src, sizeof r->ranks[2].nccl_version_src,
             "libnccl.so.2 not found: newest known");
    assert_int_equal(ncd_probe_analyze(r, &fl), 0);
    assert_null(ncd_findings_find(&fl, "version.mismatch.hosts"));
    ncd_findings_release(&fl);
    rel(r);
}

static void test_duplicate_and_mtu(void **state)
{
    (void)state;
    struct ncd_probe_result *r = mk(2);
    /* same host name, different boot ids: two ranks on "one" host */
    snprintf(r->ranks[1].host, sizeof r->ranks[1].host, "node0");
    assert_int_equal(ncd_probe_result_index(r), 0);
    assert_int_equal(r->nhosts, 1);
    r->ranks[1].mtu = 9000;
    cell(r, 1, 0)->mtu_ok = 1500;
    cell(r, 1, 0)->mtu_lost = 2048;
    struct ncd_findings fl = {0};
    assert_int_equal(ncd_probe_analyze(r, &fl), 0);
    assert_non_null(ncd_findings_find(&fl, "net.hostname.duplicate"));
    struct ncd_finding *f = ncd_findings_find(&fl, "net.unreachable.mtu");
    assert_non_null(f);
    assert_int_equal(f->severity, NCD_SEV_ERROR);
    assert_non_null(strstr(f->fix, "mtu 9000"));
    ncd_findings_release(&fl);
    /* the same MTU at both ends and big DF packets lost: a hop in between
     * carries less; never "MTU mismatch ... mtu 9000 and ... mtu 9000"
     * (found by tests/fuzz/fuzz_probe_result.c) */
    r->ranks[0].mtu = 9000;
    cell(r, 1, 0)->mtu_ok = 1500;
    cell(r, 1, 0)->mtu_lost = 8972;
    assert_int_equal(ncd_probe_analyze(r, &fl), 0);
    f = ncd_findings_find(&fl, "net.unreachable.mtu");
    assert_non_null(f);
    assert_int_equal(f->severity, NCD_SEV_ERROR);
    assert_string_equal(f->title, "Large packets are lost between node0 and "
                                  "node0 (both mtu 9000): a hop between them "
                                  "carries less");
    assert_non_null(strstr(f->fix, "mtu 1500"));
    ncd_findings_release(&fl);
    rel(r);
}

static void test_slow_pair(void **state)
{
    (void)state;
    struct ncd_probe_result *r = mk(3);
    cell(r, 0, 2)->nccl.bw_gbps = 0.1f;
    struct ncd_findings fl = {0};
    assert_int_equal(ncd_probe_analyze(r, &fl), 0);
    assert_null(ncd_findings_find(&fl, "perf.config.slow-pair"));
    ncd_findings_release(&fl);
    cell(r, 2, 0)->nccl.bw_gbps = 0.2f;
    assert_int_equal(ncd_probe_analyze(r, &fl), 0);
    struct ncd_finding *f = ncd_findings_find(&fl, "perf.config.slow-pair");
    assert_non_null(f);
    assert_int_equal(f->n_evidence, 1);
    assert_non_null(strstr(f->evidence[0], "node0 <-> node2"));
    ncd_findings_release(&fl);
    rel(r);
}

static void test_json(void **state)
{
    (void)state;
    struct ncd_probe_result *r = mk(2);
    cell(r, 0, 1)->nccl.status = NCD_PROBE_REFUSED;
    json_t *j = ncd_probe_json(r);
    assert_non_null(j);
    json_t *m = json_object_get(j, "matrix");
    assert_int_equal(json_array_size(json_object_get(m, "hosts")), 2);
    json_t *c01 = json_array_get(json_array_get(json_object_get(m, "cells"), 0), 1);
    assert_string_equal(json_string_value(json_object_get(c01, "status")),
                        "refused");
    assert_true(json_is_null(
        json_array_get(json_array_get(json_object_get(m, "cells"), 0), 0)));
    assert_int_equal(json_array_size(json_object_get(j, "ranks")), 2);
    json_decref(j);
    rel(r);
}

static void test_status_names(void **state)
{
    (void)state;
    assert_string_equal(ncd_probe_status_name(NCD_PROBE_TIMEOUT), "timed-out");
    assert_string_equal(ncd_probe_status_name(NCD_PROBE_WRONG_PEER), "wrong-peer");
    assert_true(ncd_probe_status_badness(NCD_PROBE_TIMEOUT) >
                ncd_probe_status_badness(NCD_PROBE_OK));
}

/* ---- 64 hosts: findings grow with causes, not with pairs ----------------- */

static void filter_range(struct ncd_probe_result *r, int h)
{
    r->ranks[h].port_lo = 41000;
    r->ranks[h].port_hi = 41099;
    r->ranks[h].tcp_port = 41017;
}

/* one host's firewall drops its ephemeral ports: one finding naming it */
static void test_64_one_bad_host(void **state)
{
    (void)state;
    struct ncd_probe_result *r = mk(64);
    filter_range(r, 17);
    for (int i = 0; i < 64; i++)
        if (i != 17)
            set(r, i, 17, BOTH, NCD_PROBE_TIMEOUT, NCD_PROBE_OK, NCD_PROBE_OK);
    static const char *const want[] = {
        "net.unreachable.port-filtered: A firewall on node17 blocks its "
        "ephemeral ports 41000-41099 on ens3, where NCCL listens",
        NULL};
    struct ncd_findings fl = {0};
    assert_int_equal(ncd_probe_analyze(r, &fl), 0);
    expect(&fl, want);
    /* 8 pairs, "and 55 more", the port range */
    assert_int_equal(fl.v[0].n_evidence, 10);
    assert_string_equal(fl.v[0].evidence[8],
                        "... and 55 more host pairs alike");
    assert_string_equal(fl.v[0].evidence[9],
                        "node17: net.ipv4.ip_local_port_range = 41000 41099");
    ncd_findings_release(&fl);
    /* the same host unplugged: nothing gets in or out */
    rel(r);
    r = mk(64);
    for (int i = 0; i < 64; i++)
        if (i != 17) {
            set(r, i, 17, BOTH, NCD_PROBE_TIMEOUT, NCD_PROBE_TIMEOUT,
                NCD_PROBE_TIMEOUT);
            set(r, 17, i, BOTH, NCD_PROBE_TIMEOUT, NCD_PROBE_TIMEOUT,
                NCD_PROBE_TIMEOUT);
        }
    static const char *const want2[] = {
        "net.unreachable.host: node17 neither reaches nor is reached by any "
        "other host on ens3 (timed-out)",
        NULL};
    analyze_expect(r, want2);
    rel(r);
}

/* one cable: node3 <-> node40 */
static void test_64_one_bad_link(void **state)
{
    (void)state;
    struct ncd_probe_result *r = mk(64);
    set(r, 3, 40, BOTH, NCD_PROBE_TIMEOUT, NCD_PROBE_TIMEOUT,
        NCD_PROBE_TIMEOUT);
    set(r, 40, 3, BOTH, NCD_PROBE_TIMEOUT, NCD_PROBE_TIMEOUT,
        NCD_PROBE_TIMEOUT);
    static const char *const want[] = {
        "net.unreachable.pair: node3 cannot connect to node40 on "
        "10.0.0.41:40040: timed-out (nor the other way)",
        NULL};
    analyze_expect(r, want);
    rel(r);
}

/* two bad hosts of different causes: two findings */
static void test_64_two_causes(void **state)
{
    (void)state;
    struct ncd_probe_result *r = mk(64);
    filter_range(r, 5);
    for (int i = 0; i < 64; i++) {
        if (i != 5)
            set(r, i, 5, BOTH, NCD_PROBE_TIMEOUT, NCD_PROBE_OK, NCD_PROBE_OK);
        if (i != 50) /* node50 drops new inbound connections, any port */
            set(r, i, 50, BOTH, NCD_PROBE_TIMEOUT, NCD_PROBE_TIMEOUT,
                NCD_PROBE_TIMEOUT);
    }
    static const char *const want[] = {
        "net.unreachable.port-filtered: A firewall on node5 blocks its "
        "ephemeral ports 41000-41099 on ens3, where NCCL listens",
        "net.unreachable.host: node50 cannot be reached by any other host on "
        "ens3 (timed-out); it connects out",
        NULL};
    analyze_expect(r, want);
    /* and a third cause: node9's firewall has no connection tracking */
    for (int i = 0; i < 64; i++)
        if (i != 9) {
            set(r, i, 9, BOTH, NCD_PROBE_TIMEOUT, NCD_PROBE_OK, NCD_PROBE_OK);
            if (i != 50) /* node9 -> node50 stays dead: node50's cause */
                set(r, 9, i, BOTH, NCD_PROBE_TIMEOUT, NCD_PROBE_TIMEOUT,
                    NCD_PROBE_OK);
        }
    static const char *const want3[] = {
        "net.unreachable.port-filtered: A firewall on node5 blocks its "
        "ephemeral ports 41000-41099 on ens3, where NCCL listens",
        "net.unreachable.port-filtered: A firewall on node9 drops its "
        "ephemeral ports 32768-60999 on ens3 without tracking connections: "
        "no peer connects to it, and the replies to its own connections are "
        "lost",
        "net.unreachable.host: node50 cannot be reached by any other host on "
        "ens3 (timed-out); it connects out",
        NULL};
    analyze_expect(r, want3);
    rel(r);
}

/* a stateless firewall on one host is not blamed on its peers */
static void test_64_stateless(void **state)
{
    (void)state;
    struct ncd_probe_result *r = mk(64);
    for (int i = 0; i < 64; i++)
        if (i != 9) {
            set(r, i, 9, BOTH, NCD_PROBE_TIMEOUT, NCD_PROBE_OK, NCD_PROBE_OK);
            set(r, 9, i, BOTH, NCD_PROBE_TIMEOUT, NCD_PROBE_TIMEOUT,
                NCD_PROBE_OK);
        }
    static const char *const want[] = {
        "net.unreachable.port-filtered: A firewall on node9 drops its "
        "ephemeral ports 32768-60999 on ens3 without tracking connections: "
        "no peer connects to it, and the replies to its own connections are "
        "lost",
        NULL};
    analyze_expect(r, want);
    /* two hosts: the same, from both ends */
    rel(r);
    r = mk(2);
    set(r, 0, 1, BOTH, NCD_PROBE_TIMEOUT, NCD_PROBE_OK, NCD_PROBE_OK);
    set(r, 1, 0, BOTH, NCD_PROBE_TIMEOUT, NCD_PROBE_TIMEOUT, NCD_PROBE_OK);
    static const char *const want2[] = {
        "net.unreachable.port-filtered: A firewall on node1 drops its "
        "ephemeral ports 32768-60999 on ens3 without tracking connections: "
        "no peer connects to it, and the replies to its own connections are "
        "lost",
        NULL};
    analyze_expect(r, want2);
    /* only the replies (a rule on the source ports' range alone) */
    set(r, 0, 1, BOTH, NCD_PROBE_OK, NCD_PROBE_OK, NCD_PROBE_OK);
    static const char *const want3[] = {
        "net.unreachable.return-filtered: A firewall on node1 drops the "
        "replies to its own connections (its ephemeral ports 32768-60999 on "
        "ens3)",
        NULL};
    analyze_expect(r, want3);
    rel(r);
}

/* a rack (node48..node63) behind a firewall that drops what comes from the
 * other racks; the rack's own connections out are answered */
static void test_64_rack(void **state)
{
    (void)state;
    struct ncd_probe_result *r = mk(64);
    for (int i = 0; i < 48; i++)
        for (int j = 48; j < 64; j++)
            set(r, i, j, BOTH, NCD_PROBE_TIMEOUT, NCD_PROBE_TIMEOUT,
                NCD_PROBE_TIMEOUT);
    static const char *const want[] = {
        "net.unreachable.group: 16 hosts (node48, node49, node50, node51, "
        "node52, node53 and 10 more) cannot be reached from the other 48 "
        "hosts on ens3 (timed-out); among themselves they connect",
        NULL};
    analyze_expect(r, want);
    /* no route between the racks: both ways */
    for (int i = 0; i < 48; i++)
        for (int j = 48; j < 64; j++)
            set(r, j, i, BOTH, NCD_PROBE_TIMEOUT, NCD_PROBE_TIMEOUT,
                NCD_PROBE_TIMEOUT);
    static const char *const want2[] = {
        "net.unreachable.group: 48 hosts (node0, node1, node2, node3, node4, "
        "node5 and 42 more) and the other 16 hosts cannot reach each other on "
        "ens3 (timed-out); within each group they connect",
        NULL};
    analyze_expect(r, want2);
    /* the rack's firewall drops only the ephemeral ports */
    for (int i = 0; i < 48; i++)
        for (int j = 48; j < 64; j++) {
            set(r, i, j, BOTH, NCD_PROBE_TIMEOUT, NCD_PROBE_OK, NCD_PROBE_OK);
            set(r, j, i, BOTH, NCD_PROBE_OK, NCD_PROBE_OK, NCD_PROBE_OK);
        }
    static const char *const want3[] = {
        "net.unreachable.port-filtered: The ephemeral ports 32768-60999 of 16 "
        "hosts (node48, node49, node50, node51, node52, node53 and 10 more) "
        "on ens3 are blocked from 48 hosts (node0, node1, node2, node3, "
        "node4, node5 and 42 more); other hosts connect",
        NULL};
    analyze_expect(r, want3);
    rel(r);
}

/* item 9 of issue 10: NCCL's default interface leads nowhere on every host
 * and node7's firewall drops its ephemeral ports on the interface that
 * works: recommend that interface, and report the firewall on it */
static void test_64_iface_and_firewall(void **state)
{
    (void)state;
    struct ncd_probe_result *r = mk(64);
    for (int i = 0; i < 64; i++) {
        snprintf(r->ranks[i].nccl_if, sizeof r->ranks[i].nccl_if, "eno1");
        snprintf(r->ranks[i].nccl_addr, sizeof r->ranks[i].nccl_addr,
                 "10.99.%d.1", i);
        snprintf(r->ranks[i].nccl_pass, sizeof r->ranks[i].nccl_pass,
                 "any interface");
    }
    filter_range(r, 7);
    for (int i = 0; i < 64; i++)
        for (int j = 0; j < 64; j++)
            if (i != j) {
                set(r, i, j, NCCL, NCD_PROBE_NO_ROUTE, NCD_PROBE_NO_ROUTE,
                    NCD_PROBE_NO_ROUTE);
                if (j == 7)
                    set(r, i, j, REC, NCD_PROBE_TIMEOUT, NCD_PROBE_OK,
                        NCD_PROBE_OK);
            }
    static const char *const want[] = {
        "net.iface-choice.unreachable: The interface NCCL picks does not "
        "reach the other hosts; ens3 does",
        "net.unreachable.port-filtered: A firewall on node7 blocks its "
        "ephemeral ports 41000-41099 on ens3, where NCCL listens",
        NULL};
    struct ncd_findings fl = {0};
    assert_int_equal(ncd_probe_analyze(r, &fl), 0);
    expect(&fl, want);
    assert_int_equal(fl.v[0].n_env, 1);
    assert_string_equal(fl.v[0].env[0].value, "ens3");
    assert_non_null(strstr(fl.v[0].fix, "NCCL_SOCKET_IFNAME=ens3"));
    assert_non_null(strstr(fl.v[0].fix, "findings below"));
    /* one line for the 64 hosts' identical choice */
    assert_string_equal(fl.v[0].evidence[fl.v[0].n_evidence - 1],
                        "64 hosts (node0, node1, node2, node3, node4, node5 "
                        "and 58 more): NCCL picks eno1 (any interface); "
                        "recommended ens3");
    ncd_findings_release(&fl);
    /* without the firewall the fix says every pair connected */
    for (int i = 0; i < 64; i++)
        if (i != 7)
            set(r, i, 7, REC, NCD_PROBE_OK, NCD_PROBE_OK, NCD_PROBE_OK);
    assert_int_equal(ncd_probe_analyze(r, &fl), 0);
    expect(&fl, (const char *const[]){want[0], NULL});
    assert_non_null(strstr(fl.v[0].fix, "probe connected every pair on it"));
    ncd_findings_release(&fl);
    /* and with nothing alive on either interface: no advice, one finding */
    for (int i = 0; i < 64; i++)
        for (int j = 0; j < 64; j++)
            if (i != j)
                set(r, i, j, REC, NCD_PROBE_NO_ROUTE, NCD_PROBE_NO_ROUTE,
                    NCD_PROBE_NO_ROUTE);
    static const char *const want2[] = {
        "net.unreachable.all: No host reaches any other on NCCL's interface "
        "(no-route): the 64 hosts share no working network there",
        NULL};
    analyze_expect(r, want2);
    rel(r);
}

static struct ncd_ctx *ctx_env(char **envp);

/* The recommendation's last rules: traffic counters decide only when one
 * twin clearly carries the traffic; else the lower ifindex, so a probe's
 * own bursts do not flip the choice from one run to the next. */
static void test_recommend_twins(void **state)
{
    (void)state;
    struct ncd_netif nv[2];
    struct ncd_if_addr ad[2];
    memset(nv, 0, sizeof nv);
    memset(ad, 0, sizeof ad);
    for (int i = 0; i < 2; i++) {
        nv[i].index = 20 + i;
        snprintf(nv[i].name, sizeof nv[i].name, "twn%d", i);
        nv[i].flags = IFF_UP | IFF_RUNNING;
        nv[i].kind = NCD_IFK_PHYSICAL;
        nv[i].speed_mbps = 25000;
        nv[i].numa_node = -1;
        ad[i].family = AF_INET;
        snprintf(ad[i].addr, sizeof ad[i].addr, "10.%d.0.1", 40 + i);
        ad[i].prefix = 24;
        nv[i].addrs = &ad[i];
        nv[i].n_addrs = 1;
    }
    struct ncd_netif_list nl = {.v = nv, .n = 2, .ifa_known = 1};
    char *none[] = {NULL};
    struct ncd_ctx *ctx = ctx_env(none);
    static const struct {
        unsigned long long b0, b1;
        const char *best;
    } cases[] = {
        {0, 0, "twn0"},
        {1000, 900000000, "twn0"},          /* a probe's bursts: no signal */
        {300000001, 3000000000ull, "twn0"}, /* busy, but under 10x */
        {200000000, 2000000001ull, "twn1"}, /* 10x and over 1 GiB */
        {5000000000ull, 0, "twn0"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        nv[0].rx_bytes = cases[k].b0;
        nv[1].rx_bytes = cases[k].b1;
        struct ncd_recommendation rec = {0};
        assert_int_equal(ncd_recommend(ctx, &nl, &rec), 0);
        assert_non_null(rec.best);
        assert_string_equal(rec.best->ni->name, cases[k].best);
        ncd_recommendation_release(&rec);
    }
    ncd_ctx_free(ctx);
}

/* ---- tune ---------------------------------------------------------------- */

static struct ncd_ctx *ctx_env(char **envp)
{
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new("/", envp, &ctx), 0);
    return ctx;
}

static void test_tune_file(void **state)
{
    (void)state;
    char *envp[] = {"NCCL_SOCKET_IFNAME=eno1", NULL};
    struct ncd_ctx *ctx = ctx_env(envp);
    struct ncd_tune_set *s = calloc(1, sizeof *s);
    const char *txt = "# candidates\n"
                      "fast: NCCL_SOCKET_IFNAME==ens3 NCCL_IB_DISABLE=1\n"
                      "\n"
                      "NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD='4'\r\n"
                      "nothing: -NCCL_SOCKET_IFNAME\n";
    assert_int_equal(ncd_tune_parse_file(ctx, txt, strlen(txt), s), 0);
    assert_int_equal(s->n, 4);
    assert_true(s->c[0].baseline);
    assert_string_equal(s->c[1].label, "fast");
    assert_string_equal(s->c[1].vars[0].value, "=ens3");
    assert_string_equal(s->c[2].label,
                        "NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4");
    assert_true(s->c[3].vars[0].unset);
    const char *bad = "NCCL_SOCKET_IFNAME\n";
    assert_int_equal(ncd_tune_parse_file(ctx, bad, strlen(bad), s), NCD_EPARSE);
    assert_non_null(strstr(ncd_ctx_errdetail(ctx), "line 1"));
    const char *quote = "A='x\n";
    assert_int_equal(ncd_tune_parse_file(ctx, quote, strlen(quote), s),
                     NCD_EPARSE);
    assert_int_equal(ncd_tune_parse_file(ctx, "# only\n", 7, s), NCD_EPARSE);
    const char nul[] = "A=1\0B=2\n";
    assert_int_equal(ncd_tune_parse_file(ctx, nul, sizeof nul - 1, s),
                     NCD_EPARSE);
    assert_int_equal(ncd_tune_families_parse("ifname,sockets"),
                     NCD_TUNE_IFNAME | NCD_TUNE_SOCKETS);
    assert_int_equal(ncd_tune_families_parse("all"), NCD_TUNE_ALL);
    assert_int_equal(ncd_tune_families_parse("ifname,bogus"), NCD_EPARSE);
    free(s);
    ncd_ctx_free(ctx);
}

static void test_tune_stats(void **state)
{
    (void)state;
    struct ncd_tune_set *s = calloc(1, sizeof *s);
    struct ncd_tune_runs *runs = calloc(NCD_TUNE_MAX_CANDS, sizeof *runs);
    struct ncd_tune_stat st[NCD_TUNE_MAX_CANDS];
    s->n = 4;
    s->c[0].baseline = 1;
    snprintf(s->c[0].label, sizeof s->c[0].label, "(current)");
    for (int i = 1; i < 4; i++) {
        s->c[i].nvars = 1;
        snprintf(s->c[i].vars[0].name, sizeof s->c[i].vars[0].name,
                 "NCCL_SOCKET_IFNAME");
        snprintf(s->c[i].vars[0].value, sizeof s->c[i].vars[0].value, "=if%d", i);
        snprintf(s->c[i].label, sizeof s->c[i].label, "if%d", i);
    }
    double base[] = {0.024, 0.025, 0.023}, fast[] = {0.118, 0.121, 0.110},
           noisy[] = {0.020, 0.040, 0.030};
    for (int k = 0; k < 3; k++) {
        runs[0].busbw[k] = base[k];
        runs[1].busbw[k] = fast[k];
        runs[2].busbw[k] = noisy[k];
    }
    runs[0].n = runs[1].n = runs[2].n = 3;
    runs[3].failed = 3;
    snprintf(runs[3].error, sizeof runs[3].error, "rank 1: no answer");
    struct ncd_findings fl = {0};
    int win = ncd_tune_summarize(s, runs, 0, st, &fl);
    assert_int_equal(win, 1);
    assert_float_equal(st[0].median, 0.024, 1e-12);
    assert_float_equal(st[1].median, 0.118, 1e-12);
    assert_float_equal(st[1].ratio, 0.118 / 0.024, 1e-9);
    assert_float_equal(st[0].spread, (0.025 - 0.023) / 0.024, 1e-9);
    assert_false(st[1].within_noise);
    assert_true(st[2].within_noise); /* 0.020..0.040 overlaps 0.023..0.025 */
    assert_false(st[3].ok);
    struct ncd_finding *f = ncd_findings_find(&fl, "perf.config.tuned");
    assert_non_null(f);
    assert_int_equal(f->severity, NCD_SEV_WARNING);
    assert_string_equal(f->env[0].value, "=if1");
    f = ncd_findings_find(&fl, "perf.config.candidate-failed");
    assert_non_null(f);
    assert_int_equal(f->severity, NCD_SEV_WARNING);
    ncd_findings_release(&fl);
    /* even numbers of runs: median of the middle two */
    runs[1].busbw[3] = 0.200;
    runs[1].n = 4;
    win = ncd_tune_summarize(s, runs, 0, st, &fl);
    assert_float_equal(st[1].median, (0.118 + 0.121) / 2, 1e-12);
    ncd_findings_release(&fl);
    /* nothing beats the baseline beyond the noise: keep it */
    runs[1].n = 0;
    win = ncd_tune_summarize(s, runs, 0, st, &fl);
    assert_int_equal(win, -1);
    f = ncd_findings_find(&fl, "perf.config.tuned");
    assert_non_null(f);
    assert_int_equal(f->severity, NCD_SEV_OK);
    json_t *j = ncd_tune_json(s, runs, st, win);
    assert_true(json_is_null(json_object_get(j, "winner")));
    assert_int_equal(json_array_size(json_object_get(j, "candidates")), 4);
    json_decref(j);
    ncd_findings_release(&fl);
    free(runs);
    free(s);
}

/* default candidates from recorded nodes */
static void cands_of(const char *fixture, char **envp, int families,
                     int local_only, const char *common,
                     struct ncd_tune_set *s)
{
    char root[1024];
    snprintf(root, sizeof root, "%s/tests/fixtures/sysroots/%s",
             NCD_SOURCE_DIR, fixture);
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new(root, envp, &ctx), 0);
    struct ncd_netif_list nl = {0};
    struct ncd_recommendation rec = {0};
    assert_int_equal(ncd_netif_probe(ctx, &nl), 0);
    assert_int_equal(ncd_recommend(ctx, &nl, &rec), 0);
    assert_int_equal(ncd_tune_default_set(ctx, &nl, &rec, families,
                                          local_only, common, s), 0);
    ncd_recommendation_release(&rec);
    ncd_netif_list_release(&nl);
    ncd_ctx_free(ctx);
}

static int has_label(const struct ncd_tune_set *s, const char *label)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->c[i].label, label))
            return 1;
    return 0;
}

static void test_tune_defaults(void **state)
{
    (void)state;
    struct ncd_tune_set *s = calloc(1, sizeof *s);
    char *none[] = {NULL};
    /* cloud VM: ens5 only; docker0/br-* are plumbing, lo only on one host */
    cands_of("cloud-vm-ens5-docker", none, NCD_TUNE_ALL, 0, NULL, s);
    assert_true(s->c[0].baseline);
    assert_true(has_label(s, "NCCL_SOCKET_IFNAME==ens5"));
    assert_false(has_label(s, "NCCL_SOCKET_IFNAME==docker0"));
    assert_false(has_label(s, "NCCL_SOCKET_IFNAME==lo"));
    assert_false(has_label(s, "NCCL_IB_DISABLE=1")); /* no HCA */
    assert_false(has_label(s, "NCCL_SHM_DISABLE=1")); /* several hosts */
    assert_true(has_label(s, "NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4"));
    /* the value already set is not a candidate; a name missing on another
     * host is not either */
    char *set[] = {"NCCL_SOCKET_IFNAME==ens5", NULL};
    cands_of("cloud-vm-ens5-docker", set, NCD_TUNE_IFNAME, 0, NULL, s);
    assert_int_equal(s->n, 1);
    cands_of("cloud-vm-ens5-docker", none, NCD_TUNE_IFNAME, 0, "eth0\0", s);
    assert_int_equal(s->n, 1);
    /* one host: loopback and SHM too */
    cands_of("cloud-vm-ens5-docker", none, NCD_TUNE_IFNAME | NCD_TUNE_SHM, 1,
             NULL, s);
    assert_true(has_label(s, "NCCL_SOCKET_IFNAME==lo"));
    assert_true(has_label(s, "NCCL_SHM_DISABLE=1"));
    /* bare metal with an HCA: IB on/off */
    cands_of("baremetal-8gpu-ipoib", none, NCD_TUNE_IB, 0, NULL, s);
    assert_true(has_label(s, "NCCL_IB_DISABLE=1"));
    free(s);
}

/* tune reads perf's -J/--json document (nccl-tests' keys) */
static void test_tune_perf_json(void **state)
{
    (void)state;
    const char *doc =
        "{\"results\":["
        "{\"size\":1024,\"out_of_place\":{\"bus_bw\":1.0},"
        "\"in_place\":{\"bus_bw\":3.0}},"
        "{\"size\":4096,\"out_of_place\":{\"bus_bw\":5.0},"
        "\"in_place\":{\"bus_bw\":7.0}},"
        "{\"size\":4096,\"out_of_place\":{\"bus_bw\":9.0},"
        "\"in_place\":{\"bus_bw\":\"nan\"}}],"
        "\"average_bus_bandwidth\":{\"bandwidth\":4.25,\"okay\":\"true\"}}";
    double bw = 0;
    char err[128] = "";
    /* largest size: mean of its numeric cells (5, 7, 9) */
    assert_int_equal(ncd_tune_perf_busbw(doc, 0, &bw, err, sizeof err), 0);
    assert_true(bw > 6.999 && bw < 7.001);
    assert_int_equal(ncd_tune_perf_busbw(doc, 1, &bw, err, sizeof err), 0);
    assert_true(bw > 4.249 && bw < 4.251);
    assert_int_equal(ncd_tune_perf_busbw("{\"results\":[]}", 0, &bw, err,
                                         sizeof err),
                     NCD_EPARSE);
    assert_non_null(strstr(err, "no bus bandwidth"));
    assert_int_equal(ncd_tune_perf_busbw("# nccl-tests", 0, &bw, err,
                                         sizeof err),
                     NCD_EPARSE);
    assert_non_null(strstr(err, "unreadable"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_ok),
        cmocka_unit_test(test_one_host_not_ok),
        cmocka_unit_test(test_port_filter),
        cmocka_unit_test(test_iface_choice),
        cmocka_unit_test(test_ifname_one_host),
        cmocka_unit_test(test_versions_hostnames),
        cmocka_unit_test(test_duplicate_and_mtu),
        cmocka_unit_test(test_slow_pair),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_64_one_bad_host),
        cmocka_unit_test(test_64_one_bad_link),
        cmocka_unit_test(test_64_two_causes),
        cmocka_unit_test(test_64_stateless),
        cmocka_unit_test(test_64_rack),
        cmocka_unit_test(test_64_iface_and_firewall),
        cmocka_unit_test(test_recommend_twins),
        cmocka_unit_test(test_tune_file),
        cmocka_unit_test(test_tune_perf_json),
        cmocka_unit_test(test_tune_stats),
        cmocka_unit_test(test_tune_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
