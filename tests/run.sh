#!/bin/sh
# Runs every test program given as arguments, then tests/cli.sh, tests/opencl.sh (the OpenCL
# provider's pack, training and fallback cases on PoCL), tests/cuda_gate.sh (the same kernels
# compiled for the H200: no stack, no spills), tests/gpucheck.sh (the device check's dry run:
# its inputs gathered, every stage reported, its results file valid), tests/plot.sh (dpd plot's
# pictures), tests/doctor.sh (dpd doctor and the training gate), tests/recordings.sh (.mat,
# SigMF and the synth presets through dpd), tests/studio.sh (dpd serve, black-box over HTTP),
# tests/ui.sh (the studio's pages in headless Chromium), tests/identity.sh (training
# bit-identical to the values recorded before the public-API refactor), tests/crash.sh
# (kill -9 during training, then resume), tests/install.sh (make install and uninstall into a
# scratch tree, quickstart.c built with pkg-config dpd), tests/tour.sh (README.md's tour, run as
# written) and tests/links.sh (every link of README.md and docs/ resolves inside the repository),
# then tests/fuzz/run.sh (each libFuzzer
# harness for FUZZ_SECONDS, default 15; it skips when clang or libFuzzer is missing), then the
# example programs, and sums their "RESULT name passed failed [skipped]" lines into one closing
# line "N passed, N failed, N skipped"; its own scratch files (the log, the examples' working
# directories) go when it ends, as each test's do. FUZZ_SECONDS=0 skips
# the fuzzers, CUDA_GATE=0 the resource gate, TOUR=0 the README tour and UI=0 the browser tests
# (each counted as a skip), and IDENTITY_THREADS=1 checks identity on one thread only: .ci/run's
# sanitized pass does, since the harnesses are built sanitized anyway, the gate compiles the same
# kernels in every build and the pages are the same; the plain pass runs them all). Each program's wall time follows its output as
# "TIME name seconds". PART=beside runs only the test programs that may share the machine with
# another job, slowed (no wait on another process against a clock in them; their alarms are hang
# guards, ten times their sanitized run or more); PART=alone the rest: test_providers (it polls
# a killed installer's helper for 2 s), the shell suites (opencl.sh gives a lock holder 0.5 s) and
# the examples; unset, all of it, as before. .ci/run runs the sanitized pass's two parts so, the
# first beside the ThreadSanitizer studio suite.
# Exits non-zero when any check failed or any program crashed.
BUILD=${BUILD:-build}
# sanitized builds: leaks inside PoCL (third-party) are not dpd's (tests/lsan.supp says why); and
# no interception of __tls_get_addr: on some machines (Debian 12's libasan, glibc 2.36, a 6.18
# kernel) LeakSanitizer's exit-time scan then finds a garbage dynamic-TLS range after PoCL has
# loaded its libraries (a "DTLS" block at 0xed) and its tracer dies on it ("Tracer caught signal
# 11", exit 1), every time, in a train-dpd on the OpenCL provider; static TLS is still scanned
export LSAN_OPTIONS="suppressions=$(pwd)/tests/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS="intercept_tls_get_addr=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export DPD_FAKE_LIB="$BUILD/tests/libfake.so" # the fault-injecting provider (tests/fake_provider.c)
passed=0; failed=0; skipped=0; crashed=0
S=$(mktemp -d)
trap 'rm -rf "$S"' EXIT
log=$S/log
# the shell suites, in their order; the test programs that poll other processes against a clock
suites="tests/cli.sh tests/opencl.sh tests/cuda_gate.sh tests/gpucheck.sh tests/plot.sh tests/doctor.sh tests/recordings.sh
    tests/studio.sh tests/ui.sh tests/identity.sh tests/crash.sh tests/install.sh tests/tour.sh tests/links.sh tests/fuzz/run.sh"
polling=test_providers
beside=; alone=
for t in "$@"; do # the programs (build paths: no spaces)
    case " $polling " in *" $(basename "$t") "*) alone="$alone $t" ;; *) beside="$beside $t" ;; esac
