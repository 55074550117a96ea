/* guard: the checks a request body passes before a JSON parser sees it (docs/studio.md
 * "Access"): a parser's cost and stack grow with nesting and number length, so both are bounded
 * on the raw bytes first. */
#ifndef DPD_STUDIO_GUARD_H
#define DPD_STUDIO_GUARD_H

#include <stddef.h>

#define GUARD_DEPTH 16   /* arrays and objects inside one another */
#define GUARD_NUMBER 64  /* characters of one number */

/* Scans p[0, n) as JSON text would be read (strings and their escapes skipped): 0 when it nests at
 * most max_depth levels, every number has at most max_number characters and no byte is NUL;
 * otherwise -1 with why (n bytes) saying which and where (the byte offset). It does not check
 * that the text is JSON: the parser does. */
int json_guard(const char *p, size_t n, int max_depth, int max_number, char *why, size_t wn);

#endif
