#!/usr/bin/env bash
# Runs scripts/lab/repro/concurrent_devices.c (raw Vulkan, no vkcuda) in each of its
# variations REPEATS times (default 3) and prints a table: PASS, HANG (its watchdog
# fired: each thread's last step and the kernel stacks are in the log), or CRASH.
# On the GPU machine, after a `scripts/gpu-test.sh` run (loader unpacked):
#
#   scripts/lab/repro/concurrent-devices.sh [REPEATS]
#
# Vulkan headers: .dev/gpu/include (scripts/lab/gpu-bundle.sh), else /usr/include.
# Output: $OUT/concurrent-devices.log (default ./gpu-out), per run in the same log.
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 1
repeats=${1:-3}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
log=$OUT/concurrent-devices.log
: > "$log"
inc=.dev/gpu/include
[ -d "$inc/vulkan" ] || inc=/usr/include
exe=$OUT/concurrent_devices
cc -Wall -Wextra -Werror -O2 -pthread -I"$inc" scripts/lab/repro/concurrent_devices.c -ldl -o "$exe" 2>&1 | tee -a "$log"
[ -x "$exe" ] || { echo "concurrent-devices: the build failed" | tee -a "$log"; exit 1; }
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-(loader default)}" | tee -a "$log"

variants=(
    "--reload-loader"                 # what vkcuda did: lock, a loader of its own per context
    ""                                # lock, the loader loaded once
    "--keep-instance"                 # lock, one instance alive throughout
    "--no-lock"                       # what Vulkan allows: no lock
    "--no-lock --keep-instance"
)
rows=()
for v in "${variants[@]}"; do
    pass=0 hang=0 crash=0 times=()
    for ((i = 1; i <= repeats; i++)); do
        echo "---- concurrent_devices --threads 8 --cycles 20 --timeout 40 $v (run $i)" >> "$log"
        # shellcheck disable=SC2086 # $v is a list of flags
        timeout 70 "$exe" --threads 8 --cycles 20 --timeout 40 $v >> "$log" 2>&1
        rc=$?
        echo "---- exit status $rc" >> "$log"
        case $rc in
            0) pass=$((pass + 1)); times+=("$(grep -o 'in [0-9.]* s' "$log" | tail -1 | tr -dc '0-9.')") ;;
            3) hang=$((hang + 1)) ;;
            *) crash=$((crash + 1)) ;;
        esac
    done
    rows+=("$(printf '| %-26s | %4d | %4d | %5d | %s' "${v:-(lock)}" "$pass" "$hang" "$crash" "${times[*]:-}")")
done
{
    echo "==== concurrent_devices: 8 threads x 20 cycles (instance, device, exportable buffer and fd), $repeats runs each"
    echo "| variation                  | pass | hang | crash | seconds of the passing runs"
    echo "|----------------------------|------|------|-------|----"
    printf '%s\n' "${rows[@]}"
} | tee -a "$log"
