/* test_config: the configuration table (src/config.c): every row through set/get, config.json
 * and the checkpoint metadata; the one message shape with err.field; family names and layers. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config.h"

/* A value for row f that differs from the default and lies within the bounds. */
static const char *sample(const dpd_field *f) {
    static const struct {
        const char *key, *value;
    } v[] = {
        {"family", "lstm"},     {"hidden", "1024"},      {"layers", "3"},          {"order", "16"},
        {"memory", "4096"},     {"cross", "64"},         {"thx", "0.1"},           {"thh", "1000000"},
        {"units", "64"},        {"data", "data/x y"},    {"out", "r\xc3\xa9sults"}, {"pa", "runs/pa"},
        {"epochs", "100000"},   {"batch", "65536"},      {"batch_eval", "1"},      {"frame", "1000000"},
        {"stride", "7"},        {"lr", "0.1"},           {"lr_end", "3.3333333333333335e-05"},
        {"decay", "0.9999999999999999"},                {"patience", "0"},        {"lr_schedule", "0"},
        {"weight_decay", "1e-300"},                      {"clip", "0"},            {"seed", "18446744073709551615"},
        {"evm_fs", "800000000"}, {"preset", "quick"},    {"least_squares", "1"},   {"ls_reg", "5e-324"},
        {"ls_iterations", "100"}, {"threads", "0"},      {"kernels", "avx2"},      {"provider", "cuda"},
        {"preview_every", "1000000"}, {"metric_profile", "opendpd-spectral-v2"},
    };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        if (!strcmp(v[i].key, f->key)) return v[i].value;
    return NULL;
}

static void set_ok(dpd_train_cfg *c, const char *key, const char *value) {
    dpd_error err = {0};
    dpd_status s = dpd_config_set(c, key, value, &err);
    CHECK(s == DPD_OK, "set %s=%s: %s", key, value, err.msg);
}

/* set must fail with exactly msg and err.field == field; c must not change. */
static void set_bad(const char *key, const char *value, const char *msg, const char *field) {
    dpd_train_cfg c, before;
    dpd_config_defaults(&c);
    before = c;
    dpd_error err = {0};
    dpd_status s = dpd_config_set(&c, key, value, &err);
    CHECK(s == DPD_E_INVAL && err.status == DPD_E_INVAL, "set %s=%s: status %d", key, value, s);
    CHECK(!strcmp(err.msg, msg), "set %s=%s: message '%s', want '%s'", key, value, err.msg, msg);
    CHECK(!strcmp(err.field, field), "set %s=%s: field '%s', want '%s'", key, value, err.field, field);
    CHECK(!memcmp(&c, &before, sizeof c), "set %s=%s changed the configuration", key, value);
}

static void test_table(void) {
    int n;
    const dpd_field *f = dpd_config_fields(&n);
    CHECK(n == 35, "%d rows", n);
    int model_rows = 0, seen_train = 0;
    for (int i = 0; i < n; i++) {
        CHECK(f[i].key && f[i].about && f[i].about[0], "row %d lacks a key or meaning", i);
        CHECK(strchr("iudsb", f[i].type) != NULL, "%s: type %c", f[i].key, f[i].type);
        CHECK(dpd_config_find(f[i].key) == &f[i], "%s: find", f[i].key);
        CHECK(dpd_config_default(f[i].key) != NULL, "%s: no default", f[i].key);
        CHECK(sample(&f[i]) != NULL, "%s: no sample value in this test", f[i].key);
        if (f[i].model) {
            CHECK(!seen_train, "%s: model rows must come first", f[i].key);
            model_rows++;
        } else {
            seen_train = 1;
        }
        for (int k = 0; k < i; k++) CHECK(strcmp(f[i].key, f[k].key), "%s twice", f[i].key);
    }
    CHECK(model_rows == 9, "%d model rows", model_rows);
    CHECK(dpd_config_find("resume") == NULL, "resume is not a configuration field");
    CHECK(dpd_config_find("hidden")->min == 1 && dpd_config_find("hidden")->max == 1024, "hidden bounds");
    CHECK(dpd_config_find("lr")->min == DBL_TRUE_MIN, "lr > 0 stored as min = DBL_TRUE_MIN");
    CHECK(dpd_config_find("decay")->max == nextafter(1, 0), "decay < 1 stored as max = 1 - ulp");
}

