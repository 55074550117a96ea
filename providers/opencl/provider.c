/* provider (opencl): the OpenCL execution provider, built as libdpd-opencl.so inside a runtime
 * pack (make pack-opencl). It serves ABI v2 (include/dpd/provider.h): device-resident splits,
 * whole training steps by frame index, evaluation and DPD training through a chained frozen PA,
 * with the kernels of kernels.cl (embedded at build time, built per device and hidden size with
 * the size as a compile-time constant). Families: gru, lstm and dgru (1..16 layers), tres_gru and rvtdcnn; the rest are refused
 * by supports() and run on the cpu provider.
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
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpd/provider.h"

extern const char dpd_opencl_kernels[]; /* kernels.cl, generated into kernels.c by the Makefile */

#define MAX_DEVICES 16
#define MAX_LAYERS 16
#define MAX_HIDDEN 64 /* one work-group of H work-items a sequence, 6 H floats of local memory; a program per size */
#define WG 256        /* kernels.cl's adamw work-group */

/* ---- devices, contexts and programs (process-wide, under mu) -------------------------------- */

typedef struct cl_dev {
    cl_platform_id platform;
    cl_device_id id;
    int gpu;             /* a GPU or accelerator (not a CPU device such as PoCL's) */
    cl_context ctx;      /* made at the first session, kept */
    cl_program prog[MAX_HIDDEN + 1]; /* kernels.cl built for it for hidden size H, at its first session, kept */
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

static int device_count(void *ctx) {
    (void)ctx;
    return enumerate();
}

static dpd_status device_info(void *ctx, int d, dpd_device_info *out) {
    (void)ctx;
    memset(out, 0, sizeof *out);
    if (d < 0 || d >= enumerate()) return DPD_E_INVAL;
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

/* ---- families ------------------------------------------------------------------------------ */

/* How a family is composed from the kernels (kernels.cl): optional features, recurrent layers,
 * a head, TRes-GRU's skip, or RVTDCNN's feature image and MLP. */
enum { FEAT_NONE, FEAT_DGRU, FEAT_TRES };
enum { CELL_NONE, CELL_GRU, CELL_LSTM };
enum { HEAD_LINEAR, HEAD_DGRU, HEAD_RVT };

typedef struct plan {
    const char *family;
    int feats, cell, head, tcn, layers; /* layers: the most the family has */
} plan;

static const plan plans[] = {
    {"gru", FEAT_NONE, CELL_GRU, HEAD_LINEAR, 0, MAX_LAYERS},  {"lstm", FEAT_NONE, CELL_LSTM, HEAD_LINEAR, 0, MAX_LAYERS},
    {"dgru", FEAT_DGRU, CELL_GRU, HEAD_DGRU, 0, MAX_LAYERS},   {"tres_gru", FEAT_TRES, CELL_GRU, HEAD_LINEAR, 1, 1},
    {"rvtdcnn", FEAT_NONE, CELL_NONE, HEAD_RVT, 0, 1}};

static const plan *plan_of(const dpd_model_cfg *m) {
    for (size_t i = 0; i < sizeof plans / sizeof *plans; i++)
        if (!strcmp(m->family, plans[i].family)) return &plans[i];
    return NULL;
}

static int supports(void *ctx, const dpd_model_cfg *m) {
    (void)ctx;
    const plan *f = plan_of(m);
    return f && m->layers >= 1 && m->layers <= f->layers && m->hidden >= 1 && m->hidden <= MAX_HIDDEN;
}

/* ---- sessions ------------------------------------------------------------------------------ */

enum {
    K_GATHER, K_FEATURES, K_FEATURES_BWD, K_GRU_FWD, K_GRU_BWD, K_LSTM_FWD, K_LSTM_BWD, K_RNN_BWD_W, K_DENSE_FWD, K_ACT_BWD,
    K_DENSE_BWD_IN, K_DENSE_BWD_W, K_TCN_FWD, K_TCN_BWD_D, K_TCN_BWD_W, K_TCN_BWD_X, K_RVT_FWD, K_RVT_BWD_W,
    K_RVT_BWD_IMG, K_RVT_BWD_X, K_MSE, K_ADAMW, NK
};
static const char *const kname[NK] = {
    "gather", "features", "features_bwd", "gru_fwd", "gru_bwd", "lstm_fwd", "lstm_bwd", "rnn_bwd_w", "dense_fwd", "act_bwd",
    "dense_bwd_in", "dense_bwd_w", "tcn_fwd", "tcn_bwd_d", "tcn_bwd_w", "tcn_bwd_x", "rvt_fwd", "rvt_bwd_w",
    "rvt_bwd_img", "rvt_bwd_x", "mse", "adamw"};
enum { ACT_NONE, ACT_RELU, ACT_TANH };

typedef struct layer {
    int I, wih, whh, bih, bhh; /* input width; the tensors' offsets (-1: none) */
} layer;

/* A device buffer of cap floats (or uints), grown on demand. */
typedef struct buf {
    cl_mem m;
    size_t cap;
} buf;

/* The offsets of the tensors outside the recurrent layers (-1: the family has none). */
typedef struct heads {
    int wo, bo, wh, bh; /* fc_out, fc_hid */
    int w0, w2;         /* TRes-GRU's skip */
    int wc, bc;         /* RVTDCNN's convolution */
} heads;

typedef struct session {
    int dev;
    cl_context ctx;
    cl_command_queue q;
    cl_kernel k[NK];
    const plan *f;
    int H, L, np; /* hidden, layers, parameters */
    layer ly[MAX_LAYERS];
    heads t;
    buf p, g, m, v;                  /* parameters, gradient, AdamW moments (np) */
    buf x[3], y[3];                  /* resident splits */
    size_t n[3];                     /* their sample counts */
    buf gp, lp;                      /* per-sequence gradient rows (B, np) and loss sums (B) */
    buf bx, bt, out, dy, du;         /* batch x and target, output, its gradient, a chained DPD's (R, 2) */
    buf da, db;                      /* gradients at a layer's output and input (R, max(H, 6)) */
    buf ga;                          /* a recurrent layer's gate gradients (R, 6 H) */
    buf hs[MAX_LAYERS], sv[MAX_LAYERS];
    buf ft, df, dg;                  /* features and their gradients (R, 6) */
    buf u, dh;                       /* a head's hidden layer and its gradient (R, H) */
    buf c, dc, dimg;                 /* RVTDCNN: the image's convolution (R, 36), its gradient, (R, 20) */
    buf c1, c2, d1, d2;              /* TRes-GRU's skip: (R, 3), (R, 2) and their gradients */
    buf fr, loss, stop; /* frames, per-step losses, the divergence flag */
    long step;
    struct session *pa; /* chained frozen PA, or NULL */
    int fail_at;        /* test builds: launches left before a simulated device loss (0: none) */
    int nomem_above;    /* test builds: forward and evaluate batches above this fail for memory (0: none) */
} session;

static void release(buf *b) {
    if (b->m) clReleaseMemObject(b->m);
    b->m = NULL, b->cap = 0;
}

/* b holds at least n elements of 4 bytes (its contents are lost when it grows). */
static dpd_status need(session *s, buf *b, size_t n, char *err, size_t nerr) {
    if (b->cap >= n && b->m) return DPD_OK;
    release(b);
    cl_int e = CL_SUCCESS;
    if (!(b->m = clCreateBuffer(s->ctx, CL_MEM_READ_WRITE, (n ? n : 1) * 4, NULL, &e)))
        return cl_fail(e, "allocate a buffer", err, nerr);
    b->cap = n;
    return DPD_OK;
}

static void session_free(void *sv) {
    session *s = (session *)sv;
    if (!s) return;
    if (s->q) clFinish(s->q);
    buf *all[] = {&s->p,  &s->g,    &s->m,    &s->v,    &s->gp,   &s->lp,   &s->bx, &s->bt, &s->out, &s->dy,
                  &s->du, &s->da,   &s->db,   &s->ft,   &s->df,   &s->dg,   &s->u,  &s->dh, &s->c,   &s->dc,
                  &s->dimg, &s->c1, &s->c2,   &s->d1,   &s->d2,   &s->ga,   &s->fr,   &s->loss, &s->stop, &s->x[0], &s->x[1],
                  &s->x[2], &s->y[0], &s->y[1], &s->y[2]};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) release(all[i]);
    for (int l = 0; l < MAX_LAYERS; l++) release(&s->hs[l]), release(&s->sv[l]);
    for (int i = 0; i < NK; i++)
        if (s->k[i]) clReleaseKernel(s->k[i]);
    if (s->q) clReleaseCommandQueue(s->q);
    free(s);
}

/* The batch buffers for B sequences of T samples, as the family needs them. */
static dpd_status reserve(session *s, int B, int T, char *err, size_t nerr) {
    size_t R = (size_t)B * T, H = (size_t)s->H, w = H > 6 ? H : 6;
    const plan *f = s->f;
    struct {
        buf *b;
        size_t n;
    } all[] = {{&s->bx, 2},
               {&s->bt, 2},
               {&s->out, 2},
               {&s->dy, 2},
               {&s->du, 2},
               {&s->da, w},
               {&s->db, w},
               {&s->ga, f->cell == CELL_GRU ? 6 * H : f->cell == CELL_LSTM ? 4 * H : 0},
               {&s->ft, f->feats ? 6 : 0},
               {&s->df, f->feats ? 6 : 0},
               {&s->dg, f->feats ? 6 : 0},
               {&s->u, f->head != HEAD_LINEAR ? H : 0},
               {&s->dh, f->head != HEAD_LINEAR ? H : 0},
               {&s->c, f->head == HEAD_RVT ? 36 : 0},
               {&s->dc, f->head == HEAD_RVT ? 36 : 0},
               {&s->dimg, f->head == HEAD_RVT ? 20 : 0},
               {&s->c1, f->tcn ? 3 : 0},
               {&s->c2, f->tcn ? 2 : 0},
               {&s->d1, f->tcn ? 3 : 0},
               {&s->d2, f->tcn ? 2 : 0}};
    dpd_status st = DPD_OK;
    for (size_t i = 0; !st && i < sizeof all / sizeof *all; i++)
        if (all[i].n) st = need(s, all[i].b, all[i].n * R, err, nerr);
    for (int l = 0; !st && l < s->L; l++)
        if (!(st = need(s, &s->hs[l], H * R, err, nerr)))
            st = need(s, &s->sv[l], (f->cell == CELL_LSTM ? 5 : 4) * H * R, err, nerr);
    if (!st) st = need(s, &s->gp, (size_t)B * s->np, err, nerr);
    if (!st) st = need(s, &s->lp, (size_t)B, err, nerr);
    return st;
}

/* Where the model's tensors are: the table's names give the offsets (-1: absent), so no layout is
 * restated here. */
static int find(const dpd_tensor *t, int nt, const char *name) {
    for (int i = 0; i < nt; i++)
        if (!strcmp(t[i].name, name)) return (int)t[i].offset;
    return -1;
}

/* The offsets of s's tensors; 0 when one the family needs is missing (missing names it). */
static int bind(session *s, const dpd_tensor *t, int nt, const char **missing) {
    heads *h = &s->t;
    *h = (heads){find(t, nt, "backbone.fc_out.weight"), find(t, nt, "backbone.fc_out.bias"),
                 find(t, nt, "backbone.fc_hid.weight"), find(t, nt, "backbone.fc_hid.bias"),
                 find(t, nt, "backbone.tcn.0.weight"),  find(t, nt, "backbone.tcn.2.weight"),
                 find(t, nt, "backbone.Conv2d.weight"), find(t, nt, "backbone.Conv2d.bias")};
    int in = s->f->feats ? 6 : 2;
    *missing = h->wo < 0 ? "backbone.fc_out.weight" : NULL;
    if (s->f->head != HEAD_LINEAR && !*missing && (h->wh < 0 || h->bh < 0 || h->bo < 0)) *missing = "backbone.fc_hid";
    if (s->f->head == HEAD_RVT && !*missing && (h->wc < 0 || h->bc < 0)) *missing = "backbone.Conv2d";
    if (s->f->tcn && !*missing && (h->w0 < 0 || h->w2 < 0)) *missing = "backbone.tcn";
    if (s->f->cell == CELL_NONE || *missing) return !*missing;
    if (s->f->feats == FEAT_TRES) { /* one bias-free layer */
        s->ly[0] = (layer){in, find(t, nt, "backbone.rnn.x2h.weight"), find(t, nt, "backbone.rnn.h2h.weight"), -1, -1};
        if (s->ly[0].wih < 0 || s->ly[0].whh < 0) *missing = "backbone.rnn.x2h/h2h";
        return !*missing;
    }
    static const char *const kind[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    for (int l = 0; l < s->L; l++) {
        int o[4];
        for (int k = 0; k < 4; k++) {
            char nm[64];
            snprintf(nm, sizeof nm, "backbone.rnn.%s_l%d", kind[k], l);
            if ((o[k] = find(t, nt, nm)) < 0) return *missing = kind[k], 0;
        }
        s->ly[l] = (layer){l ? s->H : in, o[0], o[1], o[2], o[3]};
    }
    return 1;
}

static dpd_status session_open(void *ctx, int device, const dpd_model_cfg *m, const dpd_tensor *t, int nt,
                               int max_batch, int T, const dpd_kv *opts, int nopts, void **out, char *err,
                               size_t nerr) {
    (void)ctx, (void)opts, (void)nopts;
    *out = NULL;
    if (!supports(NULL, m))
        return snprintf(err, nerr,
                        "opencl: %s-%d x %d layers is not supported (gru, lstm and dgru of 1..%d layers, tres_gru and "
                        "rvtdcnn of one; hidden 1..%d)",
                        m->family, m->hidden, m->layers, MAX_LAYERS, MAX_HIDDEN),
               DPD_E_UNSUPPORTED;
    if (device < 0 || device >= enumerate()) return snprintf(err, nerr, "opencl: no device %d", device), DPD_E_INVAL;
    session *s = (session *)calloc(1, sizeof *s);
    if (!s) return snprintf(err, nerr, "opencl: out of memory"), DPD_E_NOMEM;
    s->dev = device, s->H = m->hidden, s->f = plan_of(m), s->L = s->f->cell == CELL_NONE ? 0 : m->layers;
    for (int i = 0; i < nt; i++) s->np = (int)(t[i].offset + t[i].numel) > s->np ? (int)(t[i].offset + t[i].numel) : s->np;
    const char *missing = NULL;
    if (!bind(s, t, nt, &missing)) {
        free(s);
        return snprintf(err, nerr, "opencl: the %s tensor table lacks %s", m->family, missing), DPD_E_FORMAT;
    }
    cl_program prog;
    cl_int e = CL_SUCCESS;
    dpd_status st = device_program(device, s->H, &s->ctx, &prog, err, nerr);
    if (!st && !(s->q = clCreateCommandQueue(s->ctx, devs[device].id, 0, &e))) st = cl_fail(e, "create a queue", err, nerr);
    for (int i = 0; !st && i < NK; i++)
        if (!(s->k[i] = clCreateKernel(prog, kname[i], &e))) st = cl_fail(e, kname[i], err, nerr);
    if (!st) {
        size_t wg = 0;
        clGetKernelWorkGroupInfo(s->k[K_LSTM_BWD], devs[device].id, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
        if (wg < (size_t)s->H)
            st = DPD_E_UNSUPPORTED,
            snprintf(err, nerr, "opencl: the device runs at most %zu work-items a group, hidden %d needs %d", wg, s->H, s->H);
    }
    buf *pv[] = {&s->p, &s->g, &s->m, &s->v};
    for (int i = 0; !st && i < 4; i++) st = need(s, pv[i], (size_t)s->np, err, nerr);
    if (!st) st = need(s, &s->stop, 1, err, nerr);
    if (!st && max_batch > 0 && T > 0) st = reserve(s, max_batch, T, err, nerr);
    if (!st) { /* zero moments */
        float z = 0;
        if ((e = clEnqueueFillBuffer(s->q, s->m.m, &z, 4, 0, (size_t)s->np * 4, 0, NULL, NULL)) ||
            (e = clEnqueueFillBuffer(s->q, s->v.m, &z, 4, 0, (size_t)s->np * 4, 0, NULL, NULL)) || (e = clFinish(s->q)))
            st = cl_fail(e, "zero the optimizer state", err, nerr);
    }
#ifdef DPD_TEST_HOOKS
    const char *fl = getenv("DPD_OPENCL_FAIL"), *nm = getenv("DPD_OPENCL_NOMEM");
    s->fail_at = fl ? atoi(fl) : 0;
    s->nomem_above = nm ? atoi(nm) : 0;
#endif
    if (st) return session_free(s), st;
    *out = s;
    return DPD_OK;
}

/* ---- launches ------------------------------------------------------------------------------ */

/* Sets kernel k's arguments from a list: 'm' cl_mem, 'i' int, 'f' float (as double in the list),
 * 'l' local memory of that many floats (an int in the list). */
static cl_int args(cl_kernel k, const char *types, ...) {
    va_list ap;
    va_start(ap, types);
    cl_int e = CL_SUCCESS;
    for (cl_uint i = 0; types[i] && !e; i++) {
        if (types[i] == 'm') {
            cl_mem m = va_arg(ap, cl_mem);
            e = clSetKernelArg(k, i, sizeof m, &m);
        } else if (types[i] == 'i') {
            cl_int v = va_arg(ap, int);
            e = clSetKernelArg(k, i, sizeof v, &v);
        } else if (types[i] == 'l') {
            e = clSetKernelArg(k, i, (size_t)va_arg(ap, int) * sizeof(float), NULL);
        } else {
            cl_float v = (cl_float)va_arg(ap, double);
            e = clSetKernelArg(k, i, sizeof v, &v);
        }
    }
    va_end(ap);
    return e;
}

/* Enqueues kernel k of s on queue q (s's own, or a chained DPD's) over n work-items in groups of
 * local (0: the implementation's choice). */
static cl_int run(session *s, cl_command_queue q, int k, size_t n, size_t local) {
#ifdef DPD_TEST_HOOKS
    if (s->fail_at && --s->fail_at == 0) s->fail_at = 1; /* stays lost */
    if (s->fail_at == 1) return CL_DEVICE_NOT_AVAILABLE;
#endif
    if (!n) return CL_SUCCESS;
    return clEnqueueNDRangeKernel(q, s->k[k], 1, NULL, &n, local ? &local : NULL, 0, NULL, NULL);
}

/* A dense layer: out (R, M) = act([in1 in2] W^T + b). */
static cl_int dense(session *s, cl_command_queue q, size_t R, cl_mem in1, int K1, cl_mem in2, int K2, int w, int b,
                    int M, int act, cl_mem out) {
    cl_int e = args(s->k[K_DENSE_FWD], "mimimiiiim", in1, K1, in2 ? in2 : in1, K2, s->p.m, w, b, M, act, out);
    return e ? e : run(s, q, K_DENSE_FWD, R * M, 0);
}

/* Its backward from d (R, M), already past the activation: the input gradients into din1 (and
 * din2 when not NULL), the parameter gradients when want_dw. */
static cl_int dense_back(session *s, cl_command_queue q, int B, int T, cl_mem d, int M, cl_mem in1, int K1, cl_mem in2,
                         int K2, int w, int b, cl_mem din1, cl_mem din2, int want_dw) {
    size_t R = (size_t)B * T;
    cl_int e = CL_SUCCESS;
    if (din1) e = args(s->k[K_DENSE_BWD_IN], "mimiiiim", d, M, s->p.m, w, K1 + K2, 0, K1, din1);
    if (!e && din1) e = run(s, q, K_DENSE_BWD_IN, R * K1, 0);
    if (!e && din2) e = args(s->k[K_DENSE_BWD_IN], "mimiiiim", d, M, s->p.m, w, K1 + K2, K1, K2, din2);
    if (!e && din2) e = run(s, q, K_DENSE_BWD_IN, R * K2, 0);
    if (!e && want_dw)
        e = args(s->k[K_DENSE_BWD_W], "mimimiimiii", d, M, in1, K1, in2 ? in2 : in1, K2, T, s->gp.m, s->np, w, b);
    if (!e && want_dw) e = run(s, q, K_DENSE_BWD_W, (size_t)B * ((size_t)M * (K1 + K2) + (b >= 0 ? M : 0)), 0);
    return e;
}

static cl_int act_back(session *s, cl_command_queue q, size_t n, cl_mem d, cl_mem y, int act) {
    cl_int e = args(s->k[K_ACT_BWD], "mmi", d, y, act);
    return e ? e : run(s, q, K_ACT_BWD, n, 0);
}

/* s's model over B sequences of T samples of in (at float offset off) -> out (B, T, 2). */
static cl_int fwd(session *s, cl_command_queue q, cl_mem in, int off, int B, int T, cl_mem out) {
    const plan *f = s->f;
    const heads *t = &s->t;
    size_t R = (size_t)B * T;
    cl_int e = CL_SUCCESS;
    if (f->head == HEAD_RVT) {
        e = args(s->k[K_RVT_FWD], "miimiim", in, off, T, s->p.m, t->wc, t->bc, s->c.m);
        if (!e) e = run(s, q, K_RVT_FWD, R, 0);
        if (!e) e = dense(s, q, R, s->c.m, 36, NULL, 0, t->wh, t->bh, s->H, ACT_TANH, s->u.m);
        return e ? e : dense(s, q, R, s->u.m, s->H, NULL, 0, t->wo, t->bo, 2, ACT_NONE, out);
    }
    cl_mem src = in;
    int soff = off;
    if (f->feats) {
        e = args(s->k[K_FEATURES], "miiim", in, off, T, f->feats, s->ft.m);
        if (!e) e = run(s, q, K_FEATURES, R, 0);
        src = s->ft.m, soff = 0;
    }
    int kf = f->cell == CELL_LSTM ? K_LSTM_FWD : K_GRU_FWD;
    for (int l = 0; l < s->L && !e; l++) {
        const layer *y = &s->ly[l];
        e = args(s->k[kf], "miiiimiiiimml", l ? s->hs[l - 1].m : src, l ? 0 : soff, y->I, T, s->H, s->p.m, y->wih,
                 y->whh, y->bih, y->bhh, s->hs[l].m, s->sv[l].m, s->H);
        if (!e) e = run(s, q, kf, (size_t)B * s->H, (size_t)s->H);
    }
    cl_mem top = s->hs[s->L - 1].m;
    if (!e && f->head == HEAD_DGRU) {
        e = dense(s, q, R, top, s->H, NULL, 0, t->wh, t->bh, s->H, ACT_RELU, s->u.m);
        if (!e) e = dense(s, q, R, s->u.m, s->H, s->ft.m, 6, t->wo, t->bo, 2, ACT_NONE, out);
    } else if (!e) {
        e = dense(s, q, R, top, s->H, NULL, 0, t->wo, t->bo, 2, ACT_NONE, out);
    }
    if (!e && f->tcn) e = args(s->k[K_TCN_FWD], "miimiimmm", in, off, T, s->p.m, t->w0, t->w2, s->c1.m, s->c2.m, out);
    if (!e && f->tcn) e = run(s, q, K_TCN_FWD, R, 0);
    return e;
}

/* The backward of fwd from dout (B, T, 2): dx (B, T, 2) into dx when it is not NULL, the
 * parameter gradients into gp's rows when want_dw. */
static cl_int bwd(session *s, cl_command_queue q, cl_mem in, int off, int B, int T, cl_mem dout, cl_mem dx, int want_dw) {
    const plan *f = s->f;
    const heads *t = &s->t;
    size_t R = (size_t)B * T;
    cl_int e = CL_SUCCESS;
    if (f->head == HEAD_RVT) {
        e = dense_back(s, q, B, T, dout, 2, s->u.m, s->H, NULL, 0, t->wo, t->bo, s->dh.m, NULL, want_dw);
        if (!e) e = act_back(s, q, R * s->H, s->dh.m, s->u.m, ACT_TANH);
        if (!e) e = dense_back(s, q, B, T, s->dh.m, s->H, s->c.m, 36, NULL, 0, t->wh, t->bh, s->dc.m, NULL, want_dw);
        if (!e) e = act_back(s, q, R * 36, s->dc.m, s->c.m, ACT_TANH);
        if (!e && want_dw) e = args(s->k[K_RVT_BWD_W], "miimmiii", in, off, T, s->dc.m, s->gp.m, s->np, t->wc, t->bc);
        if (!e && want_dw) e = run(s, q, K_RVT_BWD_W, (size_t)B * 30, 0);
        if (!e && dx) e = args(s->k[K_RVT_BWD_IMG], "mmim", s->dc.m, s->p.m, t->wc, s->dimg.m);
        if (!e && dx) e = run(s, q, K_RVT_BWD_IMG, R, 0);
        if (!e && dx) e = args(s->k[K_RVT_BWD_X], "miimm", in, off, T, s->dimg.m, dx);
        if (!e && dx) e = run(s, q, K_RVT_BWD_X, R, 0);
        return e;
    }
    cl_mem src = f->feats ? s->ft.m : in, top = s->hs[s->L - 1].m;
    int soff = f->feats ? 0 : off;
    if (f->head == HEAD_DGRU) { /* y = W_out [u; f] + b: u = ReLU(W_hid h + b_hid) */
        e = dense_back(s, q, B, T, dout, 2, s->u.m, s->H, s->ft.m, 6, t->wo, t->bo, s->dh.m, dx ? s->df.m : NULL, want_dw);
        if (!e) e = act_back(s, q, R * s->H, s->dh.m, s->u.m, ACT_RELU);
        if (!e) e = dense_back(s, q, B, T, s->dh.m, s->H, top, s->H, NULL, 0, t->wh, t->bh, s->da.m, NULL, want_dw);
    } else {
        e = dense_back(s, q, B, T, dout, 2, top, s->H, NULL, 0, t->wo, t->bo, s->da.m, NULL, want_dw);
    }
    int lstm = f->cell == CELL_LSTM, kb = lstm ? K_LSTM_BWD : K_GRU_BWD, G = (lstm ? 4 : 3) * s->H;
    cl_mem dh = s->da.m, other = s->db.m, dx0 = f->feats ? (dx ? s->dg.m : NULL) : dx;
    for (int l = s->L - 1; l >= 0 && !e; l--) {
        const layer *y = &s->ly[l];
        cl_mem d = l ? other : dx0, x = l ? s->hs[l - 1].m : src;
        int xo = l ? 0 : soff, nb = (y->bih >= 0) + (y->bhh >= 0);
        e = args(s->k[kb], "miiiiimmmmmil", s->p.m, y->I, T, s->H, y->wih, y->whh, s->hs[l].m, s->sv[l].m, dh,
                 s->ga.m, d ? d : dh, d != NULL, (lstm ? 4 : 6) * s->H);
        if (!e) e = run(s, q, kb, (size_t)B * s->H, (size_t)s->H);
        if (!e && want_dw)
            e = args(s->k[K_RNN_BWD_W], "miimiimiimiiiii", s->ga.m, G, !lstm, x, xo, y->I, s->hs[l].m, s->H, T, s->gp.m,
                     s->np, y->wih, y->whh, y->bih, y->bhh);
        if (!e && want_dw) e = run(s, q, K_RNN_BWD_W, (size_t)B * G * (y->I + s->H + nb), 0);
        other = dh, dh = d;
    }
    if (!e && f->feats && dx) {
        e = args(s->k[K_FEATURES_BWD], "miiimmim", in, off, T, f->feats, s->dg.m, s->df.m, f->head == HEAD_DGRU, dx);
        if (!e) e = run(s, q, K_FEATURES_BWD, R, 0);
    }
    if (!e && f->tcn) { /* TRes-GRU's skip, its input gradient added to dx */
        e = args(s->k[K_TCN_BWD_D], "mmmmimm", dout, s->c1.m, s->c2.m, s->p.m, t->w2, s->d1.m, s->d2.m);
        if (!e) e = run(s, q, K_TCN_BWD_D, R, 0);
        if (!e && want_dw)
            e = args(s->k[K_TCN_BWD_W], "miimmmmiii", in, off, T, s->c1.m, s->d1.m, s->d2.m, s->gp.m, s->np, t->w0, t->w2);
        if (!e && want_dw) e = run(s, q, K_TCN_BWD_W, (size_t)B * 24, 0);
        if (!e && dx) e = args(s->k[K_TCN_BWD_X], "mmiim", s->d1.m, s->p.m, t->w0, T, dx);
        if (!e && dx) e = run(s, q, K_TCN_BWD_X, R, 0);
    }
    return e;
}

static dpd_status finish(session *s, cl_int e, const char *what, char *err, size_t nerr) {
    if (!e) e = clFinish(s->q);
    return e ? cl_fail(e, what, err, nerr) : DPD_OK;
}

static dpd_status upload(void *sv, const float *p, char *err, size_t nerr) {
    session *s = (session *)sv;
    cl_int e = clEnqueueWriteBuffer(s->q, s->p.m, CL_TRUE, 0, (size_t)s->np * 4, p, 0, NULL, NULL);
    return finish(s, e, "upload the parameters", err, nerr);
}

static dpd_status download(void *sv, float *p, char *err, size_t nerr) {
    session *s = (session *)sv;
    cl_int e = clEnqueueReadBuffer(s->q, s->p.m, CL_TRUE, 0, (size_t)s->np * 4, p, 0, NULL, NULL);
    return finish(s, e, "download the parameters", err, nerr);
}

static dpd_status get_state(void *sv, float *m, float *v, long *step, char *err, size_t nerr) {
    session *s = (session *)sv;
    cl_int e = clEnqueueReadBuffer(s->q, s->m.m, CL_TRUE, 0, (size_t)s->np * 4, m, 0, NULL, NULL);
    if (!e) e = clEnqueueReadBuffer(s->q, s->v.m, CL_TRUE, 0, (size_t)s->np * 4, v, 0, NULL, NULL);
    *step = s->step;
    return finish(s, e, "read the optimizer state", err, nerr);
}

static dpd_status set_state(void *sv, const float *m, const float *v, long step, char *err, size_t nerr) {
    session *s = (session *)sv;
    cl_int e = clEnqueueWriteBuffer(s->q, s->m.m, CL_TRUE, 0, (size_t)s->np * 4, m, 0, NULL, NULL);
    if (!e) e = clEnqueueWriteBuffer(s->q, s->v.m, CL_TRUE, 0, (size_t)s->np * 4, v, 0, NULL, NULL);
    s->step = step;
    return finish(s, e, "write the optimizer state", err, nerr);
}

/* v1's forward: x (B, T, 2) from the host. */
/* Test builds: a batch of B sequences that DPD_OPENCL_NOMEM refuses (DPD_E_NOMEM), else 0. */
static dpd_status full(const session *s, int B, char *err, size_t nerr) {
    if (s->nomem_above > 0 && B > s->nomem_above)
        return snprintf(err, nerr, "opencl: a batch of %d does not fit (DPD_OPENCL_NOMEM=%d)", B, s->nomem_above),
               DPD_E_NOMEM;
    return DPD_OK;
}

static dpd_status forward(void *sv, const float *x, int B, int T, float *y, char *err, size_t nerr) {
    session *s = (session *)sv;
    size_t n = (size_t)B * T * 2;
    if (full(s, B, err, nerr)) return DPD_E_NOMEM;
    dpd_status st = reserve(s, B, T, err, nerr);
    if (st) return st;
    cl_int e = clEnqueueWriteBuffer(s->q, s->bx.m, CL_FALSE, 0, n * 4, x, 0, NULL, NULL);
    if (!e) e = fwd(s, s->q, s->bx.m, 0, B, T, s->out.m);
    if (!e) e = clEnqueueReadBuffer(s->q, s->out.m, CL_TRUE, 0, n * 4, y, 0, NULL, NULL);
    return finish(s, e, "forward", err, nerr);
}

static dpd_status attach(void *sv, int split, const float *x, const float *y, size_t n, char *err, size_t nerr) {
    session *s = (session *)sv;
    if (split < 0 || split > 2) return snprintf(err, nerr, "opencl: no split %d", split), DPD_E_INVAL;
    dpd_status st = need(s, &s->x[split], 2 * n, err, nerr);
    if (!st && y) st = need(s, &s->y[split], 2 * n, err, nerr);
    if (st) return st;
    cl_int e = clEnqueueWriteBuffer(s->q, s->x[split].m, CL_TRUE, 0, 2 * n * 4, x, 0, NULL, NULL);
    if (!e && y) e = clEnqueueWriteBuffer(s->q, s->y[split].m, CL_TRUE, 0, 2 * n * 4, y, 0, NULL, NULL);
    if (!y) release(&s->y[split]);
    s->n[split] = n;
    return finish(s, e, "attach a split", err, nerr);
}

static dpd_status train_steps(void *sv, const uint32_t *frames, size_t nframes, int B, int L, int S, double lr,
                              double wd, double max_norm, double *losses, char *err, size_t nerr) {
    session *s = (session *)sv, *pa = s->pa;
    if (!s->x[0].m || !s->y[0].m) return snprintf(err, nerr, "opencl: no training split attached"), DPD_E_INVAL;
    if (B < 1 || L < 1 || S < 1) return snprintf(err, nerr, "opencl: a batch of %d x %d at stride %d", B, L, S), DPD_E_INVAL;
    for (size_t i = 0; i < nframes; i++)
        if ((size_t)frames[i] * S + L > s->n[0])
            return snprintf(err, nerr, "opencl: frame %u runs past the training split", frames[i]), DPD_E_INVAL;
    size_t steps = (nframes + B - 1) / B;
    dpd_status st = reserve(s, B, L, err, nerr);
    if (!st && pa) st = reserve(pa, B, L, err, nerr);
    if (!st) st = need(s, &s->fr, nframes, err, nerr);
    if (!st) st = need(s, &s->loss, steps, err, nerr);
    if (st || !steps) return st;
    cl_command_queue q = s->q;
    cl_int zero = 0, e = clEnqueueWriteBuffer(q, s->fr.m, CL_FALSE, 0, nframes * 4, frames, 0, NULL, NULL);
    if (!e) e = clEnqueueWriteBuffer(q, s->stop.m, CL_FALSE, 0, 4, &zero, 0, NULL, NULL);
    for (size_t k = 0; k < steps && !e; k++) {
        int b = nframes - k * B < (size_t)B ? (int)(nframes - k * B) : B;
        float n = (float)((size_t)b * L * 2);
        e = args(s->k[K_GATHER], "mmmiiimm", s->x[0].m, s->y[0].m, s->fr.m, (int)(k * B), L, S, s->bx.m, s->bt.m);
        if (!e) e = run(s, q, K_GATHER, (size_t)b * L * 2, 0);
        if (!e) e = fwd(s, q, s->bx.m, 0, b, L, s->out.m);
        if (!e && pa) e = fwd(pa, q, s->out.m, 0, b, L, pa->out.m);
        if (!e) e = args(s->k[K_MSE], "mmifmm", pa ? pa->out.m : s->out.m, s->bt.m, 2 * L, (double)n, s->dy.m, s->lp.m);
        if (!e) e = run(s, q, K_MSE, (size_t)b, 0);
        if (!e && pa) e = bwd(pa, q, s->out.m, 0, b, L, s->dy.m, s->du.m, 0);
        if (!e) e = bwd(s, q, s->bx.m, 0, b, L, pa ? s->du.m : s->dy.m, NULL, 1);
        /* AdamW's factors for update step + k + 1, as dpd_adamw_step computes them */
        long t = s->step + (long)k + 1;
        double bc1 = 1.0 - pow(0.9, (double)t), bc2 = 1.0 - pow(0.999, (double)t);
        if (!e)
            e = args(s->k[K_ADAMW], "mmmiimmmfmimfffffffff", s->p.m, s->g.m, s->gp.m, b, s->np, s->m.m, s->v.m, s->lp.m,
                     (double)n, s->loss.m, (int)k, s->stop.m, (double)(float)max_norm, (double)(float)(1.0 - lr * wd),
                     (double)(float)0.9, (double)(float)0.999, (double)(float)(1.0 - 0.9), (double)(float)(1.0 - 0.999),
                     (double)(float)(lr / bc1), (double)(float)sqrt(bc2), (double)(float)1e-8);
        if (!e) e = run(s, q, K_ADAMW, WG, WG);
    }
    float *l = (float *)malloc(steps * sizeof *l);
    cl_int stop = 0;
    if (!l) return snprintf(err, nerr, "opencl: out of memory"), DPD_E_NOMEM;
    if (!e) e = clEnqueueReadBuffer(q, s->loss.m, CL_TRUE, 0, steps * 4, l, 0, NULL, NULL);
    if (!e) e = clEnqueueReadBuffer(q, s->stop.m, CL_TRUE, 0, 4, &stop, 0, NULL, NULL);
    if ((st = finish(s, e, "a training step", err, nerr))) return free(l), st;
    size_t done = steps;
    for (size_t k = 0; k < steps; k++) {
        losses[k] = l[k];
        if (!isfinite(l[k])) {
            done = k;
            break;
        }
    }
    free(l);
    s->step += (long)done;
    if (stop || done < steps)
        return snprintf(err, nerr, "training diverged: the loss is not finite (lower lr)"), DPD_E_DIVERGED;
    return DPD_OK;
}

static dpd_status evaluate(void *sv, int k, int N, int batch, float *pred, char *err, size_t nerr) {
    session *s = (session *)sv, *pa = s->pa;
    if (k < 0 || k > 2 || !s->x[k].m || N < 1 || batch < 1 || s->n[k] % (size_t)N)
        return snprintf(err, nerr, "opencl: split %d: nothing attached in sequences of %d", k, N), DPD_E_INVAL;
    int S = (int)(s->n[k] / (size_t)N), most = S < batch ? S : batch;
    dpd_status st = full(s, most, err, nerr);
    if (!st) st = reserve(s, most, N, err, nerr);
    if (!st && pa) st = reserve(pa, most, N, err, nerr);
    if (st) return st;
    cl_int e = CL_SUCCESS;
    for (int s0 = 0; s0 < S && !e; s0 += batch) {
        int b = S - s0 < batch ? S - s0 : batch;
        e = fwd(s, s->q, s->x[k].m, s0 * N * 2, b, N, s->out.m);
        if (!e && pa) e = fwd(pa, s->q, s->out.m, 0, b, N, pa->out.m);
        if (!e)
            e = clEnqueueReadBuffer(s->q, pa ? pa->out.m : s->out.m, CL_TRUE, 0, (size_t)b * N * 2 * 4,
                                    pred + (size_t)s0 * N * 2, 0, NULL, NULL);
    }
    return finish(s, e, "evaluate", err, nerr);
}

static dpd_status chain(void *sv, void *frozen, char *err, size_t nerr) {
    session *s = (session *)sv, *pa = (session *)frozen;
    if (pa == s) return snprintf(err, nerr, "opencl: a session cannot be chained to itself"), DPD_E_INVAL;
    if (pa && pa->dev != s->dev)
        return snprintf(err, nerr, "opencl: the chained PA is on device %d, the DPD on %d", pa->dev, s->dev), DPD_E_INVAL;
    if (pa) clFinish(pa->q); /* its uploads are done before this queue uses its buffers */
    s->pa = pa;
    return DPD_OK;
}

static const dpd_provider_i opencl_i = {
    .api_version = DPD_PROVIDER_API, .name = "opencl", .device_count = device_count, .device_info = device_info,
    .supports = supports, .session_free = session_free, .upload = upload, .download = download, .forward = forward,
    .get_state = get_state, .set_state = set_state, .session_open = session_open, .attach = attach,
    .train_steps = train_steps, .evaluate = evaluate, .chain = chain};

__attribute__((visibility("default"))) dpd_status dpd_provider_init(uint32_t api_version, dpd_provider *out, char *err,
                                                                    size_t nerr) {
    if (api_version != DPD_PROVIDER_API) {
        snprintf(err, nerr, "provider ABI %d, dpd asks for %u", DPD_PROVIDER_API, api_version);
        return DPD_E_UNSUPPORTED;
    }
    out->i = &opencl_i, out->ctx = NULL;
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
