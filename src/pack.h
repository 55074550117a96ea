/* pack: runtime packs — installing (checksum, bounded extraction into a staging directory,
 * pack.json against the files, validation in a helper process, atomic activation), listing,
 * verifying, activating and removing. docs/providers.md describes every check. */
#ifndef DPD_PACK_H
#define DPD_PACK_H
#include "dpd/dpd.h"

/* Installs and activates the pack archive FILE. sha256 ("" = read FILE.sha256) must match.
 * helper is the command that validates a staged pack in a separate process (argv[0] of a dpd
 * binary; it is run as `helper pack probe DIR`). A pack that cannot activate on this machine
 * sets the provider preference to cpu with the reason recorded, and is refused. */
dpd_status dpd_pack_install(const char *file, const char *sha256, const char *helper, char *installed,
                            size_t ninstalled, dpd_error *err);

/* The probe run by the helper process: load the provider of pack dir, check a device is listed,
 * run a small GRU inference probe against the CPU result, confirm the provider's name. On
 * success fills info (device and timings). Exit codes of `dpd pack probe`: 0 ok, 3 cannot
 * activate here (no device, driver), 4 wrong result or other refusal. */
dpd_status dpd_pack_probe(const char *dir, char *info, size_t ninfo, dpd_error *err);

/* Re-hashes an installed pack's files against its pack.json. */
dpd_status dpd_pack_verify(const char *name, dpd_error *err);
dpd_status dpd_pack_activate(const char *name, const char *helper, dpd_error *err);
dpd_status dpd_pack_remove(const char *name, dpd_error *err);
#endif
