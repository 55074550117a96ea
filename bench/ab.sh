#!/bin/sh
# Two builds side by side: the whole `dpd train-pa --preset quick` process of build A and of build
# B, each with and without --no-plots, N rounds (default 101) of the four runs in a random order
# within each round, on the built-in synthetic dataset (dpd synth --seed 0). Prints for each build
# the medians and the pictures' cost (the median of each round's difference), then the median of
# each round's B - A with and without the pictures: the steadiest figures where the machine's
# speed drifts. Never asserts; run it on a quiet machine (docs/performance.md).
# Usage: bench/ab.sh DPD_A DPD_B [N]
set -eu
[ $# -ge 2 ] || { echo "usage: bench/ab.sh DPD_A DPD_B [N]" >&2; exit 2; }
A=$1
B=$2
N=${3:-101}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$A" synth --out "$T/synth" --seed 0 >/dev/null
ms() { date +%s%N | cut -c1-13; }
for i in $(seq "$N"); do
    for k in $(printf 'Ap\nAn\nBp\nBn\n' | shuf); do
        bin=$A
        case $k in B*) bin=$B ;; esac
        f=""
        case $k in *n) f=--no-plots ;; esac
        rm -rf "$T/o"
        s=$(ms)
        if ! "$bin" train-pa --data "$T/synth" --preset quick $f --out "$T/o" >/dev/null 2>"$T/err"; then
            echo "bench/ab.sh: $bin train-pa${f:+ $f} failed (a failed run would time as a fast one):" >&2
            tail -n 3 "$T/err" >&2
            exit 1
        fi
        echo "$i $k $(($(ms) - s))"
    done
done >"$T/times"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
echo "# A: $A; B: $B; $N rounds"
awk '{ v[$2, $1] = $3; if ($1 > n) n = $1 }
     function med(k,  a, i, j, t) { for (i = 1; i <= n; i++) a[i] = v[k, i]
         for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
         return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
     function diff(p, q, k,  i) { for (i = 1; i <= n; i++) v[k, i] = v[p, i] - v[q, i]; return med(k) }
     END { split("A B", b, " ")
           for (x = 1; x <= 2; x++) { p = med(b[x] "p"); q = med(b[x] "n"); d = diff(b[x] "p", b[x] "n", b[x] "d")
               printf "%s: with the pictures median %d ms, --no-plots %d ms; the pictures %+.1f ms, %+.1f %% (within a round)\n", b[x], p, q, d, 100 * d / q }
           printf "B - A within a round: with the pictures %+.1f ms, --no-plots %+.1f ms\n", diff("Bp", "Ap", "xp"), diff("Bn", "An", "xn") }' "$T/times"
