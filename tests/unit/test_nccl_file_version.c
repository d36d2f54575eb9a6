/* SPDX-License-Identifier: MIT */
/* ncd_nccl_file_version(): the version string found in a library's .rodata
 * read in windows, wherever it sits (start, across a window's end, after
 * decoys, at the very end), with the answer a search of the whole section
 * gives. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ncd/ctx.h"
#include "ncd/libs.h"
#include "ncd/version.h"

/* A minimal ELF64 file: header, .rodata (`ro`, `rolen` bytes), .shstrtab,
 * section headers (null, .rodata, .shstrtab). */
static void write_elf(const char *path, const char *ro, size_t rolen)
{
    static const char shstr[] = "\0.rodata\0.shstrtab";
    Elf64_Ehdr eh = {0};
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_DYN;
    eh.e_machine = EM_X86_64;
    eh.e_version = EV_CURRENT;
    eh.e_ehsize = sizeof eh;
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = 3;
    eh.e_shstrndx = 2;
    size_t ro_off = sizeof eh, str_off = ro_off + rolen,
           sh_off = str_off + sizeof shstr;
    eh.e_shoff = sh_off;
    Elf64_Shdr sh[3] = {{0}};
    sh[1].sh_name = 1;
    sh[1].sh_type = SHT_PROGBITS;
    sh[1].sh_offset = ro_off;
    sh[1].sh_size = rolen;
    sh[2].sh_name = 9;
    sh[2].sh_type = SHT_STRTAB;
    sh[2].sh_offset = str_off;
    sh[2].sh_size = sizeof shstr;
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(&eh, sizeof eh, 1, f), 1);
    assert_int_equal(fwrite(ro, 1, rolen, f), rolen);
    assert_int_equal(fwrite(shstr, 1, sizeof shstr, f), sizeof shstr);
    assert_int_equal(fwrite(sh, sizeof sh, 1, f), 1);
    assert_int_equal(fclose(f), 0);
}

/* `text` placed at `at` in a .rodata of `len` bytes of 'x' and NULs; the
 * file's answer must equal ncd_nccl_version_in_buf() over the section. */
static void one(struct ncd_ctx *ctx, const char *dir, size_t len, size_t at,
                const char *text, const char *decoy, size_t decoy_at)
{
    char *ro = malloc(len);
    assert_non_null(ro);
    for (size_t i = 0; i < len; i++)
        ro[i] = i % 97 == 0 ? '\0' : 'x';
    if (decoy)
        memcpy(ro + decoy_at, decoy, strlen(decoy));
    memcpy(ro + at, text, strlen(text) + 1);
    char path[512];
    snprintf(path, sizeof path, "%s/libnccl.so.2", dir);
    write_elf(path, ro, len);
    int want = 0, got = 0;
    char wcuda[32] = "", gcuda[32] = "";
    int wf = ncd_nccl_version_in_buf(ro, len, &want, wcuda, sizeof wcuda);
    int gf = ncd_nccl_file_version(ctx, "/libnccl.so.2", &got, gcuda,
                                   sizeof gcuda);
    if (wf != gf || want != got || strcmp(wcuda, gcuda) != 0)
        fail_msg("len %zu at %zu: whole section %d %d '%s', file %d %d '%s'",
                 len, at, wf, want, wcuda, gf, got, gcuda);
    assert_int_equal(gf, 1);
    free(ro);
}

static void test_windows(void **state)
{
    (void)state;
    char dir[] = "/tmp/ncd-test-nfv.XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new(dir, NULL, &ctx), 0);
    static const char v[] = "NCCL version 2.21.5+cuda12.4";
    const size_t w = 32u << 10;
    /* start, middle, each side of every window edge, the very end */
    one(ctx, dir, 200000, 0, v, NULL, 0);
    one(ctx, dir, 200000, 9689, v, NULL, 0);
    for (size_t edge = w - 90; edge < w + 10; edge++)
        one(ctx, dir, 200000, edge, v, NULL, 0);
    for (size_t edge = 2 * w - 120; edge < 2 * w; edge += 7)
        one(ctx, dir, 200000, edge, v, NULL, 0);
    one(ctx, dir, 200000, 200000 - sizeof v, v, NULL, 0);
    one(ctx, dir, 5000, 100, v, NULL, 0); /* one short window */
    /* decoys first: the tag without a version, just before a window edge
     * and right before the real one */
    one(ctx, dir, 200000, w + 500, v, "NCCL version unknown ", w - 60);
    one(ctx, dir, 200000, 1000, v, "NCCL version NCCL", 985);
    /* no string at all */
    char *ro = calloc(1, 70000);
    assert_non_null(ro);
    char path[512];
    snprintf(path, sizeof path, "%s/libnccl.so.2", dir);
    write_elf(path, ro, 70000);
    int code = 0;
    char cuda[32];
    assert_int_equal(ncd_nccl_file_version(ctx, "/libnccl.so.2", &code, cuda,
                                           sizeof cuda),
                     0);
    free(ro);
    unlink(path);
    rmdir(dir);
    ncd_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_windows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
