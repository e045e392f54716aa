//! What a suite asks of a context's device and of the stand-in CUDA driver paired
//! with it: `device_support` (the pairing report's `Support`), `lavapipe_uuid` (the
//! device the stand-in driver can pair with, or a skip), `run_lavapipe_child` (a
//! child process with the stand-in driver paired with it), and in that child
//! `fake_paired_context` (`fake_live`: stand_in.rs).

use std::sync::Arc;

use vkcuda::pairing;

/// What the context's physical device supports (`pairing::report` through the
/// context's own instance).
pub fn device_support(ctx: &vkcuda::Context) -> pairing::Support {
    let h = ctx.vulkan_handles();
    // SAFETY: the context's instance and physical device, alive while it lives.
    unsafe { pairing::report(h.get_instance_proc_addr, h.instance, h.physical_device) }
        .expect("the device's report")
        .support
}

/// The UUID (hex) of the device a Vulkan-only standalone context picks, if its
/// memory fds are memfds the stand-in driver can map (lavapipe's); None after
/// printing a skip line otherwise.
pub fn lavapipe_uuid() -> Option<String> {
    let props = device_support(&super::vulkan_only_context()).props;
    if !props.name.contains("llvmpipe") {
        println!(
            "SKIPPED: the Vulkan device is {}, not lavapipe: the fake driver maps only lavapipe's memfds (the GPU test covers this device)",
            props.name
        );
        return None;
    }
    Some(super::uuid_hex(&props.uuid))
}

/// Runs the ignored test `case` in a child process with the stand-in driver built
/// in `dir` first on LD_LIBRARY_PATH and paired with lavapipe (FAKE_CUDA_UUID); its
/// soname lets the child find the loaded driver again (`fake_live`). Nothing (a
/// skip) without lavapipe.
pub fn run_lavapipe_child(case: &str, dir: &str) {
    let Some(uuid) = lavapipe_uuid() else { return };
    let dir = super::fake_cuda_driver(dir, &["-Wl,-soname,libcuda.so.1"]);
    let out = super::this_test(case, true)
        .env(super::CHILD_ENV, "1")
        .env("LD_LIBRARY_PATH", super::library_path_with(&dir))
        .env("FAKE_CUDA_UUID", uuid)
        .env_remove(pairing::CUDA_DISABLE_ENV)
        .output()
        .unwrap();
    super::child_passed(case, &out);
}

/// In a child process with the stand-in driver first on LD_LIBRARY_PATH and
/// FAKE_CUDA_UUID set: a standalone context paired with it (asserting it is the
/// driver loaded).
pub fn fake_paired_context() -> Arc<vkcuda::Context> {
    let v = pairing::cuda_driver_version().expect("the CUDA driver's version");
    assert_eq!(v, 12080, "the fake driver is the one loaded");
    vkcuda::Context::standalone(None, vkcuda::CudaChoice::Primary).expect("a fake-paired context")
}

/// The handles of an engine's device (`EngineDevice`) for
/// `Context::from_engine`, with the engine's own `vkGetDeviceProcAddr` if given.
pub fn engine_handles(
    e: &super::EngineDevice,
    get_device_proc_addr: Option<ash::vk::PFN_vkGetDeviceProcAddr>,
) -> vkcuda::context::EngineHandles {
    vkcuda::context::EngineHandles {
        instance: e.instance.handle(),
        physical: e.physical,
        device: e.device.handle(),
        get_instance_proc_addr: e.entry.static_fn().get_instance_proc_addr,
        get_device_proc_addr,
        synchronization2: false,
    }
}

/// A context on an engine's device (`EngineDevice`), which must outlive it.
pub fn engine_context(
    e: &super::EngineDevice,
    choice: vkcuda::CudaChoice,
) -> vkcuda::Result<Arc<vkcuda::Context>> {
    // SAFETY: the engine's live handles; the tests drop the context and its
    // objects before the `EngineDevice`.
    unsafe { vkcuda::Context::from_engine(&engine_handles(e, None), choice) }
}
