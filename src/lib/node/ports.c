/* SPDX-License-Identifier: MIT */
/* Port range, listeners, nftables analysis, bind test (see ncd/ports.h). */
#define _GNU_SOURCE
#include "ncd/ports.h"
#include "ncd/error.h"
#include "ncd/fs.h"
#include "node_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

int ncd_port_range_parse(const char *buf, int *lo, int *hi)
{
    int a, b;
    if (sscanf(buf, "%d %d", &a, &b) != 2 || a < 1 || b > 65535 || a > b)
        return NCD_EPARSE;
    *lo = a;
    *hi = b;
    return 0;
}

int ncd_proc_net_tcp_listeners(const char *buf, size_t len, int port)
{
    int n = 0;
    size_t i = 0;
    while (i < len) {
        size_t s = i;
        while (i < len && buf[i] != '\n')
            i++;
        char line[512];
        size_t l = i - s < sizeof line - 1 ? i - s : sizeof line - 1;
        memcpy(line, buf + s, l);
        line[l] = '\0';
        i++;
        /* "  0: 0100007F:6D9C 00000000:0000 0A ..." */
        char local[80], remote[80], st[8];
        if (sscanf(line, " %*[0-9]: %79s %79s %7s", local, remote, st) != 3)
            continue;
        const char *c = strrchr(local, ':');
        if (!c)
            continue;
        if (strtol(c + 1, NULL, 16) == port && strcmp(st, "0A") == 0)
            n++;
    }
    return n;
}

/* ---- nftables -------------------------------------------------------------- */

static void fw_ev(struct ncd_fw *fw, const char *a, const char *b)
{
    if (fw->n_evidence < 8)
        snprintf(fw->evidence[fw->n_evidence++], sizeof fw->evidence[0],
                 "%s%s", a, b);
}

/* Ports matched by a "right" operand: number, {"range":[a,b]}, {"set":[...]}.
 * Sets cover[] bits relative to [lo,hi]: returns how many of the range's
 * ports are matched. */
static long ports_in(json_t *right, int lo, int hi, unsigned char *cover)
{
    long n = 0;
    if (json_is_integer(right)) {
        long p = (long)json_integer_value(right);
        if (p >= lo && p <= hi && !cover[p - lo]++)
            n++;
        return n;
    }
    json_t *r = json_object_get(right, "range");
    if (json_is_array(r) && json_array_size(r) == 2) {
        long a = (long)json_integer_value(json_array_get(r, 0));
        long b = (long)json_integer_value(json_array_get(r, 1));
        for (long p = a < lo ? lo : a; p <= b && p <= hi; p++)
            if (!cover[p - lo]++)
                n++;
        return n;
    }
    json_t *set = json_object_get(right, "set");
    if (json_is_array(set)) {
        size_t i;
        json_t *e;
        json_array_foreach(set, i, e) n += ports_in(e, lo, hi, cover);
    }
    return n;
}

static int is_tcp_dport(json_t *left)
{
    json_t *pl = json_object_get(left, "payload");
    const char *proto = json_string_value(json_object_get(pl, "protocol"));
    const char *field = json_string_value(json_object_get(pl, "field"));
    return proto && field && strcmp(proto, "tcp") == 0 &&
           strcmp(field, "dport") == 0;
}

/* A match a new connection from a peer host passes for sure?  ct state
 * established/related does not (new connections), nor does iif lo. */
static int match_excludes_new_peer(json_t *m)
{
    json_t *left = json_object_get(m, "left");
    json_t *ct = json_object_get(left, "ct");
    const char *key = json_string_value(json_object_get(ct, "key"));
    if (key && strcmp(key, "state") == 0) {
        char *s = json_dumps(json_object_get(m, "right"), JSON_COMPACT);
        int excl = s && !strstr(s, "new");
        free(s);
        return excl;
    }
    json_t *meta = json_object_get(left, "meta");
    const char *mk = json_string_value(json_object_get(meta, "key"));
    const char *rv = json_string_value(json_object_get(m, "right"));
    if (mk && rv && (strcmp(mk, "iifname") == 0 || strcmp(mk, "iif") == 0) &&
        strcmp(rv, "lo") == 0)
        return 1;
    return 0;
}

