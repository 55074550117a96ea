/* json: see json.h. */
#include "json.h"

#include <stdlib.h>

#include "file.h"
#include "status.h"

json_t *dpd_json_load(const char *path, const char *what, dpd_error *err) {
    char *buf;
    size_t len;
    if (dpd_file_read_max(path, DPD_MAX_JSON_BYTES, what, &buf, &len, err)) return NULL;
    json_error_t je;
    json_t *j = json_loadb(buf, len, 0, &je);
    free(buf);
    if (!j) dpd_fail(err, DPD_E_FORMAT, "%s:%d: %s", path, je.line, je.text);
    return j;
}
