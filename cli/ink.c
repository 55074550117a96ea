/* ink: lines drawn into an image's pixels (ink.h). */
#include <math.h>
#include <string.h>

#include "ink.h"
#include "lanes.h"

/* A line's points are at most this far off the page: a farther coordinate is pulled in, so that
 * every length and product below is finite and exact enough (the line's course over the page moves
 * by a thousandth of a pixel at most where one coordinate is, as for a value far off a y range). */
#define OFF_PAGE 1e9

/* One line being drawn into an RGB24 image: the pixels (rows of stride), each row's blocks of 32
 * pixels the line may cover (bit b: pixels 32 b to 32 b + 31), and the clip, pixels [x0, x1) x
 * [y0, y1). Each pixel is sampled at eight points (ink_sample_at), and which of them the line covers
 * is kept in the pixel's top byte, one bit each (the byte RGB24 leaves unused and cairo ignores;
 * 255 again after), zeroed when its block is first reached: a line's segments overlap at every
 * join and wherever the curve is dense, and or-ing their bits counts each sample once, so a pixel
 * is as covered as the union of the segments is. The colour is blended once, when the line is
 * done. */
typedef struct ink {
    uint32_t *px;
    size_t stride;
    uint32_t used[INK_MAX_ROWS]; /* a bit a block */
    int x0, x1, y0, y1;
} ink;
_Static_assert(INK_MAX_COLS <= 32 * 32, "a row's blocks are the bits of a uint32_t");

/* The first whole number at or above v, and the last at or below v, clamped to [lo, hi] (a NaN:
 * lo); without libm's calls, which cost as much as the pixels of a short segment. */
static int first_at(double v, int lo, int hi) {
    if (!(v > lo)) return lo;
    if (v >= hi) return hi;
    int i = (int)v;
    return i + (i < v);
}
static int last_at(double v, int lo, int hi) {
    if (!(v >= lo)) return lo;
    if (v >= hi) return hi;
    int i = (int)v;
    return i - (i > v);
}

