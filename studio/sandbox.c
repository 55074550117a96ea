/* sandbox: namespaces and a seccomp filter for public workers (sandbox.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/securebits.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "dpd/dpd.h"
#include "sandbox.h"

/* a sanitizer's runtime (gcc's macros, clang's features): its leak check at exit traces the process */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

#define NAMESPACES (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)

/* ---- between fork and execve: system calls and hand-made strings only ---- */

/* Appends s to out[*at, n). */
static void put(char *out, size_t n, size_t *at, const char *s) {
    while (*s && *at + 1 < n) out[(*at)++] = *s++;
    out[*at < n ? *at : n - 1] = 0;
}

static void put_num(char *out, size_t n, size_t *at, unsigned long v) {
    char d[24];
    int k = 0;
    do d[k++] = (char)('0' + v % 10); while ((v /= 10) && k < 23);
    char r[24];
    for (int i = 0; i < k; i++) r[i] = d[k - 1 - i];
    r[k] = 0;
    put(out, n, at, r);
}

static int write_file(const char *path, const char *text, size_t len) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    int ok = write(fd, text, len) == (ssize_t)len;
    close(fd);
    return ok ? 0 : -1;
}

/* "ID ID 1": id mapped to itself. */
static int map_id(const char *path, unsigned long id) {
    char m[64];
    size_t at = 0;
    put_num(m, sizeof m, &at, id), put(m, sizeof m, &at, " "), put_num(m, sizeof m, &at, id), put(m, sizeof m, &at, " 1\n");
    return write_file(path, m, at);
}

pid_t sandbox_clone(int (*fn)(void *), void *arg, int *walled, char *slot, size_t n) {
    size_t at = 0, size = 256 << 10;
    put(slot, n, &at, SANDBOX_ENV "=");
    char *stack = malloc(size); /* the child's copy of it is its stack: this one goes at once */
    int e = ENOMEM;
    if (stack) {
        *walled = 1;
        pid_t pid = clone(fn, stack + size, NAMESPACES | CLONE_NEWPID | SIGCHLD, arg);
        e = errno;
        free(stack);
        if (pid >= 0) return pid;
        if (e != EPERM && e != EINVAL && e != ENOSPC && e != EUSERS) return errno = e, -1; /* not a refusal */
    }
    /* refused as a whole (a container's policy, a kernel setting): no namespaces */
    put(slot, n, &at, "none:"), put_num(slot, n, &at, (unsigned long)e), put(slot, n, &at, ":clone");
    *walled = 0;
    pid_t pid = fork();
    if (!pid) _exit(fn(arg));
    return pid;
}

/* root/a/b into out[4400] (system calls' strings, no stdio). */
static const char *path3(char *out, const char *root, const char *a, const char *b) {
    size_t at = 0;
    put(out, 4400, &at, root), put(out, 4400, &at, "/"), put(out, 4400, &at, a);
    if (b) put(out, 4400, &at, "/"), put(out, 4400, &at, b);
    return out;
}

/* Covers root with an empty read-only file system but for root/datasets and root/sessions/WS,
 * bound back from descriptors opened before: the worker sees no other session and not the store. */
static int hide_root(const char *root, const char *ws) {
    char p[4400], src[64];
    int data = open(path3(p, root, "datasets", NULL), O_PATH | O_DIRECTORY | O_CLOEXEC),
        mine = open(path3(p, root, "sessions", ws), O_PATH | O_DIRECTORY | O_CLOEXEC), rc = -1;
    struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY};
    size_t at;
    if (mine < 0 || mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700,size=64k")) goto out;
    if (mkdir(path3(p, root, "sessions", NULL), 0700) || mkdir(path3(p, root, "sessions", ws), 0700)) goto out;
    at = 0, put(src, sizeof src, &at, "/proc/self/fd/"), put_num(src, sizeof src, &at, (unsigned long)mine);
    if (mount(src, p, NULL, MS_BIND | MS_REC, NULL)) goto out;
    if (data >= 0) {
        at = 0, put(src, sizeof src, &at, "/proc/self/fd/"), put_num(src, sizeof src, &at, (unsigned long)data);
        if (mkdir(path3(p, root, "datasets", NULL), 0700) || mount(src, p, NULL, MS_BIND | MS_REC, NULL)) goto out;
    }
    rc = (int)syscall(SYS_mount_setattr, AT_FDCWD, root, 0, &ro, sizeof ro);
out:
    if (data >= 0) close(data);
    if (mine >= 0) close(mine);
    return rc;
}