/* The table's defaults are dpd_train_defaults' values (as of this commit) and pass the check. */
static void test_defaults(void) {
    dpd_train_cfg c;
    dpd_config_defaults(&c);
    CHECK(!strcmp(c.model.family, "gru") && c.model.hidden == 23 && c.model.layers == 1, "model defaults");
    CHECK(!strcmp(c.out, "runs") && c.epochs == 150 && c.batch == 64 && c.batch_eval == 64 && c.frame == 200 &&
              c.stride == 1,
          "training defaults");
    CHECK(c.lr == 5e-3 && c.lr_end == 5e-5 && c.decay == 0.5 && c.patience == 5 && c.lr_schedule == 1 &&
              c.weight_decay == 0.01 && c.clip == 200 && c.seed == 0 && c.ls_reg == 1e-9 && c.ls_iter == 1 &&
              c.threads == 1,
          "optimizer defaults");
    dpd_error err = {0};
    CHECK(dpd_config_check(&c, &err) == DPD_OK, "defaults: %s", err.msg);
    int n;
    const dpd_field *f = dpd_config_fields(&n);
    for (int i = 0; i < n; i++) {
        char t[4200];
        CHECK(dpd_config_get(&c, f[i].key, t, sizeof t) && !strcmp(t, dpd_config_default(f[i].key)),
              "%s: get '%s' != default '%s'", f[i].key, t, dpd_config_default(f[i].key));
    }
}

/* Every row: set a non-default value, get it back as the same text, set that text again. */
static void test_set_get(void) {
    int n;
    const dpd_field *f = dpd_config_fields(&n);
    dpd_train_cfg c;
    dpd_config_defaults(&c);
    for (int i = 0; i < n; i++) {
        const char *v = sample(&f[i]);
        if (!v) continue;
        CHECK(strcmp(v, dpd_config_default(f[i].key)), "%s: sample equals the default", f[i].key);
        set_ok(&c, f[i].key, v);
        char t[4200];
        CHECK(dpd_config_get(&c, f[i].key, t, sizeof t), "%s: get", f[i].key);
        CHECK(!strcmp(t, v), "%s: get '%s', set '%s'", f[i].key, t, v);
    }
    dpd_error err = {0};
    CHECK(dpd_config_check(&c, &err) == DPD_E_INVAL && !strcmp(err.field, "evm_fs"),
          "all samples: evm_fs with a Welch profile (which has no EVM) refused, naming evm_fs: %s", err.msg);
    char prof[sizeof c.metric_profile];
    snprintf(prof, sizeof prof, "%s", c.metric_profile);
    snprintf(c.metric_profile, sizeof c.metric_profile, "legacy-opendpd-v1"); /* the profile evm_fs is for */
    memset(&err, 0, sizeof err);
    CHECK(dpd_config_check(&c, &err) == DPD_OK, "all samples, under the legacy profile: %s", err.msg);
    snprintf(c.metric_profile, sizeof c.metric_profile, "%s", prof);
    /* typed values */
    CHECK(c.seed == UINT64_MAX && c.ls == 1 && c.ls_iter == 100 && c.lr_end == 3.3333333333333335e-05 &&
              c.ls_reg == DBL_TRUE_MIN && c.decay == nextafter(1, 0),
          "typed values");
    char t[8];
    CHECK(!dpd_config_get(&c, "nope", t, sizeof t), "get of an unknown key");
    CHECK(!dpd_config_get(&c, "data", t, sizeof t), "get into a short buffer says so");
    /* other spellings that are accepted */
    set_ok(&c, "least_squares", "false");
    CHECK(c.ls == 0, "least_squares false");
    set_ok(&c, "least_squares", "TRUE");
    CHECK(c.ls == 1, "least_squares TRUE");
    set_ok(&c, "lr", "1e-3");
    CHECK(c.lr == 1e-3 && dpd_config_get(&c, "lr", t, sizeof t) && !strcmp(t, "0.001"), "lr 1e-3 -> '%s'", t);
    set_ok(&c, "order", "0");
    set_ok(&c, "kernels", "");
    set_ok(&c, "preset", "");
}

