#!/bin/sh
# Regenerates the seed corpora of tests/fuzz/corpus/ that come from the real program: small
# checkpoints (GRU hidden 2 and other tiny families, best and last with the optimizer state),
# a run's config.json and a real dataset's CSV and spec.json, from `dpd synth` and `dpd
# train-pa`/`fit-ls` runs of one epoch. The hand-written seeds beside them are kept. Every seed
# stays under 8 KB. Usage: tests/fuzz/seeds.sh [path/to/dpd] (default build/dpd).
set -eu
DPD=${1:-build/dpd}
C=tests/fuzz/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$DPD" synth --out "$tmp/ds" --length 1280 --nperseg 128 --carriers 2 --seed 1 >/dev/null
mkdir -p $C/ckpt $C/config $C/csv $C/spec $C/recording
train() { # name, family options...
    name=$1; shift
    "$DPD" train-pa --data "$tmp/ds" --out "$tmp/runs-$name" --epochs 1 --frame 16 --stride 64 --threads 1 "$@" >/dev/null
    run=$(dirname "$(find "$tmp/runs-$name" -name best.safetensors | head -n 1)")
    cp "$run/best.safetensors" "$C/ckpt/$name-best.safetensors"
    [ -f "$run/last.safetensors" ] && cp "$run/last.safetensors" "$C/ckpt/$name-last.safetensors"
    cp "$run/config.json" "$C/config/$name.json"
}
train gru-h2 --model gru --hidden 2
train lstm-h2 --model lstm --hidden 2 --layers 2
train deltagru-h2 --model deltagru --hidden 2 --thx 0.01 --thh 0.02
train tcn-h1 --model tcn --hidden 1
"$DPD" fit-ls --data "$tmp/ds" --out "$tmp/runs-mp" --kind gmp --K 2 --Q 2 --M 1 --threads 1 >/dev/null
cp "$(find "$tmp/runs-mp" -name best.safetensors | head -n 1)" "$C/ckpt/gmp-k2q2m1.safetensors"
cp "$tmp/ds/spec.json" "$C/spec/synth.json"
{ printf '?'; head -n 6 "$tmp/ds/train_input.csv"; } >"$C/csv/synth-rows5" # '?': all six files
head -n 6 "$tmp/ds/train_input.csv" >"$C/recording/synth.csv"
# Pack archives: a valid pack (refused only at validation) as plain tar and tar.gz, and
# near-valid ones. 512-byte tar blocks (-b 1) keep them small.
mkdir -p $C/pack
pack() { # seed name, pack_version, extra tar arguments...
    name=$1 ver=$2; shift 2
    d="$tmp/pack-$name"; mkdir -p "$d/lib"
    printf '\177ELF not really a library\n' >"$d/lib/libdpd-fuzz.so"
    sum=$(sha256sum "$d/lib/libdpd-fuzz.so" | cut -d' ' -f1)
    printf '{"provider": "fuzz", "pack_version": "%s", "library": "lib/libdpd-fuzz.so", "abi_version": 2,\n "files": [{"path": "lib/libdpd-fuzz.so", "size": %s, "sha256": "%s"}]}\n' "$ver" "$(wc -c <"$d/lib/libdpd-fuzz.so")" "$sum" >"$d/pack.json"
    (cd "$d" && tar --format=ustar -b 1 --owner=0 --group=0 --mtime=@0 -cf "$tmp/$name.tar" "$@" pack.json lib)
    cp "$tmp/$name.tar" "$C/pack/$name.tar"
}
pack valid 1.0.0
gzip -9n <"$C/pack/valid.tar" >"$C/pack/valid.tar.gz"
pack dotdot '9.9/../../../somewhere'
pack extra 1.0.1 --transform='s,^pack.json$,./pack.json,'
ln -s /etc/passwd "$tmp/pack-extra/escape" && (cd "$tmp/pack-extra" && tar --format=ustar -b 1 -cf "$tmp/link.tar" pack.json escape) && cp "$tmp/link.tar" $C/pack/symlink.tar
(cd "$tmp/pack-valid" && tar --format=ustar -b 1 -cf "$tmp/abs.tar" -P "$tmp/pack-valid/pack.json" 2>/dev/null) && cp "$tmp/abs.tar" $C/pack/absolute.tar
big=$(find $C -type f -size +8k)
[ -z "$big" ] || { echo "seeds.sh: over 8 KB: $big" >&2; exit 1; }
ls -l $C/ckpt $C/config
