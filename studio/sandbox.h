/* sandbox: the walls around a public session's worker (docs/studio.md "Public mode", "The worker
 * sandbox"). Two halves: sandbox_clone and sandbox_walls start the worker's process in new user,
 * mount, PID, network, IPC and UTS namespaces where the kernel allows (a mount view in which only
 * the run directory is writable, its own /proc, an empty network), as the init of its PID
 * namespace (sandbox_reap) with the worker its only child; sandbox_seal, in the worker once its
 * inputs are open, installs a seccomp allow-list (libseccomp) on every thread. */
#ifndef DPD_STUDIO_SANDBOX_H
#define DPD_STUDIO_SANDBOX_H

#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

/* The environment variable through which the spawn tells the worker what it applied: "ns" (every
 * namespace above; ":host-proc" after it where /proc is the host's), or "none:ERRNO:clone" when the
 * kernel refused them. Its presence makes the worker call sandbox_seal. */
#define SANDBOX_ENV "DPD_SANDBOX"

/* Starts fn(arg) in a new process (fn never returns: it execs or exits): in new user, mount, PID,
 * network, IPC and UTS namespaces (clone), setting *walled (a field of arg, read by fn) to 1; where
 * the kernel refuses them, a plain fork with *walled 0, and "none:ERRNO:clone" in slot[n] (the
 * SANDBOX_ENV entry of the worker's environment). The pid, or -1 with errno. */
pid_t sandbox_clone(int (*fn)(void *), void *arg, int *walled, char *slot, size_t n);

/* In the new process, walled: maps its uid and gid to themselves, makes every mount read-only and
 * nosuid but `dir` (the run directory), which stays writable, covers the data root with an empty
 * file system but for root/datasets and the session's own root/sessions/WS, and mounts the PID
 * namespace's own /proc. Async-signal-safe (system calls only). Writes slot[n] ("DPD_SANDBOX=ns",
 * with ":host-proc" where the kernel kept the host's /proc). 0, or -1 (the walls are half made:
 * the caller must not run the worker). */
int sandbox_walls(const char *root, const char *ws, const char *dir, uid_t uid, gid_t gid, char *slot, size_t n);

/* Before the worker's execve: no capability survives it, even as uid 0 (the bounding and ambient
 * sets emptied, root's exec rules off and locked). Async-signal-safe. 0, or -1 with errno. */
int sandbox_drop_caps(void);

/* The PID namespace's init, once it has forked the worker: reaps every child, and exits as the
 * worker did (killed by signal N: exit 128 + N, since an init cannot die by its own signals). */
void sandbox_reap(pid_t worker) __attribute__((noreturn));

/* Installs the seccomp filter on every thread of the process: the system calls a worker makes are
 * allowed; process creation (fork, vfork, clone without CLONE_THREAD), execve, sockets, ptrace,
 * mount, namespaces, set*id, module loading, keyrings, bpf and the like kill the process (SIGSYS);
 * anything else fails with EPERM. Sets no_new_privs first. 0, or -1 with why. */
int sandbox_seal(char *why, size_t n);

/* What applies to this process now, for the worker's `sandbox` event: {"seccomp": N, "no_new_privs":
 * N (from /proc/self/status), "namespaces": [...] or [], "own_proc": its PID namespace's /proc,
 * "refused": null or "..."}, from `applied` (the SANDBOX_ENV value). */
json_t *sandbox_report(const char *applied);

/* A probe of the walls, for the tests (the fake verb's `probe`; the worker's cwd is its run
 * directory): "socket", "exec", "fork" (each should kill the process; if it returns, the object
 * says what happened), "proc" (reads the server's /proc environ, mem and maps: file -> "ok" or the
 * error), "read" (the names in the data root's sessions/ and whether studio.db opens), or "write" (tries to create a file in the session's runs directory, the
 * data root, /tmp and /dev/shm, and to open the data root's studio.db and /dev/kmsg for writing: path -> "ok"
 * or the error; whatever was created is removed). NULL for an unknown probe. */
json_t *sandbox_probe(const char *what);

#endif
