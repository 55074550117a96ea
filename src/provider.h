/* provider (registry): finds, loads, scores and selects execution providers — the built-in cpu,
 * and every provider with an installed pack linked as active-<name> under dpd_packs_dir() —
 * applying the fallback rules of docs/providers.md. It does not run anything on a provider
 * (src/session.c does) and does not install packs (src/pack.c does).
 *
 * Each pack directory is loaded once per process (dlopen, score, the ABI handshake) and the
 * outcome, success or refusal, is cached for the life of the process; the cache has no fixed
 * size and is guarded by a mutex, so every function here may be called from any thread. Once a
 * provider name has been loaded from a pack, the process keeps that pack for the name: a pack
 * activated later is used after a restart (dpd_provider_restart_needed says so).
 *
 * The public part (dpd_provider_list, dpd_provider_choose, dpd_provider_restart_needed,
 * dpd_batch_bound, dpd_packs_dir, dpd_pack_active) is declared in dpd/dpd.h. */
#ifndef DPD_PROVIDER_REG_H
#define DPD_PROVIDER_REG_H
#include "dpd/provider.h"

/* Loads the provider library of a pack directory (its pack.json names the library): dlopen, the
 * score (0: not usable here; why says why and the status is DPD_E_DEVICE), the handshake (init
 * asked for DPD_PROVIDER_API, then for 1; a v1 provider's table is copied into a zeroed
 * full-size table owned by the registry, so its v2 slots read NULL and its api_version 1).
 * expect: the name the library must call itself ("" or NULL: any). On success *out stays valid
 * for the life of the process; the score is in *score when score is non-NULL. Statuses:
 * DPD_E_FORMAT (no valid pack.json or library entry, a missing symbol or slot, a name that does
 * not match), DPD_E_UNSUPPORTED (dlopen failed, or neither ABI version served: the message names
 * both), DPD_E_DEVICE (score 0), or init's own status. */
dpd_status dpd_provider_load(const char *pack_dir, const char *expect, const dpd_provider **out, int *score,
                             char *why, size_t nwhy, dpd_error *err);

/* Resolves a provider request: "cpu", "auto", a pack's name ([a-z0-9_]{1,31}), or NULL / "" for
 * the settings' provider. auto picks the highest-scoring usable provider (a pack before cpu at
 * equal score), and falls back to cpu with the reason in reason when a validation is in
 * progress, the settings fell back to cpu, or no pack is usable. An explicit name that cannot be
 * had (no pack installed, a validation in progress, a pack that does not load or is not usable
 * here) is an error saying what to do; *out is then the cpu provider. reason ("cuda from DIR",
 * "cpu: ...") is always filled. DPD_E_INVAL for a malformed name, DPD_E_FORMAT/E_IO for a corrupt
 * settings file, else the load's status. */
dpd_status dpd_provider_select(const char *want, const dpd_provider **out, char *reason, size_t nreason,
                               dpd_error *err);

/* *p, as selected for request want, cannot do what is asked (why, e.g. "the model is not
 * supported"): when want names it explicitly the run is refused with why (DPD_E_UNSUPPORTED,
 * *p unchanged); otherwise *p becomes the cpu provider and reason says why. One rule for
 * evaluation, dpd run and training. */
dpd_status dpd_provider_demote(const char *want, const dpd_provider **p, const char *why, char *reason,
                               size_t nreason, dpd_error *err);

/* 1 when name is a valid provider or pack name: [a-z0-9_]{1,31}. */
int dpd_provider_name_ok(const char *name);

/* 1 when process pid exists and is not a zombie (a zombie holds no descriptor). /proc when it is
 * mounted, else kill(pid, 0). */
int dpd_pid_alive(long pid);

/* The pid recorded in the validation lock file open as fd ("<pid>\n", written by its holder
 * after it took the flock); 0 when none is recorded. Leaves the file offset unchanged. */
long dpd_lock_holder(int fd);
#endif
