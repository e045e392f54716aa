#!/usr/bin/env bash
# Regenerates include/vkcuda.h from src/ffi with the pinned cbindgen.
set -euo pipefail
cd "$(dirname "$0")/.."
VKCUDA_UPDATE_HEADER=1 cargo test --quiet --test header header_is_up_to_date
echo "include/vkcuda.h regenerated"
