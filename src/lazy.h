/* lazy: the shared libraries libdpd loads when it first needs them (dlopen) instead of linking
 * them: matio (MAT files), libarchive (pack archives) and LAPACKE (least-squares fits) bring
 * dozens of libraries of their own (HDF5, curl, ICU, gfortran, ...) whose loading and relocation
 * cost every dpd process milliseconds of its start, though most never read a MAT file, install a
 * pack or fit a polynomial. Each is loaded by the soname the build was made against (Makefile:
 * DPD_*_SONAME), from whichever thread asks first, and kept to the process's exit; one that did
 * not load is looked for again at the next use (a package installed meanwhile is found). */
#ifndef DPD_LAZY_H
#define DPD_LAZY_H
#include <stddef.h>

#include "dpd/dpd.h"

typedef struct lazy_lib {
    const char *soname;  /* the library's file name, as dlopen takes it */
    const char *package; /* the package that provides it on Debian 12 */
    int global;          /* its symbols (and its libraries') global: LAPACKE's BLAS, whose thread
                          * count a session sets by name (src/cpu/provider.c) */
    int ok;              /* loaded, every function found (under lazy.c's lock) */
    char why[320];       /* the last try's failure: dlopen's reason, or the function it lacks */
} lazy_lib;

/* Loads l (unless an earlier call did) and sets fns[i] to the address of its function names[i],
 * for i < n: 1 when the library and every function are there, else 0 with l->why saying what is
 * missing. fns is the caller's table of function pointers, in the order of names. */
int lazy_load(lazy_lib *l, const char *const *names, void **fns, size_t n);

/* DPD_E_UNSUPPORTED: "<what>, which cannot be loaded (<why>): install the package that provides
 * <soname> (Debian 12: <package>)". */
dpd_status lazy_fail(const lazy_lib *l, const char *what, dpd_error *err);

#endif
