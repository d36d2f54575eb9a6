/* SPDX-License-Identifier: MIT */
/* The live system operations: this machine answers (see ncd/sysops.h). */
#define _GNU_SOURCE
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/libs.h"
#include "ncd/sysops.h"
#include "ncd/version.h"
#include "sys/sys_internal.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <link.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <netdb.h>
#include <netpacket/packet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <unistd.h>


/* ---- getifaddrs -------------------------------------------------------------- */

static int prefix_from_mask(const struct sockaddr *sa)
{
    int bits = 0;
    const unsigned char *b;
    size_t n;
    if (!sa)
        return 0;
    if (sa->sa_family == AF_INET) {
        b = (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr;
        n = 4;
    } else if (sa->sa_family == AF_INET6) {
        b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
        n = 16;
    } else {
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        bits += __builtin_popcount(b[i]);
    return bits;
}

/* AF_PACKET entries carry the link flags (RUNNING and LOWER_UP, which
 * sysfs "flags" lacks). */
static int add_link(struct ncd_sys_ifaddrs *out, const struct ifaddrs *i)
{
    struct ncd_sys_linkflags *nv =
        realloc(out->link, (out->n_link + 1) * sizeof *nv);
    if (!nv)
        return NCD_ENOMEM;
    out->link = nv;
    snprintf(nv[out->n_link].name, sizeof nv[0].name, "%s", i->ifa_name);
    nv[out->n_link++].flags = i->ifa_flags;
    return 0;
}

static int live_getifaddrs(struct ncd_ctx *ctx, struct ncd_sys_ifaddrs *out)
{
    struct ifaddrs *ifa0;
    if (getifaddrs(&ifa0) < 0)
        return ncd_fail(ctx, NCD_ESYS, "getifaddrs: %s", strerror(errno));
    size_t cap = 0;
    int rc = 0;
    for (struct ifaddrs *i = ifa0; i && rc == 0; i = i->ifa_next) {
        if (!i->ifa_addr)
            continue;
        int fam = i->ifa_addr->sa_family;
        if (fam == AF_PACKET) {
            rc = add_link(out, i);
            continue;
        }
        if (fam != AF_INET && fam != AF_INET6)
            continue;
        if (out->n == cap) {
            cap = cap ? cap * 2 : 16;
            struct ncd_ifaddr_entry *nv = realloc(out->v, cap * sizeof *nv);
            if (!nv) {
                rc = NCD_ENOMEM;
                break;
            }
            out->v = nv;
        }
        struct ncd_ifaddr_entry *e = &out->v[out->n];
        memset(e, 0, sizeof *e);
        snprintf(e->name, sizeof e->name, "%s", i->ifa_name);
        e->flags = i->ifa_flags;
        char host[NI_MAXHOST];
        socklen_t sl = fam == AF_INET ? sizeof(struct sockaddr_in)
                                      : sizeof(struct sockaddr_in6);
        if (getnameinfo(i->ifa_addr, sl, host, sizeof host, NULL, 0,
                        NI_NUMERICHOST) != 0)
            continue;
        if (ncd_if_addr_from_string(&e->a, host,
                                    prefix_from_mask(i->ifa_netmask)) < 0)
            continue;
        if (fam == AF_INET6)
            e->a.scope_id =
                (int)((struct sockaddr_in6 *)i->ifa_addr)->sin6_scope_id;
        out->n++;
    }
    freeifaddrs(ifa0);
    if (rc < 0)
        return rc;
    out->known = 1;
    out->link_known = 1;
    return 0;
}

/* ---- statvfs, dlopen, libnccl ------------------------------------------------ */

static int live_statvfs(struct ncd_ctx *ctx, const char *dir,
                        struct ncd_sys_space *out)
{
    (void)ctx;
    struct statvfs sv;
    if (statvfs(dir, &sv) == 0) {
        out->known = 1;
        out->source = "statvfs";
        out->size_bytes = (long long)sv.f_blocks * (long long)sv.f_frsize;
        out->avail_bytes = (long long)sv.f_bavail * (long long)sv.f_frsize;
    }
    return 0;
}

static int live_dlopen(struct ncd_ctx *ctx, const char *soname,
                       struct ncd_dl_probe *out)
{
    (void)ctx;
    out->known = 1;
    dlerror();
    void *h = dlopen(soname, RTLD_LAZY | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(out->detail, sizeof out->detail, "%s", e ? e : "dlopen failed");
        return 0;
    }
    out->ok = 1;
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name)
        snprintf(out->detail, sizeof out->detail, "%s", lm->l_name);
    dlclose(h);
    return 0;
}

/* No dlopen: the library is 200+ MB and its constructors are not ours to
 * run.  The file the loader would pick, and the version NCCL compiles into
 * its .rodata (VERSION_STRING, NCCL src/init.cc: the same number
 * ncclGetVersion() returns). */
static int live_nccl_version(struct ncd_ctx *ctx, struct ncd_nccl_lib *out)
{
    const char *why = "";
    int r = ncd_sys_loader_pick(ctx, "libnccl.so.2", out->path,
                                sizeof out->path, &why);
    if (r < 0)
        return r;
    if (r == 0) {
        snprintf(out->error, sizeof out->error,
                 "libnccl.so.2: not in LD_LIBRARY_PATH, /etc/ld.so.cache or "
                 "the default library directories");
        return 0;
    }
    out->loaded = 1;
    int code = 0;
    r = ncd_nccl_file_version(ctx, out->path, &code, out->cuda,
                              sizeof out->cuda);
    ncd_ctx_clear_error(ctx);
    if (r == NCD_ENOMEM)
        return r;
    if (r <= 0 || code <= 0) {
        snprintf(out->error, sizeof out->error,
                 "%.200s has no NCCL version string in .rodata", out->path);
        return 0;
    }
    out->version = code;
    out->found = 1;
    return 0;
}

static int live_nccl_libs(struct ncd_ctx *ctx, ncd_sys_scan_fn scan,
                          struct ncd_nccl_scan *out)
{
    out->visible = 1;
    return scan(ctx, out);
}

/* dlopen by the path ld.so would pick (ncd_sys_loader_pick): no second read
 * of /etc/ld.so.cache by ld.so, no walk of its search path when the
 * library is absent.  NULL (and *found = 0 when it is not there). */
static void *dlopen_picked(struct ncd_ctx *ctx, const char *soname, int flags,
                           int *found)
{
    char path[600];
    const char *why;
    *found = ncd_sys_loader_pick(ctx, soname, path, sizeof path, &why) == 1;
    ncd_ctx_clear_error(ctx);
    return *found ? dlopen(path, flags) : NULL;
}

static int live_cuda_driver(struct ncd_ctx *ctx, char *src, size_t srcsz)
{
    int found;
    void *h = dlopen_picked(ctx, "libcuda.so.1", RTLD_LAZY | RTLD_LOCAL, &found);
    if (!h) {
        snprintf(src, srcsz, "libcuda.so.1 not loadable");
        return 0;
    }
    int (*get)(int *) =
        (int (*)(int *))(uintptr_t)dlsym(h, "cuDriverGetVersion");
    int v = 0;
    if (!get || get(&v) != 0)
        v = 0;
    dlclose(h);
    snprintf(src, srcsz, "cuDriverGetVersion()");
    return v;
}

/* ---- NVML -------------------------------------------------------------------- */

/* nvmlPciInfo_t (NVML API v3+): char busIdLegacy[16]; unsigned domain, bus,
 * device, pciDeviceId, pciSubSystemId; char busId[32].  A larger buffer is
 * passed so a grown struct cannot overrun. */
struct nvml_pci {
    char bus_legacy[16];
    unsigned domain, bus, device, devid, subsys;
    char bus_id[32];
    char spare[256];
};

int ncd__nvml_query(const struct ncd__nvml_api *api,
                    struct ncd_nvml_answer *out)
{
    int r = api->init();
    if (r != 0) {
        snprintf(out->error, sizeof out->error,
                 "nvmlInit_v2 failed (NVML error %d)", r);
        return 0;
    }
    if (api->driver_version)
        api->driver_version(out->driver, sizeof out->driver);
    out->driver[sizeof out->driver - 1] = '\0';
    if (api->cuda_version)
        api->cuda_version(&out->cuda);
    unsigned n = 0;
    int rc = 0;
    if ((r = api->count(&n)) != 0) {
        snprintf(out->error, sizeof out->error,
                 "nvmlDeviceGetCount_v2 failed (NVML error %d)", r);
        api->shutdown();
        return 0;
    }
    /* The GPUs first, so links can tell a GPU peer from a switch. */
    void **devs = calloc(n + 1, sizeof *devs);
    if (!devs)
        rc = NCD_ENOMEM;
    for (unsigned i = 0; i < n && !rc; i++) {
        struct nvml_pci pi;
        memset(&pi, 0, sizeof pi);
        if (api->handle(i, &devs[i]) != 0 || api->pci(devs[i], &pi) != 0) {
            devs[i] = NULL;
            continue;
        }
        pi.bus_id[sizeof pi.bus_id - 1] = '\0';
        char nm[96] = "";
        if (api->name && api->name(devs[i], nm, sizeof nm) == 0)
            nm[sizeof nm - 1] = '\0';
        else
            nm[0] = '\0';
        rc = ncd__nvml_add_gpu(out, pi.bus_id, nm);
    }
    size_t g = 0;
    for (unsigned i = 0; i < n && !rc; i++) {
        if (!devs[i])
            continue;
        const char *bdf = out->gpu[g++].bdf;
        if (!api->link_state || !api->link_remote)
            continue;
        /* NVML_NVLINK_MAX_LINKS is 18 today; stop at the first link NVML
         * refuses (NOT_SUPPORTED / INVALID_ARGUMENT). */
        for (unsigned l = 0; l < 64 && !rc; l++) {
            int active = 0;
            if (api->link_state(devs[i], l, &active) != 0)
                break;
            if (!active)
                continue;
            struct nvml_pci rp;
            char rb[16];
            memset(&rp, 0, sizeof rp);
            if (api->link_remote(devs[i], l, &rp) != 0)
                continue;
            rp.bus_id[sizeof rp.bus_id - 1] = '\0';
            ncd__bdf_norm(rp.bus_id, rb);
            int gpu_peer = 0;
            for (size_t k = 0; k < out->n_gpu && !gpu_peer; k++)
                gpu_peer = strcmp(out->gpu[k].bdf, rb) == 0;
            /* not a GPU: an NVSwitch (or a CPU on C2C systems) */
            rc = ncd__nvml_add_link(out, bdf, gpu_peer ? rb : "", 1);
        }
    }
    free(devs);
    api->shutdown();
    if (rc == 0)
        out->known = 1;
    return rc;
}

static int live_nvml(struct ncd_ctx *ctx, struct ncd_nvml_answer *out)
{
    int found;
    void *h = dlopen_picked(ctx, "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL,
                            &found);
    if (!h) {
        const char *e = found ? dlerror() : "not in LD_LIBRARY_PATH, "
                                            "/etc/ld.so.cache or /usr/lib";
        snprintf(out->error, sizeof out->error,
                 "libnvidia-ml.so.1 not loadable: %.90s", e ? e : "?");
        return 0;
    }
#define SYM(field, name)                                                      \
    api.field = (__typeof__(api.field))(uintptr_t)dlsym(h, name)
    struct ncd__nvml_api api;
    memset(&api, 0, sizeof api);
    SYM(init, "nvmlInit_v2");
    SYM(shutdown, "nvmlShutdown");
    SYM(count, "nvmlDeviceGetCount_v2");
    SYM(handle, "nvmlDeviceGetHandleByIndex_v2");
    SYM(name, "nvmlDeviceGetName");
    SYM(pci, "nvmlDeviceGetPciInfo_v3");
    SYM(link_state, "nvmlDeviceGetNvLinkState");
    SYM(link_remote, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    SYM(driver_version, "nvmlSystemGetDriverVersion");
    SYM(cuda_version, "nvmlSystemGetCudaDriverVersion_v2");
#undef SYM
    int rc = 0;
    if (!api.init || !api.shutdown || !api.count || !api.handle || !api.pci)
        snprintf(out->error, sizeof out->error,
                 "libnvidia-ml.so.1 lacks the NVML v2/v3 entry points");
    else
        rc = ncd__nvml_query(&api, out);
    dlclose(h);
    return rc;
}

/* ---- nftables ---------------------------------------------------------------- */

static int live_firewall(struct ncd_ctx *ctx, int timeout_ms, char **buf,
                         size_t *len, char *src, size_t srcsz)
{
    (void)timeout_ms; /* netlink dumps from the kernel: no peer to wait on */
    snprintf(src, srcsz, "netlink: nftables rule set");
    if (geteuid() != 0)
        return ncd_fail(ctx, NCD_EPERM,
                        "reading the nftables rule set needs root");
    return ncd__nft_dump_json(ctx, buf, len);
}

/* ---- identity, host name, sockets, names ------------------------------------- */

void ncd_sys_live_hostname(char *buf, size_t len)
{
    if (gethostname(buf, len - 1) < 0)
        snprintf(buf, len, "unknown");
    buf[len - 1] = '\0';
}

static int live_hostname(struct ncd_ctx *ctx, char *buf, size_t len)
{
    (void)ctx;
    ncd_sys_live_hostname(buf, len);
    return 0;
}

static int live_identity(struct ncd_ctx *ctx, struct ncd_sys_identity *out)
{
    (void)ctx;
    out->known = 1;
    out->uid = (long)getuid();
    return 0;
}

int ncd__sys_listen_ports_files(struct ncd_ctx *ctx, int **ports);

static int cmp_port(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* One sock_diag dump (linux/inet_diag.h): TCP sockets of `family` in state
 * LISTEN, their local ports appended to *v.  The kernel walks only the
 * listening hash, where /proc/net/tcp walks every connection.
 * @return 0, NCD_ENOMEM, or 1 when netlink cannot answer (no
 *         NETLINK_SOCK_DIAG, an error message). */
static int diag_listeners(int family, int **v, size_t *n, size_t *cap)
{
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0)
        return 1;
    struct timeval tv = {2, 0}; /* the kernel answers at once; never hang */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct {
        struct nlmsghdr nlh;
        struct inet_diag_req_v2 req;
    } q;
    memset(&q, 0, sizeof q);
    q.nlh.nlmsg_len = sizeof q;
    q.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    q.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    q.req.sdiag_family = (unsigned char)family;
    q.req.sdiag_protocol = IPPROTO_TCP;
    q.req.idiag_states = 1u << TCP_LISTEN;
    struct sockaddr_nl nl = {.nl_family = AF_NETLINK};
    if (sendto(fd, &q, sizeof q, 0, (struct sockaddr *)&nl, sizeof nl) < 0) {
        close(fd);
        return 1;
    }
    static __thread char buf[32768] __attribute__((aligned(8)));
    int rc = 1;
    for (;;) {
        ssize_t got = recv(fd, buf, sizeof buf, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        size_t left = (size_t)got;
        for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, left);
             h = NLMSG_NEXT(h, left)) {
            if (h->nlmsg_type == NLMSG_DONE) {
                rc = 0;
                goto done;
            }
            if (h->nlmsg_type == NLMSG_ERROR)
                goto done;
            if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
                h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
                continue;
            const struct inet_diag_msg *m = NLMSG_DATA(h);
            if (*n == *cap) {
                size_t nc = *cap ? *cap * 2 : 64;
                int *nv = realloc(*v, nc * sizeof *nv);
                if (!nv) {
                    rc = NCD_ENOMEM;
                    goto done;
                }
                *v = nv;
                *cap = nc;
            }
            (*v)[(*n)++] = ntohs(m->id.idiag_sport);
        }
    }
done:
    close(fd);
    return rc;
}

/* Live: sock_diag; the /proc/net/tcp{,6} files where netlink cannot
 * answer (a kernel without inet_diag). */
static int live_listen_ports(struct ncd_ctx *ctx, int **ports)
{
    size_t n = 0, cap = 0;
    int rc = diag_listeners(AF_INET, ports, &n, &cap);
    if (rc == 0)
        rc = diag_listeners(AF_INET6, ports, &n, &cap);
    if (rc == NCD_ENOMEM)
        return rc;
    if (rc == 1) {
        free(*ports);
        *ports = NULL;
        return ncd__sys_listen_ports_files(ctx, ports);
    }
    if (n)
        qsort(*ports, n, sizeof **ports, cmp_port);
    return (int)n;
}

static int live_bind_test(struct ncd_ctx *ctx, int family, const char *addr,
                          int scope_id, int *port)
{
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

const struct ncd_sysops ncd__sys_live = {
    .name = "live",
    .getifaddrs = live_getifaddrs,
    .statvfs = live_statvfs,
    .dlopen = live_dlopen,
    .nccl_version = live_nccl_version,
    .nccl_libs = live_nccl_libs,
    .cuda_driver = live_cuda_driver,
    .nvml = live_nvml,
    .firewall = live_firewall,
    .hostname = live_hostname,
    .identity = live_identity,
    .listen_ports = live_listen_ports,
    .bind_test = live_bind_test,
    .resolve = ncd__resolve_live,
    .nvml_costly = 1,
    .answers_visible = 1,
    .where = "",
};
