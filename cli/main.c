/* main: the dpd command — dispatch to a verb, and the helpers the verbs share (cli.h): errors
 * named by CLI flag, compute options as session options, JSON and table output of metrics. */
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"

int cli_is_help(const char *a) { return !strcmp(a, "--help") || !strcmp(a, "-h"); }

/* The configuration field a message starts with ("data: x does not exist"), when err->field
 * does not name one: a key of the configuration table, or resume. */
static const char *leading_field(const char *msg) {
    int n;
    const dpd_field *f = dpd_config_fields(&n);
    for (int i = -1; i < n; i++) {
        const char *k = i < 0 ? "resume" : f[i].key;
        size_t l = strlen(k);
        if (!strncmp(msg, k, l) && msg[l] == ':' && msg[l + 1] == ' ') return k;
    }
    return "";
}

/* msg with each whole-word mention of field (after start, space or '(' and before space, ':',
 * ',', ')' or the end) written as flag: "(use provider cpu)" -> "(use --provider cpu)". Paths
 * ("/x/data/y") are left alone. Returns the number of mentions replaced. */
static int name_flag(const char *msg, const char *field, const char *flag, char *out, size_t n) {
    size_t fl = strlen(field), j = 0;
    int hits = 0;
    for (const char *p = msg; *p && j + 1 < n;) {
        int before = p == msg || p[-1] == ' ' || p[-1] == '(';
        char c = p[fl];
        if (before && !strncmp(p, field, fl) && (c == 0 || c == ' ' || c == ':' || c == ',' || c == ')')) {
            j += (size_t)snprintf(out + j, n - j, "%s", flag);
            p += fl, hits++;
        } else {
            out[j++] = *p++;
        }
        if (j >= n) j = n - 1;
    }
    out[j] = 0;
    return hits;
}

int cli_fail(const dpd_error *err) {
    const char *msg = err->msg[0] ? err->msg : dpd_status_str(err->status);
    const char *field = err->field[0] ? err->field : leading_field(msg);
    if (field[0]) {
        char flag[48], text[1400];
        cli_flag(field, flag, sizeof flag);
        if (name_flag(msg, field, flag, text, sizeof text)) /* "hidden: 1e5 ..." -> "--hidden: 1e5 ..." */
            fprintf(stderr, "dpd: %s\n", text);
        else
            fprintf(stderr, "dpd: %s: %s\n", flag, msg);
    } else {
        fprintf(stderr, "dpd: %s\n", msg);
    }
    return err->status == DPD_E_INVAL ? 2 : 1;
}

void cli_exec_set(cli_exec *x, const char *key, long value) {
    if (x->nkv >= (int)(sizeof x->kv / sizeof *x->kv)) return;
    snprintf(x->val[x->nkv], sizeof x->val[0], "%ld", value);
    x->kv[x->nkv] = (dpd_kv){key, x->val[x->nkv]};
    x->nkv++;
}

const char *cli_threads_note(int threads, char *buf, size_t n) {
    int cpus = dpd_cpu_level_threads("max");
#ifdef CPU_COUNT
    cpu_set_t set; /* the processors this process may run on (taskset, a container's cpuset) */
    if (!sched_getaffinity(0, sizeof set, &set) && CPU_COUNT(&set) > 0 && CPU_COUNT(&set) < cpus) cpus = CPU_COUNT(&set);
#endif
    if (threads <= cpus) return NULL; /* allowed (up to the table's bound), but never faster */
    snprintf(buf, n, "threads %d is more than the %d logical processor%s this process may use: the extra threads only "
                     "wait on each other (slower, never faster; results do not depend on it)", threads, cpus, cpus == 1 ? "" : "s");
    return buf;
}

