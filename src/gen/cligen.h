/* SPDX-License-Identifier: MIT */
/* cligen (build tool): the command and option model read from the yaml
 * files of docs/cmdline, shared by cligen.c (help, man page, README) and
 * cligen_complete.c (bash and zsh completion). */
#ifndef NCD_CLIGEN_H
#define NCD_CLIGEN_H

#include <stdio.h>

#define MAXV 64

struct opt {
    const char *lng, *arg, *complete, *def, *help;
    char shrt;
    int optional;
    const char *values[MAXV];
    int nvalues;
};

struct cmd {
    const char *file;
    const char *name, *summary, *description, *exit, *readme, *readme_name;
    const char *synopsis[8];
    int nsyn;
    const char *globals[32];
    int nglobals, has_globals;
    struct opt opts[64];
    int nopts;
    /* global.yaml only */
    const char *commands[32];
    int ncommands;
    const char *env_name[16], *env_help[16];
    int nenv;
};

extern struct cmd *global;           /* global.yaml */
extern const char *version, *perf_names;

/* Prints a message and exits 1 (a build tool). */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* DIR/NAME written through a temp file, renamed by out_close(). */
FILE *out_open(const char *dir, const char *name);
void out_close(FILE *f);
/* The shared options command c takes. */
int globals_of(const struct cmd *c, struct opt *out);
/* bash and zsh completion scripts (cligen_complete.c). */
void write_bash(const char *dir, struct cmd *cmds, int n);
void write_zsh(const char *dir, struct cmd *cmds, int n);

#endif