static double lesser(double a, double b) { return a < b ? a : b; }
static double greater(double a, double b) { return a > b ? a : b; }
static double clamp(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Makes pixels [x0, x1] of row y part of the line: their blocks, zero where newly reached. */
static void reach(ink *k, int y, int x0, int x1) {
    int b0 = x0 >> 5, b1 = x1 >> 5; /* blocks b0 to b1, those not yet used (mostly none) */
    uint32_t fresh = (uint32_t)(((2ull << b1) - (1ull << b0)) & ~(uint64_t)k->used[y]);
    for (; fresh; fresh &= fresh - 1) {
        uint32_t *px = k->px + (size_t)y * k->stride + 32 * __builtin_ctz(fresh);
        for (int x = 0; x < 32; x++) px[x] &= 0xFFFFFFu;
    }
    k->used[y] |= (uint32_t)((2ull << b1) - (1ull << b0));
}

const double ink_sample_at[8][2] = {{1, -3}, {-1, 3}, {5, 1}, {-3, -5}, {-5, 5}, {-7, -1}, {3, 7}, {7, -7}};

/* Covers segment a-b of half width hw, each end round (round_a, round_b) or cut square: the
 * segments of a line, each round where it starts, join round, and it ends square (cairo's butt
 * caps and round joins). Each pixel's eight samples inside it are set in its top byte, one bit
 * each: the bits of a line's segments are or-ed, so a pixel is as covered as the union of the
 * segments is, wherever they overlap (joins, and dense curves). Worked in (major, minor)
 * coordinates, the major axis the one the segment runs along most: each pixel column (or row) the
 * segment reaches is visited, and across it only the pixels within reach; nothing outside the
 * clip is touched, whatever a and b (finite) are. */
static void cover_seg(ink *k, const double a[2], const double b[2], double hw, int round_a, int round_b) {
    int m = fabs(b[0] - a[0]) >= fabs(b[1] - a[1]) ? 0 : 1, o = 1 - m;
    double dx = b[m] - a[m], dy = b[o] - a[o], len = sqrt(dx * dx + dy * dy);
    if (!(len > 1e-6)) return;
    double ux = dx / len, uy = dy / len, slope = dy / dx, hw2 = hw * hw, lo = lesser(a[m], b[m]), hi = greater(a[m], b[m]);
    /* Where the segment can cover a sample (0.01 more: the samples are tested in floats), along the
     * major axis: past a square end by hw |uy| (its corners), past a round one by hw; across it, hw
     * / cos (its width there) from the centre line. The samples are at most 7/16 from a pixel's
     * centre along either axis: the pixels reached are those within another 7/16 (the bounds are
     * of whole pixels' centres, offset by a half). */
    double sq = hw * fabs(uy) + 0.01, cap_a = round_a ? hw + 0.01 : sq, cap_b = round_b ? hw + 0.01 : sq;
    double across = hw * sqrt(1 + slope * slope) + 0.01 + 7.0 / 16;
    double before = (dx >= 0 ? cap_a : cap_b) + 7.0 / 16, after = (dx >= 0 ? cap_b : cap_a) + 7.0 / 16; /* beyond lo, hi */
    f4 st[2], sn[2]; /* each sample's offset along the segment and across */
    for (int s = 0; s < 8; s++) {
        double om = ink_sample_at[s][m] / 16, oo = ink_sample_at[s][o] / 16;
        st[s / 4][s % 4] = (float)(om * ux + oo * uy), sn[s / 4][s % 4] = (float)(om * uy - oo * ux);
    }
    /* a sample is in within hw of the segment: beside it (ts in [0, len]), or by dt before a or past b
     * where that end is round */
    const f4 zero = {0, 0, 0, 0}, fhw2 = zero + (float)hw2, flen = zero + (float)len;
    const f4 tlo = zero + (round_a ? -INFINITY : 0.0f), thi = round_b ? zero + INFINITY : flen;
    const f4 dka = zero + (float)round_a, dkb = zero + (float)round_b;
    int clo[2] = {k->x0, k->y0}, chi[2] = {k->x1 - 1, k->y1 - 1};
    int i1 = last_at(hi + after - 0.5, clo[m] - 1, chi[m]);
    for (int i = first_at(lo - before - 0.5, clo[m], chi[m] + 1); i <= i1; i++) {
        double s0 = clamp(i + 0.5 - 7.0 / 16, lo, hi), s1 = clamp(i + 0.5 + 7.0 / 16, lo, hi); /* the segment near i */
        double v0 = a[o] + (s0 - a[m]) * slope, v1 = a[o] + (s1 - a[m]) * slope;
        int j0 = first_at(lesser(v0, v1) - across - 0.5, clo[o], chi[o] + 1);
        int j1 = last_at(greater(v0, v1) + across - 0.5, clo[o] - 1, chi[o]);
        if (j0 > j1) continue;
        if (m) reach(k, i, j0, j1);
        double ex = i + 0.5 - a[m], ey = j0 + 0.5 - a[o];  /* pixel (i, j0) - a */
        double t = ex * ux + ey * uy, n = ex * uy - ey * ux; /* along the segment, and across */
        size_t step = m ? 1 : k->stride;
        uint32_t *px = k->px + (m ? (size_t)i * k->stride + j0 : (size_t)j0 * k->stride + i);
        double tj = t + (j1 - j0) * uy; /* t at the row's last pixel */
        if (m && lesser(t, tj) >= 0.65 && greater(t, tj) <= len - 0.65) { /* every sample beside the segment */
            for (int j = j0; j <= j1; j++, n -= ux, px++) {
                f4 n0 = (float)n + sn[0], n1 = (float)n + sn[1];
                *px |= (lanes(n0 * n0 <= fhw2) | lanes(n1 * n1 <= fhw2) << 4) << 24; /* sample s: bit s */
            }
            continue;
        }
        for (int j = j0; j <= j1; j++, t += uy, n -= ux, px += step) {
            unsigned bits = 0;
            for (int h = 0; h < 2; h++) {
                f4 ts = (float)t + st[h], ns = (float)n + sn[h], past = ts - flen;
                f4 dt = (f4)((i4)ts & (ts < zero)) * dka + (f4)((i4)past & (past > zero)) * dkb; /* before a, past b */
                bits |= lanes((ns * ns + dt * dt <= fhw2) & (ts >= tlo) & (ts <= thi)) << 4 * h;
            }
            if (!m) reach(k, j, i, i);
            *px |= bits << 24;
        }
    }
}

/* The part [*t0, *t1] of segment a-b (the points a + t (b - a)) within mg of the clip; 0: none. */
static int clip_seg(const ink *k, const double a[2], const double b[2], double mg, double *t0, double *t1) {
    double lo[2] = {k->x0 - mg, k->y0 - mg}, hi[2] = {k->x1 + mg, k->y1 + mg};
    for (int i = 0; i < 2; i++) {
        double d = b[i] - a[i];
        if (d == 0 && (a[i] < lo[i] || a[i] > hi[i])) return 0;
        if (d == 0) continue;
        double e0 = (lo[i] - a[i]) / d, e1 = (hi[i] - a[i]) / d;
        *t0 = fmax(*t0, fmin(e0, e1)), *t1 = fmin(*t1, fmax(e0, e1));
    }
    return *t0 <= *t1;
}

/* Covers segment a-b of a line drawn with pen s, *dist pixels along the line (the dashes' phase: 6 on,
 * 4 off), which it advances; first: a starts the line (a square end, as every dash's ends are). */
static void line_seg(ink *k, const double a[2], const double b[2], double *dist, const ink_pen *pen, int first,
                     int round_b) {
    double len = sqrt((b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1])), at = *dist, t0 = 0, t1 = 1,
           hw = pen->width / 2;
    *dist += len;
    if (!clip_seg(k, a, b, hw + 1.5, &t0, &t1)) return; /* 1.5: the ends cut here are off the clip */
    double p[2] = {a[0] + t0 * (b[0] - a[0]), a[1] + t0 * (b[1] - a[1])};
    double q[2] = {a[0] + t1 * (b[0] - a[0]), a[1] + t1 * (b[1] - a[1])}, v = (t1 - t0) * len;
    first &= t0 == 0;
    if (!pen->dashed) {
        cover_seg(k, p, q, hw, !first, round_b && t1 == 1);
        return;
    }
    /* the dashes over [0, v] of p-q, the phase ph at u: on below 6; v is at most the clip's size */
    for (double u = 0, ph = fmod(at + t0 * len, 10); u < v; ph = ph < 6 ? 6 : 0) {
        double end = u + (ph < 6 ? 6 : 10) - ph;
        if (ph < 6) {
            double f0 = u / v, f1 = fmin(end, v) / v;
            double e0[2] = {p[0] + f0 * (q[0] - p[0]), p[1] + f0 * (q[1] - p[1])};
            double e1[2] = {p[0] + f1 * (q[0] - p[0]), p[1] + f1 * (q[1] - p[1])};
            cover_seg(k, e0, e1, hw, u == 0 && ph > 0 && !first, 0); /* round where a dash goes on past a join */
        }
        u = end;
    }
}

