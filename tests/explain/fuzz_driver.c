/* SPDX-License-Identifier: MIT */
/* Replays files (or every file of directories) through a libFuzzer target
 * when the compiler has no libFuzzer (gcc builds). */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    char tmp[65536];
    size_t k;
    while (m && (k = fread(tmp, 1, sizeof tmp, f)) > 0)
        fwrite(tmp, 1, k, m);
    fclose(f);
    if (!m)
        return 1;
    fclose(m);
    LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
    free(buf);
    printf("ok %s (%zu bytes)\n", path, len);
    return 0;
}

int main(int argc, char **argv)
{
    int rc = 0, count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            DIR *d = opendir(argv[i]);
            struct dirent *de;
            while (d && (de = readdir(d))) {
                if (de->d_name[0] == '.')
                    continue;
                char *p;
                if (asprintf(&p, "%s/%s", argv[i], de->d_name) < 0)
                    return 1;
                rc |= run_file(p);
                count++;
                free(p);
            }
            if (d)
                closedir(d);
        } else {
            rc |= run_file(argv[i]);
            count++;
        }
    }
    /* plus a few generated inputs */
    static const char *const extra[] = {"", "\n\n\n", "NCCL WARN", "[1,0]<stdout>:",
                                        "a:1:2 [0] NCCL INFO NET/IB : Using [", "\033["};
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++, count++)
        LLVMFuzzerTestOneInput((const uint8_t *)extra[i], strlen(extra[i]));
    printf("%d inputs\n", count);
    return rc || count == 0;
}