done
case ${PART:-} in
beside) set -- $beside ;;
alone) set -- $alone $suites ;;
'') set -- "$@" $suites ;;
*) echo "tests/run.sh: PART is beside or alone, not '$PART'" >&2; exit 2 ;;
esac
for t in "$@"; do
    t0=$(date +%s)
    case $t in
    tests/fuzz/run.sh) if [ "${FUZZ_SECONDS:-15}" = 0 ]; then
            printf 'SKIP fuzz: FUZZ_SECONDS=0 (the harnesses are always sanitized; another pass runs them)\nRESULT fuzz 0 0 1\n' >"$log"
        else BUILD="$BUILD" sh tests/fuzz/run.sh "${FUZZ_SECONDS:-15}" >"$log" 2>&1; fi ;;
    tests/cli.sh) sh tests/cli.sh "$BUILD/dpd" >"$log" 2>&1 ;;
    tests/opencl.sh) sh tests/opencl.sh "$BUILD" >"$log" 2>&1 ;;
    tests/cuda_gate.sh) if [ "${CUDA_GATE:-1}" = 0 ]; then
            printf 'SKIP cuda_gate: CUDA_GATE=0 (it compiles only the kernels, the same in every build; another pass runs it)\nRESULT cuda_gate 0 0 1\n' >"$log"
        else sh tests/cuda_gate.sh "${NVCC:-nvcc}" "$BUILD/cuda/resident.ptxas" >"$log" 2>&1; fi ;;
    tests/gpucheck.sh) sh tests/gpucheck.sh "$BUILD" >"$log" 2>&1 ;;
    tests/studio.sh) sh tests/studio.sh "$BUILD" >"$log" 2>&1 ;;
    tests/plot.sh) sh tests/plot.sh "$BUILD" >"$log" 2>&1 ;;
    tests/doctor.sh) sh tests/doctor.sh "$BUILD" >"$log" 2>&1 ;;
    tests/recordings.sh) sh tests/recordings.sh "$BUILD" >"$log" 2>&1 ;;
    tests/ui.sh) if [ "${UI:-1}" = 0 ]; then
            printf 'SKIP ui: UI=0 (the pages in Chromium drive the server that tests/studio.sh checks in this pass; another pass runs them)\nRESULT ui 0 0 1\n' >"$log"
        else sh tests/ui.sh "$BUILD" >"$log" 2>&1; fi ;;
    tests/crash.sh) sh tests/crash.sh "$BUILD/dpd" >"$log" 2>&1 ;;
    tests/identity.sh) sh tests/identity.sh "$BUILD/dpd" check ${IDENTITY_THREADS:-1 2} >"$log" 2>&1 ;;
    tests/install.sh) sh tests/install.sh "$BUILD" >"$log" 2>&1 ;;
    tests/tour.sh) if [ "${TOUR:-1}" = 0 ]; then
            printf 'SKIP tour: TOUR=0 (plain dpd commands that tests/cli.sh covers; another pass runs it)\nRESULT tour 0 0 1\n' >"$log"
        else sh tests/tour.sh "$BUILD" >"$log" 2>&1; fi ;;
    tests/links.sh) sh tests/links.sh "$BUILD" >"$log" 2>&1 ;;
    *) "$t" >"$log" 2>&1 ;;
    esac
    rc=$?
    cat "$log"
    echo "TIME $(basename "$t") $(($(date +%s) - t0))"
    line=$(grep '^RESULT ' "$log" | tail -n 1)
    if [ -z "$line" ]; then
        echo "CRASH $t (exit $rc, no RESULT line)"; crashed=$((crashed + 1)); failed=$((failed + 1)); continue
    fi
    set -- $line   # the loop's word list is already expanded, so this is safe
    passed=$((passed + $3)); failed=$((failed + $4)); skipped=$((skipped + ${5:-0}))
    if [ "$rc" -ne 0 ] && [ "$4" -eq 0 ]; then echo "CRASH $t exited $rc"; failed=$((failed + 1)); fi
done
# The example programs (public API and libdpd.so only), each in a scratch directory: one check each (not in PART=beside).
if [ "${PART:-}" != beside ]; then
    for ex in "$BUILD"/examples/*; do
        [ -x "$ex" ] || continue
        dir=$(mktemp -d "$S/example.XXXXXX"); exe=$(cd "$(dirname "$ex")" && pwd)/$(basename "$ex")
        if (cd "$dir" && "$exe" >"$log" 2>&1); then passed=$((passed + 1)); echo "example $(basename "$ex"): ok"
        else failed=$((failed + 1)); cat "$log"; echo "FAIL example $(basename "$ex")"; fi
        rm -rf "$dir"
    done
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
