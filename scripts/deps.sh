#!/bin/sh
# Install the Debian packages vitals needs to build, test and demo.
# As root it installs what is missing with apt-get; otherwise it only
# reports what is missing.
set -e
PKGS="gcc make libc6-dev pkg-config libzmq3-dev liblmdb-dev lmdb-utils libpcre2-dev libjson-c-dev
libncurses-dev libmicrohttpd-dev libcurl4-openssl-dev libprotobuf-c-dev protobuf-c-compiler
libsnappy-dev tmux python3 python3-venv man-db curl prometheus prometheus-alertmanager victoria-metrics"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "vitals: missing Debian packages:$missing (run as root, or apt-get install them)" >&2
	exit 1
fi
echo "vitals: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null || true
apt-get install -y -q $missing >/dev/null
