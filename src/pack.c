/* pack: see pack.h and docs/providers.md. */
#include "pack.h"

#include <archive.h>
#include <archive_entry.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <openssl/evp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "file.h"
#include "json.h"
#include "lazy.h"
#include "provider.h"
#include "settings.h"
#include "status.h"

#define MAX_BYTES (512ull << 20) /* archive and extracted content */
#define MAX_FILES 256             /* archive entries, and pack.json files[] entries */
#define MAX_PATH 512              /* a path inside a pack, with its terminating NUL */
#define STALE_SECONDS 3600        /* a .staging-<pid> directory this old is a leftover, whoever made it */

/* SHA-256 of a regular file of at most MAX_BYTES (dpd_file_open: a FIFO or a device is refused
 * without blocking; one that grows past the limit while hashed is refused) as lowercase hex (65
 * bytes). */
static dpd_status sha256_file(const char *path, char *hex, unsigned long long *size, dpd_error *err) {
    int fd;
    uint64_t at_open;
    dpd_status s = dpd_file_open(path, MAX_BYTES, "pack file", &fd, &at_open, err);
    if (s) return s;
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    EVP_DigestInit_ex(c, EVP_sha256(), NULL);
    unsigned char buf[1 << 16], md[32];
    ssize_t n;
    unsigned long long total = 0;
    while ((n = read(fd, buf, sizeof buf)) != 0) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 || (total += (unsigned long long)n) > MAX_BYTES) {
            s = n < 0 ? dpd_fail(err, DPD_E_IO, "%s: cannot read: %s", path, strerror(errno))
                      : dpd_fail(err, DPD_E_FORMAT, "%s: grew past %llu MiB while hashed: refused", path, MAX_BYTES >> 20);
            break;
        }
        EVP_DigestUpdate(c, buf, (size_t)n);
    }
    unsigned len = 0;
    EVP_DigestFinal_ex(c, md, &len);
    EVP_MD_CTX_free(c);
    close(fd);
    if (s) return s;
    for (int i = 0; i < 32; i++) sprintf(hex + 2 * i, "%02x", md[i]);
    if (size) *size = total;
    return DPD_OK;
}

static void rm_rf(const char *path) {
    struct stat st;
    if (lstat(path, &st)) return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[4300];
            snprintf(p, sizeof p, "%s/%s", path, e->d_name);
            rm_rf(p);
        }
        if (d) closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* A path inside a pack in its one spelling: "./lib//x.so" and "lib/x.so/" are "lib/x.so"; "./"
 * is "" (the pack's root). Returns NULL when p is fine (out holds the spelling), else why it is
 * refused: absolute, "..", or longer than MAX_PATH - 1. */
static const char *norm_path(const char *p, char out[MAX_PATH]) {
    out[0] = 0;
    if (p[0] == '/') return "is absolute";
    if (strlen(p) >= MAX_PATH) return "is longer than 511 characters";
    char buf[MAX_PATH];
    size_t n = 0;
    snprintf(buf, sizeof buf, "%s", p);
    for (char *save, *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (!strcmp(c, "..")) return "leaves the pack (..)";
        if (!strcmp(c, ".")) continue;
        n += (size_t)snprintf(out + n, MAX_PATH - n, "%s%s", n ? "/" : "", c);
    }
    return NULL;
}

/* A plain name in the packs directory: [A-Za-z0-9._+-]{1,max}, not starting with '.', so
 * neither "." nor ".." nor a hidden staging directory. A version has max 63; a pack's name
 * (<provider>-<version>) 95. */
static int name_ok(const char *v, size_t max) {
    size_t n = 0;
    for (; v[n]; n++)
        if (!(isalnum((unsigned char)v[n]) || strchr("._+-", v[n]))) return 0;
    return n >= 1 && n <= max && v[0] != '.';
}

/* 1 when path (not followed when it is itself a link) names an entry directly inside the packs
 * directory once every link of its parent is resolved, so that deleting or installing it cannot
 * touch anything outside. path need not exist. */
static int in_packs(const char *path) {
    char packs[PATH_MAX], parent[PATH_MAX], dir[4400];
    if (!realpath(dpd_packs_dir(), packs)) return 0;
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || !slash[1] || !strcmp(slash + 1, ".") || !strcmp(slash + 1, "..")) return 0;
    *slash = 0;
    if (!realpath(dir[0] ? dir : "/", parent)) return 0;
    return !strcmp(parent, packs);
}

/* An installed pack's name as given to verify, activate and remove. */
static int pack_name_ok(const char *name) { return name_ok(name, 95) && strncmp(name, "active-", 7); }

