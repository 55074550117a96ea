/* ink: the lines of dpd plot's charts drawn straight into the pixels of an RGB24 image, as cairo
 * strokes them (the union of the segments, joined round, ending square; dashes 6 on, 4 off) at
 * eight samples a pixel, in about two thirds of cairo's time: the pictures end every training run.
 * A solid line's points in one pixel column are drawn as the span from the lowest to the highest
 * of them and the links to the columns beside it: a dense curve (a PSD of 2 560 points over 700
 * pixels) costs as many segments as it has columns. */
#ifndef DPD_CLI_INK_H
#define DPD_CLI_INK_H
#include <stddef.h>
#include <stdint.h>

#define INK_MAX_COLS 1024 /* the clip reaches no farther right than this pixel */
#define INK_MAX_ROWS 1024 /* nor farther down than this row */
#define INK_MAX_WIDTH 64  /* the widest line, in pixels */

/* Pixels [x0, x1) x [y0, y1) of an image. */
typedef struct ink_box {
    int x0, x1, y0, y1;
} ink_box;

/* How a line looks: its colour (0xRRGGBB), its width in pixels, and dashed or solid. */
typedef struct ink_pen {
    unsigned rgb;
    double width;
    int dashed;
} ink_pen;

/* Point i of a line on the page, in pixels, into p; 0 where there is none (the line breaks there,
 * as it does at a point that is not finite). */
typedef int (*ink_point_fn)(const void *ctx, size_t i, double p[2]);

/* Where a pixel is sampled, in 16ths of a pixel from its centre (x + 0.5, y + 0.5): eight points,
 * no two in the same column or row, so that an edge at any angle moves through eight levels. */
extern const double ink_sample_at[8][2];

/* The whole pixels of a plot area at (px, py), pw by ph pixels, on an image of w by h. */
ink_box ink_area(double px, double py, double pw, double ph, int w, int h);

/* Draws the line through the n points point(ctx, i) onto the RGB24 pixels px (rows of stride
 * pixels, each pixel's top byte unused, as cairo's), clipped to clip, with pen: each pixel's
 * colour blended with the pen's by the share of its eight samples the line covers. clip must lie
 * within the image, as ink_area's does (the image's height is the caller's to keep to); past
 * INK_MAX_COLS x INK_MAX_ROWS, below 0, or with a row's whole 32-pixel blocks beyond stride (the
 * top bytes of the blocks the line reaches are used while it is drawn, and left 255), or with a
 * pen's width not in (0, INK_MAX_WIDTH], nothing is drawn. A coordinate farther than 1e9 pixels
 * off is pulled in to 1e9. */
void ink_line(uint32_t *px, size_t stride, ink_box clip, size_t n, ink_point_fn point, const void *ctx, const ink_pen *pen);

#endif
