#!/usr/bin/env bash
# omap round trips through rados against a running cluster: keys, values and
# headers written, listed, partly removed, overwritten and read back. Usable
# as a teuthology workunit and by qa/run-local (needs ceph, rados, jq).
set -euo pipefail

pool=${OMAP_POOL:-hs-omap-$$}
keys=${OMAP_KEYS:-60}
objects=${OMAP_OBJECTS:-3}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

fail() { echo "omap.sh: FAILED: $*" >&2; exit 1; }
t() { timeout 120 "$@"; }

t ceph osd pool create "$pool" 8 8 > /dev/null 2>&1
t ceph osd pool application enable "$pool" rados > /dev/null 2>&1

value_of() { printf 'value-%s-%s-%s' "$1" "$2" "$(printf '%s' "$1/$2" | sha256sum | cut -c1-24)"; }

for o in $(seq 1 "$objects"); do
    obj=omap-$o
    t rados -p "$pool" create "$obj"
    t rados -p "$pool" setomapheader "$obj" "header of $obj"
    # Many keys through one process: setomapval reads the value from stdin
    # when no value argument is given.
    for k in $(seq 1 "$keys"); do
        value_of "$obj" "$k" | t rados -p "$pool" setomapval "$obj" "$(printf 'k%05d' "$k")"
    done
done

for o in $(seq 1 "$objects"); do
    obj=omap-$o
    t rados -p "$pool" listomapkeys "$obj" > "$scratch/keys"
    [ "$(wc -l < "$scratch/keys")" -eq "$keys" ] || fail "$obj has $(wc -l < "$scratch/keys") keys, not $keys"
    [ "$(head -1 "$scratch/keys")" = k00001 ] || fail "$obj keys are not sorted"
    for k in 1 $((keys / 2)) "$keys"; do
        t rados -p "$pool" getomapval "$obj" "$(printf 'k%05d' "$k")" "$scratch/v" > /dev/null
        [ "$(cat "$scratch/v")" = "$(value_of "$obj" "$k")" ] || fail "$obj key $k value"
    done
    t rados -p "$pool" getomapheader "$obj" "$scratch/h" > /dev/null
    [ "$(cat "$scratch/h")" = "header of $obj" ] || fail "$obj header"
done

# Remove every other key of the first object, overwrite some of the rest.
obj=omap-1
for k in $(seq 2 2 "$keys"); do t rados -p "$pool" rmomapkey "$obj" "$(printf 'k%05d' "$k")"; done
for k in $(seq 1 10 "$keys"); do
    printf 'new-%s' "$k" | t rados -p "$pool" setomapval "$obj" "$(printf 'k%05d' "$k")"
done
t rados -p "$pool" listomapkeys "$obj" > "$scratch/keys"
[ "$(wc -l < "$scratch/keys")" -eq $(((keys + 1) / 2)) ] || fail "$obj key count after removals"
! grep -q "^$(printf 'k%05d' 2)\$" "$scratch/keys" || fail "removed key k00002 still listed"
t rados -p "$pool" getomapval "$obj" k00011 "$scratch/v" > /dev/null
[ "$(cat "$scratch/v")" = new-11 ] || fail "overwritten value"
t rados -p "$pool" getomapval "$obj" k00003 "$scratch/v" > /dev/null
[ "$(cat "$scratch/v")" = "$(value_of "$obj" 3)" ] || fail "untouched value"

# Clearing the omap leaves the object and its data.
echo data > "$scratch/d"
t rados -p "$pool" put omap-2 "$scratch/d"
t rados -p "$pool" clearomap omap-2
[ "$(t rados -p "$pool" listomapkeys omap-2 | wc -l)" -eq 0 ] || fail "clearomap left keys"
t rados -p "$pool" get omap-2 "$scratch/d2"
cmp -s "$scratch/d" "$scratch/d2" || fail "data lost with clearomap"

t ceph osd pool rm "$pool" "$pool" --yes-i-really-really-mean-it > /dev/null 2>&1 ||
    echo "omap.sh: pool $pool left in place (pool deletion not allowed)"
echo "omap.sh: passed ($objects objects x $keys keys)"
