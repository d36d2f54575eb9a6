/* SPDX-License-Identifier: MIT */
/*
 * Plain SVG 1.1 writing shared by the picture renderers (topo_svg.c,
 * plot_svg.c).  Pictures are text we write ourselves rather than cairo
 * drawings (see ARCHITECTURE in README.md "Pictures"): no library, the
 * same bytes on every machine, text that stays text (searchable, tested
 * with grep), and any browser or rsvg-convert shows or converts it.
 */
#ifndef NCD_RENDER_SVG_H
#define NCD_RENDER_SVG_H

#include "ncd/strbuf.h"

/* Opens the document: the XML prolog, <svg> of w x h px with a white
 * background and the font family every text uses. */
void ncd__svg_begin(struct ncd_strbuf *sb, double w, double h);
/* Closes the document. */
void ncd__svg_end(struct ncd_strbuf *sb);
/* Appends text as XML character data: & < > " ' escaped, invalid UTF-8
 * and control characters replaced ('?'). */
void ncd__svg_esc(struct ncd_strbuf *sb, const char *text);
/* <text> at (x, y) of `size` px; anchor "start", "middle" or "end";
 * bold when `bold`. */
void ncd__svg_text(struct ncd_strbuf *sb, double x, double y, double size,
                   const char *anchor, int bold, const char *fill,
                   const char *text);
/* Width a text of n characters takes at `size` px, as drawn (a
 * conservative estimate for sans-serif, used for layout). */
double ncd__svg_text_w(const char *text, double size);

#endif
