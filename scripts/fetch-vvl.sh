#!/usr/bin/env bash
# Replaces the Khronos validation layer package in ./.gl with a newer one for the
# GPU machine (Ubuntu 24.04, glibc 2.39, libstdc++ of GCC 14):
#
#   scripts/fetch-vvl.sh [SUITE]      default SUITE: sid (Debian unstable)
#
# Debian 12's layer (1.3.239, what prepare-loader.sh --validation fetches) does not
# follow timeline semaphores signalled outside Vulkan (here: by CUDA through an
# exported fd) and reports false errors about command buffers "in use" and signal
# values (Vulkan-ValidationLayers issues #8212 and #10055, fixed in later layers).
# The package of SUITE needs glibc >= 2.38: it runs on the GPU machine, not on
# Debian 12. Its version is printed, and the run logs show it. Uses apt with a
# private package list (nothing is installed or changed on this machine).
set -euo pipefail
cd "$(dirname "$0")/.."
suite=${1:-sid}
state=/tmp/vkcuda-vvl-apt
mkdir -p "$state/lists/partial" .gl
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main" \
    > "$state/sources.list"
o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$state/lists"
   "-oDir::Etc::SourceList=$state/sources.list" -oDir::Etc::SourceParts=/nonexistent)
apt-get "${o[@]}" update -qq > /dev/null
version=$(apt-cache "${o[@]}" policy vulkan-validationlayers | sed -n "s/^ *\(\*\*\* \)\?\([^ ]*\) 500$/\2/p" | head -1)
[ -n "$version" ] || { echo "fetch-vvl: no vulkan-validationlayers in Debian $suite" >&2; exit 1; }
tmp=$(mktemp -d)
(cd "$tmp" && apt-get "${o[@]}" download "vulkan-validationlayers=$version" > /dev/null 2>&1)
new=$(ls "$tmp"/vulkan-validationlayers_*.deb)
rm -f .gl/vulkan-validationlayers_*.deb
mv "$new" .gl/
rmdir "$tmp"
echo "fetch-vvl: .gl/$(basename "$new") (Debian $suite)"
