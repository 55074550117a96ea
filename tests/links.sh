#!/bin/sh
# The links of README.md and docs/*.md: every relative markdown link, [text](path) or
# ![alt](path), with or without #anchor, names a file or directory inside the repository, and its
# anchor is a heading of that file (GitHub's slug: lower case, punctuation dropped, spaces to
# hyphens, -1, -2 ... for repeats); an anchor alone (#x) is a heading of the same file. A link
# that leaves the repository (../shared, an absolute path) fails. Links in code (fenced blocks,
# `spans`) are not links. http(s) links are not fetched (no network): each is counted as skipped.
# Usage: sh tests/links.sh [BUILD_DIR] (unused: the check reads only the sources). Prints
# "RESULT links <passed> <failed> <skipped>".
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
NAME=links
. "$(dirname "$0")/lib.sh"
if ! command -v python3 >/dev/null 2>&1; then
    echo "SKIP links: needs python3"; echo "RESULT links 0 0 1"; exit 0
fi
# One line a link: "ok FILE:LINE TARGET", "skip FILE:LINE URL" or "bad FILE:LINE TARGET: why".
cat >"$T/links.py" <<'EOF'
import os, re, sys

root = os.path.realpath(sys.argv[1])
link = re.compile(r'!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^()\s>]*(?:\([^()\s]*\)[^()\s>]*)*)>?(?:\s+"[^"]*")?\s*\)')
fence = re.compile(r'^\s*(```|~~~)')

def lines(path):  # (line number, text) of the lines outside fenced code
    inside = False
    for no, text in enumerate(open(path, encoding='utf-8'), 1):
        if fence.match(text):
            inside = not inside
        elif not inside:
            yield no, text

def slug(heading):  # GitHub's anchor of a heading's text
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', heading)  # a link shows its text
    text = re.sub(r'<[^>]+>', '', text).replace('`', '').replace('*', '').strip().lower()
    return re.sub(r'[^\w\- ]', '', text).replace(' ', '-')

def anchors(path, cache={}):  # the anchors of a file's headings; a repeated slug gets -1, -2, ...
    if path not in cache:
        count, found = {}, set()
        for no, text in lines(path):
            m = re.match(r'^#{1,6}\s+(.*?)\s*#*\s*$', text)
            if m:
                s = slug(m.group(1))
                found.add(s if s not in count else '%s-%d' % (s, count[s]))
                count[s] = count.get(s, 0) + 1
        cache[path] = found
    return cache[path]

for name in sys.argv[2:]:
    path = os.path.join(root, name)
    for no, text in lines(path):
        for m in link.finditer(re.sub(r'(`+).*?\1', lambda c: ' ' * len(c.group(0)), text)):  # not in `code`
            target, where = m.group(1), '%s:%d' % (name, no)
            if re.match(r'https?://', target):
                print('skip', where, target)
                continue
            if re.match(r'[a-z]+:', target):
                print('bad', where, target + ': not a relative link or http(s)')
                continue
            file, _, anchor = target.partition('#')
            dest = os.path.realpath(os.path.join(os.path.dirname(path), file)) if file else path
            if file.startswith('/') or os.path.commonpath([root, dest]) != root:
                print('bad', where, target + ': outside the repository')
            elif not os.path.exists(dest):
                print('bad', where, target + ': no such file')
            elif anchor and (not dest.endswith('.md') or anchor not in anchors(dest)):
                print('bad', where, target + ': no heading with this anchor in ' + os.path.relpath(dest, root))
            else:
                print('ok', where, target)
EOF
cd "$ROOT" || exit 1
python3 "$T/links.py" "$ROOT" README.md docs/*.md >"$T/out" 2>"$T/err"
rc=$?
check '[ $rc -eq 0 ] && [ -s "$T/out" ]' "the link checker failed (exit $rc): $(head -c 300 "$T/err")"
skipped=0
while read -r kind where rest; do
    case $kind in
    ok) ok ;;
    skip) skipped=$((skipped + 1)) ;;
    *) bad "$where: $rest" ;;
    esac
done <"$T/out"
echo "links: $(grep -c '^ok' "$T/out") relative links resolve; $skipped http(s) links not fetched (no network)"
echo "RESULT links $pass $fail $skipped"
[ "$fail" -eq 0 ]
