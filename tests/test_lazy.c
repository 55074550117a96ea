/* test_lazy: a library loaded at its first use (src/lazy.h) gives its functions; one that is not
 * there, or lacks a function, is said (its soname, or the function) and looked for again at the
 * next use; lazy_fail's message names the package; a global one's symbols are found by name from
 * anywhere (how a session's thread count reaches LAPACKE's BLAS), a local one's are not. */
#include <dlfcn.h>
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

    dpd_error err = {0};
    CHECK(lazy_fail(&none, "x.mat: MAT files are read and written by matio", &err) == DPD_E_UNSUPPORTED &&
              !strcmp(err.msg, "x.mat: MAT files are read and written by matio, which cannot be loaded (libdpd-no-such-"
                               "library.so.0: cannot open shared object file: No such file or directory): install the package "
                               "that provides libdpd-no-such-library.so.0 (Debian 12: Debian: none)"),
          "lazy_fail: %s", err.msg);

    lazy_lib glob = {DPD_LIBARCHIVE_SONAME, "libarchive13", 1}, local = {DPD_MATIO_SONAME, "libmatio11"};
    void *v = NULL, *w = NULL;
    CHECK(!dlsym(RTLD_DEFAULT, "archive_version_number") && !dlsym(RTLD_DEFAULT, "Mat_GetLibraryVersion"),
          "neither libarchive nor matio is loaded before (this program links neither)");
    CHECK(lazy_load(&glob, (const char *const[]){"archive_version_number"}, &v, 1) && v &&
              dlsym(RTLD_DEFAULT, "archive_version_number") == v,
          "a global library's function is found by name from anywhere (%s)", glob.why);
    CHECK(lazy_load(&local, (const char *const[]){"Mat_GetLibraryVersion"}, &w, 1) && w &&
              !dlsym(RTLD_DEFAULT, "Mat_GetLibraryVersion"),
          "a local one's is not (%s)", local.why);

    lazy_lib lacks = {"libm.so.6", "Debian: libc6"};
    void *g[2] = {0};
    CHECK(!lazy_load(&lacks, (const char *const[]){"cos", "dpd_no_such_function"}, g, 2) &&
              !strcmp(lacks.why, "libm.so.6 lacks dpd_no_such_function"),
          "a function the library lacks: 0, named (%s)", lacks.why);
    return check_done("lazy");
}
