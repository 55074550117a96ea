/* config: the model and training configuration as one table (src/config.c: key, type, field,
 * bounds, default, meaning). The table validates input (dpd_config_set, dpd_config_check: one
 * message shape, "hidden: 100000 is out of range 1..1024", err->field = the key) and writes and
 * reads config.json, the checkpoint metadata and --json output. It does not read or write files
 * itself: callers own the paths, the json_t objects and the atomic writes.
 *
 * The public part (dpd_field, dpd_config_fields/set/get/check) is in include/dpd/dpd.h. Bounds
 * are inclusive; a bound that is exclusive in words ("lr > 0", "0 < decay < 1") is stored as the
 * next double inward (DBL_TRUE_MIN, 0x1.fffffffffffffp-1), so an inclusive test by a front end
 * means exactly the same thing, and messages print it as the round number with "(0 excluded)".
 * Fields whose table bounds do not apply to 0: order and memory (0 = not used; a polynomial
 * family needs 1.. at dpd_config_check_model). Execution options (threads, kernels, provider)
 * are table rows for set/get/check but are not part of a run's config.json: they may change on
 * resume and results do not depend on them. */
#ifndef DPD_CONFIG_H
#define DPD_CONFIG_H
#include <jansson.h>

#include "dpd/dpd.h"

/* The row of key, or NULL. */
const dpd_field *dpd_config_find(const char *key);

/* The default text of field key ("23" for hidden, "" for data); NULL for an unknown key. */
const char *dpd_config_default(const char *key);

/* Zeroes c and sets every field to its table default (the values dpd_train_defaults gives). */
void dpd_config_defaults(dpd_train_cfg *c);

/* The value of field f of c as a typed JSON value (integer, real, string, boolean) for --json
 * output; a new reference, NULL on allocation failure or a non-finite double. */
json_t *dpd_config_value(const dpd_train_cfg *c, const dpd_field *f);

/* The config.json object of a run: "dpd_version", "step" (train_dpd when c->pa is set, else
 * train_pa), "pa", "data", "dataset", "out", "run_id", then "model" {every model field in table
 * order, "n_params"}, then the training fields in table order (not the execution options).
 * Doubles are jansson reals, which json_dumps writes with 17 significant digits (do not pass
 * JSON_REAL_PRECISION below 17) so they read back exactly; seed is written as json_int_t (a seed
 * above INT64_MAX appears negative and reads back to the same bits). New reference; NULL on
 * allocation failure or a non-finite double (dpd_config_check would have refused it). */
json_t *dpd_config_json(const dpd_train_cfg *c, const char *dataset, const char *run_id,
                        size_t nparams, const char *step);

/* Reads config.json object j (as dpd_config_json writes it) into c. Required: an object, with
 * "model" an object holding "family", "hidden" and "layers"; every other table key is optional
 * and keeps c's value when missing. Other keys (dpd_version, dataset, run_id, n_params, ...)
 * are ignored. A key of the wrong JSON type or a value the table refuses is DPD_E_FORMAT
 * "<path>: <message>" with err->field set to the key; c is then partly updated (the caller
 * discards it). Integers are accepted for doubles; booleans, or 0/1, for 'b' fields. */
DPD_CHECK dpd_status dpd_config_from_json(const json_t *j, dpd_train_cfg *c, const char *path,
                                          dpd_error *err);

/* Sets the model fields of m in safetensors __metadata__ object md as JSON strings, the format
 * dpd has always written: family, hidden, layers (%d) always; order, memory and cross together
 * when any is non-zero; thx and thh together when either is non-zero, as %.9g (exact to float
 * precision, in which the model computes; a double such as 0.1f reads back as 0.100000001);
 * units when non-zero. Allocation failures leave keys missing. */
void dpd_config_model_meta(const dpd_model_cfg *m, json_t *md);

/* The reverse: reads __metadata__ object md (NULL allowed: then everything is missing) into m
 * (zeroed first). family, hidden and layers are required; integers are decimal 0..1048576.
 * DPD_E_FORMAT "<path>: not a valid checkpoint: __metadata__ lacks family, hidden or layers
 * (not written by dpd?)", "... order, memory or cross is not an integer", "... units is not an
 * integer", "... thx or thh is not a number", err->field naming the key at fault. The family is
 * stored lower-case; sizes are not range-checked here (dpd_config_check_model is). */
DPD_CHECK dpd_status dpd_config_model_from_meta(const json_t *md, dpd_model_cfg *m,
                                                const char *path, dpd_error *err);

/* The model part of dpd_config_check: every model field within its bounds, a known family
 * (case-insensitive) and layers <= its max_layers, order and memory >= 1 for a polynomial
 * family. DPD_E_UNSUPPORTED for an unknown family (dpd_model_create's contract), DPD_E_INVAL
 * otherwise, err->field set; m is not changed. */
DPD_CHECK dpd_status dpd_config_check_model(const dpd_model_cfg *m, dpd_error *err);

#endif