int ncd_nft_analyze(struct ncd_ctx *ctx, const char *js, size_t len, int lo,
                    int hi, struct ncd_fw *out)
{
    json_error_t err;
    json_t *root = json_loadb(js, len, 0, &err);
    json_t *arr = json_object_get(root, "nftables");
    if (!json_is_array(arr)) {
        json_decref(root);
        return ncd_fail(ctx, NCD_EPARSE, "nft JSON: %s",
                        root ? "no \"nftables\" array" : err.text);
    }
    out->known = 1;
    int span = hi - lo + 1;
    unsigned char *acc = calloc((size_t)span, 1);
    if (!acc) {
        json_decref(root);
        return NCD_ENOMEM;
    }
    /* input base chains: "family table name" */
    char chains[32][160];
    int nch = 0;
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o)
    {
        json_t *ch = json_object_get(o, "chain");
        const char *hook = json_string_value(json_object_get(ch, "hook"));
        if (!hook || strcmp(hook, "input") != 0 || nch >= 32)
            continue;
        snprintf(chains[nch++], sizeof chains[0], "%s %s %s",
                 json_string_value(json_object_get(ch, "family")),
                 json_string_value(json_object_get(ch, "table")),
                 json_string_value(json_object_get(ch, "name")));
        out->input_chains++;
        const char *pol = json_string_value(json_object_get(ch, "policy"));
        if (pol && strcmp(pol, "drop") == 0) {
            out->policy_drop = 1;
            fw_ev(out, chains[nch - 1], ": input hook, policy drop");
        }
    }
    int accept_all = 0;
    json_array_foreach(arr, i, o)
    {
        json_t *r = json_object_get(o, "rule");
        if (!r)
            continue;
        char key[160];
        snprintf(key, sizeof key, "%s %s %s",
                 json_string_value(json_object_get(r, "family")),
                 json_string_value(json_object_get(r, "table")),
                 json_string_value(json_object_get(r, "chain")));
        int in_input = 0;
        for (int k = 0; k < nch; k++)
            in_input |= strcmp(chains[k], key) == 0;
        if (!in_input)
            continue; /* jumps into user chains are not followed */
        json_t *expr = json_object_get(r, "expr");
        int verdict = 0; /* 1 accept, 2 drop/reject */
        int has_dport = 0, excludes = 0, other_proto = 0;
        unsigned char *cov = calloc((size_t)span, 1);
        if (!cov)
            break;
        long covered = 0;
        size_t k;
        json_t *e;
        json_array_foreach(expr, k, e)
        {
            if (json_object_get(e, "accept"))
                verdict = 1;
            else if (json_object_get(e, "drop") || json_object_get(e, "reject"))
                verdict = 2;
            json_t *m = json_object_get(e, "match");
            if (!m)
                continue;
            json_t *left = json_object_get(m, "left");
            const char *op = json_string_value(json_object_get(m, "op"));
            if (is_tcp_dport(left) && op &&
                (strcmp(op, "==") == 0 || strcmp(op, "in") == 0)) {
                has_dport = 1;
                covered += ports_in(json_object_get(m, "right"), lo, hi, cov);
            } else if (match_excludes_new_peer(m)) {
                excludes = 1;
            } else {
                json_t *pl = json_object_get(left, "payload");
                const char *proto =
                    json_string_value(json_object_get(pl, "protocol"));
                if (proto && strcmp(proto, "udp") == 0)
                    other_proto = 1;
            }
        }
        char *txt = json_dumps(expr, JSON_COMPACT);
        if (verdict == 1 && !excludes && !other_proto) {
            if (!has_dport) {
                accept_all = 1;
            } else {
                for (int p = 0; p < span; p++)
                    acc[p] |= cov[p];
            }
        } else if (verdict == 2 && has_dport && covered > 0) {
            out->drop_overlap = 1;
            fw_ev(out, "drops part of the range: ", txt ? txt : "?");
        }
        free(txt);
        free(cov);
    }
    int all = 1;
    for (int p = 0; p < span; p++)
        all &= acc[p] != 0;
    out->accept_covers = accept_all || all;
    free(acc);
    json_decref(root);
    return 0;
}

