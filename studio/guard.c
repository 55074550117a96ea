/* guard: JSON bounds on the raw bytes (guard.h). */
#include <stdio.h>

#include "guard.h"

int json_guard(const char *p, size_t n, int max_depth, int max_number, char *why, size_t wn) {
    int depth = 0, in_string = 0, number = 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (!c) return snprintf(why, wn, "a NUL byte at offset %zu", i), -1;
        if (in_string) {
            if (c == '\\') i++; /* the escaped character (a \u's digits are plain bytes after it) */
            else if (c == '"') in_string = 0;
            continue;
        }
        int digitish = (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
        number = digitish ? number + 1 : 0;
        if (number > max_number)
            return snprintf(why, wn, "a number longer than %d characters at offset %zu", max_number, i + 1 - (size_t)number), -1;
        if (c == '"') in_string = 1;
        else if (c == '[' || c == '{') {
            if (++depth > max_depth) return snprintf(why, wn, "it nests deeper than %d levels (offset %zu)", max_depth, i), -1;
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return 0;
}
