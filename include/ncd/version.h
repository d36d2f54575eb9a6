/* SPDX-License-Identifier: MIT */
/**
 * @file version.h
 * @brief NCCL version numbers: the one parser, formatter and converter.
 *
 * Version codes: this library always uses major*10000 + minor*100 + patch
 * (2.28.3 -> 22803, 2.8.4 -> 20804).  NCCL's own NCCL_VERSION_CODE uses
 * that scheme since 2.9; before, it was major*1000 + minor*100 + patch
 * (NCCL src/nccl.h.in), and ncd_nccl_version_from_code() converts both.
 * Everything here is pure (no context, no I/O).
 */
#ifndef NCD_VERSION_H
#define NCD_VERSION_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The newest NCCL whose behaviour this build knows (2.30.7). */
#define NCD_NCCL_NEWEST 23007

/**
 * Parses "2.28.3" (also "2.28", "2.28.3-1", "2.28.3+cuda12.2", "v2.28.3",
 * leading white space) into a version code.  Major 1-9, minor and patch
 * 0-99.
 * @return 0, or NCD_EPARSE when it is not a version (*code untouched).
 */
int ncd_nccl_version_parse(const char *s, int *code);

/** Converts a code returned by ncclGetVersion() (either scheme) into ours.
 *  Codes below 10000 are the pre-2.9 scheme. */
int ncd_nccl_version_from_code(int nccl_code);

/** Formats a code as "2.28.3" into buf (>= 16 bytes); returns buf. */
const char *ncd_nccl_version_str(int code, char *buf, size_t len);

/**
 * Finds "NCCL version X.Y.Z[suffix]+cudaA.B" (NCCL's VERSION_STRING, NCCL
 * src/init.cc) in a buffer, e.g. a library's .rodata.
 * @param code  receives the version code.
 * @param cuda  receives "A.B" ("" when the string has no +cuda part).
 * @return 1 found, 0 not found.
 */
int ncd_nccl_version_in_buf(const char *buf, size_t len, int *code,
                            char *cuda, size_t cudasz);

#ifdef __cplusplus
}
#endif
#endif
