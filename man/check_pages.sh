#!/bin/sh
# Renders each manual page given with man(1) and fails on any warning groff prints, or on a page
# that renders empty. Usage: check_pages.sh PAGE...
status=0
for page in "$@"; do
  out=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
  if [ -n "$out" ]; then
    echo "$page: warnings:"
    echo "$out"
    status=1
  fi
  lines=$(MANWIDTH=80 man -l "$page" 2>/dev/null | wc -l)
  if [ "$lines" -lt 10 ]; then
    echo "$page: renders to $lines lines"
    status=1
  fi
done
[ $status -eq 0 ] && echo "$# pages render without warnings"
exit $status
