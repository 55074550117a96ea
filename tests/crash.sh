#!/bin/sh
# Crash consistency: `kill -9` at random moments of short PA and DPD training runs, half of them
# right after an epoch's history row appears (when best.csv, best.safetensors and
# last.safetensors are being written). After each kill: every checkpoint in the run directory
# loads, no temporary file is left once the run is resumed, `--resume` finishes, and the final
# weights and optimizer state equal an uninterrupted run's bit for bit.
# Usage: tests/crash.sh path/to/dpd [KILLS]. Prints "RESULT crash <passed> <failed>".
DPD=${1:-build/dpd}
KILLS=${2:-24}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
NAME=crash
. "$(dirname "$0")/lib.sh"
data() { hl=$(od -An -t u8 -N8 "$1" | tr -d ' '); tail -c +$((hl + 9)) "$1" | sha256sum | cut -c1-16; }

"$DPD" synth --out "$T/d" --seed 2 >/dev/null || exit 1
# The runs' options; the killed runs are started as simple commands, so that $! is dpd itself (a
# shell function run in the background is a subshell: kill -9 would kill the subshell and leave
# dpd running).
TRAIN="--data $T/d --hidden 8 --frame 40 --stride 1 --batch 32 --epochs 3 --threads 1"
"$DPD" train-pa $TRAIN --out "$T/ref" --json >"$T/ref.json" 2>/dev/null
PA=$(sed -n 's/.*"run_dir":"\([^"]*\)".*/\1/p' "$T/ref.json")
DPDRUN="--data $T/d --pa $PA --model gru --hidden 6 --frame 40 --stride 1 --batch 32 --epochs 3 --threads 1"
"$DPD" train-dpd $DPDRUN --out "$T/dref" --json >"$T/dref.json" 2>/dev/null
DREF=$(sed -n 's/.*"run_dir":"\([^"]*\)".*/\1/p' "$T/dref.json")
[ -n "$PA" ] && [ -n "$DREF" ] || { echo "crash: the reference runs failed"; echo "RESULT crash 0 1"; exit 1; }
want_pa=$(data "$PA/last.safetensors"); want_dpd=$(data "$DREF/last.safetensors")

inside=0
i=0
while [ $i -lt "$KILLS" ]; do
    i=$((i + 1))
    out="$T/k$i"
    if [ $((i % 3)) -eq 0 ]; then kind=dpd; want=$want_dpd; "$DPD" train-dpd $DPDRUN --out "$out" >/dev/null 2>&1 &
    else kind=pa; want=$want_pa; "$DPD" train-pa $TRAIN --out "$out" >/dev/null 2>&1 & fi
    pid=$!
    if [ $((i % 2)) -eq 0 ]; then # right after epoch k's history row: inside the checkpoint writes
        row=$(( (i / 2) % 2 + 1 )); n=0
        while [ $n -lt 20000 ] && ! grep -q "^$row," "$out"/*/train_*/*/history.csv "$out"/*/train_dpd/*/*/history.csv 2>/dev/null; do
            n=$((n + 1)); kill -0 $pid 2>/dev/null || break
        done
        inside=$((inside + 1))
    else
        sleep "$(awk "BEGIN { srand($i); printf \"%.3f\", 0.05 + rand() * 1.5 }")"
    fi
    kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
    check '! kill -0 $pid 2>/dev/null' "kill $i ($kind): dpd (pid $pid) still runs after kill -9"
    dir=$(ls -d "$out"/*/train_pa/* "$out"/*/train_dpd/*/* 2>/dev/null | head -n 1)
    if [ -z "$dir" ]; then # killed before the run directory existed: nothing to resume
        check '[ -z "$(find "$out" -name "*.tmp.*" 2>/dev/null)" ]' "kill $i ($kind, before a run directory): temporary files left"
        continue
    fi
    for f in "$dir"/*.safetensors; do # each loads and runs
        [ -f "$f" ] || continue
        "$DPD" run --model "$f" --input "$T/d/val_input.csv" --output "$T/o.csv" >/dev/null 2>"$T/err"; rc=$?
        check '[ $rc -eq 0 ]' "kill $i ($kind): $(basename "$f") does not load: $(head -c 200 "$T/err")"
    done
    if [ "$kind" = dpd ]; then "$DPD" train-dpd --resume "$dir" >/dev/null 2>"$T/err"; rc=$?
    else "$DPD" train-pa --resume "$dir" >/dev/null 2>"$T/err"; rc=$?; fi
    if [ $rc -ne 0 ] && grep -q "asks for no more" "$T/err"; then rc=0; fi # killed after the last epoch's files
    check '[ $rc -eq 0 ]' "kill $i ($kind): --resume failed: $(head -c 300 "$T/err")"
    check '[ "$(data "$dir/last.safetensors")" = "$want" ]' "kill $i ($kind): resumed weights differ from the uninterrupted run"
    check '[ -z "$(find "$dir" -name "*.tmp.*")" ]' "kill $i ($kind): temporary files left after the resume"
done
echo "crash: $KILLS kills ($inside right after an epoch's history row, during the checkpoint writes)"
echo "RESULT crash $pass $fail"
[ "$fail" -eq 0 ]