int sandbox_walls(const char *root, const char *ws, const char *dir, uid_t uid, gid_t gid, char *slot, size_t n) {
    size_t at = 0;
    put(slot, n, &at, SANDBOX_ENV "=");
    const char *step = "setgroups";
    /* read-only, no set-uid programs, and no device files (a read-only mount still lets one write
     * to a device): the worker's /dev/null is open already */
    struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV},
                      rw = {.attr_clr = MOUNT_ATTR_RDONLY};
    if (write_file("/proc/self/setgroups", "deny", 4) && errno != ENOENT) goto fail;
    step = "uid_map";
    if (map_id("/proc/self/uid_map", uid)) goto fail;
    step = "gid_map";
    if (map_id("/proc/self/gid_map", gid)) goto fail;
    step = "mount";
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) || mount(dir, dir, NULL, MS_BIND | MS_REC, NULL)) goto fail;
    step = "mount_setattr";
    if (syscall(SYS_mount_setattr, AT_FDCWD, "/", AT_RECURSIVE, &ro, sizeof ro) ||
        syscall(SYS_mount_setattr, AT_FDCWD, dir, 0, &rw, sizeof rw))
        goto fail;
    step = "hide_root";
    if (hide_root(root, ws)) goto fail;
    put(slot, n, &at, "ns");
    /* the namespace's own /proc: its processes only (where the kernel will not mount one over the
     * host's, a masked /proc in a container, the host's stays, read-only) */
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, NULL)) put(slot, n, &at, ":host-proc");
    return 0;
fail:;
    int e = errno;
    put(slot, n, &at, "failed:"), put_num(slot, n, &at, (unsigned long)e), put(slot, n, &at, ":"), put(slot, n, &at, step);
    return -1;
}

int sandbox_drop_caps(void) {
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL) return -1;
    if (geteuid() != 0) return 0; /* not root: its exec, under no_new_privs, grants nothing (nor can it drop more) */
    for (int cap = 0; cap < 64; cap++) /* the bounding set: past the last one, EINVAL */
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) && errno != EINVAL) return -1;
    return prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                                        SECBIT_NO_SETUID_FIXUP_LOCKED, 0, 0, 0) ? -1 : 0;
}

