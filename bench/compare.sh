#!/bin/sh
# dpd vs PyTorch CPU, same shapes, same run, same thread counts: ms per training step and the
# ratio. PyTorch is skipped with a message when python3-torch is absent.
set -eu
DPD=${1:-build/dpd}
STEPS=${STEPS:-10}
PY=${PY:-/usr/bin/python3} # Debian's python3, where python3-torch installs
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) logical CPUs, dpd kernels: $("$DPD" bench train --steps 1 --json | sed 's/.*"kernels":"\([^"]*\)".*/\1/')"
printf '| model | H | threads | dpd ms/step | torch ms/step | speed-up |\n|---|---|---|---|---|---|\n'
for spec in "gru 23" "dgru 23" "lstm 23" "tres_gru 15" "rvtdcnn 12"; do
    set -- $spec
    for th in 1 2; do
        d=$("$DPD" bench train --model "$1" --hidden "$2" --threads $th --steps "$STEPS" --json | sed 's/.*"ms_per_step":\([0-9.]*\).*/\1/')
        t=$("$PY" bench/torch_step.py model="$1" hidden="$2" threads=$th steps="$STEPS" | sed -n 's/.*"ms_per_step": \([0-9.]*\).*/\1/p')
        if [ -n "$t" ]; then r=$(awk "BEGIN { printf \"%.1fx\", $t / $d }"); else t="(no torch)"; r="-"; fi
        printf '| %s | %s | %s | %s | %s | %s |\n' "$1" "$2" "$th" "$d" "$t" "$r"
    done
done
