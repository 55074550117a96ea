#!/bin/sh
# install: `make install` and `make uninstall` as a user without root runs them, twice: staged
# (DESTDIR, PREFIX=/opt/dpd) and straight into a scratch prefix. Each time every file lands, the
# installed dpd runs, examples/quickstart.c builds with nothing but what `pkg-config dpd` prints
# (against libdpd.so in the first, with --static against libdpd.a in the second) and runs, and
# uninstall leaves no file behind: no directory either in the staged tree, only the shared bin, lib
# and include in the prefix.
# Prints "RESULT install passed failed skipped".
# Usage: tests/install.sh BUILD
B=${1:-build}
NAME=install
skipped=0
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. tests/lib.sh
done_() { echo "RESULT install $pass $fail $skipped"; exit $([ $fail -eq 0 ]); }
if ! command -v pkg-config >/dev/null 2>&1; then
    echo "SKIP install: pkg-config not found"; skipped=1; done_
fi
V=$(sed -n 's/^#define DPD_VERSION "\(.*\)"/\1/p' include/dpd/dpd.h)
# the tests' make runs from make test's recipe, without its jobserver: its own flags only, and the
# sanitizers a sanitized libdpd needs on the program's link line (make exports SANITIZE from make test's)
mk() { MAKEFLAGS= make --no-print-directory BUILD="$B" "$@" >"$T/make.log" 2>&1 || { cat "$T/make.log"; return 1; }; }
SAN=${SANITIZE:+-fsanitize=$SANITIZE}
export XDG_CONFIG_HOME="$T/config" XDG_DATA_HOME="$T/data"

# quickstart ROOT shared|static: examples/quickstart.c built with nothing but what dpd.pc says (a
# staged tree's paths moved under DESTDIR) against the installed libdpd.so, or with --static against
# libdpd.a (Libs.private names all it needs), then run in a scratch directory
quickstart() {
    R=$1
    export PKG_CONFIG_PATH="$R/lib/pkgconfig"
    pc() { pkg-config ${DEST:+--define-variable=libdir="$R/lib" --define-variable=includedir="$R/include"} "$@"; }
    check '[ "$(pc --modversion dpd)" = "$V" ]' "pkg-config --modversion dpd: $(pc --modversion dpd 2>&1)"
    if [ "$2" = shared ]; then flags=$(pc --cflags --libs dpd)
    else flags=$(pc --cflags --static --libs dpd | sed 's/-ldpd\b/-l:libdpd.a/'); fi
    unset PKG_CONFIG_PATH
    if cc $SAN examples/quickstart.c $flags -o "$T/qs" 2>"$T/cc.err"; then ok
    else bad "quickstart.c with $2 pkg-config flags ($flags): $(head -c 400 "$T/cc.err")"; fi
    if [ "$2" = shared ]; then
        check 'LD_LIBRARY_PATH="$R/lib" ldd "$T/qs" | grep -qF "$R/lib/libdpd.so"' \
            "quickstart does not load the installed libdpd.so"
    else check '! ldd "$T/qs" | grep -q libdpd' "the --static quickstart loads a libdpd.so"; fi
    mkdir "$T/run"
    (cd "$T/run" && LD_LIBRARY_PATH="$R/lib" "$T/qs" >"$T/qs.out" 2>&1); rc=$?
    check '[ $rc -eq 0 ] && grep -q "^run directory " "$T/qs.out"' \
        "quickstart ($2) exited $rc: $(tail -c 400 "$T/qs.out")"
    rm -rf "$T/run" "$T/qs"
}

# tree ROOT PREFIX shared|static: install into ROOT (DESTDIR, in $DEST, + PREFIX), use it, uninstall
tree() {
    R=$1; P=$2
    check 'mk DESTDIR="$DEST" PREFIX="$P" install' "make install DESTDIR='$DEST' PREFIX=$P"
    for f in bin/dpd lib/libdpd.so lib/libdpd.a lib/pkgconfig/dpd.pc; do
        check '[ -s "$R/$f" ]' "$f is not installed under $R"
    done
    for h in include/dpd/*.h; do check 'cmp -s "$h" "$R/$h"' "$h is not installed as $R/$h"; done
    check '[ "$("$R/bin/dpd" --version 2>&1)" = "dpd $V" ]' \
        "the installed dpd --version: $("$R/bin/dpd" --version 2>&1 | head -c 200)"
    quickstart "$R" "$3"
    check 'mk DESTDIR="$DEST" PREFIX="$P" uninstall' "make uninstall DESTDIR='$DEST' PREFIX=$P"
    check '[ -z "$(find "$R" ! -type d 2>/dev/null)" ] && [ ! -d "$R/include/dpd" ]' \
        "uninstall left $(find "$R" ! -type d -o -path "$R/include/dpd" 2>/dev/null | tr '\n' ' ')"
}

# staged: the whole tree is dpd's, and uninstall takes it all, up to DESTDIR
DEST=$T/stage
tree "$DEST/opt/dpd" /opt/dpd shared
check '[ -d "$DEST" ] && [ -z "$(ls -A "$DEST")" ]' \
    "a staged uninstall left $(cd "$DEST" 2>/dev/null && find . -mindepth 1 | tr '\n' ' ')"
# a prefix: bin, lib and include may be shared, so they stay (empty)
DEST=
tree "$T/prefix" "$T/prefix" static
check '[ "$(cd "$T/prefix" && find . -mindepth 1 | sort | tr "\n" " ")" = "./bin ./include ./lib ./lib/pkgconfig " ]' \
    "uninstall from a prefix left $(cd "$T/prefix" && find . -mindepth 1 | sort | tr '\n' ' ')(want only the empty bin, include, lib)"
done_
