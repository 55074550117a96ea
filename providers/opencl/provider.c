/* provider (opencl): the OpenCL execution provider, built as libdpd-opencl.so inside a runtime
 * pack (make pack-opencl): the OpenCL backend of providers/common/host.c, which serves ABI v2
 * (include/dpd/provider.h) with the kernels of kernels.cl (embedded at build time, built per
 * device and hidden size with the size as a compile-time constant).
 *
 * Devices are every OpenCL device of every platform the ICD loader finds, GPUs first. One
 * context per device, made at its first session and kept for the life of the process with the
 * programs built for it (guarded by a mutex); a session owns its queue, kernels and buffers. A
 * chained PA session must be on the same device: its kernels run on the DPD session's queue.
 *
 * It links only the OpenCL ICD loader and the ABI header's types (nothing of libdpd). Test
 * builds (-DDPD_TEST_HOOKS) read, at session creation, DPD_OPENCL_FAIL=N: the N-th kernel launch
 * of the session and every one after it fail as a lost device would (CL_DEVICE_NOT_AVAILABLE),
 * and DPD_OPENCL_NOMEM=N: forward and evaluate batches above N sequences fail for memory
 * (DPD_E_NOMEM, as a device that is full), so that the fallback and back-off paths run on a real
 * device. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/host.h"

extern const char dpd_opencl_kernels[]; /* kernels.cl, generated into kernels.c by the Makefile */

#define MAX_DEVICES 16

/* ---- devices, contexts and programs (process-wide, under mu) -------------------------------- */

typedef struct cl_dev {
    cl_platform_id platform;
    cl_device_id id;
    int gpu;             /* a GPU or accelerator (not a CPU device such as PoCL's) */
    cl_context ctx;      /* made at the first session, kept */
    cl_program prog[HOST_MAX_HIDDEN + 1]; /* kernels.cl built for it for hidden size H, at its first session, kept */
} cl_dev;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static cl_dev devs[MAX_DEVICES];
static int ndevs = -1; /* -1: not yet enumerated */

/* Enumerates the devices once: GPUs and accelerators first, then CPU devices. */
static int enumerate(void) {
    pthread_mutex_lock(&mu);
    if (ndevs < 0) {
        cl_platform_id pl[8];
        cl_uint np = 0;
        ndevs = 0;
        if (clGetPlatformIDs(8, pl, &np) != CL_SUCCESS) np = 0;
        for (int pass = 0; pass < 2; pass++)
            for (cl_uint i = 0; i < np && i < 8; i++) {
                cl_device_id d[MAX_DEVICES];
                cl_uint nd = 0;
                cl_device_type type = pass ? CL_DEVICE_TYPE_CPU : CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR;
                if (clGetDeviceIDs(pl[i], type, MAX_DEVICES, d, &nd) != CL_SUCCESS) continue;
                for (cl_uint k = 0; k < nd && ndevs < MAX_DEVICES; k++)
                    devs[ndevs++] = (cl_dev){.platform = pl[i], .id = d[k], .gpu = !pass};
            }
    }
    int n = ndevs;
    pthread_mutex_unlock(&mu);
    return n;
}

static dpd_status cl_fail(cl_int e, const char *what, char *err, size_t nerr) {
    static const struct {
        cl_int e;
        const char *text;
    } names[] = {{CL_DEVICE_NOT_AVAILABLE, "the device is not available"},
                 {CL_MEM_OBJECT_ALLOCATION_FAILURE, "the device's memory is full"},
                 {CL_OUT_OF_RESOURCES, "the device is out of resources"},
                 {CL_OUT_OF_HOST_MEMORY, "out of host memory"},
                 {CL_INVALID_BUFFER_SIZE, "a buffer larger than the device allows"},
                 {CL_INVALID_WORK_GROUP_SIZE, "a work-group size the device does not take"}};
    const char *text = "";
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].e == e) text = names[i].text;
    snprintf(err, nerr, "opencl: %s: %s%serror %d%s", what, text, *text ? " (" : "", (int)e, *text ? ")" : "");
    return e == CL_MEM_OBJECT_ALLOCATION_FAILURE || e == CL_OUT_OF_RESOURCES || e == CL_OUT_OF_HOST_MEMORY ||
                   e == CL_INVALID_BUFFER_SIZE
               ? DPD_E_NOMEM
               : DPD_E_DEVICE;
}

