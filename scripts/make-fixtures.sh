#!/usr/bin/env bash
# Regenerates the golden fixtures in test/fixtures/hg from real Mercurial (6.3.2 is the reference).
# The outputs are small and committed, so tests run without hg; interop tests re-check live when hg
# is installed. Deterministic: fixed user, dates and pseudo-random bytes.
#   bash scripts/make-fixtures.sh [OUTDIR]      (default test/fixtures/hg)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$here/test/fixtures/hg}
export HGPLAIN=1 HGUSER='Test <test@example.com>' HGRCPATH=/dev/null TZ=UTC LC_ALL=C
hg --version | head -n 1
# the Python that runs hg (has the mercurial package)
hgpython=$(head -n 1 "$(command -v hg)" | sed -e 's/^#! *//' -e 's/ .*//')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf "$out"; mkdir -p "$out"

# make_repo DIR [hg init config...]: the layout of hg-stream-formats.md §12 (hard names, a split revlog).
make_repo() {
  local dir=$1; shift
  hg init "$@" "$dir"
  (
    cd "$dir"
    echo hello > README.txt; mkdir -p Upper dir.hg foo.i 'sp ace' enddot. 'endsp ' COM1 .config x.hg y.i z.d
    echo mixed > Upper/MixedCase.TXT; echo aux > aux.txt; echo x > dir.hg/file.txt; echo x > foo.i/bar
    echo y > trail.; echo z > 'sp ace/q:colon'; printf '\0\1\2binary' > nulstart.bin
    echo a > enddot./f; echo b > 'endsp /f'; echo c > COM1/lpt9.log; echo d > .config/x
    echo e > x.hg/e; echo f > y.i/f; echo g > z.d/g; echo con > con.txt; echo tilde > 'til~de_und'
    L=very/long/directory/names/that/keep/going/and/going/further/down/the/tree/until/we/exceed/the/limit/Of/One/Hundred/Twenty/chars/file_With_A_Long_Name.txt
    mkdir -p "$(dirname $L)"; echo long > "$L"
    python3 -c "import random,sys; r=random.Random(7); sys.stdout.buffer.write(bytes(r.getrandbits(8) for _ in range(140000)))" > big.bin
    hg add -q; hg commit -q -m initial -d '1700000000 0'
    for i in 1 2 3; do echo "revision $i" >> README.txt; hg commit -q -m "edit $i" -d "170000000$i 0"; done
    printf 'CHANGED' | dd of=big.bin bs=1 seek=1000 conv=notrunc 2>/dev/null; hg commit -q -m big -d '1700000010 0'
    hg bookmark -r 2 mybook; hg tag -r 1 v1.0 -d '1700000020 0'
    hg phase --public -r 3   # revs 0-3 public, 4-5 draft
  )
}

# Repo shapes: default (zstd, generaldelta, sparse, share-safe) and legacy (zlib, no generaldelta,
# no share-safe).
make_repo "$work/default"
make_repo "$work/legacy" --config format.revlog-compression=zlib --config format.usegeneraldelta=false \
  --config format.sparse-revlog=false --config format.use-share-safe=false

