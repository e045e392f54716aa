# Shared by scripts/gpu-test.sh and scripts/gpu-hardening.sh (sourced; needs $top and
# $bundle): with_vvl COMMAND... runs COMMAND under the Khronos validation layer that
# the setup step unpacked into .dev/vvl, with synchronization validation, after
# proving the layer is on.
with_vvl() { # the Khronos validation layer with synchronization validation
    (
        export VK_LAYER_PATH="$top/.dev/vvl/usr/share/vulkan/explicit_layer.d"
        export LD_LIBRARY_PATH="$top/.dev/vvl/usr/lib/x86_64-linux-gnu:$bundle${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        ls "$VK_LAYER_PATH"/*.json > /dev/null || { echo "no validation layer in $VK_LAYER_PATH"; exit 1; }
        export VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation
        # Synchronization validation: the layer setting "validate_sync" (the older
        # VK_LAYER_ENABLES spelling is deprecated in 1.4 layers and warns).
        export VK_LAYER_VALIDATE_SYNC=1
        echo "VK_LAYER_PATH=$VK_LAYER_PATH VK_INSTANCE_LAYERS=$VK_INSTANCE_LAYERS VK_LAYER_VALIDATE_SYNC=$VK_LAYER_VALIDATE_SYNC"
        echo "layer: $(grep -ho '"implementation_version": *"[^"]*"\|"api_version": *"[^"]*"' "$VK_LAYER_PATH"/*.json | tr '\n' ' ')"
        # The loader drops a layer it cannot load (a missing glibc symbol, say) and
        # carries on: before trusting a clean log, a deliberate hazard must be caught
        # (tests/buffer.rs validation_layer_canary), which proves the layer and its
        # synchronization validation are on.
        local canary
        canary=$(VK_LOADER_DEBUG=error "$bundle/tests/test-buffer" --ignored --exact validation_layer_canary 2>&1)
        if ! grep -q 'SYNC-HAZARD-WRITE-AFTER-WRITE' <<< "$canary"; then
            echo "Validation Error: the layer did not report the canary's hazard: it is not loaded, or synchronization validation is off"
            grep -m5 -E 'ERROR|error' <<< "$canary"
            exit 1
        fi
        echo "layer check: the canary's SYNC-HAZARD-WRITE-AFTER-WRITE was reported (layer and synchronization validation on)"
        export VK_LOADER_DEBUG=error
        "$@"
    )
}
