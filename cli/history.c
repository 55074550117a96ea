/* history: a run's history.csv as JSON (cli.h), for `dpd plot`'s documents and the studio's API;
 * and the small JSON files of a run read as dpd reads any file it is given (cli_json_read). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

json_t *cli_history_json(const char *path, dpd_error *err) {
    char *text;
    struct stat sb;
    *err = (dpd_error){0};
    if (lstat(path, &sb) && errno == ENOENT) return NULL; /* none: no error */
    if (dpd_read_file(path, 0, "history", &text, NULL, err)) return NULL;
    json_t *cols = json_array(), *rows = json_array();
    char *rest = text, *line;
    for (int first = 1; (line = strsep(&rest, "\n"));) {
        size_t len = strlen(line);
        while (len > 0 && line[len - 1] == '\r') line[--len] = 0;
        if (!len) continue;
        json_t *row = first ? cols : json_array();
        for (char *fields = line, *p; (p = strsep(&fields, ","));) {
            char *end;
            double v = strtod(p, &end);
            int whole = strspn(p, "-0123456789") == strlen(p);
            json_array_append_new(row, first || *end || end == p ? json_string(p)
                                       : whole                   ? json_integer((json_int_t)strtoll(p, NULL, 10))
                                                                 : isfinite(v) ? json_real(v) : json_null());
        }
        if (!first) json_array_append_new(rows, row);
        first = 0;
    }
    free(text);
    return json_pack("{s:o, s:o}", "columns", cols, "rows", rows);
}

json_t *cli_run_baselines(const char *run_dir, dpd_error *err) {
    char path[4200], *text;
    struct stat sb;
    *err = (dpd_error){0};
    snprintf(path, sizeof path, "%s/events.jsonl", run_dir);
    if (lstat(path, &sb) && errno == ENOENT) return NULL;
    if (dpd_read_file(path, 0, "events", &text, NULL, err)) return NULL;
    json_t *out = NULL;
    for (char *rest = text, *line; (line = strsep(&rest, "\n"));) {
        if (!strstr(line, "\"run_started\"")) continue; /* a quick look before parsing the line */
        json_t *j = json_loads(line, 0, NULL), *n = json_object_get(j, "no_dpd"), *m = json_object_get(j, "measured");
        if (json_is_object(m)) {
            json_decref(out);
            out = json_pack("{s:O}", "measured", m);
            if (out && json_is_object(n)) json_object_set(out, "no_dpd", n);
        }
        json_decref(j);
    }
    free(text);
    return out;
}

json_t *cli_json_read(const char *path, size_t flags, dpd_error *err) {
    char *text;
    size_t len;
    if (dpd_read_file(path, DPD_MAX_JSON_BYTES, "JSON", &text, &len, err)) return NULL;
    json_error_t je;
    json_t *j = json_loadb(text, len, flags, &je);
    free(text);
    if (!j) cli_err(err, DPD_E_FORMAT, "%s:%d: %s", path, je.line, je.text);
    return j;
}
