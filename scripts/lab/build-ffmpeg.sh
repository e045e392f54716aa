#!/usr/bin/env bash
# Builds, on this machine, the minimal shared FFmpeg that the GPU machine (no FFmpeg, no
# internet) needs for the FFmpeg bridge's GPU test and examples (bridges/ffmpeg): from
# Debian 12's source package (apt-get source, with a private deb-src list for the archive
# this machine's apt uses for its own release; nothing is installed here), configured
# with only libavutil, libavcodec and libavformat and in them: the H.264 and HEVC
# decoders and parsers, the raw H.264/HEVC demuxers and muxers, the file protocol, the
# cuda/nvdec hwaccels (h264_nvdec, hevc_nvdec) through ffnvcodec (Debian's
# libffmpeg-nvenc-dev headers), the h264_nvenc/hevc_nvenc encoders; no programs, no
# documentation, no external libraries, no assembly (no nasm needed; NVDEC decodes).
# Installed, stripped, into DEST (include/, lib/, lib/pkgconfig/ with relocatable .pc
# files: prefix=${pcfiledir}/../..), about 10 MiB; FFmpeg's source stays in
# target/ffmpeg-build (never commit it). Slow on two cores (tens of minutes): run it
# with nice in the background; a DEST built by this same script is kept (DEST/VERSION
# names the source and the script's hash). scripts/gpu-test.sh finds DEST=.dev/ffmpeg by
# itself; VKCUDA_BUNDLE_FFMPEG=1 scripts/lab/gpu-bundle.sh runs this script first.
#
# VKCUDA_FFMPEG_SUITE=trixie takes Debian 13's source (FFmpeg 7.1) instead: FFmpeg 6.1 added
# AV_HWACCEL_FLAG_UNSAFE_OUTPUT (5.1's NVDEC frames are always its mapped surfaces), so the
# bridge's GPU test runs both ways only with it.
#
#   scripts/lab/build-ffmpeg.sh [DEST]     default: .dev/ffmpeg
set -euo pipefail
cd "$(dirname "$0")/../.."
top=$PWD
dest=${1:-.dev/ffmpeg}
case $dest in /*) ;; *) dest=$top/$dest ;; esac
release=$( (. /etc/os-release && echo "${VERSION_CODENAME:-}") 2>/dev/null || true)
suite=${VKCUDA_FFMPEG_SUITE:-$release}
work=$top/target/ffmpeg-build/$suite
state=$work/apt
jobs=${VKCUDA_FFMPEG_JOBS:-$(nproc)}
key=$( (sha256sum "$0" | cut -c1-16; echo "$suite") | tr '\n' ' ' | sed 's/ *$//')
if grep -q "script $key" "$dest/VERSION" 2> /dev/null && [ -f "$dest/lib/libavcodec.so" ]; then
    echo "build-ffmpeg: $dest is up to date ($(cat "$dest/VERSION"))"
    exit 0
fi
for h in ffnvcodec/dynlink_loader.h:libffmpeg-nvenc-dev; do
    [ -e "/usr/include/${h%:*}" ] || { echo "build-ffmpeg: /usr/include/${h%:*} is missing: apt-get install ${h#*:}" >&2; exit 1; }
done
command -v dpkg-source > /dev/null || { echo "build-ffmpeg: dpkg-source is missing: apt-get install dpkg-dev" >&2; exit 1; }

# apt's own reading of its sources (one-line or deb822): the archive of this release.
uri=$(apt-get indextargets --format '$(REPO_URI)' "Codename: $release" 'Identifier: Packages' 2>/dev/null | head -1)
[ -n "$uri" ] || { echo "build-ffmpeg: apt has no archive for Debian '$release'" >&2; exit 1; }
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

src=$(ls -d "$work"/ffmpeg-[0-9]*/ 2> /dev/null | head -1 || true)
if [ -z "$src" ]; then
    echo "build-ffmpeg: apt-get source ffmpeg ($suite, from $uri)"
    mkdir -p "$state/lists/partial"
    echo "deb-src [signed-by=$keyring] $uri $suite main" > "$state/sources.list"
    security=$(apt-get indextargets --format '$(REPO_URI)' "Codename: $release-security" 'Identifier: Packages' 2>/dev/null | head -1)
    [ -z "$security" ] || [ "$suite" != "$release" ] || echo "deb-src [signed-by=$keyring] $security $release-security main" >> "$state/sources.list"
    o=("-oDir::State::Lists=$state/lists" "-oDir::Etc::SourceList=$state/sources.list"
       -oDir::Etc::SourceParts=/nonexistent)
    # Another suite's FFmpeg may need that suite's nv-codec-headers (7.1: >= 11.1.5.3;
    # Debian 12 has 11.1.5.2): its libffmpeg-nvenc-dev (headers only) unpacked beside.
    [ "$suite" = "$release" ] || echo "deb [signed-by=$keyring] $uri $suite main" >> "$state/sources.list"
    apt-get "${o[@]}" update -qq > /dev/null
    (cd "$work" && apt-get "${o[@]}" source -qq ffmpeg > /dev/null)
    if [ "$suite" != "$release" ]; then
        (cd "$work" && apt-get "${o[@]}" download -qq "libffmpeg-nvenc-dev/$suite" > /dev/null 2>&1)
        dpkg -x "$(ls "$work"/libffmpeg-nvenc-dev_*.deb | head -1)" "$work/nvenc-headers"
        sed -i "s|^prefix=.*|prefix=$work/nvenc-headers/usr|" "$work"/nvenc-headers/usr/*/pkgconfig/ffnvcodec.pc
    fi
    src=$(ls -d "$work"/ffmpeg-[0-9]*/ | head -1)
