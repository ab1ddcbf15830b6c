#!/usr/bin/env bash
# Build crashlab and run one lab's driver: bash run-lab.sh 14 [--out DIR] [driver arguments]
# The default DIR is target/lab/<lab>-<UTC time>; an existing DIR is refused (exit 2).
set -euo pipefail
cd "$(dirname "$0")"
if [ $# -lt 1 ]; then
  echo "usage: bash run-lab.sh LAB [--out DIR] [driver arguments]   (LAB: 14 or 13)" >&2
  exit 2
fi
lab=$1
shift
cargo build --release --locked --quiet
exec target/release/crashlab driver "$lab" "$@"
