/* json: reading the small JSON files dpd keeps (settings, run config.json, pack.json) through the
 * bounded regular-file reader (file.h), so a FIFO, a device or a huge file is refused like any
 * other input. */
#ifndef DPD_JSON_H
#define DPD_JSON_H
#include <jansson.h>

#include "dpd/dpd.h"


/* The JSON document in path (at most DPD_MAX_JSON_BYTES; what names the kind of file in
 * messages). NULL on failure: DPD_E_IO when the file is missing or not a regular file,
 * DPD_E_FORMAT "<path>:<line>: <what jansson says>" when it is not JSON or too large. */
json_t *dpd_json_load(const char *path, const char *what, dpd_error *err);
#endif
