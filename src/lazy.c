/* lazy: shared libraries loaded at their first use (lazy.h). */
#include "lazy.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

int lazy_load(lazy_lib *l, const char *const *names, void **fns, size_t n) {
    pthread_mutex_lock(&lock);
    if (!l->tried) {
        l->tried = 1;
        void *h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
        if (!h) snprintf(l->why, sizeof l->why, "%s", dlerror());
        for (size_t i = 0; h && i < n; i++)
            if (!(fns[i] = dlsym(h, names[i]))) {
                snprintf(l->why, sizeof l->why, "%s lacks %s", l->soname, names[i]);
                h = NULL; /* left loaded: the functions found so far are not used */
            }
        l->ok = h != NULL;
    }
    int ok = l->ok;
    pthread_mutex_unlock(&lock);
    return ok;
}