/* libarchive's functions, in the order of ar_names: loaded at the first pack (lazy.h). */
static struct {
    __typeof__(archive_entry_filetype) *entry_filetype;
    __typeof__(archive_entry_hardlink) *entry_hardlink;
    __typeof__(archive_entry_pathname) *entry_pathname;
    __typeof__(archive_entry_perm) *entry_perm;
    __typeof__(archive_entry_size) *entry_size;
    __typeof__(archive_error_string) *error_string;
    __typeof__(archive_read_data_into_fd) *read_data_into_fd;
    __typeof__(archive_read_free) *read_free;
    __typeof__(archive_read_new) *read_new;
    __typeof__(archive_read_next_header) *read_next_header;
    __typeof__(archive_read_open_filename) *read_open_filename;
    __typeof__(archive_read_support_filter_gzip) *read_support_filter_gzip;
    __typeof__(archive_read_support_format_tar) *read_support_format_tar;
} ar;
static const char *const ar_names[] = {"archive_entry_filetype", "archive_entry_hardlink", "archive_entry_pathname",
                                       "archive_entry_perm", "archive_entry_size", "archive_error_string",
                                       "archive_read_data_into_fd", "archive_read_free", "archive_read_new",
                                       "archive_read_next_header", "archive_read_open_filename",
                                       "archive_read_support_filter_gzip", "archive_read_support_format_tar"};
_Static_assert(sizeof ar == sizeof ar_names / sizeof *ar_names * sizeof(void *), "a name for each function");
static lazy_lib libarchive = {DPD_LIBARCHIVE_SONAME, "libarchive13"};

/* Extracts regular files and directories only, within the size and count caps. */
static dpd_status extract(const char *file, const char *stage, dpd_error *err) {
    if (!lazy_load(&libarchive, ar_names, (void **)&ar, sizeof ar_names / sizeof *ar_names)) {
        char what[4400];
        snprintf(what, sizeof what, "%s: a pack is unpacked by libarchive", file);
        return lazy_fail(&libarchive, what, err);
    }
    struct archive *a = ar.read_new();
    ar.read_support_filter_gzip(a);
    ar.read_support_format_tar(a);
    dpd_status s = DPD_OK;
    if (ar.read_open_filename(a, file, 1 << 16) != ARCHIVE_OK) {
        s = dpd_fail(err, DPD_E_FORMAT, "%s: not a tar.gz archive: %s", file, ar.error_string(a));
        goto done;
    }
    struct archive_entry *e;
    unsigned long long total = 0;
    int count = 0, r;
    char seen[MAX_FILES][MAX_PATH];
    while ((r = ar.read_next_header(a, &e)) == ARCHIVE_OK) {
        const char *name = ar.entry_pathname(e), *bad;
        char rel[MAX_PATH];
        if (!name) name = "";
        if ((bad = norm_path(name, rel))) {
            s = dpd_fail(err, DPD_E_FORMAT, "%s: entry '%s' %s: refused", file, name, bad);
            goto done;
        }
        mode_t type = ar.entry_filetype(e);
        if (!rel[0] && type == AE_IFDIR) continue; /* "./": the pack's root */
        if (!rel[0]) {
            s = dpd_fail(err, DPD_E_FORMAT, "%s: entry '%s' has no name: refused", file, name);
            goto done;
        }
        if (type != AE_IFREG && type != AE_IFDIR) {
            s = dpd_fail(err, DPD_E_FORMAT, "%s: entry '%s' is a %s, not a file or directory: refused", file, name,
                         type == AE_IFLNK ? "symbolic link" : ar.entry_hardlink(e) ? "hard link" : "special file");
            goto done;
        }
        if (ar.entry_hardlink(e)) {
            s = dpd_fail(err, DPD_E_FORMAT, "%s: entry '%s' is a hard link: refused", file, name);
            goto done;
        }
        if (++count > MAX_FILES) {
            s = dpd_fail(err, DPD_E_FORMAT, "%s: more than %d entries: refused", file, MAX_FILES);
            goto done;
        }
        for (int i = 0; i < count - 1; i++)
            if (!strcmp(seen[i], rel)) {
                s = dpd_fail(err, DPD_E_FORMAT, "%s: entry '%s' appears twice: refused", file, rel);
                goto done;
            }
        snprintf(seen[count - 1], sizeof seen[0], "%s", rel);
        char out[4700];
        snprintf(out, sizeof out, "%s/%s", stage, rel);
        if (type == AE_IFDIR) {
            if ((s = dpd_mkdirs(out, err))) goto done;
            continue;
        }
        total += (unsigned long long)ar.entry_size(e);
        if (total > MAX_BYTES) {
            s = dpd_fail(err, DPD_E_FORMAT, "%s: content larger than %llu MiB: refused", file, MAX_BYTES >> 20);
            goto done;
        }
        char dir[4700];
        snprintf(dir, sizeof dir, "%s", out);
        *strrchr(dir, '/') = 0;
        if ((s = dpd_mkdirs(dir, err))) goto done;
        int fd = open(out, O_WRONLY | O_CREAT | O_EXCL, (ar.entry_perm(e) & 0111) ? 0755 : 0644);
        if (fd < 0) {
            s = dpd_fail(err, DPD_E_IO, "%s: cannot create: %s", out, strerror(errno));
            goto done;
        }
        int rr = ar.read_data_into_fd(a, fd);
        close(fd);
        if (rr != ARCHIVE_OK) {
            s = dpd_fail(err, DPD_E_FORMAT, "%s: entry '%s' is corrupt: %s", file, name, ar.error_string(a));
            goto done;
        }
    }
    if (r != ARCHIVE_EOF) s = dpd_fail(err, DPD_E_FORMAT, "%s: corrupt archive: %s", file, ar.error_string(a));
done:
    ar.read_free(a);
    return s;
}