int cli_exec_resolve(cli_exec *x) {
    if (x->level[0] && x->threads) {
        fprintf(stderr, "dpd: --threads %d and --cpu-level %s both set the worker threads: give one of them\n",
                x->threads, x->level);
        return 2;
    }
    if (x->level[0]) {
        if (!(x->threads = dpd_cpu_level_threads(x->level))) {
            fprintf(stderr, "dpd: --cpu-level must be low, balanced, high or max (got '%s')\n", x->level);
            return 2;
        }
    }
    /* the values through the configuration table: its bounds and its messages */
    dpd_train_cfg c;
    dpd_error err = {0};
    char v[16];
    dpd_train_defaults(&c);
    snprintf(v, sizeof v, "%d", x->threads);
    if (dpd_config_set(&c, "threads", v, &err) || (x->kernels[0] && dpd_config_set(&c, "kernels", x->kernels, &err)) ||
        (x->provider[0] && dpd_config_set(&c, "provider", x->provider, &err))) {
        if (!err.field[0]) snprintf(err.field, sizeof err.field, "%s", leading_field(err.msg));
        cli_fail(&err);
        return 2;
    }
    char note[256];
    if (cli_threads_note(x->threads, note, sizeof note)) fprintf(stderr, "dpd: warning: --%s\n", note);
    x->nkv = 0;
    if (x->provider[0]) x->kv[x->nkv++] = (dpd_kv){"provider", x->provider};
    if (x->kernels[0]) x->kv[x->nkv++] = (dpd_kv){"kernels", x->kernels};
    if (x->threads) cli_exec_set(x, "threads", x->threads);
    return 0;
}

dpd_status cli_session_open(const char *path, const cli_exec *x, dpd_session **s, dpd_error *err) {
    dpd_model *m = NULL;
    *s = NULL;
    dpd_status st = dpd_ckpt_load(path, &m, err);
    if (!st) st = dpd_session_create(m, x ? x->kv : NULL, x ? x->nkv : 0, s, err);
    dpd_model_free(m);
    return st;
}

json_t *cli_jnum(double v) { return isfinite(v) ? json_real(v) : json_null(); }

json_t *cli_metrics_json(const dpd_metrics *m, int aclr_only) {
    static const char *const aclr[] = {"L", "R", "AVG"};
    json_t *o = json_object(), *st = NULL;
    if (!o) return NULL;
    for (int k = aclr_only ? DPD_ACLR_L : 0; k < DPD_NMETRICS; k++) {
        const char *name = aclr_only ? aclr[k - DPD_ACLR_L] : dpd_metric_key(m->profile, k);
        int ok = m->status[k] == DPD_METRIC_OK && isfinite(dpd_metric_value(m, k));
        if (json_object_set_new(o, name, ok ? cli_jnum(dpd_metric_value(m, k)) : json_null())) goto fail;
        if (ok) continue;
        if (!st && (!(st = json_object()))) goto fail;
        if (json_object_set_new(st, name, json_pack("{s:s, s:s}", "status",
                                                    dpd_metric_status_str(m->status[k] ? m->status[k] : DPD_METRIC_INVALID),
                                                    "reason", m->reason[k][0] ? m->reason[k] : "not finite")))
            goto fail;
    }
    if (st && json_object_set_new(o, "status", st)) {
        st = NULL;
        goto fail;
    }
    return o;
fail:
    json_decref(st);
    json_decref(o);
    return NULL;
}

int cli_json_print(json_t *j) {
    char *s = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(j);
    if (!s) {
        fprintf(stderr, "dpd: the JSON output could not be built (out of memory)\n");
        return 1;
    }
    puts(s);
    free(s);
    return fflush(stdout) ? 1 : 0;
}

const char *cli_metric_text(const dpd_metrics *m, int k, char *buf, size_t n) {
    if (m->status[k] == DPD_METRIC_OK) snprintf(buf, n, "%.3f", dpd_metric_value(m, k));
    else snprintf(buf, n, "n/a (%s)", m->reason[k][0] ? m->reason[k] : dpd_metric_status_str(m->status[k]));
    return buf;
}

