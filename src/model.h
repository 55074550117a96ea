/* model: internal parts of dpd_model shared with the library. */
#ifndef DPD_MODEL_H
#define DPD_MODEL_H
#include "dpd/dpd.h"
#include "family.h"

const dpd_family *dpd_model_family(const dpd_model *m);
const float *dpd_model_cparams(const dpd_model *m); /* the parameter buffer, read-only */

#endif
