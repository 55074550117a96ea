/* provider (registry): finds, loads and selects execution providers — the built-in cpu, and
 * cuda from the active runtime pack under dpd_packs_dir() — applying the fallback rules of
 * docs/providers.md. */
#ifndef DPD_PROVIDER_REG_H
#define DPD_PROVIDER_REG_H
#include "dpd/provider.h"

/* $XDG_DATA_HOME/dpd/packs (default ~/.local/share/dpd/packs). */
const char *dpd_packs_dir(void);

/* The installed pack directory a provider's active link points to, or "" when none. */
void dpd_pack_active(const char *provider, char *dir, size_t n);

/* Loads the provider library of a pack directory (its pack.json names the library): dlopen,
 * the score (0: not usable here, *why says why), the api_version handshake. The library stays
 * loaded for the life of the process. */
dpd_status dpd_provider_load(const char *pack_dir, const dpd_provider **out, char *why, size_t nwhy,
                             dpd_error *err);

/* Resolves "cpu", "cuda" or "auto" (the settings' provider when want is NULL or ""). cuda with no
 * pack, or a validation in progress, is refused with what to do; auto falls back to cpu and says
 * why in reason. */
dpd_status dpd_provider_select(const char *want, const dpd_provider **out, char *reason, size_t nreason,
                               dpd_error *err);

/* *p, as selected for request want, cannot do what is asked (why, e.g. "the model is not
 * supported"): when want names it explicitly the run is refused with why; otherwise *p becomes
 * the cpu provider and reason says why. One rule for evaluation, dpd run and training. */
dpd_status dpd_provider_demote(const char *want, const dpd_provider **p, const char *why, char *reason,
                               size_t nreason, dpd_error *err);

/* 1 when the active pack changed since this process loaded a provider: a long-running process
 * must restart before it uses the new backend (why says so). */
int dpd_provider_restart_needed(char *why, size_t nwhy);

/* Sets the CPU provider's thread count, and that of numeric libraries with threads of their own
 * (OpenBLAS, BLIS, OpenMP) when they are loaded. */
void dpd_provider_cpu_threads(int n);
#endif