void cli_metrics_header(FILE *f, dpd_profile p) {
    char h[DPD_NMETRICS][24];
    for (int k = 0; k < DPD_NMETRICS; k++)
        snprintf(h[k], sizeof h[k], "%s%s", dpd_metric_key(p, k), k < DPD_ACLR_L ? " dB" : "");
    fprintf(f, "%-14s %10s %10s %10s %10s %10s\n", "", h[0], h[1], h[2], h[3], h[4]);
}

static const char *na_reason(const dpd_metrics *m, int k) {
    return m->reason[k][0] ? m->reason[k] : dpd_metric_status_str(m->status[k]);
}

/* 1-based index of m's metric k among the notes' reasons; 0 when it is not there. */
static int na_find(const cli_na *t, const dpd_metrics *m, int k) {
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->why[i], na_reason(m, k))) return i + 1;
    return 0;
}

void cli_na_add(cli_na *t, const dpd_metrics *m, int from, int to) {
    for (int k = from; k <= to; k++)
        if (m->status[k] != DPD_METRIC_OK && !na_find(t, m, k) && t->n < (int)(sizeof t->why / sizeof *t->why))
            t->why[t->n++] = na_reason(m, k);
}

const char *cli_na_cell(const cli_na *t, const dpd_metrics *m, int k, char *buf, size_t n) {
    int i = m->status[k] == DPD_METRIC_OK ? 0 : na_find(t, m, k);
    if (m->status[k] == DPD_METRIC_OK) snprintf(buf, n, "%.3f", dpd_metric_value(m, k));
    else if (t->n > 1 && i) snprintf(buf, n, "n/a [%d]", i);
    else snprintf(buf, n, "n/a");
    return buf;
}

void cli_na_row(FILE *f, const cli_na *t, const char *name, const dpd_metrics *m) {
    fprintf(f, "%-14s", name);
    for (int k = 0; k < DPD_NMETRICS; k++) {
        char b[32];
        fprintf(f, " %10s", cli_na_cell(t, m, k, b, sizeof b));
    }
    fputc('\n', f);
}

void cli_na_print(FILE *f, const cli_na *t, const char *indent) {
    for (int i = 0; i < t->n; i++)
        if (t->n == 1) fprintf(f, "%sn/a: %s\n", indent, t->why[i]);
        else fprintf(f, "%s[%d] %s\n", indent, i + 1, t->why[i]);
}

const char *cli_hz(double hz, char *buf, size_t n) {
    static const struct {
        double scale;
        const char *unit;
    } units[] = {{1e9, "GHz"}, {1e6, "MHz"}, {1e3, "kHz"}};
    for (size_t i = 0; isfinite(hz) && i < sizeof units / sizeof *units; i++) {
        if (hz >= units[i].scale) {
            snprintf(buf, n, "%.10g %s", hz / units[i].scale, units[i].unit);
            return buf;
        }
    }
    snprintf(buf, n, "%.10g Hz", hz);
    return buf;
}

const char *cli_shell_quote(const char *s, char *buf, size_t n) {
    size_t j = 0;
    if (n < 3) return "";
    buf[j++] = '\'';
    for (; *s && j + 5 < n; s++) {
        if (*s == '\'') {
            memcpy(buf + j, "'\\''", 4);
            j += 4;
        } else {
            buf[j++] = *s;
        }
    }
    buf[j++] = '\'';
    buf[j] = 0;
    return buf;
}