/* The context of device d and its program for hidden size H, made on first use. */
static dpd_status device_program(int d, int H, cl_context *ctx, cl_program *out, char *err, size_t nerr) {
    cl_dev *v = &devs[d];
    cl_int e = CL_SUCCESS;
    dpd_status st = DPD_OK;
    pthread_mutex_lock(&mu);
    if (!v->ctx && !(v->ctx = clCreateContext(NULL, 1, &v->id, NULL, NULL, &e))) st = cl_fail(e, "create a context", err, nerr);
    if (!st && !v->prog[H]) {
        const char *src = dpd_opencl_kernels;
        char opt[64];
        snprintf(opt, sizeof opt, "-D H_CONST=%d", H);
        cl_program p = clCreateProgramWithSource(v->ctx, 1, &src, NULL, &e);
        if (p && (e = clBuildProgram(p, 1, &v->id, opt, NULL, NULL)) != CL_SUCCESS) {
            char log[2048] = "";
            clGetProgramBuildInfo(p, v->id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
            snprintf(err, nerr, "opencl: building the kernels (%s) failed: %.1500s", opt, log);
            clReleaseProgram(p);
            p = NULL, st = DPD_E_DEVICE;
        } else if (!p) {
            st = cl_fail(e, "create the program", err, nerr);
        }
        v->prog[H] = p;
    }
    *ctx = v->ctx, *out = v->prog[H];
    pthread_mutex_unlock(&mu);
    return st;
}

static dpd_status info(int d, dpd_device_info *out) {
    char name[256] = "", plat[256] = "", ver[256] = "", drv[256] = ""; /* too small a buffer fails the query */
    cl_ulong mem = 0;
    clGetDeviceInfo(devs[d].id, CL_DEVICE_NAME, sizeof name - 1, name, NULL);
    clGetPlatformInfo(devs[d].platform, CL_PLATFORM_NAME, sizeof plat - 1, plat, NULL);
    clGetDeviceInfo(devs[d].id, CL_DEVICE_VERSION, sizeof ver - 1, ver, NULL);
    clGetDeviceInfo(devs[d].id, CL_DRIVER_VERSION, sizeof drv - 1, drv, NULL);
    clGetDeviceInfo(devs[d].id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
    snprintf(out->name, sizeof out->name, "%.80s (%.40s)", name, plat);
    snprintf(out->arch, sizeof out->arch, "%s", ver); /* "OpenCL 3.0 PoCL ...", "OpenCL 3.0 CUDA", cut */
    out->memory = devs[d].gpu ? mem : 0;             /* a CPU device shares the system's memory */
    out->driver = atoi(drv);
    int major = 0, minor = 0;
    if (sscanf(ver, "OpenCL %d.%d", &major, &minor) == 2) out->runtime = 100 * major + 10 * minor;
    return DPD_OK;
}

/* ---- queues, buffers and launches ------------------------------------------------------------ */

/* A queue: the command queue and this session's kernel objects (a kernel's arguments are its
 * own state, so two sessions never share one). */
typedef struct queue {
    cl_context ctx;
    cl_command_queue q;
    cl_kernel k[K_COUNT];
    int cpu;               /* a CPU device: launches without a work-group size get one (launch) */
    struct recording *rec; /* launches being recorded instead of run (backend.record), or NULL */
} queue;

#define MAX_ARGS 24 /* the most arguments a kernel of kernels.cl takes */

typedef struct recording {
    size_t n, cap;
    struct call *c;
} recording;

static void drop(void *g);

static void close_queue(void *qv) {
    queue *q = (queue *)qv;
    if (!q) return;
    if (q->q) clFinish(q->q);
    drop(q->rec);
    for (int i = 0; i < K_COUNT; i++)
        if (q->k[i]) clReleaseKernel(q->k[i]);
    if (q->q) clReleaseCommandQueue(q->q);
    free(q);
}

static dpd_status open_queue(int d, int H, void **out, int *group, size_t *local, char *err, size_t nerr) {
    queue *q = (queue *)calloc(1, sizeof *q);
    cl_program prog;
    cl_int e = CL_SUCCESS;
    *out = NULL;
    if (!q) return snprintf(err, nerr, "opencl: out of memory"), DPD_E_NOMEM;
    dpd_status st = device_program(d, H, &q->ctx, &prog, err, nerr);
    q->cpu = !devs[d].gpu;
    if (!st && !(q->q = clCreateCommandQueue(q->ctx, devs[d].id, 0, &e))) st = cl_fail(e, "create a queue", err, nerr);
    for (int i = 0; !st && i < K_COUNT; i++)
        if (!(q->k[i] = clCreateKernel(prog, host_kernel_name(i), &e))) st = cl_fail(e, host_kernel_name(i), err, nerr);
    size_t most = (size_t)-1; /* the smallest of the recurrent kernels' work-group limits */
    static const int rec[4] = {K_GRU_FWD, K_GRU_BWD, K_LSTM_FWD, K_LSTM_BWD};
    for (int i = 0; !st && i < 4; i++) {
        size_t wg = 0;
        if ((e = clGetKernelWorkGroupInfo(q->k[rec[i]], devs[d].id, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL)))
            st = cl_fail(e, "query a kernel's work-group limit", err, nerr);
        most = wg < most ? wg : most;
    }
    /* the local memory a group may have, for the fused kernels (none where one cannot run its 32 work-items) */
    cl_ulong lm = 0;
    size_t fw = (size_t)-1;
    if (!st && (e = clGetDeviceInfo(devs[d].id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof lm, &lm, NULL)))
        st = cl_fail(e, "query the local memory", err, nerr);
    static const int fused[10] = {K_GRU_TRAIN,  K_LSTM_TRAIN, K_GRU_EVAL,   K_LSTM_EVAL, K_DGRU_TRAIN,
                                  K_DGRU_EVAL,  K_TRES_TRAIN, K_TRES_EVAL,  K_RVT_TRAIN, K_RVT_EVAL};
    for (int i = 0; !st && i < 10; i++) {
        size_t wg = 0;
        if ((e = clGetKernelWorkGroupInfo(q->k[fused[i]], devs[d].id, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL)))
            st = cl_fail(e, "query a kernel's work-group limit", err, nerr);
        fw = wg < fw ? wg : fw;
    }
    if (st) return close_queue(q), st;
    *group = (int)most, *local = fw >= HOST_FUSED ? (size_t)lm : 0, *out = q;
    return DPD_OK;
}

static int alloc(void *q, size_t bytes, dmem *m) {
    cl_int e = CL_SUCCESS;
    *m = clCreateBuffer(((queue *)q)->ctx, CL_MEM_READ_WRITE, bytes, NULL, &e);
    return *m ? CL_SUCCESS : e ? e : CL_MEM_OBJECT_ALLOCATION_FAILURE;
}

static void release(dmem m) {
    if (m) clReleaseMemObject((cl_mem)m);
}

static int write_buf(void *q, dmem m, const void *src, size_t bytes, int wait) {
    return clEnqueueWriteBuffer(((queue *)q)->q, (cl_mem)m, wait ? CL_TRUE : CL_FALSE, 0, bytes, src, 0, NULL, NULL);
}

static int read_buf(void *q, dmem m, void *dst, size_t bytes) {
    return clEnqueueReadBuffer(((queue *)q)->q, (cl_mem)m, CL_TRUE, 0, bytes, dst, 0, NULL, NULL);
}

static int zero(void *q, dmem m, size_t bytes) {
    float z = 0;
    return clEnqueueFillBuffer(((queue *)q)->q, (cl_mem)m, &z, sizeof z, 0, bytes, 0, NULL, NULL);
}

/* One launch: its kernel, geometry and arguments (a local-memory argument: its size, no value). */
typedef struct call {
    cl_kernel k;
    size_t n, local;
    int na;
    struct {
        size_t size;
        int mem; /* local memory */
        union {
            cl_mem m;
            cl_int i;
            cl_float f;
        } v;
    } a[MAX_ARGS];
} call;

static int enqueue(cl_command_queue q, const call *c) {
    cl_int e = CL_SUCCESS;
    for (int i = 0; i < c->na && !e; i++) e = clSetKernelArg(c->k, (cl_uint)i, c->a[i].size, c->a[i].mem ? NULL : &c->a[i].v);
    size_t n = c->n, local = c->local;
    return e ? e : clEnqueueNDRangeKernel(q, c->k, 1, NULL, &n, local ? &local : NULL, 0, NULL, NULL);
}

/* The work-group size of a launch that leaves it to the API (local 0), on a CPU device: the largest
 * power of two that divides n, at most 64. A CPU device's compiler (PoCL) builds a work-group
 * function for every size it runs a kernel at, and left to choose, it takes a divisor of the
 * work, often all of it, so every shape got functions of its own (862 for the conformance
 * suite's shapes, about 0.2 s each); this way a kernel has at most seven. An odd n runs
 * one-item groups (the shapes of training, 64 x 200 frames, are multiples of 64). These
 * kernels' work-items share nothing (no barrier, no local memory), so the results do not depend
 * on the size. A GPU's driver chooses for itself. */
static size_t cpu_group(size_t n) {
    size_t low = n & (~n + 1); /* n's lowest set bit */
    return low < 64 ? low : 64;
}

static int launch(void *kq, void *q, int k, size_t n, size_t local, const char *types, va_list ap) {
    queue *on = (queue *)q;
    call c = {.k = ((queue *)kq)->k[k], .n = n, .local = local ? local : ((queue *)kq)->cpu ? cpu_group(n) : 0};
    for (; types[c.na]; c.na++) {
        if (c.na == MAX_ARGS) return CL_INVALID_ARG_INDEX;
        char t = types[c.na];
        c.a[c.na].mem = t == 'l';
        if (t == 'm') c.a[c.na].v.m = (cl_mem)va_arg(ap, dmem), c.a[c.na].size = sizeof(cl_mem);
        else if (t == 'i') c.a[c.na].v.i = va_arg(ap, int), c.a[c.na].size = sizeof(cl_int);
        else if (t == 'l') c.a[c.na].size = (size_t)va_arg(ap, int) * sizeof(float);
        else c.a[c.na].v.f = (cl_float)va_arg(ap, double), c.a[c.na].size = sizeof(cl_float);
    }
    if (!on->rec) return enqueue(on->q, &c);
    recording *r = on->rec;
    if (r->n == r->cap) {
        call *more = (call *)realloc(r->c, (r->cap ? 2 * r->cap : 64) * sizeof *more);
        if (!more) return CL_OUT_OF_HOST_MEMORY;
        r->c = more, r->cap = r->cap ? 2 * r->cap : 64;
    }
    r->c[r->n++] = c;
    return CL_SUCCESS;
}

/* A recorded chunk of steps: OpenCL 1.2 has no graphs, so it is the list of launches, which
 * replay enqueues again (no faster than launching them; the same path through host.c as CUDA's
 * graphs, so that the conformance suite runs it on every OpenCL device). */
static int record(void *qv, void **g) {
    queue *q = (queue *)qv;
    if (!g) return (q->rec = (recording *)calloc(1, sizeof *q->rec)) ? CL_SUCCESS : CL_OUT_OF_HOST_MEMORY;
    *g = q->rec, q->rec = NULL;
    return CL_SUCCESS;
}

static int replay(void *qv, void *g) {
    const recording *r = (const recording *)g;
    cl_int e = CL_SUCCESS;
    for (size_t i = 0; i < r->n && !e; i++) e = enqueue(((queue *)qv)->q, &r->c[i]);
    return e;
}

static void drop(void *g) {
    recording *r = (recording *)g;
    if (r) free(r->c), free(r);
}

static int finish(void *q) { return clFinish(((queue *)q)->q); }

static const backend opencl = {.name = "opencl", .count = enumerate, .info = info, .open = open_queue,
                               .close = close_queue, .alloc = alloc, .free = release, .write = write_buf,
                               .read = read_buf, .zero = zero, .launch = launch, .finish = finish,
                               .record = record, .replay = replay, .drop = drop, .fail = cl_fail,
                               .lost = CL_DEVICE_NOT_AVAILABLE};

__attribute__((visibility("default"))) dpd_status dpd_provider_init(uint32_t api_version, dpd_provider *out, char *err,
                                                                    size_t nerr) {
    if (api_version != DPD_PROVIDER_API) {
        snprintf(err, nerr, "provider ABI %d, dpd asks for %u", DPD_PROVIDER_API, api_version);
        return DPD_E_UNSUPPORTED;
    }
    host_provider(&opencl, out);
    return DPD_OK;
}

/* 0 without a device; a GPU or accelerator ranks 50 (below the CUDA pack's 100); a CPU device
 * alone (PoCL) ranks 1, below the built-in cpu provider (DPD_CPU_RANK), so auto never picks it. */
__attribute__((visibility("default"))) int dpd_provider_score(char *why, size_t nwhy) {
    int n = enumerate(), gpu = 0;
    for (int i = 0; i < n; i++) gpu |= devs[i].gpu;
    if (!n) return snprintf(why, nwhy, "no OpenCL device (no ICD installed, or none found a device)"), 0;
    if (!gpu) snprintf(why, nwhy, "OpenCL on the CPU only: ranked below the built-in cpu provider");
    return gpu ? 50 : 1;
}
