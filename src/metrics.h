/* metrics: what the library's own modules share of metrics.c beyond the public API. */
#ifndef DPD_METRICS_H
#define DPD_METRICS_H
#include "dpd/dpd.h"

/* Where metric k (DPD_NMSE ... DPD_ACLR_AVG; past them, ACLR_AVG's) lives in m. */
double *dpd_metric_slot(dpd_metrics *m, int k);

#endif
