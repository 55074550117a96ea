/* Fuzzes pack archives and their pack.json: dpd_pack_install on the input as a .tar.gz (libarchive
 * also reads an uncompressed tar, which the fuzzer mutates better: the seeds hold both) with its
 * SHA-256 in a .sha256 file beside it, XDG_DATA_HOME in the scratch directory, and a validation
 * helper that does not exist, so a pack that passes every check is refused harmlessly at
 * validation. The oracle: after the call the scratch directory holds exactly what it held before
 * (the archive, its .sha256, the packs directory and its validation lock): nothing was written
 * outside staging and staging is gone. abort() otherwise, naming the stray path. */
#include <dirent.h>
#include <openssl/evp.h>

#include "fuzz.h"

static const char *const EXPECTED[] = {"in.tar.gz", "in.tar.gz.sha256", "data", "data/dpd", "data/dpd/packs",
                                       "data/dpd/packs/.validate.lock", "config", NULL};

/* Aborts on any entry under dir (relative name rel) that is not in EXPECTED. */
static void check_tree(const char *dir, const char *rel) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char r[4096], full[8300];
        snprintf(r, sizeof r, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
        snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
        int ok = 0;
        for (int i = 0; EXPECTED[i]; i++) ok |= !strcmp(r, EXPECTED[i]);
        if (!ok) {
            fprintf(stderr, "pack oracle: '%s' exists after a refused install\n", full);
            abort();
        }
        struct stat st;
        if (!lstat(full, &st) && S_ISDIR(st.st_mode)) check_tree(full, r);
    }
    closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready;
    char path[4096], side[4096], missing[4096];
    if (!ready) {
        fz_xdg();
        setenv("DPD_PACK_TIMEOUT", "5", 1);
        fz_mkdir(fz_path(path, "config"));
        ready = 1;
    }
    unsigned char md[32];
    unsigned len = 0;
    char hex[65];
    if (!EVP_Digest(data, size, md, &len, EVP_sha256(), NULL)) abort();
    for (int i = 0; i < 32; i++) sprintf(hex + 2 * i, "%02x", md[i]);
    fz_write(fz_path(path, "in.tar.gz"), data, size);
    fz_write_str(fz_path(side, "in.tar.gz.sha256"), hex);
    fz_path(missing, "no-such-helper");

    char installed[256] = "";
    dpd_error err;
    dpd_status s = dpd_pack_install(path, "", missing, installed, sizeof installed, &err);
    fz_note("dpd_pack_install", s, &err);
    if (!s) {
        fprintf(stderr, "pack oracle: installed '%s' although the helper does not exist\n", installed);
        abort();
    }
    check_tree(fz_dir(), "");
    return 0;
}