fi
nvenc_pc=$(ls -d "$work"/nvenc-headers/usr/*/pkgconfig 2> /dev/null | head -1 || true)
if [ -n "$nvenc_pc" ]; then
    export PKG_CONFIG_PATH="$nvenc_pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    echo "build-ffmpeg: nv-codec-headers $(pkg-config --modversion ffnvcodec) of $suite"
fi
echo "build-ffmpeg: source $src, $jobs job(s), into $dest"

build=$work/build
rm -rf "$dest" # the build directory stays (make rebuilds what changed), unless made from another source
if [ -f "$build/Makefile" ] && ! grep -qF "$src" "$build/Makefile"; then rm -rf "$build"; fi
mkdir -p "$build"
cd "$build"
"$src/configure" --prefix="$dest" \
    --enable-shared --disable-static --disable-programs --disable-doc --disable-debug \
    --disable-autodetect --disable-x86asm --disable-everything \
    --disable-avdevice --disable-avfilter --disable-swresample --disable-swscale --disable-postproc \
    --enable-ffnvcodec --enable-cuda --enable-nvdec --enable-nvenc \
    --enable-decoder=h264,hevc --enable-parser=h264,hevc \
    --enable-demuxer=h264,hevc --enable-muxer=h264,hevc --enable-protocol=file \
    --enable-hwaccel=h264_nvdec,hevc_nvdec --enable-encoder=h264_nvenc,hevc_nvenc \
    --extra-version=vkcuda-minimal > configure.log 2>&1 ||
    { tail -20 configure.log; echo "build-ffmpeg: configure failed (target/ffmpeg-build/build/configure.log)" >&2; exit 1; }
grep -E '^(Enabled (decoders|hwaccels|encoders|demuxers|muxers|protocols)|h264|hevc|nvdec|nvenc|cuda)' configure.log | head -40 || true
make -j "$jobs" > make.log 2>&1 || { tail -30 make.log; echo "build-ffmpeg: make failed" >&2; exit 1; }
make install > install.log 2>&1
strip --strip-unneeded "$dest"/lib/lib*.so.*.*
rm -rf "$dest/share"
# Relocatable: the GPU machine reads the .pc files from wherever the bundle lands.
sed -i "s|^prefix=.*|prefix=\${pcfiledir}/../..|" "$dest"/lib/pkgconfig/*.pc
for pc in "$dest"/lib/pkgconfig/*.pc; do
    sed -i "s|$dest|\${prefix}|g" "$pc"
done
for need in H264_NVDEC_HWACCEL HEVC_NVDEC_HWACCEL H264_NVENC_ENCODER HEVC_NVENC_ENCODER \
    H264_DECODER HEVC_DECODER H264_DEMUXER HEVC_DEMUXER FILE_PROTOCOL; do
    grep -qh "^#define CONFIG_$need 1" "$build"/config*.h ||
        { echo "build-ffmpeg: CONFIG_$need is not in the build" >&2; exit 1; }
done
echo "FFmpeg $(basename "$src") (Debian $suite source), minimal, script $key" > "$dest/VERSION"
du -sh "$dest"
echo "build-ffmpeg: done: $dest ($(du -sk "$dest" | cut -f1) KiB)"
