#!/bin/sh
# Runs every libFuzzer harness of tests/fuzz/ for SECONDS each (default 15) on a scratch copy of
# its corpus (tests/fuzz/corpus/<name>/ is never written), with its dictionary when there is one,
# -timeout=10 (90 for http and public, whose health check may wait 70 s on a starved machine) and
# -rss_limit_mb=2048: one check per harness, failed on any crash, leak, timeout or
# out-of-memory. A failing input is kept under $BUILD/fuzz/artifacts/. Prints
# "RESULT fuzz <passed> <failed>", or "SKIP fuzz: <why>" and "RESULT fuzz 0 0 1" when clang or
# its libFuzzer runtime is missing. Builds the harnesses first (make fuzz-build, holding
# $BUILD/.fuzz-build.lock, so that two builds never overlap) unless FUZZ_NOBUILD=1; with
# FUZZ_BUILD_ONLY=1 it stops there, its exit status the build's (.ci/run builds them so in the
# background). Usage: [BUILD=build] tests/fuzz/run.sh [SECONDS]
SECONDS_EACH=${1:-15}
# The harnesses write every input to a file (the APIs take paths): on tmpfs that is 2-6 times
# faster than on disk. An explicit TMPDIR wins.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi
BUILD=${BUILD:-build}
FUZZ_CC=${FUZZ_CC:-clang}
skip() { echo "SKIP fuzz: $*"; echo "RESULT fuzz 0 0 1"; exit 0; }
command -v "$FUZZ_CC" >/dev/null 2>&1 || skip "$FUZZ_CC not found (scripts/deps.sh installs clang)"
S=$(mktemp -d)
trap 'rm -rf "$S"' EXIT
probe=$S/probe
mkdir "$probe"
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' >"$probe/p.c"
if ! "$FUZZ_CC" -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" >/dev/null 2>&1; then
    skip "$FUZZ_CC cannot link -fsanitize=fuzzer,address,undefined (libFuzzer: libclang-rt-14-dev)"
fi
mkdir -p "$BUILD"
if [ "${FUZZ_NOBUILD:-0}" != 1 ]; then
    if ! flock "$BUILD/.fuzz-build.lock" ${MAKE:-make} -j"$(nproc 2>/dev/null || echo 2)" --no-print-directory fuzz-build BUILD="$BUILD" FUZZ_CC="$FUZZ_CC" >"$BUILD/fuzz-build.log" 2>&1; then
        tail -n 30 "$BUILD/fuzz-build.log"
        echo "FAIL fuzz: the harnesses do not build (make fuzz-build)"
        echo "RESULT fuzz 0 1"
        exit 1
    fi
fi
[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && exit 0
passed=0; failed=0
art="$BUILD/fuzz/artifacts"
mkdir -p "$art"
for src in tests/fuzz/*.c; do
    name=$(basename "$src" .c)
    bin="$BUILD/fuzz/$name"
    work=$S/$name
    mkdir -p "$work/corpus"
    [ -d "tests/fuzz/corpus/$name" ] && cp tests/fuzz/corpus/"$name"/* "$work/corpus/" 2>/dev/null
    dict=""
    [ -f "tests/fuzz/$name.dict" ] && dict="-dict=tests/fuzz/$name.dict"
    limit=10
    case $name in http|public) limit=90 ;; esac
    "$bin" -max_total_time="$SECONDS_EACH" -timeout="$limit" -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$art/$name-" $dict "$work/corpus" >"$work/log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n 1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log" | tail -n 1)
    if [ "$rc" -eq 0 ] && [ -n "$runs" ]; then
        passed=$((passed + 1))
        echo "fuzz $name: ok, ${runs} executions in ${SECONDS_EACH} s (${speed}/s), corpus $(ls "$work/corpus" | wc -l) inputs"
    else
        failed=$((failed + 1))
        grep -v '^#[0-9]' "$work/log" | tail -n 60
        echo "FAIL fuzz $name: exit $rc after ${runs:-?} executions; the input is under $art/ (replay: $bin FILE)"
    fi
    rm -rf "$work"
done
echo "RESULT fuzz $passed $failed"
[ "$failed" -eq 0 ]
