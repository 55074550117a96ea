/* lanes: four 32-bit values at once with GCC's vector extensions (the samples of a pixel in
 * cli/ink.c, the pixels of a row in cli/plot.c's PNG encoder), and which lanes of a comparison hold. */
#ifndef DPD_CLI_LANES_H
#define DPD_CLI_LANES_H
#include <stdint.h>

typedef float f4 __attribute__((vector_size(16)));
typedef int i4 __attribute__((vector_size(16)));
typedef uint32_t u4 __attribute__((vector_size(16)));

/* The lanes of comparison m that hold (lane k: bit k). */
static inline unsigned lanes(i4 m) {
#ifdef __SSE2__
    return (unsigned)__builtin_ia32_movmskps((f4)m);
#else
    return (unsigned)((m[0] & 1) | (m[1] & 2) | (m[2] & 4) | (m[3] & 8));
#endif
}

#endif
