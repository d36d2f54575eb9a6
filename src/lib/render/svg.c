/* SPDX-License-Identifier: MIT */
/* Plain SVG helpers (svg.h). */
#include <stdlib.h>
#include <string.h>

#include "render/svg.h"

void ncd__svg_begin(struct ncd_strbuf *sb, double w, double h)
{
    ncd_sb_printf(sb,
                  "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
                  "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                  "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
                  "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" "
                  "fill=\"#ffffff\"/>\n",
                  w, h, w, h, w, h);
}

void ncd__svg_end(struct ncd_strbuf *sb)
{
    ncd_sb_puts(sb, "</svg>\n");
}

void ncd__svg_esc(struct ncd_strbuf *sb, const char *text)
{
    char *c = strdup(text ? text : "");
    if (!c) {
        sb->oom = 1;
        return;
    }
    ncd_utf8_sanitize(c);
    for (const char *p = c; *p; p++) {
        switch (*p) {
        case '&': ncd_sb_puts(sb, "&amp;"); break;
        case '<': ncd_sb_puts(sb, "&lt;"); break;
        case '>': ncd_sb_puts(sb, "&gt;"); break;
        case '"': ncd_sb_puts(sb, "&quot;"); break;
        case '\'': ncd_sb_puts(sb, "&apos;"); break;
        case '\t': case '\n': ncd_sb_putc(sb, ' '); break;
        default: ncd_sb_putc(sb, *p);
        }
    }
    free(c);
}

void ncd__svg_text(struct ncd_strbuf *sb, double x, double y, double size,
                   const char *anchor, int bold, const char *fill,
                   const char *text)
{
    ncd_sb_printf(sb,
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.1f\" "
                  "text-anchor=\"%s\"%s fill=\"%s\">",
                  x, y, size, anchor, bold ? " font-weight=\"bold\"" : "",
                  fill);
    ncd__svg_esc(sb, text);
    ncd_sb_puts(sb, "</text>\n");
}

double ncd__svg_text_w(const char *text, double size)
{
    size_t chars = 0;
    for (const unsigned char *p = (const unsigned char *)text; p && *p; p++)
        chars += (*p & 0xc0) != 0x80; /* count characters, not bytes */
    return (double)chars * size * 0.68;
}
