/* test_guard: the raw-byte JSON bounds of the studio's request boundary (studio/guard.c): depth
 * 16 passes and 17 is refused; brackets and digits inside strings (escaped quotes included) do not
 * count; a 64-character number passes and 65 is refused, as is one of 100 000 digits; a NUL
 * byte is refused; the reason names the offset. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "guard.h"

static int guard(const char *s, size_t n, char *why) { return json_guard(s, n, GUARD_DEPTH, GUARD_NUMBER, why, 256); }

static char *nest(int d) { /* d arrays inside one another */
    char *s = malloc(2 * (size_t)d + 1);
    for (int i = 0; i < d; i++) s[i] = '[', s[2 * d - 1 - i] = ']';
    s[2 * d] = 0;
    return s;
}

int main(void) {
    char why[256];
    char *a = nest(16), *b = nest(17);
    CHECK(!guard(a, strlen(a), why), "16 levels pass: %s", why);
    CHECK(guard(b, strlen(b), why) && strstr(why, "deeper than 16"), "17 levels are refused: %s", why);
    free(a), free(b);
    const char *obj = "{\"a\":{\"b\":{\"c\":[1,2,{\"d\":null}]}}}";
    CHECK(!guard(obj, strlen(obj), why), "an ordinary body passes");
    char s[512];
    snprintf(s, sizeof s, "{\"x\":\"%s\\\"[[[[[[[[[[[[[[[[[[[[\", \"n\":\"%s\"}", "[[[[[[[[[[[[[[[[[[[[", "1234567890123456789012345678901234567890123456789012345678901234567890");
    CHECK(!guard(s, strlen(s), why), "brackets, an escaped quote and digits inside strings do not count: %s", why);
    char num[200];
    memset(num, '7', 64), num[64] = 0;
    CHECK(!guard(num, 64, why), "a 64-character number passes");
    memset(num, '7', 65), num[65] = 0;
    CHECK(guard(num, 65, why) && strstr(why, "longer than 64"), "65 characters are refused: %s", why);
    snprintf(num, sizeof num, "[-1.5e+300,%s]", "0.00000000000000000000000000000000000000000000000000000000000001");
    CHECK(!guard(num, strlen(num), why), "numbers up to 64 characters each, side by side, pass: %s", why);
    char *big = malloc(100002);
    memset(big, '9', 100001), big[0] = '[', big[100001] = 0;
    CHECK(guard(big, 100001, why) && strstr(why, "offset 1"), "a 100 000-digit number is refused at its start: %s", why);
    free(big);
    const char nul[] = {'{', '"', 'a', '"', ':', '1', 0, '}'};
    CHECK(guard(nul, sizeof nul, why) && strstr(why, "NUL byte at offset 6"), "a NUL byte is refused: %s", why);
    const char instr[] = {'"', 'a', 0, '"'};
    CHECK(guard(instr, sizeof instr, why), "a NUL inside a string too");
    CHECK(!guard("", 0, why), "nothing passes (the parser refuses it)");
    return check_done("guard");
}
