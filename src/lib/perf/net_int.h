/* SPDX-License-Identifier: MIT */
/* Internal socket helpers shared by the perf library files. */
#ifndef NCD_PERF_NET_INT_H
#define NCD_PERF_NET_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct ncd_pg;

int ncd__set_nonblock(int fd);
int ncd__io_full(int fd, void *buf, size_t len, int is_write, double deadline,
                 const atomic_int *abort_flag, int *err);
int ncd__split_hostport(const char *s, char *host, size_t hostlen, int *port);
void ncd__addr_str(const struct sockaddr *sa, char *out, size_t len,
                   int *port);
/* Makes the group's blocking calls give up when *flag becomes non-zero. */
void ncd__pg_set_abort(struct ncd_pg *pg, const atomic_int *flag);
void ncd__pg_set_timeout(struct ncd_pg *pg, int timeout_ms);
int ncd__slurm_first_host(const char *list, char *out, size_t len);
struct ncd_pg *ncd__pg_new_kind(int kind, int nprocs, int proc,
                                uint64_t token);

#endif
