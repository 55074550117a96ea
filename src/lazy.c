/* lazy: shared libraries loaded at their first use (lazy.h). */
#include "lazy.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "status.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

int lazy_load(lazy_lib *l, const char *const *names, void **fns, size_t n) {
    pthread_mutex_lock(&lock);
    if (!l->ok) {
        void *h = dlopen(l->soname, RTLD_NOW | (l->global ? RTLD_GLOBAL : RTLD_LOCAL));
        if (!h) snprintf(l->why, sizeof l->why, "%s", dlerror());
        for (size_t i = 0; h && i < n; i++)
            if (!(fns[i] = dlsym(h, names[i]))) {
                snprintf(l->why, sizeof l->why, "%s lacks %s", l->soname, names[i]);
                dlclose(h);
                h = NULL;
            }
        l->ok = h != NULL;
    }
    int ok = l->ok;
    pthread_mutex_unlock(&lock);
    return ok;
}

dpd_status lazy_fail(const lazy_lib *l, const char *what, dpd_error *err) {
    pthread_mutex_lock(&lock); /* why: another thread may be trying again */
    dpd_status s = dpd_fail(err, DPD_E_UNSUPPORTED, "%s, which cannot be loaded (%s): install the package that provides %s "
                                                     "(Debian 12: %s)", what, l->why, l->soname, l->package);
    pthread_mutex_unlock(&lock);
    return s;
}
