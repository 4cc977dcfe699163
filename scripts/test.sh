#!/bin/sh
# The README's second command: install what is missing (as root), build,
# and run every test. The last line is "N passed, N failed".
set -e
cd "$(dirname "$0")/.."
sh scripts/deps.sh
exec make -s test
