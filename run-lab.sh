#!/usr/bin/env bash
# Build crashlab and run one lab's driver: bash run-lab.sh 14 [--out DIR] [driver arguments]
# Every driver argument passes through, --stack, --pg-url and --amqp-url included:
# bash run-lab.sh 14 --stack postgres-rabbitmq (docs/stack.md).
# The default DIR is target/lab/<lab>-<UTC time> in this checkout; a relative --out DIR is
# taken from the directory you run the script in. An existing DIR is refused (exit 2).
set -euo pipefail
repo=$(cd "$(dirname "$0")" && pwd)
if [ $# -lt 1 ]; then
  echo "usage: bash run-lab.sh LAB [--out DIR] [driver arguments]   (LAB: 14, 13, f1, f2 or f3; 'crashlab points' lists the labs)" >&2
  exit 2
fi
lab=$1
shift
# The build shows cargo's progress: a first build compiles the bundled SQLite, which is
# most of its time, and a silent minute reads as a hang.
if [ ! -x "$repo/target/release/crashlab" ]; then
  echo "run-lab.sh: first build: cargo compiles crashlab and the SQLite it bundles; this takes 2-3 minutes on two cores" >&2
fi
(cd "$repo" && cargo build --release --locked)
case " $* " in
  *" --out "* | *" --out="*) ;;
  *) cd "$repo" ;;
esac
exec "$repo/target/release/crashlab" driver "$lab" "$@"
