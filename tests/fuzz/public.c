/* Fuzzes the studio's request boundary in public mode: tests/fuzz/http.c with FUZZ_PUBLIC 1 (its
 * comment says how the harness holds a session). Seeds and dictionary: corpus/public/ and
 * public.dict. */
#define FUZZ_PUBLIC 1
#include "http.c"
