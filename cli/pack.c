/* pack: `dpd pack install FILE [--sha256 HEX] | list | verify NAME | activate NAME | remove NAME`,
 * and the helper's `dpd pack probe DIR` (run by install and activate in a separate process). */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static const char *const usage =
    "usage: dpd pack install FILE [--sha256 HEX] | list | verify NAME | activate NAME | remove NAME\n\n"
    "Runtime packs (execution providers such as cuda) live in $XDG_DATA_HOME/dpd/packs. install checks\n"
    "the archive's sha256 (FILE.sha256 unless --sha256 is given), validates the pack in a helper process\n"
    "and activates it; a pack that cannot activate here sets the provider preference to cpu.\n";

/* This very binary, for the helper process. */
static const char *self(void) {
    static char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    path[n > 0 ? n : 0] = 0;
    return path;
}

static int list(void) {
    const char *packs = dpd_packs_dir();
    DIR *d = opendir(packs);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d))) {
        char pj[4400], active[4300], dir[4400], prov[64];
        struct stat st;
        if (e->d_name[0] == '.' || !strncmp(e->d_name, "active-", 7)) continue;
        snprintf(dir, sizeof dir, "%s/%s", packs, e->d_name);
        snprintf(pj, sizeof pj, "%s/pack.json", dir);
        if (stat(pj, &st) || !S_ISREG(st.st_mode)) continue;
        snprintf(prov, sizeof prov, "%s", e->d_name); /* <provider>-<version> */
        if (strchr(prov, '-')) *strchr(prov, '-') = 0;
        dpd_pack_active(prov, active, sizeof active);
        printf("%s%s\n", e->d_name, strcmp(active, dir) ? "" : " (active)");
        n++;
    }
    if (d) closedir(d);
    if (!n) printf("no packs installed in %s\n", packs);
    return 0;
}

int cmd_pack(int argc, char **argv) {
    dpd_error err = {0};
    const char *verb = argc ? argv[0] : "";
    if ((argc >= 1 && cli_is_help(argv[0])) || (argc >= 2 && cli_is_help(argv[argc - 1]))) {
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(verb, "probe") && argc == 2) { /* the helper process */
        char info[1024] = "";
        dpd_status s = dpd_pack_probe(argv[1], info, sizeof info, &err);
        printf("%s\n", s ? err.msg : info);
        return s == DPD_OK ? 0 : s == DPD_E_DEVICE ? 3 : 4;
    }
    if (!strcmp(verb, "install") && (argc == 2 || (argc == 4 && !strcmp(argv[2], "--sha256")))) {
        char name[256];
        if (dpd_pack_install(argv[1], argc == 4 ? argv[3] : "", self(), name, sizeof name, &err)) return cli_fail(&err);
        printf("installed and active: %s (in %s)\n", name, dpd_packs_dir());
        return 0;
    }
    if (!strcmp(verb, "list") && argc == 1) return list();
    if (argc == 2 && !strcmp(verb, "verify")) {
        if (dpd_pack_verify(argv[1], &err)) return cli_fail(&err);
        printf("%s: every file matches pack.json\n", argv[1]);
        return 0;
    }
    if (argc == 2 && !strcmp(verb, "activate")) {
        if (dpd_pack_activate(argv[1], self(), &err)) return cli_fail(&err);
        printf("active: %s\n", argv[1]);
        return 0;
    }
    if (argc == 2 && !strcmp(verb, "remove")) return dpd_pack_remove(argv[1], &err) ? cli_fail(&err) : 0;
    fputs(usage, stderr);
    return 2;
}
