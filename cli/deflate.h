/* deflate: a zlib stream (RFC 1950, RFC 1951) of an image's PNG scanlines, made for dpd plot's
 * charts: mostly runs of one colour, and rows that repeat the row above. libdeflate's general
 * match finder took 1.1 to 1.6 ms for each chart's 400 KB at every level (zlib's Z_RLE no less),
 * the largest part of the pictures' cost at the end of a run; it spends about a nanosecond a byte
 * even on zeros. Here matches are sought at three distances only, 1 (a run of a byte), `px` (of a
 * pixel) and `row` (the byte above), greedily, a machine word compared at a time, and each block
 * of up to DEFLATE_SYMBOLS symbols gets Huffman codes of its own (a stored block where those
 * would not be smaller): a third to a tenth of the time, files about 10 % smaller than
 * libdeflate's level 2 for such images (any input is valid; others just compress less). */
#ifndef DPD_CLI_DEFLATE_H
#define DPD_CLI_DEFLATE_H
#include <stddef.h>
#include <stdint.h>

#define DEFLATE_SYMBOLS 8192 /* a block's symbols (literals and matches) */

/* A compression's scratch: the block's symbols (dist 0: literal sym; else a match of sym bytes
 * at distance dist). Reused call after call; the caller owns it (its pages touched once). */
typedef struct deflate_work {
    struct {
        uint16_t sym, dist;
    } s[DEFLATE_SYMBOLS];
} deflate_work;

/* The most bytes deflate_zlib writes for n bytes in. */
size_t deflate_bound(size_t n);

/* in[0, n) as one zlib stream into out, which holds cap >= deflate_bound(n) bytes. px: a pixel's
 * bytes (3 for RGB), row: the distance of the byte above (a scanline's length, filter byte
 * included); 0, 1 or above 32 768: none. Returns the bytes written, 0 when cap is too small. */
size_t deflate_zlib(const unsigned char *in, size_t n, size_t px, size_t row, deflate_work *w, unsigned char *out,
                    size_t cap);

#endif
