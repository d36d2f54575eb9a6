/* SPDX-License-Identifier: MIT */
/* The real NCCL as an oracle for interface selection: loads libnccl.so.2
 * with dlopen (never linked), prints its version and calls
 * ncclGetUniqueId(), which needs no GPU: it runs NCCL's bootstrapNetInit()
 * (NCCL src/bootstrap.cc) and, with NCCL_DEBUG=INFO, logs
 * "Bootstrap: Using <if>:<addr><0>" or the WARN that says why it found no
 * interface.  NCCL writes its log to stdout (NCCL_DEBUG_FILE unset).
 *
 * Usage: ncd-nccl-oracle [LIBRARY]      (default "libnccl.so.2")
 * Output, after NCCL's own lines:
 *   oracle version <ncclGetVersion code>
 *   oracle result <ncclResult_t> <ncclGetErrorString text>
 * Exit status: 0 when ncclGetUniqueId succeeded, 1 when it failed, 77 when
 * the library or its symbols could not be loaded (the reason on stderr).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int (*get_version_fn)(int *);
typedef int (*get_unique_id_fn)(void *);
typedef const char *(*get_error_string_fn)(int);

int main(int argc, char **argv)
{
    const char *lib = argc > 1 ? argv[1] : "libnccl.so.2";
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "oracle: cannot load %s: %s\n", lib, dlerror());
        return 77;
    }
    get_version_fn get_version = (get_version_fn)dlsym(h, "ncclGetVersion");
    get_unique_id_fn get_id = (get_unique_id_fn)dlsym(h, "ncclGetUniqueId");
    get_error_string_fn errstr =
        (get_error_string_fn)dlsym(h, "ncclGetErrorString");
    if (!get_version || !get_id || !errstr) {
        fprintf(stderr, "oracle: %s lacks ncclGetVersion/ncclGetUniqueId\n",
                lib);
        return 77;
    }
    int v = 0;
    if (get_version(&v) != 0) {
        fprintf(stderr, "oracle: ncclGetVersion failed\n");
        return 77;
    }
    printf("oracle version %d\n", v);
    fflush(stdout);
    /* ncclUniqueId is 128 bytes (NCCL_UNIQUE_ID_BYTES, nccl.h). */
    union {
        char internal[128];
        long long align;
    } id;
    memset(&id, 0, sizeof id);
    int rc = get_id(&id);
    fflush(stdout);
    printf("oracle result %d %s\n", rc, errstr(rc));
    fflush(stdout);
    return rc == 0 ? 0 : 1;
}
