#!/usr/bin/env bash
# Puts the Khronos validation layer package of a newer Debian (default: sid) into ./.gl
# for the GPU machine (Ubuntu 24.04, glibc 2.39): Debian 12's layer (1.3.239) does not
# follow timeline semaphores signalled outside Vulkan (by CUDA) and reports false errors
# (Vulkan-ValidationLayers #8212, #10055). It downloads with a private package list from
# the archive this machine's apt uses for its own release; nothing is installed here.
#
#   scripts/lab/fetch-vvl.sh [SUITE]      default SUITE: sid (Debian unstable)
set -euo pipefail
cd "$(dirname "$0")/../.."
suite=${1:-sid}
state=${TMPDIR:-/tmp}/vkcuda-vvl-apt
release=$( (. /etc/os-release && echo "${VERSION_CODENAME:-}") 2>/dev/null || true)
# apt's own reading of its sources (one-line or deb822): the archive of this release.
uri=$(apt-get indextargets --format '$(REPO_URI)' "Codename: $release" 'Identifier: Packages' 2>/dev/null | head -1)
[ -n "$uri" ] || { echo "fetch-vvl: apt has no archive for Debian '$release': cannot tell which to use" >&2; exit 1; }
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
echo "fetch-vvl: archive $uri (this machine's source for Debian $release), keyring $keyring"

mkdir -p "$state/lists/partial" .gl
echo "deb [signed-by=$keyring] $uri $suite main" > "$state/sources.list"
o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$state/lists"
   "-oDir::Etc::SourceList=$state/sources.list" -oDir::Etc::SourceParts=/nonexistent)
apt-get "${o[@]}" update -qq > /dev/null
version=$(apt-cache "${o[@]}" policy vulkan-validationlayers | sed -n "s/^ *\(\*\*\* \)\?\([^ ]*\) 500$/\2/p" | head -1)
[ -n "$version" ] || { echo "fetch-vvl: no vulkan-validationlayers in Debian $suite" >&2; exit 1; }
tmp=$(mktemp -d)
(cd "$tmp" && apt-get "${o[@]}" download "vulkan-validationlayers=$version" > /dev/null 2>&1)
new=$(ls "$tmp"/vulkan-validationlayers_*.deb)
rm -f .gl/vulkan-validationlayers_*.deb && mv "$new" .gl/ && rmdir "$tmp"
echo "fetch-vvl: .gl/$(basename "$new") (Debian $suite)"
