#!/bin/sh
# Smoke test of schema_bench: a quick run exits 0, prints every row, and db_stat finds the
# 4 KiB file pages inline. Speed is never checked.
set -u
bench=$1
dir=$2
out=$("$bench" --quick --dir "$dir" 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || { echo "schema_bench exited with $rc"; exit 1; }
for row in "create (open O_CREAT + close)" "stat (random file of the dir)" "readdir entries" \
    "4 KiB sequential write" "4 KiB sequential read" "4 KiB random write" "4 KiB random read" \
    "commit create+write 4K, NoSync" "commit create+write 4K, WriteNoSync" \
    "commit create+write 4K, Sync" "4 KiB pages inline: yes"; do
  printf '%s\n' "$out" | grep -qF "$row" || { echo "missing row: $row"; exit 1; }
done
# The growth table: a row per decade of the tree's size.
out=$("$bench" --growth 2000 --dir "$dir" 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || { echo "schema_bench --growth exited with $rc"; exit 1; }
for files in 1000 2000; do
  printf '%s\n' "$out" | grep -qE "^ +$files +[0-9]+ " || { echo "missing growth row: $files"; exit 1; }
done