static const struct verb {
    const char *name;
    int (*run)(int, char **);
    const char *help;
} verbs[] = {
    {"synth", cmd_synth, "generate a synthetic OpenDPD-layout dataset (OFDM through a PA model)"},
    {"doctor", cmd_doctor, "check a dataset: delay, gain, clipping, NaN, bandwidth, metadata (and fix a copy)"},
    {"eval", cmd_eval, "RF metrics of a dataset split, its linear-gain baseline and a model"},
    {"train-pa", cmd_train_pa, "train a PA behavioral model (OpenDPD's loop, exactly)"},
    {"train-dpd", cmd_train_dpd, "train a DPD model through a frozen PA model toward g x"},
    {"fit-ls", cmd_fit_ls, "least-squares MP/GMP baselines: PA models, or DPDs by indirect learning"},
    {"run", cmd_run, "apply a trained DPD (or PA) model to a recording (CSV, .cf32, SigMF or .mat)"},
    {"providers", cmd_providers, "execution providers, devices, packs and the active choice"},
    {"parity", cmd_parity, "the same evaluation on each provider, and the deviations"},
    {"pack", cmd_pack, "install, list, verify, activate or remove runtime packs"},
    {"config", cmd_config, "show or set settings (provider, cpu_level, gpu_memory)"},
    {"plot", cmd_plot, "draw a run's pictures (PSD, AM/AM, AM/PM, I/Q, learning curves) or a dataset's"},
    {"models", cmd_models, "list the model families, their usual sizes and parameter counts"},
    {"bench", cmd_bench, "time training steps, or one core's multiply-add peak (bench train|peak ...)"},
    {"serve", cmd_serve, "the studio: a local web service with a job queue and live events"},
    {"worker", cmd_worker, "run one studio job (started by dpd serve)"},
};

static void help(FILE *f) {
    fprintf(f, "dpd %s — neural PA modeling and digital predistortion\n\nusage: dpd VERB [options]\n\n",
            DPD_VERSION);
    for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++)
        fprintf(f, "  %-10s %s\n", verbs[i].name, verbs[i].help);
    fprintf(f, "  %-10s %s\n\n'dpd VERB --help' or 'dpd help VERB' lists a verb's options. Exit codes: 0 success,\n"
               "1 failure, 2 usage error, 130 cancelled by SIGINT (Ctrl-C), 143 by SIGTERM.\n",
            "version", "print the version");
}

/* A word that is no verb: said, with the verb it is nearest to where one is, then the verbs. */
static int unknown_verb(const char *word) {
    const char *names[sizeof verbs / sizeof *verbs + 1];
    int n = 0;
    for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++) names[n++] = verbs[i].name;
    names[n++] = "version";
    const char *near = dpd_nearest(word, names, n);
    fprintf(stderr, "dpd: unknown verb '%s'", word);
    if (near) fprintf(stderr, " (did you mean %s?)", near);
    fprintf(stderr, "\n\n");
    help(stderr);
    return 2;
}

/* A verb's process does one job and exits: the memory it frees, it keeps for its next use. glibc
 * otherwise maps a large block (a dataset's text and columns, an epoch's predictions) afresh and
 * unmaps it when it is freed, and trims the heap's free top, so that the next block costs a page
 * fault a page again: on the project's virtual machines 2 to 20 us each. A quick PA run faults
 * 3 460 pages without this and 2 430 with it, and ends 11 to 12 ms sooner (docs/performance.md).
 * Blocks up to 32 MiB (glibc's most) come from the heap, whose free memory is not given back
 * before the exit. Not for dpd serve, which lives on (its jobs run in processes of their own), nor
 * under an address-space limit (RLIMIT_AS: a studio worker's), where a heap kept whole could reach
 * the limit sooner than blocks given back. */
