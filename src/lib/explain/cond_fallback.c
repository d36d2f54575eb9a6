/* SPDX-License-Identifier: MIT */
/*
 * Conditions for logs whose cause no rule names: WARN lines no rule claims,
 * NCCL's error trail, where a silent init stopped.
 */
#define _GNU_SOURCE
#include "explain/reason.h"

#include <stdio.h>
#include <string.h>

#include "ncd/error.h"

/* The subsystem tags NCCL's WARN messages start with, and the category of
 * what that code path does (the tags as NCCL 2.4..2.30 prints them: src/
 * transport/net_ib*, net_socket.cc, bootstrap.cc, misc/socket.cc,
 * transport/nvls.cc, p2p.cc, shm.cc, misc/shmutils.cc, plugin/net.cc, the
 * CUDACHECK macros of include/checks.h; data/nccl-messages.tsv).  Only a
 * tag at the start of the message counts: words inside a message name
 * what it talks about, not who printed it. */
static const struct {
    const char *tag;
    enum ncd_category cat;
} subsystem_tags[] = {
    {"NET/IB", NCD_CAT_NET_IB},          {"NET/MLX5", NCD_CAT_NET_IB},
    {"IB ", NCD_CAT_NET_IB},             {"Call to ibv_", NCD_CAT_NET_IB},
    {"ibv_", NCD_CAT_NET_IB},            {"NET/Socket", NCD_CAT_NET_UNREACHABLE},
    {"Bootstrap", NCD_CAT_NET_UNREACHABLE},
    {"bootstrap", NCD_CAT_NET_UNREACHABLE},
    {"socket", NCD_CAT_NET_UNREACHABLE}, {"Socket", NCD_CAT_NET_UNREACHABLE},
    {"Net : ", NCD_CAT_NET_UNREACHABLE}, {"Cuda failure", NCD_CAT_GPU_CUDA},
    {"CUDA", NCD_CAT_GPU_CUDA},          {"Cuda", NCD_CAT_GPU_CUDA},
    {"cuda", NCD_CAT_GPU_CUDA},          {"NVLS", NCD_CAT_GPU_FABRIC},
    {"cuMem", NCD_CAT_GPU_FABRIC},       {"MNNVL", NCD_CAT_GPU_FABRIC},
    {"IMEX", NCD_CAT_GPU_FABRIC},        {"P2P", NCD_CAT_GPU_P2P},
    {"SHM", NCD_CAT_SYS_SHM},            {"shm", NCD_CAT_SYS_SHM},
    {"/dev/shm", NCD_CAT_SYS_SHM},       {"NET/Plugin", NCD_CAT_LIB_NCCL},
    {"NET/OFI", NCD_CAT_LIB_NCCL},
};

/* The tag `msg` starts with (followed by a space, ':', '/', '(' or the
 * end), or -1. */
static int subsystem_of(const char *msg, size_t len)
{
    for (size_t i = 0; i < sizeof subsystem_tags / sizeof *subsystem_tags;
         i++) {
        size_t tl = strlen(subsystem_tags[i].tag);
        if (tl > len || memcmp(msg, subsystem_tags[i].tag, tl) != 0)
            continue;
        char c = tl < len ? msg[tl] : ' ';
        if (subsystem_tags[i].tag[tl - 1] == ' ' ||
            subsystem_tags[i].tag[tl - 1] == '_' || c == ' ' || c == ':' ||
            c == '/' || c == '(' || c == '\'' || c == '.')
            return (int)i;
    }
    return -1;
}

void ncd__unmatched_add(struct ncd_explain *ex, const struct ncd_log_line *ll)
{
    enum ncd_category cat;
    char basis[96];
    long k = ll->src && ll->src_len
                 ? ncd__file_rule(ex->rules, ll->src, ll->src_len, 0)
                 : -1;
    int t;
    if (k >= 0) {
        cat = ex->rules->v[k].cat;
        snprintf(basis, sizeof basis, "the NCCL source file that printed it "
                 "(%.*s)", (int)(ll->src_len < 40 ? ll->src_len : 40),
                 ll->src);
    } else if (ll->msg &&
               (t = subsystem_of(ll->msg, ll->msg_len)) >= 0) {
        cat = subsystem_tags[t].cat;
        snprintf(basis, sizeof basis, "the subsystem its message names "
                 "('%s')", subsystem_tags[t].tag);
    } else {
        ncd__rec_add(ex, &ex->unmatched_bare, ll, ex->nsrc - 1, ex->lineno);
        return;
    }
    if (!ex->unmatched[cat].count) {
        memcpy(ex->unmatched_basis[cat], basis, sizeof basis);
        ncd__sanitize(ex->unmatched_basis[cat], strlen(basis));
    }
    ncd__rec_add(ex, &ex->unmatched[cat], ll, ex->nsrc - 1, ex->lineno);
}

/* The category an NCCL result code points at, with its name; -1 for the
 * codes that name no subsystem (ncclInternalError, ...).  ncclResult_t,
 * NCCL src/nccl.h.in, 2.4-2.30. */
static int category_of_result(int code, const char **name)
{
    static const char *const results[] = {
        "ncclSuccess",       "ncclUnhandledCudaError", "ncclSystemError",
        "ncclInternalError", "ncclInvalidArgument",    "ncclInvalidUsage",
        "ncclRemoteError",   "ncclInProgress"};
    *name = code > 0 && code < 8 ? results[code] : NULL;
    switch (code) {
    case 1: /* a CUDA call failed */
        return NCD_CAT_GPU_CUDA;
    case 2: /* a system call failed: sockets, shm, files */
    case 6: /* a remote rank failed or the connection to it broke */
        return NCD_CAT_NET_UNREACHABLE;
    case 4: /* the arguments ranks passed disagree or are wrong */
    case 5:
        return NCD_CAT_USAGE_MISMATCH;
    default:
        return -1;
    }
}