/* Every file under dir (relative paths) into list; returns the count or -1. */
static int list_files(const char *root, const char *rel, char (*list)[MAX_PATH], int n, int max) {
    char path[4700];
    snprintf(path, sizeof path, "%s%s%s", root, rel[0] ? "/" : "", rel);
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char r[1024], full[4800];
        snprintf(r, sizeof r, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
        snprintf(full, sizeof full, "%s/%s", root, r);
        struct stat st;
        if (lstat(full, &st)) continue;
        if (S_ISDIR(st.st_mode)) n = list_files(root, r, list, n, max);
        else if (n < max) snprintf(list[n++], MAX_PATH, "%s", r);
    }
    if (d) closedir(d);
    return n;
}

/* pack.json against the files of dir: ABI version, every listed file present with its size and
 * hash, nothing extra. Fills provider and version. */
static dpd_status check_manifest(const char *dir, char *provider, char *version, dpd_error *err) {
    char path[4300];
    snprintf(path, sizeof path, "%s/pack.json", dir);
    json_t *j = dpd_json_load(path, "a pack.json", err);
    if (!j) return err ? (err->status = DPD_E_FORMAT) : DPD_E_FORMAT;
    dpd_status s = DPD_OK;
    char (*have)[MAX_PATH] = NULL; /* the files present (on the heap, not static) */
    json_t *files = json_object_get(j, "files");
    const char *prov = json_string_value(json_object_get(j, "provider")), *ver = json_string_value(json_object_get(j, "pack_version"));
    const char *lib = json_string_value(json_object_get(j, "library"));
    json_t *abi = json_object_get(j, "abi_version");
    if (!prov || !ver || !lib || !json_is_integer(abi) || !json_is_array(files)) {
        s = dpd_fail(err, DPD_E_FORMAT, "pack.json: needs provider, pack_version, library, abi_version and files");
        goto done;
    }
    if (json_integer_value(abi) < 1 || json_integer_value(abi) > DPD_PROVIDER_API) {
        s = dpd_fail(err, DPD_E_UNSUPPORTED,
                     "pack.json: provider ABI version %lld, this dpd speaks %d (or 1): install a pack built for dpd %s",
                     json_integer_value(abi), DPD_PROVIDER_API, DPD_VERSION);
        goto done;
    }
    if (!dpd_provider_name_ok(prov)) {
        s = dpd_fail(err, DPD_E_FORMAT, "pack.json: provider '%s' is not a provider name ([a-z0-9_], at most 31 "
                     "characters)", prov);
        goto done;
    }
    if (!name_ok(ver, 63)) { /* <provider>-<version> is a directory of the packs directory */
        s = dpd_fail(err, DPD_E_FORMAT, "pack.json: pack_version '%s' is not a version ([A-Za-z0-9._+-], at most 63 "
                     "characters, not starting with '.')", ver);
        goto done;
    }
    snprintf(provider, 32, "%s", prov), snprintf(version, 64, "%s", ver);
    size_t nf = json_array_size(files);
    if (nf > MAX_FILES) {
        s = dpd_fail(err, DPD_E_FORMAT, "pack.json: files lists %zu files, at most %d: refused", nf, MAX_FILES);
        goto done;
    }
    char libn[MAX_PATH], (*listed)[MAX_PATH];
    if (norm_path(lib, libn) || !libn[0]) {
        s = dpd_fail(err, DPD_E_FORMAT, "pack.json: library '%s' is not a path inside the pack", lib);
        goto done;
    }
    /* the files present, then the normalized paths listed (one block: MAX_FILES x 2 x 512 bytes) */
    if (!(have = malloc(2 * MAX_FILES * sizeof *have))) {
        s = dpd_fail(err, DPD_E_NOMEM, "out of memory");
        goto done;
    }
    listed = have + MAX_FILES;
    int nh = list_files(dir, "", have, 0, MAX_FILES), lib_listed = 0;
    size_t i;
    json_t *f;
    json_array_foreach(files, i, f) { /* every path checked and compared before any hashing */
        const char *p = json_string_value(json_object_get(f, "path")), *sum = json_string_value(json_object_get(f, "sha256"));
        json_t *sz = json_object_get(f, "size");
        const char *bad = p ? norm_path(p, listed[i]) : NULL;
        if (!p || !sum || !json_is_integer(sz)) {
            s = dpd_fail(err, DPD_E_FORMAT, "pack.json: files[%zu] needs a path, a size and a sha256", i);
            goto done;
        }
        if (bad || !listed[i][0]) {
            s = dpd_fail(err, DPD_E_FORMAT, "pack.json: files[%zu]: path '%s' %s: refused", i, p,
                         bad ? bad : "names the pack itself");
            goto done;
        }
        for (size_t k = 0; k < i; k++)
            if (!strcmp(listed[k], listed[i])) {
                s = dpd_fail(err, DPD_E_FORMAT, "pack.json: files lists '%s' twice (files[%zu] and files[%zu]): refused",
                             listed[i], k, i);
                goto done;
            }
    }
    json_array_foreach(files, i, f) {
        const char *p = listed[i], *sum = json_string_value(json_object_get(f, "sha256"));
        long long want = json_integer_value(json_object_get(f, "size"));
        char full[4800], hex[65];
        unsigned long long size;
        struct stat st;
        snprintf(full, sizeof full, "%s/%s", dir, p);
        if (lstat(full, &st) || !S_ISREG(st.st_mode)) {
            s = dpd_fail(err, DPD_E_FORMAT, "pack: '%s' is listed in pack.json but missing", p);
            goto done;
        }
        if ((unsigned long long)st.st_size != (unsigned long long)want) {
            s = dpd_fail(err, DPD_E_FORMAT, "pack: '%s' does not match pack.json: size %llu bytes, pack.json says %lld", p,
                         (unsigned long long)st.st_size, want);
            goto done;
        }
        if ((s = sha256_file(full, hex, &size, err))) goto done;
        if (size != (unsigned long long)want) {
            s = dpd_fail(err, DPD_E_FORMAT, "pack: '%s' changed while it was hashed: size %llu bytes, pack.json says %lld", p,
                         size, want);
            goto done;
        }
        if (strcasecmp(hex, sum)) {
            s = dpd_fail(err, DPD_E_FORMAT, "pack: '%s' does not match pack.json: sha256 %s, pack.json says %s", p, hex, sum);
            goto done;
        }
        lib_listed |= !strcmp(p, libn);
        for (int k = 0; k < nh; k++)
            if (!strcmp(have[k], p)) have[k][0] = 0;
    }
    for (int k = 0; k < nh; k++)
        if (have[k][0] && strcmp(have[k], "pack.json")) {
            s = dpd_fail(err, DPD_E_FORMAT, "pack: '%s' is not listed in pack.json: refused", have[k]);
            goto done;
        }
    if (!lib_listed) s = dpd_fail(err, DPD_E_FORMAT, "pack.json: library '%s' is not among the files", lib);
done:
    free(have);
    json_decref(j);
    return s;
}

