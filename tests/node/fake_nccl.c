/* SPDX-License-Identifier: MIT */
/* A stand-in libnccl.so.2 for the library scan tests: the version string
 * NCCL compiles into .rodata (VERSION_STRING, NCCL src/init.cc) and
 * ncclGetVersion().  No NCCL code. */
const char ncd_fake_nccl_version_string[] =
    "NCCL version " NCD_FAKE_VERSION "+cuda" NCD_FAKE_CUDA;

int ncclGetVersion(int *version);
int ncclGetVersion(int *version)
{
    *version = NCD_FAKE_CODE;
    return 0;
}
