/* providers: `dpd providers [--json]` (providers, devices, packs, the active choice and why, the
 * CPU worker count, batch bounds) and `dpd config show|set KEY VALUE`. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "exec.h"
#include "provider.h"
#include "settings.h"

static void devices(const dpd_provider *p, int json) {
    int n = p->i->device_count(p->ctx);
    for (int d = 0; d < n; d++) {
        dpd_device_info info;
        if (p->i->device_info(p->ctx, d, &info)) continue;
        if (json)
            printf("%s{\"name\":%s,\"memory\":%llu,\"arch\":%s,\"driver\":%d,\"runtime\":%d}", d ? "," : "",
                   cli_q(info.name), (unsigned long long)info.memory, cli_q(info.arch), info.driver, info.runtime);
        else if (!info.memory)
            printf("    device %d: %s, %s, system memory\n", d, info.name, info.arch);
        else
            printf("    device %d: %s, %s, %.1f GiB, driver %d, runtime %d\n", d, info.name, info.arch,
                   (double)info.memory / (1 << 30), info.driver, info.runtime);
    }
}

int cmd_providers(int argc, char **argv) {
    int json = argc == 1 && !strcmp(argv[0], "--json");
    if (argc && !json) {
        fprintf(stderr, "usage: dpd providers [--json]\n");
        return 2;
    }
    dpd_settings st;
    dpd_error err;
    if (dpd_settings_load(&st, &err)) return cli_fail(&err);
    const dpd_provider *active;
    char reason[1024], pack[4096];
    if (dpd_provider_select(NULL, &active, reason, sizeof reason, &err)) snprintf(reason, sizeof reason, "%s", err.msg);
    dpd_pack_active("cuda", pack, sizeof pack);
    int workers = dpd_cpu_level_threads(st.cpu_level);
    dpd_provider_cpu_threads(workers);
    /* The batch bound of the active device provider, for the reference model (GRU-23, frame 200). */
    const dpd_provider *gpu = strcmp(active->i->name, "cpu") ? active : NULL;
    dpd_model_cfg ref = {.family = "gru", .hidden = 23, .layers = 1};
    dpd_device_info d;
    int bound = gpu && !gpu->i->device_info(gpu->ctx, 0, &d)
                    ? dpd_settings_batch_bound(st.gpu_memory, d.memory, dpd_exec_seq_bytes(&ref, 200))
                    : 0;
    if (json) {
        printf("{\"settings\":{\"provider\":\"%s\",\"cpu_level\":\"%s\",\"gpu_memory\":\"%s\"},\"providers\":[", st.provider,
               st.cpu_level, st.gpu_memory);
        printf("{\"name\":\"cpu\",\"devices\":[");
        devices(dpd_provider_cpu(), 1);
        printf("]},{\"name\":\"cuda\",\"pack\":%s,\"devices\":[", cli_q(pack));
        if (gpu) devices(gpu, 1);
        printf("]}],\"active\":\"%s\",\"reason\":%s,\"workers\":%d,\"packs_dir\":%s,\"batch_bounds\":{\"cpu\":null",
               active->i->name, cli_q(reason), workers, cli_q(dpd_packs_dir()));
        if (gpu) printf(",\"%s\":{\"model\":\"gru-23\",\"frame\":200,\"batch\":%d}", gpu->i->name, bound);
        printf("}}\n");
        return 0;
    }
    printf("settings (%s): provider %s, cpu_level %s, gpu_memory %s\n", dpd_settings_path(), st.provider, st.cpu_level,
           st.gpu_memory);
    printf("  cpu: built in, %d workers, batches unbounded\n", workers);
    devices(dpd_provider_cpu(), 0);
    printf("  cuda: %s\n", pack[0] ? pack : "no pack installed (make pack-cuda; dpd pack install FILE)");
    if (gpu) {
        devices(gpu, 0);
        printf("    batch bound at gpu_memory %s: %d sequences of GRU-23 x 200\n", st.gpu_memory, bound);
    }
    printf("active: %s (%s)\n", active->i->name, reason);
    printf("packs: %s\n", dpd_packs_dir());
    return 0;
}

int cmd_config(int argc, char **argv) {
    dpd_settings st;
    dpd_error err;
    if (dpd_settings_load(&st, &err)) return cli_fail(&err);
    if (argc == 1 && !strcmp(argv[0], "show")) {
        printf("provider %s\ncpu_level %s\ngpu_memory %s\n", st.provider, st.cpu_level, st.gpu_memory);
        if (st.reason[0]) printf("reason %s\n", st.reason);
        printf("# %s\n", dpd_settings_path());
        return 0;
    }
    if (argc == 3 && !strcmp(argv[0], "set")) {
        if (dpd_settings_set(&st, argv[1], argv[2], &err)) {
            fprintf(stderr, "dpd: %s\n", err.msg);
            return 2;
        }
        return dpd_settings_save(&st, &err) ? cli_fail(&err) : 0;
    }
    fprintf(stderr, "usage: dpd config show | dpd config set KEY VALUE (provider, cpu_level, gpu_memory)\n");
    return 2;
}
