/* session: the one way to run a model (dpd.h, "sessions") — provider choice and fallback,
 * the working batch with halving on memory failures, device-failure handling, and the emulation
 * of ABI v2 slots for providers that lack them (v1 packs). Internal additions for dpd_train. */
#ifndef DPD_SESSION_H
#define DPD_SESSION_H
#include "dpd/provider.h"

/* What a session must be able to do beyond inference: the provider is demoted (auto) or
 * refused (explicit) when it cannot. */
enum { DPD_NEED_TRAIN = 1, DPD_NEED_CHAIN = 2 };

/* dpd_session_create with needs; frozen: for DPD_NEED_CHAIN, the PA configuration the provider
 * must support too. */
dpd_status dpd_session_open(const dpd_model *m, const dpd_kv *opts, int nopts, int need,
                            const dpd_model_cfg *frozen, dpd_session **out, dpd_error *err);

/* dpd_session_attach recording who attached the data (id != 0: a dpd_eval's id), and whether
 * split k of s still holds those n samples. */
dpd_status dpd_session_attach_as(dpd_session *s, int k, const float *x, const float *y, size_t n,
                                 unsigned long long id, dpd_error *err);
int dpd_session_resident(const dpd_session *s, int k, unsigned long long id, size_t n);

/* The first S segments of `from` (S <= from->S) as an evaluation of their own (own copies and
 * id; n the samples they hold of the split), for a bounded preview. */
dpd_status dpd_eval_head(dpd_eval *e, const dpd_eval *from, int S, dpd_error *err);

/* The configuration of the model s runs. */
const dpd_model_cfg *dpd_session_cfg(const dpd_session *s);

/* On the built-in cpu provider, s computes directly on m's parameter buffer (m must outlive s):
 * one copy of the weights, uploads and downloads become no-ops. Other providers: nothing. */
void dpd_session_share(dpd_session *s, dpd_model *m);

/* A recognized device failure of provider `name` during a run: the preference moves to cpu for
 * later work (recorded with msg); returns DPD_E_DEVICE with a message saying the run was not
 * repeated. */
dpd_status dpd_session_device_failed(const char *name, const char *msg, dpd_error *err);
#endif
