#!/bin/sh
# The README's first command: install what is missing (as root), build,
# and run the demo (a collector, a simulated 4-rank training run, and a
# look at what was stored).
set -e
cd "$(dirname "$0")/.."
sh scripts/deps.sh
make -s all
exec sh demo/demo.sh
