/* SPDX-License-Identifier: MIT */
/*
 * png_ink FILE.png: prints "WIDTH HEIGHT INK" where INK is the number of
 * pixels that are neither transparent nor near white (the pictures'
 * background), so that a test can tell a drawn picture from an empty
 * one.  Reads 8-bit RGB/RGBA non-interlaced PNGs (what rsvg-convert
 * writes) with zlib; anything else exits 2 with a message.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

static int paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

static int fail(const char *file, const char *why)
{
    fprintf(stderr, "png_ink: %s: %s\n", file, why);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return fail("usage", "png_ink FILE.png");
    FILE *f = fopen(argv[1], "rb");
    if (!f)
        return fail(argv[1], "cannot open");
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0, n;
    unsigned char tmp[65536];
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) {
        if (len + n > cap) {
            cap = (len + n) * 2;
            unsigned char *nb = realloc(buf, cap);
            if (!nb) {
                fclose(f);
                free(buf);
                return fail(argv[1], "out of memory");
            }
            buf = nb;
        }
        memcpy(buf + len, tmp, n);
        len += n;
    }
    fclose(f);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n',
                                         0x1a, '\n'};
    if (len < 33 || memcmp(buf, sig, 8) != 0 || memcmp(buf + 12, "IHDR", 4)) {
        free(buf);
        return fail(argv[1], "not a PNG");
    }
    uint32_t w = be32(buf + 16), h = be32(buf + 20);
    int depth = buf[24], ctype = buf[25], interlace = buf[28];
    int bpp = ctype == 6 ? 4 : ctype == 2 ? 3 : 0;
    if (depth != 8 || !bpp || interlace || !w || !h || w > 100000 ||
        h > 100000) {
        free(buf);
        return fail(argv[1], "not an 8-bit RGB(A) non-interlaced PNG");
    }
    /* the IDAT chunks, concatenated */
    unsigned char *z = malloc(len);
    size_t zl = 0;
    for (size_t p = 8; z && p + 12 <= len;) {
        uint32_t cl = be32(buf + p);
        if (cl > len - p - 12)
            break;
        if (!memcmp(buf + p + 4, "IDAT", 4)) {
            memcpy(z + zl, buf + p + 8, cl);
            zl += cl;
        }
        p += 12 + cl;
    }
    size_t stride = (size_t)w * (size_t)bpp;
    uLongf rawlen = (uLongf)((stride + 1) * h);
    unsigned char *raw = malloc(rawlen);
    if (!z || !raw || uncompress(raw, &rawlen, z, zl) != Z_OK ||
        rawlen != (stride + 1) * h) {
        free(buf);
        free(z);
        free(raw);
        return fail(argv[1], "corrupt image data");
    }
    unsigned long long ink = 0;
    unsigned char *prev = NULL;
    for (uint32_t y = 0; y < h; y++) {
        unsigned char *row = raw + (size_t)y * (stride + 1), *px = row + 1;
        int ft = row[0];
        if (ft > 4) {
            free(buf);
            free(z);
            free(raw);
            return fail(argv[1], "bad filter type");
        }
        for (size_t i = 0; i < stride; i++) {
            int a = i >= (size_t)bpp ? px[i - bpp] : 0;
            int b = prev ? prev[i] : 0;
            int c = prev && i >= (size_t)bpp ? prev[i - bpp] : 0;
            int v = px[i];
            switch (ft) {
            case 1: v += a; break;
            case 2: v += b; break;
            case 3: v += (a + b) / 2; break;
            case 4: v += paeth(a, b, c); break;
            default: break;
            }
            px[i] = (unsigned char)v;
        }
        for (uint32_t x = 0; x < w; x++) {
            const unsigned char *q = px + (size_t)x * (size_t)bpp;
            int alpha = bpp == 4 ? q[3] : 255;
            if (alpha > 16 && (q[0] < 240 || q[1] < 240 || q[2] < 240))
                ink++;
        }
        prev = px;
    }
    printf("%u %u %llu\n", w, h, ink);
    free(buf);
    free(z);
    free(raw);
    return 0;
}
