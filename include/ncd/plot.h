/* SPDX-License-Identifier: MIT */
/**
 * @file plot.h
 * @brief Bus bandwidth against message size as an SVG picture
 *        (`perf --plot`, `tune --plot`): several runs or candidates
 *        overlaid, one colour each.
 *
 * A plot is data (series of points) filled by the caller, then rendered
 * into the caller's buffer by ncd_plot_svg(); nothing here prints or
 * writes files.  Sizes are bytes (x axis, log2 scale, labelled 1K, 1M,
 * 1G with binary prefixes as nccl-tests' -b/-e take them); bandwidths
 * GB/s (1e9 B/s, y axis from 0, linear), as nccl-tests prints busbw.
 */
#ifndef NCD_PLOT_H
#define NCD_PLOT_H

#include <stddef.h>

#include "ncd/perf.h"
#include "ncd/strbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One line of the plot. */
struct ncd_plot_series {
    char label[160];  /**< legend text */
    int dashed;       /**< 1: drawn dashed (in-place results) */
    int color;        /**< palette index; series of one run share it */
    size_t n, cap;
    double *x, *y;    /**< owned; bytes and GB/s, in insertion order */
};

/** A plot.  Zero-initialised is empty and valid. */
struct ncd_plot {
    char title[200];               /**< drawn on top; "" for none */
    struct ncd_plot_series *s;     /**< owned */
    size_t n, cap;
    int ncolors;                   /**< colours handed out so far */
};

/**
 * Adds a point to the series `label` (created on first use with the next
 * colour, or with `color` >= 0).  Points of a series are drawn sorted by
 * size; a negative or non-finite busbw is skipped.
 * @return the series' index, or NCD_ENOMEM.
 */
int ncd_plot_add(struct ncd_plot *p, const char *label, int color,
                 int dashed, double bytes, double busbw);

/** A new colour for a group of series (a run, a candidate). */
int ncd_plot_next_color(struct ncd_plot *p);

/**
 * Adds one nccl-tests row: its out-of-place busbw to "<run> <type>
 * <redop>[ root R]" (solid) and its in-place busbw to the same label +
 * " in-place" (dashed, same colour).  `run` names the run ("this run",
 * a file name).  Series of a run share one colour per (type, redop,
 * root).  @return 0 or NCD_ENOMEM.
 */
int ncd_plot_add_perf_row(struct ncd_plot *p, const char *run,
                          const struct ncd_perf_row *r);

/**
 * Adds every row of an nccl-tests JSON document (`perf -J`/`--json`, the
 * format of nccl-tests' -J: "results":[{"size","type","redop","root",
 * "out_of_place":{"bus_bw"},"in_place":{...}}]) as
 * ncd_plot_add_perf_row() does, under the name `run`.
 * @return the number of rows added (0 when it has none), NCD_EPARSE (why
 *         in err) or NCD_ENOMEM.
 */
int ncd_plot_add_perf_json(struct ncd_plot *p, const char *run,
                           const char *json_text, char *err, size_t errlen);

/**
 * Renders the plot as a standalone SVG 1.1 document: axes with ticks and
 * grid, one polyline with markers per series, the legend on the right,
 * "no data" written in the frame when there are no points.
 */
void ncd_plot_svg(const struct ncd_plot *p, struct ncd_strbuf *out);

/** Frees the series; the plot is empty and reusable. */
void ncd_plot_release(struct ncd_plot *p);

#ifdef __cplusplus
}
#endif
#endif
