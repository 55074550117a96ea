/* history: a run's history.csv as JSON (cli.h), for `dpd plot`'s documents and the studio's API. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

json_t *cli_history_json(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    json_t *cols = json_array(), *rows = json_array();
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    for (int first = 1; (len = getline(&line, &cap, f)) > 0; first = 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (!len) continue;
        json_t *row = first ? cols : json_array();
        for (char *rest = line, *p; (p = strsep(&rest, ","));) {
            char *end;
            double v = strtod(p, &end);
            int whole = strspn(p, "-0123456789") == strlen(p);
            json_array_append_new(row, first || *end || end == p ? json_string(p)
                                       : whole                   ? json_integer((json_int_t)strtoll(p, NULL, 10))
                                                                 : isfinite(v) ? json_real(v) : json_null());
        }
        if (!first) json_array_append_new(rows, row);
    }
    free(line);
    fclose(f);
    return json_pack("{s:o, s:o}", "columns", cols, "rows", rows);
}