/* One finding per category of the unmatched WARNs; the cause says what
 * the category was derived from. */
int ncd__cond_unmatched_warn(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    int n = 0;
    for (int c = 0; c < NCD_CAT__COUNT; c++) {
        if (!ex->unmatched[c].count)
            continue;
        struct ncd__hit *h = ncd__hit_new(rs, rule);
        if (!h)
            return NCD_ENOMEM;
        h->rec = &ex->unmatched[c];
        h->cat = (enum ncd_category)c;
        ncd__hit_from_rec(h, h->rec);
        ncd__hit_var(h, "basis", ex->unmatched_basis[c]);
        n++;
    }
    if (!ex->unmatched_bare.count)
        return n;
    /* no source file, no subsystem: the error code NCCL returned */
    struct ncd__hit *h = ncd__hit_new(rs, rule);
    if (!h)
        return NCD_ENOMEM;
    const char *name = NULL;
    int cat = ex->trail_code > 0 ? category_of_result(ex->trail_code, &name)
                                 : -1;
    char basis[160];
    if (cat >= 0)
        snprintf(basis, sizeof basis, "the error code NCCL returned after "
                 "it (%s), as the line names no NCCL source file and no "
                 "subsystem", name);
    else if (name)
        snprintf(basis, sizeof basis, "nothing the line shows: it names no "
                 "NCCL source file and no subsystem, and the error code "
                 "after it (%s) names no subsystem either; %s is only a "
                 "default", name, ncd_category_name(NCD_CAT_NET_UNREACHABLE));
    else
        snprintf(basis, sizeof basis, "nothing the line shows: it names no "
                 "NCCL source file, no subsystem and no error code follows "
                 "it; %s is only a default",
                 ncd_category_name(NCD_CAT_NET_UNREACHABLE));
    h->rec = &ex->unmatched_bare;
    h->cat = cat >= 0 ? (enum ncd_category)cat : NCD_CAT_NET_UNREACHABLE;
    ncd__hit_from_rec(h, h->rec);
    ncd__hit_var(h, "basis", basis);
    return n + 1;
}

/* NCCL logged a failure trail but no WARN we could read: the file of the
 * deepest frame names the subsystem (reference B7, end). */
int ncd__cond_error_trail(struct ncd__reason *rs, size_t rule)
{
    /* ncclResult_t, NCCL src/nccl.h.in */
    static const char *const results[] = {
        "ncclSuccess",       "ncclUnhandledCudaError", "ncclSystemError",
        "ncclInternalError", "ncclInvalidArgument",    "ncclInvalidUsage",
        "ncclRemoteError",   "ncclInProgress"};
    const struct ncd_explain *ex = rs->ex;
    if (!ex->trail_file[0] || ex->trail_code <= 0)
        return 0;
    struct ncd__hit *h = ncd__hit_new(rs, rule);
    if (!h)
        return NCD_ENOMEM;
    char code[40];
    snprintf(code, sizeof code, "%s (%d)",
             ex->trail_code < 8 ? results[ex->trail_code] : "error",
             ex->trail_code);
    h->cat = ncd__category_for_src(ex->rules, ex->trail_file,
                                   strlen(ex->trail_file));
    ncd__hit_var(h, "file", ex->trail_file);
    ncd__hit_var(h, "result", code);
    ncd__hit_ev(h, "%s:%llu: %s", ncd__src_name(ex, ex->trail_src),
                (unsigned long long)ex->trail_line, ex->trail_text);
    h->seq = ex->trail_seq;
    return 1;
}

/* A process whose last NCCL lines are in init phase `want`, with no Init
 * COMPLETE and no WARN after them. */
static int init_hang(struct ncd__reason *rs, size_t rule, int want)
{
    const struct ncd_explain *ex = rs->ex;
    char where[96];
    for (size_t i = 0; i < ex->nprocs; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        if (p->ncomplete || p->nwarn || p->phase != want)
            continue;
        struct ncd__hit *h = ncd__hit_proc(rs, rule, p, where, sizeof where);
        if (!h)
            return NCD_ENOMEM;
        ncd__hit_var(h, "where", where);
        if (p->phase_line && p->phase_line != p->last_line)
            ncd__hit_ev(h, "%s:%llu: %s entered this phase: %s",
                        ncd__src_name(ex, p->src),
                        (unsigned long long)p->phase_line, where, p->phase_text);
        else if (p->phase_line)
            ncd__hit_ev(h, "%s:%llu: %s: %s", ncd__src_name(ex, p->src),
                        (unsigned long long)p->phase_line, where, p->phase_text);
        ncd__hit_ev(h, "%s:%llu: the last NCCL line of %s; no 'Init COMPLETE' "
                       "and no WARN follow",
                    ncd__src_name(ex, p->last_src),
                    (unsigned long long)p->last_line, where);
        h->seq = p->last_seq;
        return 1;
    }
    return 0;
}

int ncd__cond_init_hang_nvls(struct ncd__reason *rs, size_t rule)
{
    return init_hang(rs, rule, PH_NVLS);
}

int ncd__cond_init_hang_bootstrap(struct ncd__reason *rs, size_t rule)
{
    return init_hang(rs, rule, PH_BOOTSTRAP);
}

int ncd__cond_init_hang_connect(struct ncd__reason *rs, size_t rule)
{
    return init_hang(rs, rule, PH_CONNECT);
}
