#!/bin/sh
# The README's second command: install what is missing (as root), build,
# and run every test. The last line is "N passed, N failed".
set -e
cd "$(dirname "$0")/.."
sh scripts/deps.sh
# The real-trainer test needs PyTorch (Debian's, without the recommended
# desktop stack). Where it cannot be installed, that test says so and
# skips.
if [ "$(id -u)" = 0 ] &&
	! dpkg-query -W -f='${Status}' python3-torch 2>/dev/null | grep -q "ok installed"; then
	echo "vitals: installing python3-torch for the real-trainer test" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends python3-torch python3-pip >/dev/null ||
		echo "vitals: python3-torch could not be installed; its test will skip" >&2
fi
# CI (CI=true) also runs the tests against a sanitizer build.
if [ "${CI:-}" = true ]; then
	exec make -s test-ci
fi
exec make -s test
