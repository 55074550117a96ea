/* test_lazy: a library loaded at its first use (src/lazy.h) gives its functions; one that is not
 * there, or lacks a function, is said (its soname, or the function), every time it is asked,
 * without loading it again. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "lazy.h"

int main(void) {
    lazy_lib m = {"libm.so.6", "Debian: libc6"};
    double (*fn[2])(double) = {0};
    int ok = lazy_load(&m, (const char *const[]){"cos", "sqrt"}, (void **)fn, 2);
    CHECK(ok && m.ok && fn[0] && fn[1] && fn[0](0) == 1 && fn[1](4) == 2, "libm: cos and sqrt (%s)", m.why);
    CHECK(lazy_load(&m, (const char *const[]){"cos", "sqrt"}, (void **)fn, 2), "asked again: the first answer");

    lazy_lib none = {"libdpd-no-such-library.so.0", "Debian: none"};
    void *f = NULL;
    CHECK(!lazy_load(&none, (const char *const[]){"f"}, &f, 1) && !f && strstr(none.why, "libdpd-no-such-library.so.0"),
          "a library that is not there: 0, and why names it (%s)", none.why);
    char first[sizeof none.why];
    snprintf(first, sizeof first, "%s", none.why);
    CHECK(!lazy_load(&none, (const char *const[]){"f"}, &f, 1) && !strcmp(none.why, first), "asked again: the same answer");

    lazy_lib lacks = {"libm.so.6", "Debian: libc6"};
    void *g[2] = {0};
    CHECK(!lazy_load(&lacks, (const char *const[]){"cos", "dpd_no_such_function"}, g, 2) &&
              !strcmp(lacks.why, "libm.so.6 lacks dpd_no_such_function"),
          "a function the library lacks: 0, named (%s)", lacks.why);
    return check_done("lazy");
}
