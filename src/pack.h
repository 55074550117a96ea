/* pack: runtime packs — installing (checksum, bounded extraction into a staging directory,
 * pack.json against the files, validation in a helper process, atomic activation), verifying,
 * activating and removing. docs/providers.md describes every check. It does not load providers
 * for use (src/provider.c does).
 *
 * Every function of this module is public: dpd_pack_install, dpd_pack_probe, dpd_pack_verify,
 * dpd_pack_activate and dpd_pack_remove are declared and documented in dpd/dpd.h. Exit codes of
 * `dpd pack probe` (the helper): 0 ok, 3 cannot activate here (dpd_pack_probe returned
 * DPD_E_DEVICE: no device, driver), 4 wrong result or any other refusal. */
#ifndef DPD_PACK_H
#define DPD_PACK_H
#include "dpd/dpd.h"
#endif
