/* test_deflate: dpd plot's PNG compressor (cli/deflate.c) against libdeflate's decompressor, which
 * checks the zlib header, every block and the Adler-32: the empty input, one and two bytes, runs
 * across the longest match, a block's symbols exactly full, incompressible bytes (stored
 * blocks), rows that repeat at a distance past the window (ignored) and of 1, a
 * chart-like image (within 10 % of libdeflate's level 2 in size) and 300 random mixtures of runs,
 * copies of the row above and noise; an RGB image compresses better with the pixel's distance;
 * every output within deflate_bound; too small a buffer: 0. */
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "deflate.h"

static uint64_t state = 0x9E3779B97F4A7C15u;
static uint32_t next(void) { /* xorshift64* */
    state ^= state >> 12, state ^= state << 25, state ^= state >> 27;
    return (uint32_t)((state * 2685821657736338717u) >> 32);
}

static deflate_work work;

/* Compresses in[0, n) with px and row, checks it decompresses to in and fits the bound; its size. */
static size_t round_trip2(const char *what, const unsigned char *in, size_t n, size_t px, size_t row) {
    size_t cap = deflate_bound(n);
    unsigned char *z = malloc(cap), *back = malloc(n ? n : 1);
    size_t m = deflate_zlib(in, n, px, row, &work, z, cap), got = 0;
    CHECK(m > 0 && m <= cap, "%s: %zu bytes out for %zu in (bound %zu)", what, m, n, cap);
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    enum libdeflate_result r = libdeflate_zlib_decompress(d, z, m, back, n, &got);
    CHECK(r == LIBDEFLATE_SUCCESS && got == n && (!n || !memcmp(back, in, n)),
          "%s: decompresses to the input (libdeflate: %d, %zu of %zu bytes)", what, (int)r, got, n);
    libdeflate_free_decompressor(d);
    free(z), free(back);
    return m;
}

static size_t round_trip(const char *what, const unsigned char *in, size_t n, size_t row) { return round_trip2(what, in, n, 1, row); }

/* A chart-like image of palette indices (h rows of 1 + w: a filter byte, then the pixels): white,
 * a frame and grid, a noisy curve with eight levels of antialiasing and some "text". */
static unsigned char *chart(int w, int h) {
    size_t row = 1 + (size_t)w;
    unsigned char *p = calloc((size_t)h * row, 1);
    for (int y = 0; y < h; y++) {
        unsigned char *r = p + (size_t)y * row + 1;
        memset(r, 1, (size_t)w); /* white */
        if (y == 40 || y == h - 60 || (y > 40 && y < h - 60 && y % 50 == 0)) memset(r + 80, 2, (size_t)w - 120);
        if (y >= 40 && y <= h - 60)
            for (int x = 80; x < w - 40; x += 70) r[x] = 2;
    }
    for (int x = 81; x < w - 41; x++) { /* the curve: a column's span, its ends softened */
        int c = h / 2 + (int)(next() % 41) - 20, lo = c - 3 - (int)(next() % 6), hi = c + 3 + (int)(next() % 6);
        for (int y = lo; y <= hi; y++) p[(size_t)y * row + 1 + x] = y == lo || y == hi ? (unsigned char)(3 + next() % 8) : 11;
    }
    for (int k = 0; k < 60; k++) { /* glyphs: 7 x 11 cells of grey levels, a few shapes repeated */
        int x0 = 20 + (k % 30) * 8 + (k / 30) * 400, y0 = (k / 30) ? h - 30 : 10, g = k % 7;
        for (int y = 0; y < 11; y++)
            for (int x = 0; x < 7; x++) p[(size_t)(y0 + y) * row + 1 + x0 + x] = (unsigned char)(12 + ((x * 3 + y * 5 + g) % 9));
    }
    return p;
}