/* Blends colour rgb over the line's blocks by the samples covered in each pixel, and gives the
 * top bytes back. */
static void blend(ink *k, unsigned rgb) {
    for (int y = k->y0; y < k->y1; y++)
        for (uint32_t used = k->used[y]; used; used &= used - 1) { /* each block reached, 0 to 31 */
            uint32_t *px = k->px + (size_t)y * k->stride + 32 * __builtin_ctz(used);
            for (int x = 0; x < 32; x += 4) {
                u4 v;
                memcpy(&v, px + x, sizeof v);
                u4 none = v >> 24 == 0;
                if (none[0] & none[1] & none[2] & none[3]) { /* four pixels the line missed, as most in a block */
                    v |= 0xFF000000u;
                    memcpy(px + x, &v, sizeof v);
                    continue;
                }
                u4 n = v >> 24, out = {0, 0, 0, 0};
                n = (n & 0x55) + (n >> 1 & 0x55), n = (n & 0x33) + (n >> 2 & 0x33), n = (n & 0x0F) + (n >> 4); /* the samples */
                for (int sh = 0; sh < 24; sh += 8) out |= ((rgb >> sh & 255) * n + (v >> sh & 255) * (8 - n) + 4) / 8 << sh;
                out |= 0xFF000000u; /* n = 0: the pixel as it was */
                memcpy(px + x, &out, sizeof out);
            }
        }
}

/* A line's points as they are drawn: segment by segment from the one before (run: points since the
 * last break). */
typedef struct pen_at {
    ink *k;
    const ink_pen *pen;
    double dist, p[2];
    size_t run;
} pen_at;

/* On to q, drawing from the point before; round_b: round at q (a solid line's column's link). */
static void pen_to(pen_at *f, const double q[2], int round_b) {
    if (f->run++) line_seg(f->k, f->p, q, &f->dist, f->pen, f->run == 2, round_b);
    f->p[0] = q[0], f->p[1] = q[1];
}

/* The points of a solid line that fall in one pixel column: its first and last, and its highest
 * and lowest, with their places in the line (a dense curve, a PSD of 2 560 points over 700
 * pixels, zigzags up and down each column: the union of its segments there is, within a pixel,
 * the column's span from the lowest to the highest point). */
