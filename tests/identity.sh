#!/bin/sh
# Bitwise identity of training across refactors: quick PA and DPD runs of every family, on a
# small synthetic dataset, hashed as the sha256 of last.safetensors' data region (weights and
# AdamW moments, without the metadata) and of history.csv without its wall-clock TIME column and
# its EPOCH numbering (checked separately). tests/identity.txt holds the values recorded on the
# main branch before the public-API refactor (issue 8), with the kernel ISA they were made on;
# re-recorded when an inference of fewer than 5 sequences (here the val and test splits, one
# segment each) moved onto the fast kernels, padded: the history hashes of the gated families and
# of every DPD run (through a GRU PA) changed, and the least-squares DPD fits, which are fit to
# the PA's outputs; every other weight hash stayed as it was.
#   tests/identity.sh DPD record         prints the table (one run per family, 1 thread)
#   tests/identity.sh DPD check [THREADS...]  compares every run with the table; prints RESULT
DPD=${1:-build/dpd}; MODE=${2:-check}; shift 2 2>/dev/null
THREADS=${*:-1 2}
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$DPD" synth --out "$T/d" --length 12800 --seed 1 >/dev/null || exit 1
data() { hl=$(od -An -t u8 -N8 "$1" | tr -d ' '); tail -c +$((hl + 9)) "$1" | sha256sum | cut -c1-16; }
hist() { cut -d, -f2,4- "$1" | sha256sum | cut -c1-16; }
numbered() { awk -F, 'NR > 1 && $1 != NR - 1 { bad = 1 } END { exit bad }' "$1"; }
GRAD="gru dgru lstm tres_gru rvtdcnn tres_deltagru deltagru vdlstm pgjanet dvrjanet tcn gmp"
opts() { case $1 in
    gru|dgru|lstm) echo "--hidden 8" ;;
    tres_deltagru|deltagru) echo "--hidden 8 --thx 0.01 --thh 0.05" ;;
    *) echo "" ;;
esac; }
# one_run NAME THREADS: runs it, prints "NAME last hist" (or "NAME error ...")
one_run() {
    name=$1; th=$2; out="$T/o_${name}_$th"
    case $name in
        pa_mp|pa_gmp_ls) k=${name#pa_}; k=${k%_ls}
            "$DPD" fit-ls --data "$T/d" --kind "$k" --target pa --threads "$th" --out "$out" --json >"$T/j" 2>"$T/e" ;;
        dpd_mp|dpd_gmp_ls) k=${name#dpd_}; k=${k%_ls}
            "$DPD" fit-ls --data "$T/d" --kind "$k" --target dpd --iterations 2 --pa "$PA" --threads "$th" --out "$out" --json >"$T/j" 2>"$T/e" ;;
        pa_*) f=${name#pa_}
            "$DPD" train-pa --data "$T/d" --model "$f" $(opts "$f") --preset quick --provider cpu --threads "$th" --out "$out" --json >"$T/j" 2>"$T/e" ;;
        dpd_*) f=${name#dpd_}
            "$DPD" train-dpd --data "$T/d" --pa "$PA" --model "$f" $(opts "$f") --preset quick --provider cpu --threads "$th" --out "$out" --json >"$T/j" 2>"$T/e" ;;
    esac
    dir=$(sed -n 's/.*"run_dir":"\([^"]*\)".*/\1/p' "$T/j")
    if [ -z "$dir" ] || [ ! -f "$dir/last.safetensors" ]; then echo "$name error $(head -c 200 "$T/e")"; return; fi
    numbered "$dir/history.csv" || { echo "$name numbering"; return; }
    echo "$name $(data "$dir/last.safetensors") $(hist "$dir/history.csv")"
}
"$DPD" train-pa --data "$T/d" --model gru --hidden 8 --preset quick --provider cpu --threads 1 --out "$T/pa" --json >"$T/pa.json" 2>/dev/null
PA=$(sed -n 's/.*"run_dir":"\([^"]*\)".*/\1/p' "$T/pa.json")
NAMES="pa_mp pa_gmp_ls dpd_mp dpd_gmp_ls"
for f in $GRAD; do NAMES="$NAMES pa_$f dpd_$f"; done
KERN=$("$DPD" bench train --model gru --hidden 4 --batch 8 --frame 4 --steps 1 --json 2>/dev/null | sed -n 's/.*"kernels":"\([a-z0-9]*\)".*/\1/p')
if [ "$MODE" = record ]; then
    echo "kernels $KERN"
    for n in $NAMES; do one_run "$n" 1; done
    exit 0
fi
pass=0; fail=0; skip=0
want=$(sed -n 's/^kernels //p' "$HERE/identity.txt")
if [ "$KERN" != "$want" ]; then
    echo "SKIP identity: recorded with $want kernels, this CPU runs $KERN (the values depend on the ISA)"
    echo "RESULT identity 0 0 1"; exit 0
fi
for th in $THREADS; do
    for n in $NAMES; do
        got=$(one_run "$n" "$th")
        exp=$(grep "^$n " "$HERE/identity.txt")
        if [ "$got" = "$exp" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL identity ($th threads): got '$got', recorded '$exp'"; fi
    done
done
echo "RESULT identity $pass $fail $skip"
[ "$fail" -eq 0 ]