static void test_messages(void) {
    set_bad("hidden", "100000", "hidden: 100000 is out of range 1..1024", "hidden");
    set_bad("hidden", "0", "hidden: 0 is out of range 1..1024", "hidden");
    set_bad("hidden", "99999999999999999999", "hidden: 99999999999999999999 is out of range 1..1024", "hidden");
    set_bad("hidden", "abc", "hidden: 'abc' is not a number", "hidden");
    set_bad("hidden", "", "hidden: '' is not a number", "hidden");
    set_bad("hidden", "2.5", "hidden: '2.5' is not an integer", "hidden");
    set_bad("hidden", "12abc", "hidden: '12abc' is not a number", "hidden");
    set_bad("layers", "17", "layers: 17 is out of range 1..16", "layers");
    set_bad("memory", "5000", "memory: 5000 is out of range 1..4096", "memory");
    set_bad("memory", "-1", "memory: -1 is out of range 1..4096", "memory");
    set_bad("thx", "2e6", "thx: 2e6 is out of range 0..1000000", "thx");
    set_bad("thx", "-0.5", "thx: -0.5 is out of range 0..1000000", "thx");
    set_bad("lr", "0", "lr: 0 is out of range 0..inf (0 excluded)", "lr");
    set_bad("lr", "-1", "lr: -1 is out of range 0..inf (0 excluded)", "lr");
    set_bad("lr", "nan", "lr: 'nan' is not a number", "lr");
    set_bad("lr", "inf", "lr: 'inf' is not a number", "lr");
    set_bad("lr", "1e999", "lr: 1e999 is out of range 0..inf (0 excluded)", "lr");
    set_bad("lr", "fast", "lr: 'fast' is not a number", "lr");
    set_bad("decay", "1", "decay: 1 is out of range 0..1 (0 and 1 excluded)", "decay");
    set_bad("decay", "0", "decay: 0 is out of range 0..1 (0 and 1 excluded)", "decay");
    set_bad("lr_end", "-1e-9", "lr_end: -1e-9 is out of range 0..inf", "lr_end");
    set_bad("lr_schedule", "2", "lr_schedule: 2 is out of range 0..1", "lr_schedule");
    set_bad("ls_iterations", "0", "ls_iterations: 0 is out of range 1..100", "ls_iterations");
    set_bad("threads", "1025", "threads: 1025 is out of range 0..1024", "threads");
    set_bad("preview_every", "-1", "preview_every: -1 is out of range 0..1000000", "preview_every");
    set_bad("seed", "-1", "seed: -1 is out of range 0..18446744073709551615", "seed");
    set_bad("seed", "18446744073709551616", "seed: 18446744073709551616 is out of range 0..18446744073709551615",
            "seed");
    set_bad("seed", "x", "seed: 'x' is not a number", "seed");
    set_bad("least_squares", "maybe", "least_squares: 'maybe' is not one of 0, 1, true, false", "least_squares");
    set_bad("preset", "slow", "preset: 'slow' is not one of quick, full", "preset");
    set_bad("metric_profile", "legacy", "metric_profile: 'legacy' is not one of legacy-opendpd-v1, general-spectral-v1, opendpd-spectral-v2",
            "metric_profile");
    set_bad("kernels", "neon", "kernels: 'neon' is not one of auto, fast, eager, avx512, avx2, sse, ref", "kernels");
    set_bad("provider", "a-provider-name-that-is-far-too-long",
            "provider: 'a-provider-name-that-is-far-too-long' is longer than 31 characters", "provider");
    static char longpath[5001];
    memset(longpath, 'a', 5000);
    set_bad("data", longpath, "data: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...' is longer than 4095 characters", "data");
    set_bad("nope", "1", "'nope' is not a configuration field", "");
    set_bad("resume", "x", "'resume' is not a configuration field", "");
    set_bad("hidden", NULL, "hidden: no value", "hidden");
    /* the family list comes from the registry */
    dpd_train_cfg c;
    dpd_config_defaults(&c);
    dpd_error err = {0};
    CHECK(dpd_config_set(&c, "family", "transformer", &err) == DPD_E_INVAL, "unknown family");
    CHECK(!strncmp(err.msg, "family: 'transformer' is not one of gru, ", 41) && strstr(err.msg, "gmp_ls") &&
              !strcmp(err.field, "family"),
          "unknown family: '%s' field '%s'", err.msg, err.field);
}

