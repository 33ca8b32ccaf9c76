#!/usr/bin/env bash
# run_fuzz.sh TARGET CORPUS SECONDS: runs a libFuzzer target for SECONDS on
# the committed CORPUS (read only: new inputs go to a temporary directory)
# and fails on any crash, leak or sanitizer report. Label "fuzz".
set -euo pipefail
target=$1 corpus=$2 secs=$3
work=$(mktemp -d "/tmp/vfab-fuzz-$(basename "$target").XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
"$target" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
	-print_final_stats=1 "$work" "$corpus"
