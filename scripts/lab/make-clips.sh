#!/usr/bin/env bash
# Makes the NVDEC test clips and their CPU reference (Debian's ffmpeg with libx264 and
# libx265, and a C compiler; scripts/lab/gpu-bundle.sh runs it):
#   h264_1080p.h264          H.264 High, 1920x1080, 300 frames of testsrc2, B-frames (libx264
#                            -bf 3), about 1.5 Mbit/s, Annex B; BT.709, narrow range
#   hevc_main10_1080p.hevc   HEVC Main10 (libx265, yuv420p10le), 1920x1080, 60 frames;
#                            BT.2020 (matrix 9 non-constant, transfer 14, primaries 9), narrow
#   <clip>.fnv               the CPU reference: "INDEX FNV1A64" (16 hex digits) per frame of
#                            ffmpeg's decode as packed NV12 or P010LE (luma rows, then CbCr)
# The colour tags travel in the VUI (NVDEC reports them in CUVIDEOFORMAT, nvdec_frames
# checks them). Only the hashes travel, not the 933 MB of raw frames. Narrow range keeps
# every sample through a plain -pix_fmt conversion (NVDEC keeps a clip's range). The
# encodes take minutes on two cores: cached in target/clips, keyed by this script.
#
#   scripts/lab/make-clips.sh [DIR]       default: .dev/gpu/clips
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-.dev/gpu/clips}
cache=target/clips
key=$(sha256sum "$0" | cut -c1-16)
# ffmpeg is only needed here (for the GPU bundle), so CI does not install it.
if ! command -v ffmpeg > /dev/null; then
  echo "make-clips: installing Debian's ffmpeg (libx264, libx265)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ffmpeg > /dev/null; } ||
    { echo "make-clips: no ffmpeg and it could not be installed (apt-get install ffmpeg)" >&2; exit 1; }
fi

if [ "$(cat "$cache/KEY" 2> /dev/null || true)" != "$key" ]; then
    rm -rf "$cache"
    mkdir -p "$cache"
    # FNV-1a 64 of each FRAME_BYTES-sized frame read from stdin (tests/gpu/nvdec_frames.c
    # hashes what Vulkan reads back the same way).
    cat > "$cache/hashframes.c" << 'EOC'
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    size_t n = argc > 1 ? strtoull(argv[1], 0, 10) : 0, i;
    unsigned char *b = n ? malloc(n) : 0;
    long f = 0;
    if (!b) return 2;
    while (fread(b, 1, n, stdin) == n) {
        uint64_t h = 0xcbf29ce484222325ull;
        for (i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
        printf("%ld %016llx\n", f++, (unsigned long long)h);
    }
    return 0;
}
EOC
    "${CC:-cc}" -O2 -o "$cache/hashframes" "$cache/hashframes.c"
    src=testsrc2=size=1920x1080:rate=30
    echo "make-clips: H.264 1080p, 300 frames (libx264, B-frames)"
    ffmpeg -nostdin -v error -y -f lavfi -i "$src" -frames:v 300 -pix_fmt yuv420p \
        -colorspace bt709 -color_primaries bt709 -color_trc bt709 -color_range tv \
        -c:v libx264 -preset veryfast -profile:v high -bf 3 -b:v 1500k -maxrate 2000k -bufsize 4000k \
        -f h264 "$cache/h264_1080p.h264"
    echo "make-clips: HEVC Main10 1080p, 60 frames (libx265)"
    ffmpeg -nostdin -v error -y -f lavfi -i "$src" -frames:v 60 -pix_fmt yuv420p10le \
        -colorspace bt2020nc -color_primaries bt2020 -color_trc bt2020-10 -color_range tv \
        -c:v libx265 -preset fast -b:v 1500k -x265-params log-level=error \
        -f hevc "$cache/hevc_main10_1080p.hevc"
    echo "make-clips: CPU reference hashes"
    ffmpeg -nostdin -v error -i "$cache/h264_1080p.h264" -fps_mode passthrough -f rawvideo -pix_fmt nv12 - |
        "$cache/hashframes" $((1920 * 1080 * 3 / 2)) > "$cache/h264_1080p.h264.fnv"
    ffmpeg -nostdin -v error -i "$cache/hevc_main10_1080p.hevc" -fps_mode passthrough -f rawvideo -pix_fmt p010le - |
        "$cache/hashframes" $((1920 * 1080 * 3)) > "$cache/hevc_main10_1080p.hevc.fnv"
    [ "$(wc -l < "$cache/h264_1080p.h264.fnv")" -eq 300 ] || { echo "make-clips: the H.264 reference is not 300 frames" >&2; exit 1; }
    [ "$(wc -l < "$cache/hevc_main10_1080p.hevc.fnv")" -eq 60 ] || { echo "make-clips: the HEVC reference is not 60 frames" >&2; exit 1; }
    echo "$key" > "$cache/KEY"
fi
mkdir -p "$out"
cp "$cache"/h264_1080p.h264 "$cache"/hevc_main10_1080p.hevc "$cache"/*.fnv "$out/"
ls -l "$out"