void sandbox_reap(pid_t worker) {
    int st = 0;
    for (;;) { /* orphans come to the namespace's init too: reaped on the way */
        pid_t p = waitpid(-1, &st, 0);
        if (p == worker) break;
        if (p < 0 && errno != EINTR) _exit(127);
    }
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

/* ---- in the worker ---- */

/* What a worker calls (training threads, files in its run directory, the clock). */
static const char *const allowed[] = {
    "read", "write", "readv", "writev", "pread64", "pwrite64", "lseek", "close", "open", "openat", "creat",
    "fstat", "newfstatat", "stat", "lstat", "statx", "access", "faccessat", "faccessat2", "readlink", "readlinkat",
    "getdents64", "getdents", "getcwd", "chdir", "fchdir", "mkdir", "mkdirat", "rename", "renameat", "renameat2", "unlink",
    "unlinkat", "rmdir", "fsync", "fdatasync", "ftruncate", "fcntl", "dup", "dup2", "dup3", "flock", "fadvise64",
    "fallocate", "statfs", "fstatfs", "umask", "fchmod", "mmap", "munmap", "mprotect", "mremap", "brk", "madvise",
    "futex", "set_robust_list", "get_robust_list", "rseq", "set_tid_address", "exit", "exit_group", "sched_yield",
    "sched_getaffinity", "gettid", "getpid", "getppid", "getuid", "geteuid", "getgid", "getegid", "getresuid",
    "getresgid", "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack", "restart_syscall", "clock_gettime",
    "clock_getres", "clock_nanosleep", "nanosleep", "gettimeofday", "time", "times", "getrusage", "getrandom",
    "prlimit64", "getrlimit", "sysinfo", "uname", "arch_prctl", "membarrier",
#ifdef SANITIZED
    /* the sanitizers' runtimes: LeakSanitizer stops the world with a traced helper at exit */
    "ptrace", "wait4", "prctl", "sched_setaffinity",
#endif
};

/* What ends the worker at once: processes, programs, the network, other processes' memory,
 * mounts, namespaces, identities, the kernel's own state. */
static const char *const killing[] = {
    "fork", "vfork", "execve", "execveat", "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    "sendto", "sendmsg", "sendmmsg", "recvfrom", "recvmsg", "recvmmsg", "getsockopt", "setsockopt",
#ifndef SANITIZED
    "ptrace",
#endif
    "process_vm_readv", "process_vm_writev", "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsmount",
    "fsconfig", "fspick", "move_mount", "open_tree", "mount_setattr", "setuid", "setgid", "setreuid", "setregid",
    "setresuid", "setresgid", "setgroups", "setfsuid", "setfsgid", "capset", "unshare", "setns", "bpf", "keyctl",
    "add_key", "request_key", "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "reboot", "swapon", "swapoff", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "open_by_handle_at", "name_to_handle_at", "personality", "pidfd_open", "pidfd_getfd",
    "kcmp", "iopl", "ioperm", "quotactl", "acct", "settimeofday", "clock_settime", "adjtimex", "sethostname",
    "setdomainname", "mknod", "mknodat",
};

int sandbox_seal(char *why, size_t n) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) return snprintf(why, n, "no_new_privs: %s", strerror(errno)), -1;
    dpd_mat_isolate(0); /* a fork would kill this worker: a v7.3 .mat is read in place, inside these walls */
    scmp_filter_ctx c = seccomp_init(SCMP_ACT_ERRNO(EPERM));
    if (!c) return snprintf(why, n, "seccomp_init failed"), -1;
    int rc = seccomp_attr_set(c, SCMP_FLTATR_CTL_TSYNC, 1);
    const char *bad = rc ? "tsync" : NULL;
    for (size_t i = 0; !rc && i < sizeof allowed / sizeof *allowed; i++) {
        int nr = seccomp_syscall_resolve_name(allowed[i]);
        if (nr != __NR_SCMP_ERROR && (rc = seccomp_rule_add(c, SCMP_ACT_ALLOW, nr, 0))) bad = allowed[i];
    }
    for (size_t i = 0; !rc && i < sizeof killing / sizeof *killing; i++) {
        int nr = seccomp_syscall_resolve_name(killing[i]);
        if (nr != __NR_SCMP_ERROR && (rc = seccomp_rule_add(c, SCMP_ACT_KILL_PROCESS, nr, 0))) bad = killing[i];
    }
    pid_t me = getpid();
    if (!rc) { /* threads, not processes (glibc falls back from clone3, whose flags a filter cannot read) */
        bad = "clone";
#ifdef SANITIZED
        const scmp_datum_t shared = CLONE_VM; /* LeakSanitizer's helper shares the memory, as threads do */
#else
        const scmp_datum_t shared = CLONE_THREAD;
#endif
        rc = seccomp_rule_add(c, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, shared, shared));
        if (!rc) rc = seccomp_rule_add(c, SCMP_ACT_KILL_PROCESS, SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, shared, 0));
        if (!rc) rc = seccomp_rule_add(c, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
        /* signals to itself only (raise, abort) */
        if (!rc) rc = seccomp_rule_add(c, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)me));
        if (!rc) rc = seccomp_rule_add(c, SCMP_ACT_ALLOW, SCMP_SYS(kill), 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)me));
        if (!rc) rc = seccomp_rule_add(c, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1, SCMP_A1(SCMP_CMP_EQ, TCGETS)); /* isatty */
    }
    if (!rc) bad = "load";
    if (!rc) rc = seccomp_load(c);
    seccomp_release(c);
    if (rc) return snprintf(why, n, "seccomp: %s: %s", bad ? bad : "?", strerror(-rc)), -1;
    return 0;
}

/* The value after `key` in /proc/self/status into out[n] ("" when there is none). */
static const char *status_field(const char *key, char *out, size_t n) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t k = strlen(key);
    out[0] = 0;
    while (f && fgets(line, sizeof line, f)) {
        const char *v = line + k + 1;
        v += strspn(v, " \t");
        if (!strncmp(line, key, k) && line[k] == ':') snprintf(out, n, "%.*s", (int)strcspn(v, "\n"), v);
    }
    if (f) fclose(f);
    return out;
}