for shape in default legacy; do
  r=$work/$shape; o=$out/$shape; mkdir -p "$o"
  # the source repository itself (store and requirements), for generation tests without hg
  tar -C "$r" --sort=name --owner=0 --group=0 --numeric-owner --mtime='2023-11-14 00:00:00' \
      -czf "$o/repo.tar.gz" .hg/requires .hg/store $( [ -d "$r/.hg/cache" ] && echo .hg/cache ) .hg/bookmarks
  (cd "$r" && hg debugcreatestreamclonebundle -q "$o/packed1.hg")
  (cd "$r" && hg bundle -q -a -t 'none-v2;stream=v2' "$o/stream-v2.hg")
  (cd "$r" && hg bundle -q -a -t 'zstd-v2;stream=v2' "$o/stream-v2-zstd.hg")
  (cd "$r" && hg bundle -q -a -t 'gzip-v2;stream=v2' "$o/stream-v2-gzip.hg")
  (cd "$r" && hg bundle -q -a -t 'bzip2-v2;stream=v2' "$o/stream-v2-bzip2.hg")
  (cd "$r" && hg bundle -q -a -t 'none-v2;stream=v2' --config phases.publish=false "$o/stream-v2-phases.hg")
  (cd "$r" && hg debugbundle --spec "$o/packed1.hg" > "$o/packed1.spec")
  (cd "$r" && hg log -T '{rev}:{node} {phase} {bookmarks}\n' > "$o/log.txt")
  (cd "$r" && hg verify -q >/dev/null && echo ok > "$o/verify.txt")
  (cd "$r/.hg/store" && find . -type f ! -name 'undo*' ! -name lock -print0 | LC_ALL=C sort -z | xargs -0 md5sum > "$o/store.md5")
  cp "$r/.hg/store/fncache" "$o/fncache"

  # live wire captures from hg serve
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  (cd "$r" && hg serve -d -p "$port" -a 127.0.0.1 --pid-file "$work/$shape.pid")
  sleep 0.5
  base="http://127.0.0.1:$port"
  curl -sf "$base/?cmd=capabilities" > "$o/capabilities.txt"
  curl -sf -o "$o/stream_out.bin" "$base/?cmd=stream_out"
  curl -sf -o "$o/getbundle-stream2.bin" -H 'X-HgArg-1: bundlecaps=HG20&cg=0&stream=1' \
       -H 'X-HgProto-1: 0.1 0.2 comp=none' "$base/?cmd=getbundle"
  curl -sf "$base/?cmd=listkeys" -H 'X-HgArg-1: namespace=bookmarks' > "$o/listkeys-bookmarks.txt"
  curl -sf "$base/?cmd=heads" > "$o/heads.txt"
  kill "$(cat "$work/$shape.pid")"
done

# Store name encoding straight from hg's own functions, over many hard names.
"$hgpython" - "$out/store-names.tsv" <<'PY'
import sys
from mercurial import store
names = [
  "README.txt", "Upper/MixedCase.TXT", "aux.txt", "dir.hg/file.txt", "foo.i/bar", "trail.", "enddot./f",
  "endsp /f", "sp ace/q:colon", "COM1/lpt9.log", ".config/x", ".hgtags", "big.bin", "con.txt", "CON.txt",
  "lpt1", "x:y|z", "caf\u00e9", "cafe\u0301", "a~b", "under_score", "x.hg/e", "y.i/f", "z.d/g", "data/foo.i",
  "00changelog.i", "fncache", "prn", "com1", "lpt9.log", "nul.txt", "auxiliary", "aux", "AUX", "con", "com0",
  "com10", " lead space", "trail space ", "q?*\"<>|", "tab\there", "\x7fdel", "Case/README", "Case/readme",
  "very/long/directory/names/that/keep/going/and/going/further/down/the/tree/until/we/exceed/the/limit/Of/One/Hundred/Twenty/chars/file_With_A_Long_Name.txt",
  "COM1/Aux.Dir./UPPER~tilde_under/x" + "y" * 130 + ".TXT",
  "a/" * 40 + "deep.txt", "dir.hg/sub.i/leaf.d/x", "short/" + "n" * 115, "short/" + "n" * 106,
  "x" * 200, "A" * 60, ".hg/x", "con.txt/aux.c/prn", "%percent", "_" * 70,
]
with open(sys.argv[1], "w", encoding="utf-8", newline="\n") as f:
    f.write("# store path (data/NAME.i, then .d)\tencodedir\tencoded on disk (fncache+dotencode)\n")
    for n in names:
        for suffix in (".i", ".d"):
            p = ("data/" + n + suffix).encode("utf-8")
            enc = store._pathencode(p)  # what fncachestore writes (dotencode on)
            f.write("%s\t%s\t%s\n" % (p.hex(), store.encodedir(p).hex(), enc.hex()))
PY
echo "fixtures written to $out"; du -sh "$out"
