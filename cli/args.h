/* args: a small long-option parser for the dpd verbs ("--name value", "--name=value" and
 * "--flag"), with usage text generated from the same table. Errors go to stderr, --help to stdout. */
#ifndef DPD_CLI_ARGS_H
#define DPD_CLI_ARGS_H
#include <stddef.h>

typedef enum { OPT_STR, OPT_INT, OPT_DBL, OPT_U64, OPT_SIZE, OPT_FLAG } opt_type;

typedef struct opt {
    const char *name; /* without the leading dashes */
    opt_type type;
    void *ptr;        /* char[len] for OPT_STR; int for OPT_INT and OPT_FLAG */
    size_t len;
    const char *help; /* NULL: parsed but left out of --help (an option of a sibling verb, refused later) */
    int seen;         /* set by args_parse: the times it is given in its argv (0: not) */
} opt;

/* Parses argv[0..argc) into the table. Returns 0 on success, 2 on a usage error (message
 * printed on stderr), 1 when --help or -h was asked (usage printed on stdout). An option given
 * twice takes its last value, with a note on stderr naming both. */
int args_parse(int argc, char **argv, opt *o, int n, const char *usage);

/* The last value argv gives option `name` of the table (its words read as args_parse reads them:
 * another option's value is not an option), or NULL: for a setting that decides the defaults of
 * the others before the one parse (synth's --preset). */
const char *args_value(int argc, char **argv, const opt *o, int n, const char *name);

/* The entry named `name` (must exist). */
opt *args_get(opt *o, int n, const char *name);

#endif