typedef struct colspan {
    long c;
    size_t n; /* points in it (0: none yet) */
    size_t at[4];
    double pt[4][2]; /* first, lowest, highest, last */
} colspan;

/* The column's points in their order in the line, each drawn from the one before. */
static void column_points(const colspan *col, pen_at *f) {
    int order[4] = {0, 1, 2, 3};
    for (int i = 1; i < 4; i++) /* by their places in the line */
        for (int j = i; j > 0 && col->at[order[j]] < col->at[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
    for (int i = 0; i < 4; i++)
        if (!i || col->at[order[i]] != col->at[order[i - 1]]) pen_to(f, col->pt[order[i]], 0);
}

/* Draws a column: the link from the column before to its first point, then its lowest to its
 * highest point as one segment (a flat column: its first to its last), both round at each end;
 * the next link starts at its last point. The way from the first to the span and from the span to
 * the last lies in the same column, between its lowest and highest point: inside the span within
 * a pixel, joined by the round ends of a line 1.2 pixels wide or wider. A line's first and last
 * columns (end: the line ends in it) go point by point, so that the line starts and ends square.
 * (The links to the next column are drawn whole: drawn only where the columns' spans do not
 * overlap, a thin line's dense curve came out visibly lighter.) */
static void column_flush(colspan *col, pen_at *f, int end) {
    if (!col->n) return;
    if (end || !f->run) {
        column_points(col, f);
        col->n = 0;
        return;
    }
    pen_to(f, col->pt[0], 1);
    if (col->at[1] != col->at[2]) line_seg(f->k, col->pt[1], col->pt[2], &f->dist, f->pen, 0, 1);
    else if (col->at[3] != col->at[0]) line_seg(f->k, col->pt[0], col->pt[3], &f->dist, f->pen, 0, 1);
    if (col->at[3] != col->at[0]) f->p[0] = col->pt[3][0], f->p[1] = col->pt[3][1], f->run++;
    col->n = 0;
}

static void column_add(colspan *col, pen_at *f, const double q[2], size_t i) {
    long c = (long)floor(q[0]);
    if (col->n && c != col->c) column_flush(col, f, 0);
    if (!col->n++) {
        col->c = c;
        for (int k = 0; k < 4; k++) col->at[k] = i, col->pt[k][0] = q[0], col->pt[k][1] = q[1];
        return;
    }
    int slot[3] = {q[1] < col->pt[1][1] ? 1 : -1, q[1] > col->pt[2][1] ? 2 : -1, 3};
    for (int k = 0; k < 3; k++)
        if (slot[k] >= 0) col->at[slot[k]] = i, col->pt[slot[k]][0] = q[0], col->pt[slot[k]][1] = q[1];
}

ink_box ink_area(double px, double py, double pw, double ph, int w, int h) {
    ink_box b = {.x0 = first_at(px, 0, w), .y0 = first_at(py, 0, h)};
    b.x1 = last_at(px + pw, b.x0, w), b.y1 = last_at(py + ph, b.y0, h);
    return b;
}

void ink_line(uint32_t *px, size_t stride, ink_box clip, size_t n, ink_point_fn point, const void *ctx, const ink_pen *pen) {
    if (!px || !pen || !(pen->width > 0 && pen->width <= INK_MAX_WIDTH) || clip.x0 < 0 || clip.y0 < 0 ||
        clip.x1 > INK_MAX_COLS || clip.y1 > INK_MAX_ROWS || stride < ((size_t)clip.x1 + 31) / 32 * 32)
        return; /* outside the contract (ink.h): nothing drawn */
    ink k = {.px = px, .stride = stride, .x0 = clip.x0, .x1 = clip.x1, .y0 = clip.y0, .y1 = clip.y1}; /* no block used */
    pen_at f = {.k = &k, .pen = pen};
    colspan col = {0};
    double q[2];
    for (size_t i = 0; i < n; i++) {
        if (!point(ctx, i, q) || !isfinite(q[0]) || !isfinite(q[1])) {
            column_flush(&col, &f, 1);
            f.run = 0;
            continue;
        }
        q[0] = fmax(-OFF_PAGE, fmin(OFF_PAGE, q[0])), q[1] = fmax(-OFF_PAGE, fmin(OFF_PAGE, q[1]));
        if (pen->dashed) pen_to(&f, q, 0); /* the dashes follow the length of the whole line: every point */
        else column_add(&col, &f, q, i);
    }
    column_flush(&col, &f, 1);
    blend(&k, pen->rgb);
}
