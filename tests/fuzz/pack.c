/* Fuzzes pack archives and their pack.json: dpd_pack_install on the input as a .tar.gz (libarchive
 * also reads an uncompressed tar, which the fuzzer mutates better: the seeds hold both) with its
 * SHA-256 in a .sha256 file beside it, XDG_DATA_HOME in the scratch directory, and a validation
 * helper that does not exist, so a pack that passes every check is refused harmlessly at
 * validation. The oracle: the install never succeeds, and after the call the scratch directory
 * holds exactly what it held before (the archive, its .sha256, the packs directory and its
 * validation lock): nothing was written outside staging and staging is gone. abort() otherwise,
 * naming the stray path.
 *
 * Speed: starting the helper is one fork of this large sanitized process per archive that passes
 * every check, which made it the harness's main cost. So the harness itself holds the validation
 * lock (packs/.validate.lock, with its own pid, as a live dpd would) and such an archive is
 * refused by the library at validation as "validation in progress", after the same extraction
 * and checks and the same clean-up of staging. For one input in 256 (the first byte of its
 * SHA-256 is 0: fixed per input, so a replay takes the same path) the harness lets go of the lock
 * and the library forks for the missing helper as before, so that path stays covered; but only
 * the first time the process sees those bytes. The fuzzer often runs the same bytes again (a
 * mutation of a tar's zero padding changes nothing, and an input that reaches the helper is a
 * rare one, which the fuzzer picks often), and each fork cost about 150 ms here. */
#include <dirent.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/file.h>

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
        struct stat st; /* the entry's type from readdir when the file system gives it (tmpfs does) */
        int isdir = e->d_type == DT_UNKNOWN ? !lstat(full, &st) && S_ISDIR(st.st_mode) : e->d_type == DT_DIR;
        if (isdir) check_tree(full, r);
    }
    closedir(d);
}

/* fz_write without stdio (no FILE, no buffer, no fstat): the same file, truncated and rewritten. */
static void put(const char *path, const void *data, size_t n) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || (n && write(fd, data, n) != (ssize_t)n) || close(fd)) perror(path), abort();
}

/* 1 the first time this process sees an input with this SHA-256 (a set of its bytes 1-8; byte 0
 * is 0 for every input asked about), 0 after that, and 0 for all once the set is 3/4 full. */
static int first_time(const unsigned char *md) {
    enum { SLOTS = 1 << 16 };
    static uint64_t seen[SLOTS]; /* 0: an empty slot (a digest whose bytes 1-8 are 0 counts as seen) */
    static size_t n;
    uint64_t k;
    memcpy(&k, md + 1, sizeof k);
    if (!k) return 0;
    size_t i = (size_t)(k % SLOTS);
    for (; seen[i]; i = (i + 1) % SLOTS)
        if (seen[i] == k) return 0;
    if (n >= SLOTS / 4 * 3) return 0;
    seen[i] = k, n++;
    return 1;
}

/* Takes the validation lock (exclusive flock on its own descriptor, which the library's open of
 * the same file does not share) and records this process as its holder, as the library does: the
 * library's unlock empties the record. Aborts when it cannot: fuzzing with an unexpected lock
 * state would test something else. */
static void take_lock(int fd) {
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (flock(fd, LOCK_EX | LOCK_NB) || ftruncate(fd, 0) || pwrite(fd, pid, (size_t)n, 0) != n)
        perror("pack harness: validation lock"), abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready, lock = -1;
    char path[4096], side[4096], missing[4096];
    if (!ready) {
        fz_xdg();
        setenv("DPD_PACK_TIMEOUT", "5", 1);
        fz_mkdir(fz_path(path, "config"));
        fz_mkdir(fz_path(path, "data"));
        fz_mkdir(fz_path(path, "data/dpd"));
        fz_mkdir(fz_path(path, "data/dpd/packs"));
        lock = open(fz_path(path, "data/dpd/packs/.validate.lock"), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (lock < 0) perror(path), abort();
        take_lock(lock);
        ready = 1;
    }
    unsigned char md[32];
    unsigned len = 0;
    char hex[65];
    if (!EVP_Digest(data, size, md, &len, EVP_sha256(), NULL)) abort();
    static const char digit[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) hex[2 * i] = digit[md[i] >> 4], hex[2 * i + 1] = digit[md[i] & 15];
    hex[64] = 0;
    put(fz_path(path, "in.tar.gz"), data, size);
    put(fz_path(side, "in.tar.gz.sha256"), hex, 64);
    fz_path(missing, "no-such-helper");

    int helper = md[0] == 0 && first_time(md); /* this input goes as far as the (missing) helper */
    if (helper && flock(lock, LOCK_UN)) perror("pack harness: validation lock"), abort();
    char installed[256] = "";
    dpd_error err;
    dpd_status s = dpd_pack_install(path, "", missing, installed, sizeof installed, &err);
    fz_note("dpd_pack_install", s, &err);
    if (helper) take_lock(lock);
    if (!s) {
        fprintf(stderr, "pack oracle: installed '%s' although the helper does not exist\n", installed);
        abort();
    }
    check_tree(fz_dir(), "");
    return 0;
}
