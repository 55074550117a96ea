#!/bin/sh
# shellcheck disable=SC2086 # $spec, $ds and $ts are split into words on purpose
# dpd vs PyTorch CPU, every model family, same shapes (batch 64, frame 200), same run, threads 1
# and 2: the median ms per training step of REPEATS runs on each side and the ratio. The dpd and
# torch runs alternate (and swap which goes first each repeat) so machine load hits both alike.
# The delta families run at thresholds 0 on both sides (`dpd bench train` has no --thx/--thh;
# OpenDPD's default). PyTorch is skipped with a message when python3-torch is absent.
# ONLY="tcn gru" measures those families alone.
# Usage: [STEPS=10] [REPEATS=3] [ONLY="family ..."] [PY=/usr/bin/python3] bench/compare.sh [path/to/dpd]
set -eu
DPD=${1:-build/dpd}
STEPS=${STEPS:-10}
REPEATS=${REPEATS:-3}
PY=${PY:-/usr/bin/python3} # Debian's python3, where python3-torch installs
TORCH_STEP=$(dirname "$0")/torch_step.py

num() { sed -n "s/.*\"$1\": *\([0-9.eE+-]*\).*/\1/p"; } # a number from one JSON line
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { printf "%.4g\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

tv=$("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo "absent")
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) logical CPUs, dpd kernels: $("$DPD" bench train --steps 1 --json | sed 's/.*"kernels":"\([^"]*\)".*/\1/'), torch $tv; median of $REPEATS runs of $STEPS steps"
printf '| model | size | threads | dpd ms/step | torch ms/step | speed-up |\n|---|---|---|---|---|---|\n'
bad=0
for spec in "gru 23" "lstm 23" "tres_gru 15" "vdlstm 13" "rvtdcnn 12" "dgru 23" "pgjanet 11" "dvrjanet 11" \
    "tres_deltagru 15" "deltagru 15" "gmp 1" "tcn 32"; do
    set -- $spec
    case " ${ONLY:-$1} " in *" $1 "*) ;; *) continue ;; esac
    size=$2
    [ "$1" = gmp ] && size="default (M 11, K 5)"
    for th in 1 2; do
        ds="" ts="" dp="" tp="" i=0
        while [ "$i" -lt "$REPEATS" ]; do
            for side in d t; do
                [ $((i % 2)) = 1 ] && side=$([ $side = d ] && echo t || echo d) # odd repeats: torch first
                if [ "$side" = d ]; then
                    j=$("$DPD" bench train --model "$1" --hidden "$2" --threads $th --steps "$STEPS" --json)
                    ds="$ds $(printf '%s\n' "$j" | num ms_per_step)"
                    dp=$(printf '%s\n' "$j" | num params)
                elif [ "$tv" != absent ]; then
                    j=$("$PY" "$TORCH_STEP" model="$1" hidden="$2" threads=$th steps="$STEPS")
                    t=$(printf '%s\n' "$j" | num ms_per_step)
                    [ -n "$t" ] && ts="$ts $t" && tp=$(printf '%s\n' "$j" | num params)
                fi
            done
            i=$((i + 1))
        done
        d=$(median $ds)
        if [ -n "$ts" ]; then
            t=$(median $ts)
            r=$(awk "BEGIN { printf \"%.1fx\", $t / $d }")
            if [ "$tp" != "$dp" ]; then
                echo "compare.sh: $1-$2: torch has $tp parameters, dpd $dp" >&2
                t="$t (params $tp != $dp)" bad=1
            fi
        else
            t="(no torch)" r="-"
        fi
        printf '| %s | %s | %s | %s | %s | %s |\n' "$1" "$size" "$th" "$d" "$t" "$r"
    done
done
exit $bad