/* Seconds the helper may take (DPD_PACK_TIMEOUT overrides, for the tests). */
static int probe_timeout(void) {
    const char *t = getenv("DPD_PACK_TIMEOUT");
    return t && atoi(t) > 0 ? atoi(t) : 120;
}

/* Runs `helper pack probe DIR` and collects its output; status 0, or DPD_E_DEVICE (exit 3, cannot
 * activate here) or DPD_E_FORMAT (anything else: a crash, or no answer within the timeout, when
 * the helper is killed). The helper inherits no descriptor but its output pipe, dies with the
 * thread that started it (PR_SET_PDEATHSIG), and carries its own alarm a little past the
 * timeout, so that a killed dpd leaves no helper behind. */
static dpd_status helper_probe(const char *helper, const char *dir, char *msg, size_t nmsg) {
    int fd[2];
    if (pipe2(fd, O_CLOEXEC)) return snprintf(msg, nmsg, "pipe: %s", strerror(errno)), DPD_E_IO;
    int limit = probe_timeout(), hung = 0;
    pid_t parent = getpid(), pid = fork();
    if (pid < 0) {
        close(fd[0]), close(fd[1]);
        return snprintf(msg, nmsg, "fork: %s", strerror(errno)), DPD_E_IO;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127); /* the parent died before the line above */
        alarm((unsigned)limit + 10);        /* survives exec: the helper's own timeout */
        dup2(fd[1], 1), dup2(fd[1], 2);     /* dup2 clears close-on-exec on 1 and 2 */
        execl(helper, helper, "pack", "probe", dir, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    size_t n = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        struct pollfd pf = {fd[0], POLLIN, 0};
        clock_gettime(CLOCK_MONOTONIC, &t1);
        long left = (long)limit * 1000 - ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
        if (left <= 0 || poll(&pf, 1, (int)left) == 0) {
            hung = 1;
            kill(pid, SIGKILL);
            break;
        }
        char sink[256];
        ssize_t k = n + 1 < nmsg ? read(fd[0], msg + n, nmsg - 1 - n) : read(fd[0], sink, sizeof sink);
        if (k <= 0 && !(k < 0 && errno == EINTR)) break;
        if (k > 0 && n + 1 < nmsg) n += (size_t)k;
    }
    msg[n] = 0;
    while (n && (msg[n - 1] == '\n')) msg[--n] = 0;
    close(fd[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    size_t L = strlen(msg);
    if (hung) {
        snprintf(msg + L, nmsg - L, "%sthe validation helper gave no answer within %d s and was stopped", L ? "; " : "", limit);
        return DPD_E_FORMAT;
    }
    if (WIFSIGNALED(st)) {
        snprintf(msg + L, nmsg - L, "%sthe validation helper crashed (signal %d)", L ? "; " : "", WTERMSIG(st));
        return DPD_E_FORMAT;
    }
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    return code == 0 ? DPD_OK : code == 3 ? DPD_E_DEVICE : DPD_E_FORMAT;
}

/* Takes the validation lock (packs/.validate.lock: flock, close-on-exec, holding the holder's pid
 * for the others to read). A lock whose recorded holder is gone is stale (an orphan of an older
 * dpd kept the descriptor): its file is replaced. Returns the descriptor, or -1 when another live
 * process validates. */
static int lock_validation(void) {
    char lock[4300];
    snprintf(lock, sizeof lock, "%s/.validate.lock", dpd_packs_dir());
    for (int tries = 0; tries < 3; tries++) {
        int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) return -1;
        if (flock(fd, LOCK_EX | LOCK_NB)) {
            long holder = dpd_lock_holder(fd);
            close(fd);
            if (holder <= 0 || dpd_pid_alive(holder)) return -1;
            unlink(lock); /* stale: the next open makes a fresh file */
            continue;
        }
        struct stat a, b; /* the file may have been replaced between open and flock */
        if (fstat(fd, &a) || stat(lock, &b) || a.st_ino != b.st_ino || a.st_dev != b.st_dev) {
            close(fd);
            continue;
        }
        if (ftruncate(fd, 0) == 0) dprintf(fd, "%ld\n", (long)getpid());
        return fd;
    }
    return -1;
}

static void unlock_validation(int fd) {
    if (ftruncate(fd, 0)) {} /* best effort: an empty record reads as "no holder named" */
    close(fd);
}

/* Replaces every from in buf (of size n) with to. */
static void replace_all(char *buf, size_t n, const char *from, const char *to) {
    size_t lf = strlen(from), lt = strlen(to);
    char *at = buf;
    while (lf && (at = strstr(at, from))) {
        size_t tail = strlen(at + lf);
        if ((size_t)(at - buf) + lt + tail + 1 > n) break;
        memmove(at + lt, at + lf, tail + 1);
        memcpy(at, to, lt);
        at += lt;
    }
}

/* Validates a pack directory in the helper under the exclusive validation lock. A pack that
 * cannot activate here moves the preference to cpu with the reason (fallback case 4). When dir
 * is a staging directory (deleted afterwards), archive names it in every message instead. */
static dpd_status validate(const char *dir, const char *archive, const char *helper, const char *label,
                           dpd_error *err) {
    char msg[2048];
    int fd = lock_validation();
    if (fd < 0) return dpd_fail(err, DPD_E_UNSUPPORTED, "validation in progress (another process), try again");
    dpd_status s = helper_probe(helper, dir, msg, sizeof msg);
    unlock_validation(fd);
    if (archive) {
        char from[4400], to[4400];
        snprintf(from, sizeof from, "%s/", dir), snprintf(to, sizeof to, "%s: ", archive);
        replace_all(msg, sizeof msg, from, to);
        replace_all(msg, sizeof msg, dir, archive);
    }
    if (s == DPD_E_DEVICE) {
        dpd_settings_fall_back("%s could not activate: %s", label, msg);
        return dpd_fail(err, DPD_E_DEVICE, "%s refused: it cannot activate on this machine (%s); the provider preference "
                        "is now cpu (dpd providers shows why)", label, msg);
    }
    if (s && !msg[0]) snprintf(msg, sizeof msg, "the validation helper '%s' could not be run or said nothing", helper);
    if (s) return dpd_fail(err, s, "%s refused by validation: %s", label, msg);
    return DPD_OK;
}

/* The pid of a leftover's name "<prefix><pid>" (0 when the rest is not a pid). */
static long pid_of(const char *name, const char *prefix) {
    size_t L = strlen(prefix);
    if (strncmp(name, prefix, L) || !isdigit((unsigned char)name[L])) return 0;
    char *end;
    long pid = strtol(name + L, &end, 10);
    return *end || pid <= 0 ? 0 : pid;
}

/* Removes what killed installs left in the packs directory: .staging-<pid> directories and
 * active-<name>.tmp.<pid> links of processes that are gone (or older than STALE_SECONDS, whoever
 * made them), and puts back <pack>.old.<pid> directories whose replacement never arrived.
 * Entries are never followed: a link is not a leftover of dpd and stays. */
static void clean_leftovers(void) {
    const char *packs = dpd_packs_dir();
    DIR *d = opendir(packs);
    struct dirent *e;
    time_t now = time(NULL);
    while (d && (e = readdir(d))) {
        char path[4400];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", packs, e->d_name);
        if (lstat(path, &st)) continue;
        const char *dot = strrchr(e->d_name, '.');
        long pid = pid_of(e->d_name, ".staging-");
        if (pid && S_ISDIR(st.st_mode)) {
            if (pid != (long)getpid() && (!dpd_pid_alive(pid) || now - st.st_mtime > STALE_SECONDS) && in_packs(path))
                rm_rf(path);
        } else if (dot && (pid = pid_of(dot + 1, "")) && pid != (long)getpid() && !dpd_pid_alive(pid)) {
            size_t L = (size_t)(dot - e->d_name);
            if (S_ISLNK(st.st_mode) && !strncmp(e->d_name, "active-", 7) && L > 4 && !strncmp(dot - 4, ".tmp", 4)) {
                unlink(path);
            } else if (S_ISDIR(st.st_mode) && L > 4 && !strncmp(dot - 4, ".old", 4) && in_packs(path)) {
                char pack[4400];
                snprintf(pack, sizeof pack, "%s/%.*s", packs, (int)(L - 4), e->d_name);
                if (lstat(pack, &st) == 0 || rename(path, pack)) rm_rf(path);
            }
        }
    }
    if (d) closedir(d);
}

/* Points active-<provider> at name, atomically (a new symlink renamed over the old one). */
static dpd_status switch_active(const char *provider, const char *name, dpd_error *err) {
    char link[4300], tmp[4400];
    snprintf(link, sizeof link, "%s/active-%s", dpd_packs_dir(), provider);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", link, (long)getpid());
    unlink(tmp);
    if (symlink(name, tmp) || rename(tmp, link)) {
        unlink(tmp);
        return dpd_fail(err, DPD_E_IO, "%s: cannot activate: %s", link, strerror(errno));
    }
    return DPD_OK;
}

DPD_API dpd_status dpd_pack_install(const char *file, const char *sha256, const char *helper, char *installed,
                            size_t ninstalled, dpd_error *err) {
    char want[128] = "", hex[65];
    unsigned long long size;
    struct stat st;
    if (stat(file, &st)) return dpd_fail(err, DPD_E_IO, "%s: %s", file, strerror(errno));
    if ((unsigned long long)st.st_size > MAX_BYTES)
        return dpd_fail(err, DPD_E_FORMAT, "%s: larger than %llu MiB: refused", file, MAX_BYTES >> 20);
    if (sha256 && sha256[0]) snprintf(want, sizeof want, "%s", sha256);
    else {
        char side[4300], *text;
        snprintf(side, sizeof side, "%s.sha256", file);
        if (dpd_file_read(side, &text, NULL, NULL))
            return dpd_fail(err, DPD_E_INVAL, "%s: no checksum: give its SHA-256 (dpd pack install --sha256 HEX) or put %s beside it", file, side);
        sscanf(text, "%127s", want);
        free(text);
    }
    dpd_status s = sha256_file(file, hex, &size, err);
    if (s) return s;
    if (strcasecmp(want, hex))
        return dpd_fail(err, DPD_E_FORMAT, "%s: sha256 mismatch (archive %s, expected %s): the download is corrupt or "
                        "not the pack you meant", file, hex, want);
    char stage[4300], provider[32], version[64];
    if ((s = dpd_mkdirs(dpd_packs_dir(), err))) return s;
    clean_leftovers();
    snprintf(stage, sizeof stage, "%s/.staging-%ld", dpd_packs_dir(), (long)getpid());
    rm_rf(stage);
    if ((s = dpd_mkdirs(stage, err)) || (s = extract(file, stage, err)) ||
        (s = check_manifest(stage, provider, version, err))) {
        rm_rf(stage);
        return s;
    }
    char label[128], final[4400];
    snprintf(label, sizeof label, "%s pack %s", provider, version);
    if ((s = validate(stage, file, helper, label, err))) {
        rm_rf(stage);
        return s;
    }
    snprintf(final, sizeof final, "%s/%s-%s", dpd_packs_dir(), provider, version);
    if (!in_packs(final)) { /* provider and version are plain names: this holds, and is checked anyway */
        rm_rf(stage);
        return dpd_fail(err, DPD_E_FORMAT, "%s: not directly inside %s: refused", final, dpd_packs_dir());
    }
    char old[4500];
    snprintf(old, sizeof old, "%s.old.%ld", final, (long)getpid());
    rename(final, old); /* an earlier install of the same version is replaced whole */
    if (rename(stage, final)) {
        rename(old, final);
        rm_rf(stage);
        return dpd_fail(err, DPD_E_IO, "%s: cannot install: %s", final, strerror(errno));
    }
    rm_rf(old);
    snprintf(installed, ninstalled, "%s-%s", provider, version);
    return switch_active(provider, installed, err);
}

DPD_API dpd_status dpd_pack_verify(const char *name, dpd_error *err) {
    char dir[4300], provider[32], version[64];
    if (!pack_name_ok(name))
        return dpd_fail(err, DPD_E_INVAL, "bad pack name '%s' (dpd pack list shows the installed packs)", name);
    snprintf(dir, sizeof dir, "%s/%s", dpd_packs_dir(), name);
    if (!dpd_exists(dir) || !in_packs(dir)) return dpd_fail(err, DPD_E_INVAL, "no installed pack '%s' (dpd pack list)", name);
    return check_manifest(dir, provider, version, err);
}

DPD_API dpd_status dpd_pack_activate(const char *name, const char *helper, dpd_error *err) {
    char dir[4300], provider[32], version[64];
    dpd_status s = dpd_pack_verify(name, err);
    if (s) return s;
    snprintf(dir, sizeof dir, "%s/%s", dpd_packs_dir(), name);
    check_manifest(dir, provider, version, err);
    if ((s = validate(dir, NULL, helper, name, err))) return s;
    return switch_active(provider, name, err);
}

DPD_API dpd_status dpd_pack_remove(const char *name, dpd_error *err) {
    char dir[4300], active[4300];
    if (!pack_name_ok(name))
        return dpd_fail(err, DPD_E_INVAL, "bad pack name '%s' (dpd pack list shows the installed packs)", name);
    snprintf(dir, sizeof dir, "%s/%s", dpd_packs_dir(), name);
    if (!dpd_exists(dir) || !in_packs(dir)) return dpd_fail(err, DPD_E_INVAL, "no installed pack '%s' (dpd pack list)", name);
    char provider[32];
    snprintf(provider, sizeof provider, "%s", name);
    char *dash = strchr(provider, '-');
    if (dash) *dash = 0;
    dpd_pack_active(provider, active, sizeof active);
    if (!strcmp(active, dir)) {
        char link[4400];
        snprintf(link, sizeof link, "%s/active-%s", dpd_packs_dir(), provider);
        unlink(link);
    }
    rm_rf(dir);
    return DPD_OK;
}

/* A session of provider p for model m holding B x T, with m's weights uploaded: session_open
 * (v2, with m's tensor table) when the provider has it, else session_create. */
static dpd_status probe_session(const dpd_provider *p, dpd_model *m, int B, int T, void **sess, char *msg,
                                size_t nmsg) {
    dpd_status s;
    *sess = NULL;
    if (p->i->api_version >= 2 && p->i->session_open) {
        int nt = dpd_model_ntensors(m);
        dpd_tensor *t = calloc(nt > 0 ? (size_t)nt : 1, sizeof *t);
        if (!t) return snprintf(msg, nmsg, "out of memory"), DPD_E_NOMEM;
        for (int k = 0; k < nt; k++) t[k] = *dpd_model_tensor(m, k);
        s = p->i->session_open(p->ctx, 0, dpd_model_config(m), t, nt, B, T, NULL, 0, sess, msg, nmsg);
        free(t);
    } else {
        s = p->i->session_create(p->ctx, 0, dpd_model_config(m), B, T, sess, msg, nmsg);
    }
    if (!s) s = p->i->upload(*sess, dpd_model_params(m), msg, nmsg);
    return s;
}

/* The larger of e and |d|, infinite where d is not a number (fmax would drop a NaN). */
static double worse(double e, double d) {
    d = fabs(d);
    return d <= e ? e : isnan(d) ? INFINITY : d;
}

/* Three training steps of model m (batches of B sequences of T samples of random data, clipped at
 * 1: a chunk of steps a device records and replays) on session a of provider p and on session b
 * of the cpu: the largest relative deviation of the losses and of both AdamW moments, in *dev. */
static dpd_status probe_step(const dpd_provider *p, void *a, const dpd_provider *cpu, void *b, size_t np, int B, int T,
                             dpd_rng *r, double *dev, char *msg, size_t nmsg) {
    size_t n = 3 * (size_t)B * T;
    float *x = malloc(2 * n * sizeof *x), *y = malloc(2 * n * sizeof *y), *g = malloc(4 * np * sizeof *g);
    uint32_t *fr = malloc(3 * (size_t)B * sizeof *fr);
    dpd_status s = x && y && g && fr ? DPD_OK : DPD_E_NOMEM;
    if (s) snprintf(msg, nmsg, "out of memory");
    for (size_t i = 0; !s && i < 2 * n; i++) x[i] = (float)(0.3 * dpd_rng_normal(r)), y[i] = (float)(0.3 * dpd_rng_normal(r));
    for (int i = 0; !s && i < 3 * B; i++) fr[i] = (uint32_t)((i * 5 + 1) % (3 * B));
    double loss[2][3] = {{0}};
    long step;
    const dpd_provider *pp[2] = {p, cpu};
    void *ss[2] = {a, b};
    for (int k = 0; k < 2 && !s; k++) {
        s = pp[k]->i->attach(ss[k], DPD_TRAIN, x, y, n, msg, nmsg);
        if (!s) s = pp[k]->i->train_steps(ss[k], fr, 3 * (size_t)B, B, T, T, 1e-3, 0.01, 1.0, loss[k], msg, nmsg);
        if (!s) s = pp[k]->i->get_state(ss[k], g + 2 * k * np, g + (2 * k + 1) * np, &step, msg, nmsg);
    }
    *dev = 0;
    for (int q = 0; !s && q < 2; q++) { /* m, then v */
        const float *u = g + q * np, *w = g + (2 + q) * np;
        double e = 0, mx = 0;
        for (size_t i = 0; i < np; i++) e = worse(e, (double)u[i] - w[i]), mx = fmax(mx, fabs((double)w[i]));
        *dev = worse(*dev, mx > 0 ? e / mx : e);
    }
    for (int i = 0; !s && i < 3; i++) *dev = worse(*dev, (loss[0][i] - loss[1][i]) / fmax(fabs(loss[1][i]), 1e-30));
    free(x), free(y), free(g), free(fr);
    return s;
}

/* The training probe of a provider that trains on its device (ABI v2's attach, train_steps and
 * get_state): three steps of each model below it supports, against the CPU provider, within 1e-4
 * (the losses and both moments), so that a device whose fused or layered training kernels, or its
 * replay of recorded steps, go wrong is refused at install and not found out in a run. *checked
 * counts the models stepped. */
static dpd_status probe_training(const dpd_provider *p, const char *provider, int *checked, double *worst,
                                 dpd_error *err) {
    static const dpd_model_cfg models[] = {{"gru", 8, 1}, {"lstm", 6, 1}, {"dgru", 7, 1}, {"tres_gru", 5, 1}, {"rvtdcnn", 6, 1}};
    const dpd_provider *cpu = dpd_provider_cpu();
    char msg[512] = "";
    dpd_status s = DPD_OK;
    *checked = 0, *worst = 0;
    if (p->i->api_version < 2 || !p->i->attach || !p->i->train_steps || !p->i->get_state) return DPD_OK;
    for (size_t k = 0; k < sizeof models / sizeof *models && !s; k++) {
        if (!p->i->supports(p->ctx, &models[k])) continue;
        dpd_model *m;
        if ((s = dpd_model_create(&models[k], &m, err))) return s;
        dpd_rng r;
        dpd_rng_seed(&r, 101 + k);
        dpd_model_init(m, &r);
        void *a = NULL, *b = NULL;
        double dev = 0;
        const int B = 4, T = 64;
        if ((s = probe_session(p, m, B, T, &a, msg, sizeof msg)) || (s = probe_session(cpu, m, B, T, &b, msg, sizeof msg)) ||
            (s = probe_step(p, a, cpu, b, dpd_model_nparams(m), B, T, &r, &dev, msg, sizeof msg)))
            dpd_fail(err, s, "probe: training %s-%d: %s", models[k].family, models[k].hidden, msg);
        else if (!(dev <= 1e-4))
            s = dpd_fail(err, DPD_E_FORMAT, "probe mismatch: a %s training step of %s-%d differs from the CPU's by %.2e "
                         "(losses or AdamW moments, relative)", provider, models[k].family, models[k].hidden, dev);
        else
            (*checked)++, *worst = fmax(*worst, dev);
        if (a) p->i->session_free(a);
        if (b) cpu->i->session_free(b);
        dpd_model_free(m);
    }
    return s;
}

DPD_API dpd_status dpd_pack_probe(const char *dir, char *info, size_t ninfo, dpd_error *err) {
    char provider[32], version[64], why[512] = "", msg[512] = "";
    dpd_status s = check_manifest(dir, provider, version, err);
    if (s) return s;
    const dpd_provider *p, *cpu = dpd_provider_cpu();
    if ((s = dpd_provider_load(dir, NULL, &p, NULL, why, sizeof why, err))) return s; /* E_DEVICE: not usable here */
    if (strcmp(p->i->name, provider))
        return dpd_fail(err, DPD_E_FORMAT, "the library says it is provider '%s', pack.json says '%s'", p->i->name, provider);
    if (p->i->device_count(p->ctx) < 1) return dpd_fail(err, DPD_E_DEVICE, "no %s device listed", provider);
    dpd_device_info d;
    if ((s = p->i->device_info(p->ctx, 0, &d))) return dpd_fail(err, DPD_E_DEVICE, "device 0 cannot be queried");
    /* the probe: a GRU-8 on a random batch, against the CPU provider */
    dpd_model_cfg cfg = {"gru", 8, 1};
    int B = 4, T = 64;
    size_t n = (size_t)B * T * 2;
    dpd_model *m;
    if ((s = dpd_model_create(&cfg, &m, err))) return s;
    dpd_rng r;
    dpd_rng_seed(&r, 99);
    dpd_model_init(m, &r);
    float *x = malloc(n * sizeof *x), *y0 = malloc(n * sizeof *x), *y1 = malloc(n * sizeof *x);
    void *sess = NULL, *ref = NULL;
    if (!x || !y0 || !y1) {
        s = dpd_fail(err, DPD_E_NOMEM, "probe: out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) x[i] = (float)(0.3 * dpd_rng_normal(&r));
    if (!p->i->supports(p->ctx, &cfg)) {
        s = dpd_fail(err, DPD_E_FORMAT, "the provider does not support the GRU probe");
        goto done;
    }
    if ((s = probe_session(p, m, B, T, &sess, msg, sizeof msg)) || (s = p->i->forward(sess, x, B, T, y1, msg, sizeof msg))) {
        dpd_fail(err, s, "probe: %s", msg);
        goto done;
    }
    if ((s = probe_session(cpu, m, B, T, &ref, msg, sizeof msg)) || (s = cpu->i->forward(ref, x, B, T, y0, msg, sizeof msg))) {
        dpd_fail(err, s, "probe: cpu: %s", msg);
        goto done;
    }
    double e = 0, mx = 0;
    for (size_t i = 0; i < n; i++) e = worse(e, (double)y1[i] - y0[i]), mx = fmax(mx, fabs((double)y0[i]));
    int trained = 0;
    double worst = 0;
    char steps[96] = "";
    if (!(e <= 1e-4 * mx))
        s = dpd_fail(err, DPD_E_FORMAT, "probe mismatch: the %s output differs from the CPU by %.2e (max %.2e)",
                     provider, e, mx);
    else if (!(s = probe_training(p, provider, &trained, &worst, err))) {
        if (trained) snprintf(steps, sizeof steps, ", three training steps of %d families within %.1e", trained, worst);
        snprintf(info, ninfo, "%s on %s (%s, %.0f MiB, ABI version %u): probe matches the CPU within %.1e%s", provider,
                 d.name, d.arch, d.memory / 1048576.0, p->i->api_version, mx > 0 ? e / mx : e, steps);
    }
done:
    if (sess) p->i->session_free(sess);
    if (ref) cpu->i->session_free(ref);
    free(x), free(y0), free(y1);
    dpd_model_free(m);
    return s;
}
