#!/bin/sh
# Objects made of many separate pieces (issue 10), end to end through
# hybridstore-tool: for each PIECES count, one object written as that many
# 4 KiB pieces with a 4 KiB gap after each (a sparse object, the shape RBD
# images take under small random writes), on a fresh store per I/O backend;
# then read back whole and in seeded random ranges with `cat` and compared
# byte for byte with what was written. Prints the seed and, per object, the
# wall time of `cat` of the whole object and of `stat` (the same mount and
# umount without the data read) for comparison.
# Usage: qa/short/fragmented.sh BUILD [PIECES...]   (default: 1 127 128 129 1000)
# HS_FRAG_SEED (else HS_QA_SEED, else 1) picks the data and the ranges;
# "random" draws one.
# HS_FRAG_BACKENDS (default "uring posix"), HS_FRAG_SETS (extra --set k=v,
# space separated, e.g. hybridstore_ssd_kind=nand), HS_FRAG_RANGES (ranges
# read per object, default 8).
set -eu
BUILD=${1:-build}
[ $# -gt 0 ] && shift
PIECES=${*:-1 127 128 129 1000}
BIN="$(cd "$BUILD/bin" && pwd)"
TOOL="$BIN/hybridstore-tool"
SEED=${HS_FRAG_SEED:-${HS_QA_SEED:-1}}
[ "$SEED" = random ] && SEED=$(od -An -tu4 -N4 /dev/urandom | tr -d ' ')
echo "fragmented objects: seed $SEED (reproduce with HS_FRAG_SEED=$SEED)"
W=$(mktemp -d "${TMPDIR:-/tmp}/hs-frag.XXXXXX")
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL (seed $SEED): $*" >&2; exit 1; }
now() { date +%s.%N; }
elapsed() { echo "$1 $2" | awk '{printf "%.2f", $2 - $1}'; }

# gen PIECES DIR: DIR/txn.json writes object "frag" as PIECES separate pieces
# (a transaction per 200 pieces, so no single transaction is huge), DIR/image
# holds the bytes the object must read back as, DIR/ranges "offset length"
# lines to read.
gen() {
  python3 - "$SEED" "$1" "$2" "${HS_FRAG_RANGES:-8}" <<'PY'
import base64, json, random, sys
seed, pieces, out, nranges = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
rng = random.Random(seed * 1000003 + pieces)
piece, stride = 4096, 8192
size = (pieces - 1) * stride + piece
image = bytearray(size)
txns, ops = [], [{"op": "mkcoll", "coll": "1.0_head"}]
for i in range(pieces):
    data = rng.randbytes(piece)
    image[i * stride:i * stride + piece] = data
    ops.append({"op": "write", "coll": "1.0_head", "oid": "frag", "off": i * stride,
                "data_b64": base64.b64encode(data).decode()})
    if len(ops) >= 200:
        txns.append({"ops": ops})
        ops = []
if ops:
    txns.append({"ops": ops})
with open(out + "/txn.json", "w") as f:
    json.dump(txns, f)
with open(out + "/image", "wb") as f:
    f.write(image)
with open(out + "/ranges", "w") as f:
    for _ in range(nranges):
        a = rng.randrange(size)
        f.write("%d %d\n" % (a, rng.randrange(1, size - a + 1)))
PY
}

for backend in ${HS_FRAG_BACKENDS:-uring posix}; do
  for n in $PIECES; do
    D="$W/$backend-$n"
    mkdir -p "$D"
    gen "$n" "$D"
    # Each HS_FRAG_SETS word becomes its own --set argument: split on purpose.
    # shellcheck disable=SC2086,SC2046
    set -- --path "$D/store" --set hybridstore_io_backend=$backend \
      $(for s in ${HS_FRAG_SETS:-}; do printf -- '--set %s ' "$s"; done)
    "$TOOL" "$@" --set hybridstore_ssd_size=512M --set hybridstore_hdd_size=1G mkfs >/dev/null
    "$TOOL" "$@" txn -q "$D/txn.json" || fail "$backend, $n pieces: writing the object"
    t0=$(now)
    "$TOOL" "$@" stat --coll 1.0_head --oid frag >"$D/stat" || fail "$backend, $n pieces: stat"
    t1=$(now)
    "$TOOL" "$@" cat --coll 1.0_head --oid frag >"$D/out" || fail "$backend, $n pieces: cat"
    t2=$(now)
    cmp -s "$D/out" "$D/image" || fail "$backend, $n pieces: the object reads back different bytes"
    while read -r off len; do
      "$TOOL" "$@" cat --coll 1.0_head --oid frag --offset "$off" --length "$len" >"$D/part" ||
        fail "$backend, $n pieces: cat --offset $off --length $len"
      tail -c +$((off + 1)) "$D/image" | head -c "$len" | cmp -s - "$D/part" ||
        fail "$backend, $n pieces: range $off~$len reads back different bytes"
    done <"$D/ranges"
    "$TOOL" "$@" fsck --deep >/dev/null || fail "$backend, $n pieces: fsck --deep"
    printf '%-6s %6d pieces (%s bytes): cat %s s, stat %s s\n' "$backend" "$n" "$(wc -c <"$D/image" | tr -d ' ')" \
      "$(elapsed "$t1" "$t2")" "$(elapsed "$t0" "$t1")"
    rm -rf "$D"
  done
done
echo "fragmented object checks passed"
