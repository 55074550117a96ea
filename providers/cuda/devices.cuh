/* devices (cuda): what both CUDA provider libraries say of the machine's devices and of their own
 * usability — provider.cu (the first, GRU-only provider the pack ships) and device.cu (the
 * device-resident backend of providers/common/host.c). */
#ifndef DPD_CUDA_DEVICES_CUH
#define DPD_CUDA_DEVICES_CUH
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "dpd/provider.h"

static int cuda_count(void) {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

static dpd_status cuda_info(int d, dpd_device_info *out) {
    cudaDeviceProp p;
    memset(out, 0, sizeof *out);
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) return DPD_E_DEVICE;
    snprintf(out->name, sizeof out->name, "%s", p.name);
    snprintf(out->arch, sizeof out->arch, "sm_%d%d", p.major, p.minor);
    out->memory = p.totalGlobalMem;
    cudaDriverGetVersion(&out->driver);
    cudaRuntimeGetVersion(&out->runtime);
    return DPD_OK;
}

/* dpd_provider_score's answer: 0 without a device (why says why), else 100. */
static int cuda_score(char *why, size_t nwhy) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) return snprintf(why, nwhy, "%s", cudaGetErrorString(e)), 0;
    if (!n) return snprintf(why, nwhy, "no CUDA device"), 0;
    return 100;
}

#endif