json_t *sandbox_report(const char *applied) {
    json_t *ns = json_array();
    int on = applied && !strncmp(applied, "ns", 2), own_proc = on && !strstr(applied, "host-proc");
    static const char *const names[] = {"user", "mount", "pid", "net", "ipc", "uts"};
    for (size_t i = 0; on && i < sizeof names / sizeof *names; i++) json_array_append_new(ns, json_string(names[i]));
    char refused[160] = "";
    if (applied && !on) { /* "none:ERRNO:STEP" */
        int e = atoi(applied + strcspn(applied, ":") + 1);
        const char *step = strrchr(applied, ':');
        snprintf(refused, sizeof refused, "%s: %s", step ? step + 1 : "unshare", strerror(e));
    }
    char sec[32], nnp[32], cap[32];
    status_field("Seccomp", sec, sizeof sec), status_field("NoNewPrivs", nnp, sizeof nnp);
    return json_pack("{s:i, s:i, s:s, s:o, s:b, s:s?}", "seccomp", sec[0] ? atoi(sec) : -1, "no_new_privs",
                     nnp[0] ? atoi(nnp) : -1, "capabilities", status_field("CapEff", cap, sizeof cap), "namespaces", ns,
                     "own_proc", own_proc, "refused", refused[0] ? refused : NULL);
}

json_t *sandbox_probe(const char *what) {
    if (!strcmp(what, "socket")) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0) close(fd);
        return json_pack("{s:s}", "socket", fd >= 0 ? "ok" : strerror(errno));
    }
    if (!strcmp(what, "exec")) {
        char *argv[] = {"sh", "-c", "true", NULL}, *env[] = {NULL};
        execve("/bin/sh", argv, env);
        return json_pack("{s:s}", "exec", strerror(errno));
    }
    if (!strcmp(what, "fork")) {
        int made = 0;
        for (; made < 64; made++) {
            pid_t p = fork();
            if (p == 0) _exit(0);
            if (p < 0) break;
            waitpid(p, NULL, 0);
        }
        return json_pack("{s:i}", "fork", made);
    }
    if (!strcmp(what, "proc")) { /* the server's process (the parent): its environment and memory */
        json_t *o = json_object();
        char path[64];
        static const char *const files[] = {"environ", "mem", "maps"};
        for (int i = 0; i < 3; i++) {
            snprintf(path, sizeof path, "/proc/%d/%s", (int)getppid(), files[i]);
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            char c;
            ssize_t n = fd >= 0 ? read(fd, &c, 1) : -1;
            json_object_set_new(o, files[i], json_string(n >= 0 ? "ok" : strerror(errno)));
            if (fd >= 0) close(fd);
        }
        return o;
    }
    if (!strcmp(what, "read")) { /* what of the data root it can see (cwd: ROOT/sessions/WS/runs/ID) */
        json_t *o = json_object(), *names = json_array();
        DIR *d = opendir("../../..");
        for (struct dirent *e; d && (e = readdir(d));)
            if (e->d_name[0] != '.') json_array_append_new(names, json_string(e->d_name));
        if (d) closedir(d);
        json_object_set_new(o, "sessions", names);
        int fd = open("../../../../studio.db", O_RDONLY | O_CLOEXEC);
        json_object_set_new(o, "studio.db", json_string(fd >= 0 ? "ok" : strerror(errno)));
        if (fd >= 0) close(fd);
        return o;
    }
    if (strcmp(what, "write")) return NULL;
    json_t *o = json_object();
    char paths[4][64];
    int pid = (int)getpid();
    snprintf(paths[0], sizeof paths[0], "../escape-%d", pid);          /* the session's runs directory */
    snprintf(paths[1], sizeof paths[1], "../../../../escape-%d", pid); /* the data root */
    snprintf(paths[2], sizeof paths[2], "/tmp/dpd-escape-%d", pid);
    snprintf(paths[3], sizeof paths[3], "/dev/shm/dpd-escape-%d", pid);
    for (int i = 0; i < 4; i++) {
        int fd = open(paths[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        json_object_set_new(o, paths[i], json_string(fd >= 0 ? "ok" : strerror(errno)));
        if (fd >= 0) close(fd), unlink(paths[i]);
    }
    static const char *const never_written[] = {"../../../../studio.db", "/dev/kmsg"}; /* opened, never written */
    for (int i = 0; i < 2; i++) {
        int fd = open(never_written[i], O_WRONLY | O_APPEND | O_CLOEXEC);
        json_object_set_new(o, never_written[i], json_string(fd >= 0 ? "ok" : strerror(errno)));
        if (fd >= 0) close(fd);
    }
    return o;
}
