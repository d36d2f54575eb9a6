/* SPDX-License-Identifier: MIT */
/* The heap of a command that reads large inputs (explain): see cmd.h. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "cmd.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define CLI_HEAP_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define CLI_HEAP_SANITIZED 1
#endif
#endif

void cli_heap_bulk(size_t reserve)
{
#if defined(__GLIBC__) && !defined(CLI_HEAP_SANITIZED)
    /* blocks up to 32 MiB (the threaded reader's 1/4 MiB block buffers,
     * the report's strings) come from the heap and are reused after
     * free(), where mmap() would hand out fresh pages each time; freed
     * memory is kept; one arena for every thread (the scanning threads
     * allocate almost nothing) */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    mallopt(M_ARENA_MAX, 1);
    /* grow the heap once by `reserve` bytes and ask for transparent huge
     * pages on it (THP "madvise" mode): the first touch of each 2 MiB
     * then maps 2 MiB at once instead of 512 page faults */
    const uintptr_t huge = (uintptr_t)2 << 20;
    if (reserve >= (size_t)32 << 20)
        reserve = ((size_t)32 << 20) - huge; /* else mmap()ed, then unmapped */
    char *p = malloc(reserve);
    if (!p)
        return;
    uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    uintptr_t e = ((uintptr_t)p + reserve) & ~(huge - 1);
    if (e > a)
        (void)madvise((void *)a, e - a, MADV_HUGEPAGE);
    free(p);
#else
    (void)reserve;
#endif
}
