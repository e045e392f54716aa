#!/usr/bin/env bash
# Replaces the Khronos validation layer package in ./.gl with a newer one for the
# GPU machine (Ubuntu 24.04, glibc 2.39): Debian 12's layer (1.3.239) does not follow
# timeline semaphores signalled outside Vulkan (by CUDA) and reports false errors
# (Vulkan-ValidationLayers #8212, #10055). Uses apt with a private package list from
# the archive this machine's apt uses (the first "deb" source of this Debian release,
# one-line or deb822, with its Signed-By keyring); nothing is installed here.
# VKCUDA_APT_ETC=DIR reads DIR instead of /etc/apt.
#
#   scripts/fetch-vvl.sh [SUITE]      default SUITE: sid (Debian unstable)
set -euo pipefail
cd "$(dirname "$0")/.."
suite=${1:-sid}
state=${TMPDIR:-/tmp}/vkcuda-vvl-apt
apt_etc=${VKCUDA_APT_ETC:-/etc/apt}

release=$( (. /etc/os-release && echo "${VERSION_CODENAME:-}") 2>/dev/null || true)
[ -n "$release" ] || { echo "fetch-vvl: no VERSION_CODENAME in /etc/os-release: is this Debian?" >&2; exit 1; }

# Prints "URI KEYRING" (KEYRING may be empty) of every enabled "deb" source of
# $release, in the order apt reads them: sources.list, then sources.list.d/*.
apt_sources() {
    local f
    for f in "$apt_etc/sources.list" "$apt_etc"/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        # deb [opt=value ...] URI SUITE COMPONENT...
        awk -v rel="$release" '
            { sub(/#.*/, "") }
            $1 != "deb" { next }
            {
                key = ""; i = 2
                if ($2 ~ /^\[/) {
                    for (; i <= NF; i++) {
                        if ($i ~ /^\[?signed-by=/) { key = $i; sub(/^\[?signed-by=/, "", key); sub(/\]$/, "", key) }
                        if ($i ~ /\]$/) { i++; break }
                    }
                }
                if ($(i + 1) == rel) print $i, key
            }' "$f"
    done
    for f in "$apt_etc"/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        # deb822 stanzas, separated by blank lines; field names are case-insensitive.
        awk -v rel="$release" '
            function flush(   n, i, u, s, ok) {
                if (types ~ /(^| )deb( |$)/ && tolower(enabled) != "no") {
                    ok = 0
                    n = split(suites, s, " ")
                    for (i = 1; i <= n; i++) if (s[i] == rel) ok = 1
                    if (ok) { split(uris, u, " "); if (u[1] != "") print u[1], (key ~ /^\// ? key : "") }
                }
                types = uris = suites = key = enabled = ""; field = ""
            }
            /^#/ { next }
            /^[ \t]*$/ { flush(); next }
            /^[ \t]/ { if (field == "uris") uris = uris " " $0; else if (field == "suites") suites = suites " " $0; next }
            {
                field = tolower($0); sub(/:.*/, "", field)
                value = $0; sub(/^[^:]*:[ \t]*/, "", value)
                if (field == "types") types = value
                else if (field == "uris") uris = value
                else if (field == "suites") suites = value
                else if (field == "signed-by") key = value
                else if (field == "enabled") enabled = value
            }
            END { flush() }' "$f"
    done
}
read -r uri keyring < <(apt_sources | grep -v '^cdrom:' | head -1) || true
[ -n "${uri:-}" ] || { echo "fetch-vvl: no \"deb\" source for Debian $release in $apt_etc/sources.list{,.d/}: cannot tell which archive to use" >&2; exit 1; }
keyring=${keyring:-/usr/share/keyrings/debian-archive-keyring.gpg}
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