static void keep_heap(void) {
    struct rlimit as;
    if (!getrlimit(RLIMIT_AS, &as) && as.rlim_cur != RLIM_INFINITY) return; /* glibc's way under a limit */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "help")) /* dpd help VERB: the verb's own help, as dpd VERB --help */
        for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++)
            if (!strcmp(argv[2], verbs[i].name)) return verbs[i].run(1, (char *[]){"--help", NULL});
    if (argc == 3 && !strcmp(argv[1], "help") &&
        (cli_is_help(argv[2]) || !strcmp(argv[2], "version") || !strcmp(argv[2], "help"))) {
        if (!strcmp(argv[2], "version")) printf("dpd version: prints dpd's version (also dpd --version)\n");
        else help(stdout);
        return 0;
    }
    if (argc >= 3 && !strcmp(argv[1], "help")) { /* not a verb, or more than one word */
        if (argc == 3) return unknown_verb(argv[2]);
        fprintf(stderr, "dpd: help takes one verb (dpd help VERB)\n\n");
        help(stderr);
        return 2;
    }
    if (argc < 2 || cli_is_help(argv[1]) || !strcmp(argv[1], "help")) {
        help(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
        printf("dpd %s\n", DPD_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++)
        if (!strcmp(argv[1], verbs[i].name)) {
            if (verbs[i].run != cmd_serve) keep_heap();
            return verbs[i].run(argc - 2, argv + 2);
        }
    return unknown_verb(argv[1]);
}

int cli_in_dataset(const char *path, const char *data, char *dir, size_t n) {
    char p[PATH_MAX], real[PATH_MAX], d[PATH_MAX], spec[PATH_MAX + 16];
    struct stat sb;
    snprintf(p, sizeof p, "%s", path[0] ? path : ".");
    for (;;) { /* the nearest existing directory at or above path */
        if (!stat(p, &sb) && S_ISDIR(sb.st_mode)) break;
        char *slash = strrchr(p, '/');
        while (slash && slash > p && slash[1] == 0) { /* "a/b/": its trailing slashes */
            *slash = 0;
            slash = strrchr(p, '/');
        }
        if (!slash) snprintf(p, sizeof p, ".");
        else if (slash == p) p[1] = 0; /* "/" */
        else *slash = 0;
        if (!strcmp(p, ".") || !strcmp(p, "/")) break;
    }
    if (!realpath(p, real)) return 0;
    snprintf(spec, sizeof spec, "%s/spec.json", real);
    int in = !stat(spec, &sb);
    size_t k = data && realpath(data, d) ? strlen(d) : 0;
    if (!in && k && !strncmp(real, d, k) && (!real[k] || real[k] == '/' || k == 1)) {
        in = 1;
        snprintf(real, sizeof real, "%s", d);
    }
    if (in) snprintf(dir, n, "%s", real);
    return in;
}

int cli_output_file(const char *flag, const char *path, const char *data) {
    char dir[4200], held[4200];
    struct stat st;
    const char *sl = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", sl ? (int)(sl - path) + (sl == path) : 1, sl ? path : ".");
    if (cli_in_dataset(path, data, held, sizeof held)) {
        fprintf(stderr, "dpd: --%s %s lies in the dataset %s (it holds spec.json), and nothing is written into a dataset: "
                        "choose a file elsewhere\n", flag, path, held);
        return 2;
    }
    if (!stat(path, &st) && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "dpd: --%s %s is a directory: name a file in it\n", flag, path);
        return 2;
    }
    dpd_error err = {0};
    if (dpd_replaceable(path, &err)) { /* a link or a device: before any work, not at the rename */
        fprintf(stderr, "dpd: --%s %s\n", flag, err.msg);
        return 2;
    }
    int none = stat(dir, &st) != 0;
    if (none || !S_ISDIR(st.st_mode) || access(dir, W_OK)) {
        fprintf(stderr, "dpd: --%s %s: %s %s\n", flag, path, dir,
                none ? "does not exist (make the directory first)" : !S_ISDIR(st.st_mode) ? "is not a directory"
                                                                          : "is a directory this process cannot write into");
        return 2;
    }
    return 0;
}

int cli_output_dir(const char *flag, const char *path, const char *data) {
    char parent[4200], held[4200];
    snprintf(parent, sizeof parent, "%s/..", path); /* where it goes: path itself may be a dataset (synth --force) */
    if (!cli_in_dataset(parent, data, held, sizeof held)) return 0;
    fprintf(stderr, "dpd: --%s %s lies in the dataset %s, and nothing is written into a dataset: choose a directory "
                    "elsewhere\n", flag, path, held);
    return 2;
}
