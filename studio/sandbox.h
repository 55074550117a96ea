/* sandbox: the walls around a public session's worker (docs/studio.md "Public mode", "Workers").
 * Two halves: sandbox_enter, in the forked child before it runs the worker, puts it in new user,
 * mount, network, IPC and UTS namespaces where the kernel allows (a mount view in which only the
 * run directory is writable, an empty network); sandbox_seal, in the worker once its inputs are
 * open, installs a seccomp allow-list (libseccomp) on every thread. */
#ifndef DPD_STUDIO_SANDBOX_H
#define DPD_STUDIO_SANDBOX_H

#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

/* The environment variable through which sandbox_enter tells the worker what it applied:
 * "ns" (every namespace above), or "none:ERRNO:STEP" when the kernel refused (ERRNO a number, STEP
 * the call that failed). Its presence makes the worker call sandbox_seal. */
#define SANDBOX_ENV "DPD_SANDBOX"

/* Puts the calling process (single-threaded: a child between fork and execve) in its own user
 * namespace, mapping its uid and gid to themselves, and new mount, network, IPC and UTS
 * namespaces, then makes every mount read-only, nosuid, but `dir`, which stays writable.
 * Async-signal-safe (system calls only). Writes its outcome into env_slot[n] ("DPD_SANDBOX=..."):
 * 0 applied; -1 refused (the process is left as it was, or with fewer namespaces: the caller goes
 * on without them). */
int sandbox_enter(const char *dir, uid_t uid, gid_t gid, char *env_slot, size_t n);

/* Installs the seccomp filter on every thread of the process: the system calls a worker makes are
 * allowed; process creation (fork, vfork, clone without CLONE_THREAD), execve, sockets, ptrace,
 * mount, namespaces, set*id, module loading, keyrings, bpf and the like kill the process (SIGSYS);
 * anything else fails with EPERM. Sets no_new_privs first. 0, or -1 with why. */
int sandbox_seal(char *why, size_t n);

/* What applies to this process now, for the worker's `sandbox` event: {"seccomp": N, "no_new_privs":
 * N (from /proc/self/status), "namespaces": [...] or [], "refused": null or "..."}, from `applied`
 * (the SANDBOX_ENV value). */
json_t *sandbox_report(const char *applied);

/* A probe of the walls, for the tests (the fake verb's `probe`; the worker's cwd is its run
 * directory): "socket", "exec", "fork" (each should kill the process; if it returns, the object
 * says what happened), "proc" (reads the server's /proc environ, mem and maps: file -> "ok" or the
 * error), or "write" (tries to create a file in the session's runs directory, the
 * data root, /tmp and /dev/shm, and to open the data root's studio.db for writing: path -> "ok"
 * or the error; whatever was created is removed). NULL for an unknown probe. */
json_t *sandbox_probe(const char *what);

#endif
