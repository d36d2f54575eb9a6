#!/bin/sh
# Installs the Debian/Ubuntu packages nccl-doctor needs to build and test.
# The only place the project installs system packages; the README's two
# commands and .ci/run call it. Safe to re-run: apt-get skips what is there.
# librsvg2-bin (rsvg-convert) renders the SVG pictures in the tests;
# prometheus brings promtool, which checks the textfile-collector output,
# and prometheus-node-exporter reads it back as node_exporter would.
set -eu

PKGS="build-essential cmake pkg-config
      libhwloc-dev libjansson-dev libyaml-dev libpcre2-dev libcmocka-dev
      zlib1g-dev libarchive-dev libnftnl-dev libmnl-dev
      libopenmpi-dev openmpi-bin
      iproute2 iperf3 nftables procps kmod jq time
      clang ripgrep valgrind zsh man-db groff-base dpkg-dev
      librsvg2-bin prometheus prometheus-node-exporter"

missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done
[ -z "$missing" ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
