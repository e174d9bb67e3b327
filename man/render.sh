#!/bin/sh
# Renders one scdoc page to gzipped roff: render.sh SCDOC SOURCE OUTPUT.
set -e
"$1" < "$2" | gzip -9n > "$3.tmp"
mv "$3.tmp" "$3"
