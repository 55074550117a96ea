/* cpu: what the library (not the ABI) may ask of the built-in CPU provider's sessions. */
#ifndef DPD_CPU_CPU_H
#define DPD_CPU_CPU_H

/* Session s (of dpd_provider_cpu()) computes on params (its model's nparams floats, owned by the
 * caller, who keeps them alive longer than s): one copy of the weights for training on the CPU.
 * The session's weights are copied there first. */
void dpd_cpu_share(void *s, float *params);
#endif
