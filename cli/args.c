/* args: see args.h. */
#include "args.h"
#include "dpd/dpd.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --help output goes to stdout (it was asked for); errors go to stderr. */
static void usage(const char *u, const opt *o, int n) {
    printf("usage: %s\n\noptions:\n", u);
    for (int i = 0; i < n; i++)
        if (o[i].help) printf("  --%-16s %s\n", o[i].name, o[i].help); /* NULL: parsed, not offered (another verb's) */
}

opt *args_get(opt *o, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(o[i].name, name)) return &o[i];
    return NULL;
}

const char *args_value(int argc, char **argv, const opt *o, int n, const char *name) {
    const char *last = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *eq = strchr(a, '=');
        if (strncmp(a, "--", 2)) continue;
        size_t nl = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        const opt *p = NULL;
        for (int k = 0; k < n && !p; k++)
            if (strlen(o[k].name) == nl && !strncmp(o[k].name, a + 2, nl)) p = &o[k];
        if (!p || p->type == OPT_FLAG) continue;
        const char *v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
        if (v && !strcmp(p->name, name)) last = v;
    }
    return last;
}

static int set(opt *o, const char *v) {
    char *e;
    errno = 0;
    switch (o->type) {
    case OPT_STR:
        if (strlen(v) >= o->len) return 0;
        strcpy(o->ptr, v);
        return 1;
    case OPT_INT: {
        long x = strtol(v, &e, 10);
        if (*v && (*e == 'e' || *e == 'E' || *e == '.') && !errno) { /* 1e5, 4096.0: a whole number all the same */
            double d = strtod(v, &e);
            if (*e || errno || !(d >= -2147483647.0 && d <= 2147483647.0) || d != (double)(long)d) return 0;
            x = (long)d;
        }
        if (*v == 0 || *e || errno || x < -2147483647L || x > 2147483647L) return 0;
        *(int *)o->ptr = (int)x;
        return 1;
    }
    case OPT_U64:
    case OPT_SIZE: {
        const char *q = v;
        while (isspace((unsigned char)*q)) q++; /* strtoull would take " -1" as 2^64 - 1 */
        if (*q == '-') return 0;
        unsigned long long x = strtoull(v, &e, 10);
        if (*v && (*e == 'e' || *e == 'E' || *e == '.') && !errno) { /* 3.84e4: a whole number all the same */
            double d = strtod(v, &e);
            if (*e || errno || !(d >= 0 && d < 18446744073709551616.0) || d != floor(d)) return 0;
            x = (unsigned long long)d;
        }
        if (*v == 0 || *e || errno) return 0;
        if (o->type == OPT_U64) *(uint64_t *)o->ptr = x;
        else *(size_t *)o->ptr = (size_t)x;
        return 1;
    }
    case OPT_DBL: {
        double x = strtod(v, &e);
        if (errno == ERANGE && fabs(x) < 1) errno = 0; /* 1e-320: an underflow, still a number (0 or subnormal) */
        if (*v == 0 || *e || errno || !isfinite(x)) return 0;
        *(double *)o->ptr = x;
        return 1;
    }
    case OPT_FLAG: return 0;
    }
    return 0;
}

/* What a value of type t must be, for the message that refuses v: the type's range only where v
 * is a whole number outside it (2.5 for an option whose command wants 1 to 100000 is told "a
 * whole number", not a range that command would refuse too). */
static const char *wanted(opt_type t, const char *v) {
    char *e;
    errno = 0;
    double x = strtod(v, &e);
    int whole = *v && !*e && !errno && isfinite(x) && x == floor(x);
    switch (t) {
    case OPT_INT: return whole ? "a whole number from -2147483647 to 2147483647" : "a whole number";
    case OPT_U64:
    case OPT_SIZE: return whole ? "a whole number from 0 to 18446744073709551615 (2^64 - 1)" : "a whole number of 0 or more";
    case OPT_DBL: return "a finite decimal number";
    default: return "a value";
    }
}

int args_parse(int argc, char **argv, opt *o, int n, const char *u) {
    const char *given[n > 0 ? n : 1]; /* each option's value as given, for a second one's message */
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(u, o, n);
            return 1;
        }
        if (strncmp(a, "--", 2)) {
            fprintf(stderr, "dpd: unexpected argument '%s' (options start with --; see --help)\n", a);
            return 2;
        }
        char name[64];
        const char *eq = strchr(a, '=');
        size_t nl = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        snprintf(name, sizeof name, "%.*s", (int)nl, a + 2);
        opt *p = args_get(o, n, name);
        if (!p) {
            const char *names[n > 0 ? n : 1];
            int k = 0;
            for (int j = 0; j < n; j++)
                if (o[j].help) names[k++] = o[j].name; /* this verb's own, not a sibling's */
            const char *near = dpd_nearest(name, names, k);
            fprintf(stderr, "dpd: unknown option '--%s' (%s%s%s)\n", name, near ? "did you mean '--" : "see --help",
                    near ? near : "", near ? "'? see --help" : "");
            return 2;
        }
        int again = p->seen++; /* the times it was given before */
        if (p->type == OPT_FLAG) { /* a flag twice is the flag */
            if (eq) {
                fprintf(stderr, "dpd: option '--%s' takes no value\n", name);
                return 2;
            }
            *(int *)p->ptr = 1;
            continue;
        }
        const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!v) {
            fprintf(stderr, "dpd: option '--%s' needs a value\n", name);
            return 2;
        }
        if (!eq && p->type == OPT_STR && v[0] == '-' && v[1] == '-' && v[2]) { /* "--out --json": a value forgotten */
            fprintf(stderr, "dpd: option '--%s' needs a value, and the next argument is the option '%s' (a value that "
                            "starts with -- is given as --%s=VALUE, or a path as ./%s)\n", name, v, name, v);
            return 2;
        }
        if (again) /* the last wins, as a wrapper script's override expects; said, never silent */
            fprintf(stderr, "dpd: note: option '--%s' is given %s (%s, then %s): %s is used\n", name,
                    again == 1 ? "twice" : "again", given[p - o], v, v);
        given[p - o] = v;
        if (!set(p, v)) {
            char w[96]; /* what set() refuses: the only reasons */
            if (p->type == OPT_STR) snprintf(w, sizeof w, "at most %zu bytes", p->len - 1);
            else snprintf(w, sizeof w, "%s", wanted(p->type, v));
            fprintf(stderr, "dpd: bad value '%s' for --%s: %s is wanted (%s)\n", v, name, w, p->help ? p->help : "see --help");
            return 2;
        }
    }
    return 0;
}
