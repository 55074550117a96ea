/* ckpt: safetensors files (8-byte little-endian header length, JSON header, raw data). Tensor
 * names are OpenDPD's state-dict keys; __metadata__ carries family, hidden, layers, dpd_version
 * and whatever the caller adds. Reading validates every header entry before any data is used. */
#ifndef DPD_CKPT_H
#define DPD_CKPT_H
#include <jansson.h>

#include "dpd/dpd.h"

typedef struct dpd_ckpt {
    char path[4096];
    char *buf;        /* whole file */
    size_t len;
    json_t *hdr;      /* header object */
    const char *data; /* start of the data region */
    size_t data_len;
} dpd_ckpt;

/* Reads and validates: header length within the file, JSON object, every tensor F32 with a
 * shape whose size matches its data_offsets inside the data region. DPD_E_FORMAT naming the
 * file and the entry otherwise. */
dpd_status dpd_ckpt_open(const char *path, dpd_ckpt *c, dpd_error *err);
void dpd_ckpt_close(dpd_ckpt *c);

/* Metadata string or NULL. */
const char *dpd_ckpt_meta(const dpd_ckpt *c, const char *key);

/* Copies tensor `name` of exactly numel floats into out; DPD_E_FORMAT when missing or sized
 * differently. */
dpd_status dpd_ckpt_read(const dpd_ckpt *c, const char *name, float *out, size_t numel,
                         dpd_error *err);

/* Copies every model tensor into m, checking names and shapes. */
dpd_status dpd_ckpt_read_model(const dpd_ckpt *c, dpd_model *m, dpd_error *err);

#endif