static void test_family(void) {
    dpd_train_cfg c;
    dpd_config_defaults(&c);
    set_ok(&c, "family", "DeltaGRU");
    CHECK(!strcmp(c.model.family, "deltagru"), "family stored lower-case: '%s'", c.model.family);
    set_ok(&c, "family", "GMP_LS");
    CHECK(!strcmp(c.model.family, "gmp_ls"), "GMP_LS -> '%s'", c.model.family);

    dpd_error err = {0};
    /* poly family: order and memory needed */
    CHECK(dpd_config_check(&c, &err) == DPD_E_INVAL && !strcmp(err.field, "order") &&
              !strcmp(err.msg, "order: 0 is out of range 1..16 for family gmp_ls"),
          "gmp_ls without order: '%s'", err.msg);
    set_ok(&c, "order", "5");
    CHECK(dpd_config_check(&c, &err) == DPD_E_INVAL && !strcmp(err.field, "memory"), "gmp_ls without memory");
    set_ok(&c, "memory", "20");
    CHECK(dpd_config_check(&c, &err) == DPD_OK, "gmp_ls 5/20: %s", err.msg);

    /* layers against the family's max_layers */
    set_ok(&c, "family", "gru");
    set_ok(&c, "layers", "16");
    CHECK(dpd_config_check(&c, &err) == DPD_OK, "gru 16 layers: %s", err.msg);
    set_ok(&c, "family", "deltagru");
    memset(&err, 0, sizeof err);
    CHECK(dpd_config_check(&c, &err) == DPD_E_INVAL, "deltagru 16 layers");
    CHECK(!strcmp(err.msg, "layers: 16 is out of range 1..1 for family deltagru") && !strcmp(err.field, "layers"),
          "deltagru layers: '%s' field '%s'", err.msg, err.field);
    CHECK(dpd_config_check_model(&c.model, &err) == DPD_E_INVAL && !strcmp(err.field, "layers"), "check_model layers");

    /* a struct filled by hand: upper case is accepted by the check, an unknown family is not */
    dpd_config_defaults(&c);
    snprintf(c.model.family, sizeof c.model.family, "LSTM");
    CHECK(dpd_config_check(&c, &err) == DPD_OK, "LSTM by hand: %s", err.msg);
    snprintf(c.model.family, sizeof c.model.family, "nope");
    CHECK(dpd_config_check(&c, &err) == DPD_E_INVAL && !strcmp(err.field, "family"), "check: unknown family INVAL");
    CHECK(dpd_config_check_model(&c.model, &err) == DPD_E_UNSUPPORTED && !strcmp(err.field, "family"),
          "check_model: unknown family UNSUPPORTED");
    /* out-of-range values set by hand are found by the check, with the same message */
    dpd_config_defaults(&c);
    c.model.hidden = 100000;
    CHECK(dpd_config_check(&c, &err) == DPD_E_INVAL && !strcmp(err.msg, "hidden: 100000 is out of range 1..1024") &&
              !strcmp(err.field, "hidden"),
          "check hidden: '%s'", err.msg);
    dpd_config_defaults(&c);
    c.lr = NAN;
    CHECK(dpd_config_check(&c, &err) == DPD_E_INVAL && !strcmp(err.msg, "lr: nan is out of range 0..inf (0 excluded)"),
          "check lr nan: '%s'", err.msg);
    dpd_config_defaults(&c);
    c.batch_eval = 0;
    CHECK(dpd_config_check(&c, &err) == DPD_E_INVAL && !strcmp(err.field, "batch_eval"), "check batch_eval");
}

