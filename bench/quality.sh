#!/bin/sh
# Quality table (docs/performance.md): every family as a PA model and as a DPD through a frozen
# PA, next to the least-squares baselines, on one dataset. Long-running; never part of make test.
# usage: bench/quality.sh DATA_DIR PA_RUN_DIR OUT_DIR [EPOCHS FRAME STRIDE]
# PA_RUN_DIR is the frozen PA every DPD is trained through (e.g. a full-recipe GRU-23 run).
# PART=pa or PART=dpd runs one half of the table (default: both).
set -eu
DPD=${DPD:-build/dpd}
DATA=$1; PA=$2; OUT=$3; EP=${4:-60}; FR=${5:-50}; ST=${6:-4}
mkdir -p "$OUT"
common="--epochs $EP --frame $FR --stride $ST --out $OUT --json --threads ${THREADS:-1}"
row() { # kind family size json
    sed -n 's/.*"val":{"NMSE":\([-0-9.]*\),"EVM":\([-0-9.]*\).*"test":{"NMSE":\([-0-9.]*\),"EVM":\([-0-9.]*\),"ACLR_L":\([-0-9.]*\),"ACLR_R":\([-0-9.]*\),"ACLR_AVG":\([-0-9.]*\)}.*/\1 \2 \3 \4 \5 \6 \7/p' "$4" |
        { read vn ve tn te al ar aa; printf '| %s | %s | %s | %s | %s / %s | %s / %s | %s / %s / %s |\n' "$1" "$2" "$3" "$(params "$4")" "$vn" "$tn" "$ve" "$te" "$al" "$ar" "$aa"; }
}
params() { d=$(sed -n 's/.*"run_dir":"\([^"]*\)".*/\1/p' "$1"); sed -n 's/.*"n_params": \([0-9]*\).*/\1/p' "$d/config.json"; }
PART=${PART:-all}
echo "| step | model | size | params | NMSE val / test | EVM val / test | ACLR L / R / AVG (test) |"
echo "|---|---|---|---|---|---|---|"
[ "$PART" = dpd ] || for spec in "gru 23" "dgru 23" "lstm 23" "tres_gru 27" "deltagru 23" "rvtdcnn 23" "vdlstm 23" "pgjanet 16" "dvrjanet 16" "tcn 32" "gmp 1"; do
    set -- $spec
    "$DPD" train-pa --data "$DATA" --model "$1" --hidden "$2" $common >"$OUT/pa_$1.json" 2>/dev/null && row PA "$1" "H $2" "$OUT/pa_$1.json"
done
if [ "$PART" != dpd ]; then
    "$DPD" fit-ls --data "$DATA" --kind mp --target pa --K 5 --Q 20 --out "$OUT" --json >"$OUT/pa_mp.json" && row PA "MP (LS)" "K5 Q20" "$OUT/pa_mp.json"
    "$DPD" fit-ls --data "$DATA" --kind gmp --target pa --K 5 --Q 20 --M 2 --out "$OUT" --json >"$OUT/pa_gmp.json" && row PA "GMP (LS)" "K5 Q20 M2" "$OUT/pa_gmp.json"
fi
[ "$PART" = pa ] && exit 0
for spec in "gru 15" "dgru 13" "lstm 13" "tres_gru 15" "tres_deltagru 15 --thx 0.01 --thh 0.05" "deltagru 15" "rvtdcnn 23" "vdlstm 13" "pgjanet 11" "dvrjanet 11" "tcn 32" "gmp 1"; do
    set -- $spec
    f=$1 h=$2; shift 2
    "$DPD" train-dpd --data "$DATA" --pa "$PA" --model "$f" --hidden "$h" "$@" $common >"$OUT/dpd_$f.json" 2>/dev/null && row DPD "$f" "H $h $*" "$OUT/dpd_$f.json"
done
for it in 1 3; do
    "$DPD" fit-ls --data "$DATA" --kind mp --target dpd --pa "$PA" --K 5 --Q 20 --iterations $it --out "$OUT/ila$it" --json >"$OUT/dpd_mp$it.json" && row DPD "MP ILA (LS)" "K5 Q20, $it it" "$OUT/dpd_mp$it.json"
    "$DPD" fit-ls --data "$DATA" --kind gmp --target dpd --pa "$PA" --K 5 --Q 20 --M 2 --iterations $it --out "$OUT/ila$it" --json >"$OUT/dpd_gmp$it.json" && row DPD "GMP ILA (LS)" "K5 Q20 M2, $it it" "$OUT/dpd_gmp$it.json"
done
sed -n 's/.*"no_dpd":{"NMSE":\([-0-9.]*\),"EVM":\([-0-9.]*\),"ACLR_L":\([-0-9.]*\),"ACLR_R":\([-0-9.]*\),"ACLR_AVG":\([-0-9.]*\)}.*/| no DPD | PA driven by x | | | \1 (test) | \2 (test) | \3 \/ \4 \/ \5 |/p' "$OUT/dpd_gru.json"
