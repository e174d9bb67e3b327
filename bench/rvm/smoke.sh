#!/bin/sh
# Smoke test of rvm_bench: a quick run exits 0 and prints every row of its table. Speed is never
# checked.
set -u
out=$("$1" --quick 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || { echo "rvm_bench exited with $rc"; exit 1; }
for row in "| first write to a page (explicit: set_range of the page) | 1 |" \
    "| first write to a page (explicit: set_range of 8 bytes) | 1 |" \
    "| rvm_set_range + write (explicit: set_range of 8 bytes) | 1 |" \
    "| begin + write + commit | 1 |" "| begin + write + commit | 4096 |" \
    "| commit alone | 256 |" "| begin + write + abort | 16 |" \
    "| nested begin + write + commit (parent: 256 pages) | 1 |" \
    "| persistent begin + write + commit | 256 |"; do
  printf '%s\n' "$out" | grep -qF "$row" || { echo "missing row: $row"; exit 1; }
done
