#!/usr/bin/env bash
# Puts a newer lavapipe (Mesa's CPU Vulkan driver, 64 MiB unpacked) into ./target/lavapipe
# (not .dev: the GPU bundle carries .dev), for the CPU tests that need linear multi-planar images: Debian 12's Mesa 22.3 offers no multi-planar format at all,
# Mesa 25 (bookworm-backports, built for Debian 12's libraries) offers linear NV12, P010, ... with
# transfers and sampling. Downloads mesa-vulkan-drivers and the libdrm it needs with a private
# package list from the archive this machine's apt uses for its own release (as fetch-vvl.sh);
# nothing is installed. Writes target/lavapipe/lvp.json (VK_DRIVER_FILES) and
# target/lavapipe/lib (LD_LIBRARY_PATH). CMake then registers rust_present_video_frames and
# rust_planes_video_frames (label cpu: tests/present.rs with its rings of video frames and
# capi/tests/planes.rs with a ring's planes at the C door, which must run there) and ffmpeg_bridge_video_frames (label cpu):
# the FFmpeg bridge's CPU test with its shared-video-frame part (bridges/ffmpeg/tests).
#
#   scripts/lab/fetch-lavapipe.sh [SUITE]      default SUITE: <release>-backports
set -euo pipefail
cd "$(dirname "$0")/../.."
release=$( (. /etc/os-release && echo "${VERSION_CODENAME:-}") 2>/dev/null || true)
suite=${1:-$release-backports}
state=${TMPDIR:-/tmp}/vkcuda-lavapipe-apt
dest=target/lavapipe
uri=$(apt-get indextargets --format '$(REPO_URI)' "Codename: $release" 'Identifier: Packages' 2>/dev/null | head -1)
[ -n "$uri" ] || { echo "fetch-lavapipe: apt has no archive for Debian '$release'" >&2; exit 1; }
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
echo "fetch-lavapipe: archive $uri, suite $suite"
mkdir -p "$state/lists/partial"
echo "deb [signed-by=$keyring] $uri $suite main" > "$state/sources.list"
o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$state/lists"
   "-oDir::Etc::SourceList=$state/sources.list" -oDir::Etc::SourceParts=/nonexistent)
apt-get "${o[@]}" update -qq > /dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get "${o[@]}" download "mesa-vulkan-drivers/$suite" "libdrm2/$suite" "libdrm-amdgpu1/$suite" > /dev/null 2>&1) ||
    { echo "fetch-lavapipe: mesa-vulkan-drivers or libdrm is not in $suite" >&2; exit 1; }
rm -rf "$dest" && mkdir -p "$dest/unpacked"
for deb in "$tmp"/*.deb; do dpkg -x "$deb" "$dest/unpacked"; done
multiarch=$(ls -d "$dest"/unpacked/usr/lib/*-linux-gnu | head -1)
ln -s "$(cd "$multiarch" && pwd)" "$dest/lib"
lvp="$(cd "$multiarch" && pwd)/libvulkan_lvp.so"
[ -f "$lvp" ] || { echo "fetch-lavapipe: the package has no libvulkan_lvp.so" >&2; exit 1; }
sed "s|\"library_path\": *\"[^\"]*\"|\"library_path\": \"$lvp\"|" "$dest"/unpacked/usr/share/vulkan/icd.d/lvp_icd.json > "$dest/lvp.json"
ls "$tmp"/*.deb | xargs -n1 basename > "$dest/PACKAGES"
echo "fetch-lavapipe: $dest ($(tr '\n' ' ' < "$dest/PACKAGES")); re-run cmake to register ffmpeg_bridge_video_frames, rust_present_video_frames and rust_planes_video_frames"