int main(void) {
    unsigned char small[3] = {7, 7, 7};
    round_trip("the empty input", small, 0, 0);
    round_trip("one byte", small, 1, 0);
    round_trip("two bytes", small, 2, 1);
    round_trip("three equal bytes", small, 3, 0);
    size_t n = 100000;
    unsigned char *in = malloc(n);
    memset(in, 0, n);
    size_t z = round_trip("100 000 zeros", in, n, 0);
    CHECK(z < 1000, "100 000 zeros compress: %zu bytes", z);
    for (size_t len = 256; len <= 262; len++) { /* a run across the longest match (258) */
        memset(in, 5, len), in[len] = 9;
        round_trip("a run near the longest match", in, len + 1, 0);
    }
    for (size_t i = 0; i < DEFLATE_SYMBOLS; i++) in[i] = (unsigned char)(i * 7 % 251); /* no byte equals the last */
    round_trip("a block's symbols exactly full of literals", in, DEFLATE_SYMBOLS, 0);
    round_trip("the same and one more", in, DEFLATE_SYMBOLS + 1, 0);
    for (size_t i = 0; i < n; i++) in[i] = (unsigned char)next();
    z = round_trip("100 000 random bytes (stored)", in, n, 0);
    CHECK(z <= n + n / 1000 + 16, "random bytes grow by little (stored blocks): %zu for %zu", z, n);
    round_trip("random bytes, a row of 33 000 (past the window: ignored)", in, n, 33000);
    round_trip("random bytes, a row of 1", in, n, 1);
    for (size_t i = 1000; i < n; i++) in[i] = in[i - 1000];
    z = round_trip("rows of 1 000 that repeat", in, n, 1000);
    CHECK(z < 2000, "rows that repeat compress to about one row: %zu bytes", z);

    int w = 800, h = 500;
    unsigned char *img = chart(w, h);
    size_t raw = (size_t)h * (1 + (size_t)w);
    z = round_trip("a chart-like image", img, raw, 1 + (size_t)w);
    struct libdeflate_compressor *c = libdeflate_alloc_compressor(2);
    size_t cap = libdeflate_zlib_compress_bound(c, raw);
    unsigned char *ref = malloc(cap);
    size_t zr = libdeflate_zlib_compress(c, img, raw, ref, cap);
    CHECK(zr && z <= zr + zr / 10, "the chart compresses within 10 %% of libdeflate's level 2: %zu against %zu bytes", z, zr);
    unsigned char tiny[16];
    CHECK(deflate_zlib(img, raw, 1, 801, &work, tiny, sizeof tiny) == 0, "too small a buffer: 0, nothing written past it");
    libdeflate_free_compressor(c);
    free(ref);

    /* RGB: runs of a colour repeat at 3 bytes, rows at 1 + 3 w */
    size_t rgb_n = (size_t)h * (1 + 3 * (size_t)w);
    unsigned char *rgb = malloc(rgb_n);
    for (int y = 0; y < h; y++) {
        unsigned char *r = rgb + (size_t)y * (1 + 3 * (size_t)w);
        r[0] = 0;
        for (int x = 0; x < w; x++) {
            unsigned char k = img[(size_t)y * (1 + (size_t)w) + 1 + (size_t)x];
            r[1 + 3 * x] = (unsigned char)(k * 37), r[2 + 3 * x] = (unsigned char)(k * 91 + 5), r[3 + 3 * x] = (unsigned char)(255 - k);
        }
    }
    size_t z3 = round_trip2("the chart as RGB", rgb, rgb_n, 3, 1 + 3 * (size_t)w);
    size_t z1 = round_trip2("the chart as RGB, no pixel distance", rgb, rgb_n, 1, 1 + 3 * (size_t)w);
    CHECK(z3 < z1, "a pixel's distance finds the runs of a colour: %zu bytes against %zu", z3, z1);
    free(rgb), free(img);

    for (int t = 0; t < 300; t++) { /* mixtures */
        size_t len = next() % 70000, row = next() % 4 ? 1 + next() % 3000 : 0, px = 1 + next() % 4;
        for (size_t i = 0; i < len;) {
            size_t k = 1 + next() % 600, kind = next() % 4;
            for (; k && i < len; k--, i++)
                in[i] = kind == 0 ? (unsigned char)next() : kind == 1 && i >= px ? in[i - px] : kind == 2 && i >= row && row ? in[i - row] : (unsigned char)(next() % 3);
        }
        round_trip2("a random mixture", in, len, px, row);
    }
    free(in);
    return check_done("test_deflate");
}