/* Every row through dpd_config_json, text and back (execution options are not written). */
static void test_json(void) {
    int n;
    const dpd_field *f = dpd_config_fields(&n);
    dpd_train_cfg c, back;
    dpd_config_defaults(&c);
    for (int i = 0; i < n; i++) set_ok(&c, f[i].key, sample(&f[i]));
    json_t *j = dpd_config_json(&c, "DPA_200MHz", "PA_S_0_M_LSTM", 1234, NULL);
    CHECK(j != NULL, "dpd_config_json");
    if (!j) return;
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(j);
    json_error_t je;
    j = json_loads(text, 0, &je);
    free(text);
    CHECK(j != NULL, "reparse: %s", je.text);
    if (!j) return;
    /* layout */
    static const char *const top[] = {"dpd_version", "step", "pa", "data", "dataset", "out", "run_id", "model", "epochs"};
    const char *key;
    json_t *v;
    int k = 0;
    json_object_foreach(j, key, v) {
        if (k < 9) CHECK(!strcmp(key, top[k]), "key %d is '%s', want '%s'", k, key, top[k]);
        k++;
    }
    CHECK(!strcmp(json_string_value(json_object_get(j, "step")), "train_dpd"), "step from pa");
    CHECK(json_integer_value(json_object_get(json_object_get(j, "model"), "n_params")) == 1234, "n_params");
    CHECK(json_is_true(json_object_get(j, "least_squares")), "least_squares is a boolean");
    CHECK(json_is_real(json_object_get(j, "clip")), "clip is a real");
    CHECK(json_is_integer(json_object_get(j, "ls_iterations")), "ls_iterations is an integer");
    CHECK(!json_object_get(j, "threads") && !json_object_get(j, "kernels") && !json_object_get(j, "provider") &&
              !json_object_get(j, "preview_every") &&
              !json_object_get(j, "resume"),
          "execution options are not in config.json");
    CHECK(k == 7 + 1 + (n - 9 - 3 - 4), "%d keys", k);

    dpd_config_defaults(&back);
    dpd_error err = {0};
    CHECK(dpd_config_from_json(j, &back, "run/config.json", &err) == DPD_OK, "from_json: %s", err.msg);
    for (int i = 0; i < n; i++) {
        char a[4200], b[4200];
        CHECK(dpd_config_get(&c, f[i].key, a, sizeof a) && dpd_config_get(&back, f[i].key, b, sizeof b), "get");
        int exec = !strcmp(f[i].key, "threads") || !strcmp(f[i].key, "kernels") || !strcmp(f[i].key, "provider") ||
                   !strcmp(f[i].key, "preview_every");
        if (exec)
            CHECK(!strcmp(b, dpd_config_default(f[i].key)), "%s: execution option read from config.json", f[i].key);
        else
            CHECK(!strcmp(a, b), "%s: wrote '%s', read '%s'", f[i].key, a, b);
    }
    CHECK(back.seed == UINT64_MAX && back.decay == c.decay && back.ls_reg == c.ls_reg && back.lr_end == c.lr_end,
          "exact values");

    /* missing optional keys keep the caller's values */
    json_t *small = json_pack("{s:{s:s, s:i, s:i}}", "model", "family", "GRU", "hidden", 40, "layers", 2);
    dpd_config_defaults(&back);
    back.epochs = 7;
    CHECK(dpd_config_from_json(small, &back, "c.json", &err) == DPD_OK, "minimal: %s", err.msg);
    CHECK(back.epochs == 7 && back.model.hidden == 40 && !strcmp(back.model.family, "gru"), "minimal values");

    /* wrong types, bad values, missing required keys: DPD_E_FORMAT naming path and key */
    struct {
        const char *json, *msg, *field;
    } bad[] = {
        {"{\"model\": {\"family\": \"gru\", \"hidden\": \"23\", \"layers\": 1}}",
         "c.json: hidden: \"23\" is not an integer", "hidden"},
        {"{\"model\": {\"family\": \"gru\", \"hidden\": 100000, \"layers\": 1}}",
         "c.json: hidden: 100000 is out of range 1..1024", "hidden"},
        {"{\"model\": {\"family\": \"gru\", \"hidden\": 23, \"layers\": 1}, \"lr\": \"fast\"}",
         "c.json: lr: \"fast\" is not a number", "lr"},
        {"{\"model\": {\"family\": \"gru\", \"hidden\": 23, \"layers\": 1}, \"lr\": 0}",
         "c.json: lr: 0 is out of range 0..inf (0 excluded)", "lr"},
        {"{\"model\": {\"family\": \"gru\", \"hidden\": 23, \"layers\": 1}, \"least_squares\": \"yes\"}",
         "c.json: least_squares: \"yes\" is not a boolean", "least_squares"},
        {"{\"model\": {\"family\": \"gru\", \"hidden\": 23, \"layers\": 1}, \"data\": 5}",
         "c.json: data: 5 is not a string", "data"},
        {"{\"model\": {\"family\": \"gru\", \"layers\": 1}}", "c.json: model.hidden is missing", "hidden"},
        {"{\"epochs\": 3}", "c.json: \"model\" is missing or not an object", ""},
        {"[1]", "c.json: not a JSON object", ""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *b = json_loads(bad[i].json, 0, &je);
        dpd_config_defaults(&back);
        memset(&err, 0, sizeof err);
        CHECK(dpd_config_from_json(b, &back, "c.json", &err) == DPD_E_FORMAT && err.status == DPD_E_FORMAT,
              "%s: status", bad[i].json);
        CHECK(!strcmp(err.msg, bad[i].msg), "%s: '%s', want '%s'", bad[i].json, err.msg, bad[i].msg);
        CHECK(!strcmp(err.field, bad[i].field), "%s: field '%s'", bad[i].json, err.field);
        json_decref(b);
    }
    /* --json output: typed values */
    json_t *h = dpd_config_value(&c, dpd_config_find("hidden"));
    CHECK(json_integer_value(h) == 1024, "value of hidden");
    json_decref(h);
    json_decref(small);
    json_decref(j);
}

static void test_meta(void) {
    dpd_model_cfg m = {0}, back;
    snprintf(m.family, sizeof m.family, "gru");
    m.hidden = 23, m.layers = 2;
    json_t *md = json_object();
    dpd_config_model_meta(&m, md);
    char *t = json_dumps(md, JSON_COMPACT | JSON_PRESERVE_ORDER);
    CHECK(!strcmp(t, "{\"family\":\"gru\",\"hidden\":\"23\",\"layers\":\"2\"}"), "gru meta: %s", t);
    free(t);
    dpd_error err = {0};
    CHECK(dpd_config_model_from_meta(md, &back, "a.safetensors", &err) == DPD_OK && !memcmp(&m, &back, sizeof m),
          "gru meta round trip: %s", err.msg);
    json_decref(md);

    /* every group, in ckpt.c's order and format */
    memset(&m, 0, sizeof m);
    snprintf(m.family, sizeof m.family, "gmp_ls");
    m.hidden = 1, m.layers = 1, m.order = 5, m.memory = 0, m.cross = 0, m.thx = 0.25, m.thh = 0, m.units = 4;
    md = json_object();
    dpd_config_model_meta(&m, md);
    t = json_dumps(md, JSON_COMPACT | JSON_PRESERVE_ORDER);
    CHECK(!strcmp(t, "{\"family\":\"gmp_ls\",\"hidden\":\"1\",\"layers\":\"1\",\"order\":\"5\",\"memory\":\"0\","
                     "\"cross\":\"0\",\"thx\":\"0.25\",\"thh\":\"0\",\"units\":\"4\"}"),
          "all groups: %s", t);
    free(t);
    CHECK(dpd_config_model_from_meta(md, &back, "a.safetensors", &err) == DPD_OK && !memcmp(&m, &back, sizeof m),
          "all groups round trip: %s", err.msg);
    json_decref(md);
    /* %.9g as before: thx reads back to float precision (the model computes in float) */
    m.thx = (float)0.1;
    md = json_object();
    dpd_config_model_meta(&m, md);
    CHECK(!strcmp(json_string_value(json_object_get(md, "thx")), "0.100000001"), "thx %%.9g");
    CHECK(dpd_config_model_from_meta(md, &back, "a.safetensors", &err) == DPD_OK && (float)back.thx == (float)m.thx, "thx back");
    json_decref(md);

    struct {
        const char *json, *msg;
    } bad[] = { /* the file is at fault, not an option: the key in the message, no err->field */
        {"{\"family\":\"gru\",\"layers\":\"1\"}",
         "a.safetensors: not a valid checkpoint: __metadata__ 'hidden' is missing or not a whole number 0..1048576 (not "
         "written by dpd?)"},
        {"{\"hidden\":\"1\",\"layers\":\"1\"}",
         "a.safetensors: not a valid checkpoint: __metadata__ 'family' is missing or empty (not written by dpd?)"},
        {"{\"family\":\"gru\",\"hidden\":\"-3\",\"layers\":\"1\"}",
         "a.safetensors: not a valid checkpoint: __metadata__ 'hidden' is missing or not a whole number 0..1048576 (not "
         "written by dpd?)"},
        {"{\"family\":\"gru\",\"hidden\":\"99999999999999999999\",\"layers\":\"1\"}",
         "a.safetensors: not a valid checkpoint: __metadata__ 'hidden' is missing or not a whole number 0..1048576 (not "
         "written by dpd?)"},
        {"{\"family\":\"mp\",\"hidden\":\"1\",\"layers\":\"1\",\"order\":\"5\",\"memory\":\"x\",\"cross\":\"0\"}",
         "a.safetensors: not a valid checkpoint: __metadata__ 'memory' is missing or not a whole number 0..1048576"},
        {"{\"family\":\"mp\",\"hidden\":\"1\",\"layers\":\"1\",\"order\":\"5\"}",
         "a.safetensors: not a valid checkpoint: __metadata__ 'memory' is missing or not a whole number 0..1048576"},
        {"{\"family\":\"gru\",\"hidden\":\"1\",\"layers\":\"1\",\"units\":\"2.5\"}",
         "a.safetensors: not a valid checkpoint: __metadata__ 'units' is missing or not a whole number 0..1048576"},
        {"{\"family\":\"gru\",\"hidden\":\"1\",\"layers\":\"1\",\"thx\":\"a\",\"thh\":\"0\"}",
         "a.safetensors: not a valid checkpoint: __metadata__ 'thx' is missing or not a finite number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_error_t je;
        json_t *b = json_loads(bad[i].json, 0, &je);
        memset(&err, 0, sizeof err);
        CHECK(dpd_config_model_from_meta(b, &back, "a.safetensors", &err) == DPD_E_FORMAT, "%s: status", bad[i].json);
        CHECK(!strcmp(err.msg, bad[i].msg), "%s: '%s'", bad[i].json, err.msg);
        CHECK(!err.field[0], "%s: field '%s'", bad[i].json, err.field);
        json_decref(b);
    }
    CHECK(dpd_config_model_from_meta(NULL, &back, "a.safetensors", &err) == DPD_E_FORMAT, "no metadata");
    /* family in metadata is stored lower-case */
    json_t *up = json_pack("{s:s, s:s, s:s}", "family", "LSTM", "hidden", "8", "layers", "2");
    CHECK(dpd_config_model_from_meta(up, &back, "a", &err) == DPD_OK && !strcmp(back.family, "lstm"), "LSTM meta");
    CHECK(dpd_config_check_model(&back, &err) == DPD_OK, "LSTM-8x2 checks: %s", err.msg);
    json_decref(up);
}

int main(void) {
    test_table();
    test_defaults();
    test_set_get();
    test_messages();
    test_family();
    test_json();
    test_meta();
    return check_done("config");
}