int ncd_nft_run(struct ncd_ctx *ctx, int timeout_ms, char **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    const char *nft = access("/usr/sbin/nft", X_OK) == 0 ? "/usr/sbin/nft"
                      : access("/sbin/nft", X_OK) == 0   ? "/sbin/nft"
                                                         : NULL;
    if (!nft)
        return ncd_fail(ctx, NCD_ENOENT, "nft is not installed");
    if (geteuid() != 0)
        return ncd_fail(ctx, NCD_EPERM, "reading the nftables rule set needs root");
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0)
        return ncd_fail(ctx, NCD_ESYS, "pipe: %s", strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    char *argv[] = {(char *)nft, (char *)"-j", (char *)"list",
                    (char *)"ruleset", NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, nft, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pfd[1]);
    if (rc != 0) {
        close(pfd[0]);
        return ncd_fail(ctx, NCD_ESYS, "spawn nft: %s", strerror(rc));
    }
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap + 1);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int status = 0, timed_out = 0;
    while (b) {
        struct timespec t1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        long el = (t1.tv_sec - t0.tv_sec) * 1000 +
                  (t1.tv_nsec - t0.tv_nsec) / 1000000;
        if (el >= timeout_ms) {
            timed_out = 1;
            break;
        }
        struct pollfd p = {.fd = pfd[0], .events = POLLIN};
        int pr = poll(&p, 1, (int)(timeout_ms - el));
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0) {
            timed_out = pr == 0;
            break;
        }
        if (n == cap) {
            if (cap >= (16u << 20))
                break;
            char *nb = realloc(b, cap * 2 + 1);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
        ssize_t r = read(pfd[0], b + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(pfd[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!b)
        return NCD_ENOMEM;
    if (timed_out) {
        free(b);
        return ncd_fail(ctx, NCD_ETIMEOUT, "nft did not answer within %d ms",
                        timeout_ms);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        free(b);
        return ncd_fail(ctx, NCD_ESYS, "nft -j list ruleset failed (status %d)",
                        WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}

int ncd_fw_probe(struct ncd_ctx *ctx, int lo, int hi, struct ncd_fw *out)
{
    memset(out, 0, sizeof *out);
    char *buf = NULL;
    size_t len = 0;
    int rc;
    if (ncd_ctx_is_live(ctx)) {
        rc = ncd_nft_run(ctx, 2000, &buf, &len);
        ncd__scpy(out->source, sizeof out->source, "nft -j list ruleset");
    } else {
        rc = ncd_fs_read(ctx, "/.ncd/nft.json", 16u << 20, &buf, &len);
        ncd__scpy(out->source, sizeof out->source, ".ncd/nft.json");
    }
    if (rc == NCD_ENOMEM)
        return rc;
    if (rc < 0)
        return 0; /* detail stays in the ctx for the caller to show */
    rc = ncd_nft_analyze(ctx, buf, len, lo, hi, out);
    free(buf);
    return rc == NCD_ENOMEM ? rc : 0;
}

int ncd_bind_test(struct ncd_ctx *ctx, int family, const char *addr,
                  int scope_id, int *port)
{
    *port = 0;
    if (!ncd_ctx_is_live(ctx))
        return ncd_fail(ctx, NCD_ENOTLIVE, "bind test needs the live node");
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t sl;
    if (family == AF_INET) {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        if (inet_pton(AF_INET, addr, &s4->sin_addr) != 1)
            return ncd_fail(ctx, NCD_EINVAL, "bad address %s", addr);
        sl = sizeof *s4;
    } else {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_scope_id = (uint32_t)scope_id;
        if (inet_pton(AF_INET6, addr, &s6->sin6_addr) != 1)
            return ncd_fail(ctx, NCD_EINVAL, "bad address %s", addr);
        sl = sizeof *s6;
    }
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return ncd_fail(ctx, ncd_err_from_errno(errno), "socket: %s",
                        strerror(errno));
    int rc = 0;
    if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 1) < 0) {
        int e = errno;
        rc = ncd_fail(ctx, ncd_err_from_errno(e), "bind/listen on %s: %s",
                      addr, strerror(e));
    } else {
        sl = sizeof ss;
        if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
            *port = ntohs(family == AF_INET
                              ? ((struct sockaddr_in *)&ss)->sin_port
                              : ((struct sockaddr_in6 *)&ss)->sin6_port);
    }
    close(fd);
    return rc;
}
