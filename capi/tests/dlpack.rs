//! `vkcuda_buffer_export_dlpack`: the tensor's fields read back, its data compared
//! element by element with what Vulkan wrote (and the other way), its reference to
//! the buffer's memory (a tensor outlives the handle and the context and is freed
//! exactly once), every argument check, and no leak over 10,000 cycles.
//!
//! A kDLCUDA tensor needs a CUDA pointer, so on the CPU the tests run in a child
//! process with the fake libcuda of tests/fake_cuda paired to the lavapipe device
//! (FAKE_CUDA_UUID): there a CUDA pointer is the host address of the memory
//! Vulkan uses, so the data checks are real. On a GPU the same checks run with the
//! real driver (reading and writing with cuMemcpy).

mod support;
use support::*;

use std::ffi::c_void;
use std::ptr;

use dlpack_rs::ffi::{DLManagedTensor, DLManagedTensorVersioned, DLTensor};
use support::cuda::Cuda;

fn spec(code: u8, bits: u8, shape: &[i64], offset: u64, flags: u32) -> vkcuda_dlpack_info {
    let mut s = [0i64; 8];
    s[..shape.len()].copy_from_slice(shape);
    vkcuda_dlpack_info {
        flags,
        dtype: vkcuda_dlpack_dtype {
            code,
            bits,
            lanes: 1,
        },
        ndim: shape.len() as u32,
        shape: s,
        strides: ptr::null(),
        offset,
    }
}

fn export(b: *const vkcuda_buffer, info: &vkcuda_dlpack_info) -> *mut DLManagedTensorVersioned {
    let mut t: *mut c_void = ptr::null_mut();
    ok(unsafe { vkcuda_buffer_export_dlpack(b, info, &mut t) });
    assert!(!t.is_null());
    t.cast()
}

unsafe fn delete(t: *mut DLManagedTensorVersioned) {
    ((*t).deleter.expect("a deleter"))(t);
}

fn tensors() -> i64 {
    vkcuda::live_objects().dlpack_tensors
}

fn shape_of(t: &DLTensor) -> Vec<i64> {
    (0..t.ndim as usize)
        .map(|i| unsafe { *t.shape.add(i) })
        .collect()
}

fn strides_of(t: &DLTensor) -> Vec<i64> {
    assert!(!t.strides.is_null(), "strides are always written");
    (0..t.ndim as usize)
        .map(|i| unsafe { *t.strides.add(i) })
        .collect()
}

// ---------------------------------------------------------------------------------
// Without CUDA: every check, then CUDA_UNAVAILABLE.

#[test]
fn vulkan_only_context_checks_arguments_then_refuses() {
    let ctx = vulkan_only_context();
    let b = create_buffer(ctx, 4096, 0);
    let before = (live_counts(), tensors());
    let mut t: *mut c_void = 1usize as *mut c_void;
    let good = spec(2, 32, &[32, 32], 0, 0);
    let msg = fails(
        unsafe { vkcuda_buffer_export_dlpack(b, &good, &mut t) },
        VKCUDA_ERROR_CUDA_UNAVAILABLE,
    );
    assert!(t.is_null(), "the output is set to NULL on failure");
    assert!(
        msg.contains("kDLCUDA") && msg.contains("VULKAN_ONLY"),
        "{msg}"
    );
    // All zero: the whole buffer as bytes; still no CUDA view.
    let zero: vkcuda_dlpack_info = unsafe { std::mem::zeroed() };
    fails(
        unsafe { vkcuda_buffer_export_dlpack(b, &zero, &mut t) },
        VKCUDA_ERROR_CUDA_UNAVAILABLE,
    );
    // Arguments are checked before the CUDA side is asked for.
    for (info, want) in bad_specs() {
        t = 1usize as *mut c_void;
        let r = unsafe { vkcuda_buffer_export_dlpack(b, &info, &mut t) };
        fails(r, want);
        assert!(t.is_null());
    }
    assert_eq!((live_counts(), tensors()), before, "nothing was made");
    unsafe {
        vkcuda_buffer_destroy(b);
        vkcuda_context_destroy(ctx);
    }
}

/// Specs a 4096-byte buffer refuses, with the code it must return.
fn bad_specs() -> Vec<(vkcuda_dlpack_info, vkcuda_result)> {
    const I: vkcuda_result = VKCUDA_ERROR_INVALID_ARGUMENT;
    let mut v = vec![
        (spec(2, 32, &[33, 32], 0, 0), I),                    // 4224 bytes
        (spec(2, 32, &[32, 32], 4, 0), I),                    // past the end from offset 4
        (spec(2, 32, &[16], 2, 0), I),                        // offset not a multiple of 4
        (spec(2, 32, &[16], 8192, 0), I),                     // offset past the end
        (spec(2, 32, &[-1], 0, 0), I),                        // negative dimension
        (spec(2, 7, &[16], 0, 0), I),                         // 7-bit float
        (spec(99, 8, &[16], 0, 0), I),                        // not a type code
        (spec(3, 64, &[16], 0, 0), VKCUDA_ERROR_UNSUPPORTED), // opaque handle
        (spec(10, 8, &[16], 0, 0), VKCUDA_ERROR_UNSUPPORTED), // float8 (DLPack 1.1+)
        (spec(1, 8, &[16], 0, 0x4), I),                       // unknown flag
        (spec(1, 8, &[16], 0, 0x3), I),                       // read-only legacy tensor
        (spec(1, 8, &[i64::MAX, i64::MAX], 0, 0), I),         // overflows
    ];
    let mut lanes0 = spec(2, 32, &[16], 0, 0);
    lanes0.dtype.lanes = 0;
    v.push((lanes0, I));
    let mut nine = spec(1, 8, &[1; 8], 0, 0);
    nine.ndim = 9;
    v.push((nine, I));
    let mut garbage = spec(1, 8, &[16], 0, 0);
    garbage.shape[5] = 3; // past ndim
    v.push((garbage, I));
    let mut rest = spec(2, 32, &[], 3, 0); // ndim 0 from offset 3: misaligned
    rest.dtype.bits = 32;
    v.push((rest, I));
    static NEG: [i64; 2] = [-1, 1];
    let mut neg = spec(2, 32, &[4, 4], 0, 0);
    neg.strides = NEG.as_ptr();
    v.push((neg, I));
    static WIDE: [i64; 2] = [1024, 1];
    let mut wide = spec(2, 32, &[2, 4], 0, 0); // reaches element 1027: 4112 bytes
    wide.strides = WIDE.as_ptr();
    v.push((wide, I));
    let mut strided_rest = spec(1, 8, &[], 0, 0);
    strided_rest.strides = WIDE.as_ptr();
    v.push((strided_rest, I));
    v
}

#[test]
fn null_and_stale_arguments() {
    let ctx = vulkan_only_context();
    let b = create_buffer(ctx, 64, 0);
    let info = spec(1, 8, &[64], 0, 0);
    let mut t: *mut c_void = ptr::null_mut();
    let msg = fails(
        unsafe { vkcuda_buffer_export_dlpack(ctx.cast(), &info, &mut t) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(msg.contains("not a vkcuda_buffer"), "{msg}");
    unsafe {
        vkcuda_buffer_destroy(b);
        vkcuda_context_destroy(ctx);
    }
}

// ---------------------------------------------------------------------------------
// With a CUDA side: the checks every driver runs. `Io` reads and writes device
// memory: the fake driver's pointers are host addresses; the real one's are not.

trait Io {
    fn read(&self, ptr: u64, len: usize) -> Vec<u8>;
    fn write(&self, ptr: u64, data: &[u8]);
}

struct HostIo;
impl Io for HostIo {
    fn read(&self, ptr: u64, len: usize) -> Vec<u8> {
        unsafe { std::slice::from_raw_parts(ptr as *const u8, len) }.to_vec()
    }
    fn write(&self, ptr: u64, data: &[u8]) {
        unsafe { ptr::copy_nonoverlapping(data.as_ptr(), ptr as *mut u8, data.len()) };
    }
}

impl Io for Cuda {
    fn read(&self, ptr: u64, len: usize) -> Vec<u8> {
        Cuda::read(self, ptr, len)
    }
    fn write(&self, ptr: u64, data: &[u8]) {
        Cuda::write(self, ptr, data)
    }
}

/// Fills the shared buffer with `pattern(i, seed)` through a Vulkan copy.
fn vulkan_fill(v: &Vk, b: *const vkcuda_buffer, seed: u32) {
    let info = buffer_info(b);
    let staging = v.host_buffer(info.size);
    for (i, x) in staging.bytes().iter_mut().enumerate() {
        *x = pattern(i, seed);
    }
    v.copy(staging.buffer, info.buffer, info.size);
    v.destroy_host_buffer(staging);
}

/// What Vulkan copies out of the shared buffer.
fn vulkan_read(v: &Vk, b: *const vkcuda_buffer) -> Vec<u8> {
    let info = buffer_info(b);
    let staging = v.host_buffer(info.size);
    v.copy(info.buffer, staging.buffer, info.size);
    let out = staging.bytes().to_vec();
    v.destroy_host_buffer(staging);
    out
}

/// The fields of a versioned tensor, and its elements against what Vulkan wrote,
/// then elements written through the tensor against what Vulkan reads.
fn tensor_fields_and_data(ctx: *mut vkcuda_context, io: &dyn Io) {
    let v = Vk::new(ctx);
    let mut cinfo: vkcuda_cuda_info = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_context_get_cuda_info(ctx, &mut cinfo) });
    let size = 1 << 16;
    for allocator in [0, 1] {
        let b = {
            let info = vkcuda_buffer_create_info {
                flags: 0,
                allocator: vkcuda_allocator_raw(allocator),
                size,
                usage: 0,
            };
            let mut b = ptr::null_mut();
            let r = unsafe { vkcuda_buffer_create(ctx, &info, &mut b) };
            if allocator == 1 && r != VKCUDA_SUCCESS && !gpu_required() {
                println!(
                    "CUDA-allocated buffer not made here ({r:?}): {}",
                    last_error()
                );
                continue;
            }
            ok(r);
            b
        };
        let base = buffer_info(b).cuda_pointer;
        vulkan_fill(&v, b, 7 + allocator as u32);
        let bytes = vulkan_read(&v, b);

        // float32 64x128 from byte 4096: C-contiguous.
        let t = export(b, &spec(2, 32, &[64, 128], 4096, 0));
        let m = unsafe { &*t };
        assert_eq!((m.version.major, m.version.minor), (1, 0));
        assert_eq!(m.flags, 0);
        assert!(!m.manager_ctx.is_null());
        let d = &m.dl_tensor;
        assert_eq!(d.data as u64, base + 4096, "data = CUDA view + offset");
        assert_eq!(d.byte_offset, 0);
        assert_eq!(d.device.device_type, dlpack_rs::ffi::K_DL_CUDA);
        assert_eq!(d.device.device_id, cinfo.device_ordinal);
        assert_eq!((d.dtype.code, d.dtype.bits, d.dtype.lanes), (2, 32, 1));
        assert_eq!(shape_of(d), [64, 128]);
        assert_eq!(strides_of(d), [128, 1]);
        let got = io.read(d.data as u64, 64 * 128 * 4);
        let mismatches = got
            .iter()
            .zip(&bytes[4096..])
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(mismatches, 0, "elements read through the tensor");
        println!(
            "allocator {allocator}: {} float32 elements read through the tensor, {mismatches} mismatches",
            64 * 128
        );
        // Write through the tensor; Vulkan reads every byte.
        let mine: Vec<u8> = (0..64 * 128 * 4).map(|i| pattern(i, 99)).collect();
        io.write(d.data as u64, &mine);
        let back = vulkan_read(&v, b);
        assert_eq!(
            &back[..4096],
            &bytes[..4096],
            "before the tensor: untouched"
        );
        assert_eq!(
            &back[4096..4096 + mine.len()],
            &mine[..],
            "Vulkan sees CUDA's writes"
        );
        unsafe { delete(t) };

        // Explicit strides (a transposed view), read-only.
        static COLUMN_MAJOR: [i64; 2] = [1, 16];
        let mut s = spec(0, 16, &[16, 8], 0, VKCUDA_DLPACK_READ_ONLY_BIT);
        s.strides = COLUMN_MAJOR.as_ptr();
        let t = export(b, &s);
        let m = unsafe { &*t };
        assert_eq!(m.flags, 1, "DLPACK_FLAG_BITMASK_READ_ONLY");
        assert_eq!(strides_of(&m.dl_tensor), [1, 16]);
        assert_eq!((m.dl_tensor.dtype.code, m.dl_tensor.dtype.bits), (0, 16));
        unsafe { delete(t) };

        // Legacy DLManagedTensor, the whole buffer as bytes (all-zero dtype and shape).
        let mut s: vkcuda_dlpack_info = unsafe { std::mem::zeroed() };
        s.flags = VKCUDA_DLPACK_LEGACY_BIT;
        let mut raw: *mut c_void = ptr::null_mut();
        ok(unsafe { vkcuda_buffer_export_dlpack(b, &s, &mut raw) });
        let l = raw.cast::<DLManagedTensor>();
        let d = unsafe { &(*l).dl_tensor };
        assert_eq!(shape_of(d), [size as i64]);
        assert_eq!((d.dtype.code, d.dtype.bits, d.dtype.lanes), (1, 8, 1));
        assert_eq!(d.data as u64, base);
        assert_eq!(io.read(base, size as usize), vulkan_read(&v, b));
        unsafe { ((*l).deleter.unwrap())(l) };

        // An empty tensor at the very end.
        let t = export(b, &spec(1, 64, &[0], size, 0));
        assert_eq!(unsafe { (*t).dl_tensor.data } as u64, base + size);
        unsafe { delete(t) };

        // The refused specs allocate nothing here either.
        let before = (live_counts(), tensors());
        for (info, want) in bad_specs() {
            let mut t: *mut c_void = ptr::null_mut();
            // A 64 KiB buffer fits some 4 KiB-refusals: only the ones still wrong.
            let r = unsafe { vkcuda_buffer_export_dlpack(b, &info, &mut t) };
            if r == VKCUDA_SUCCESS {
                unsafe { delete(t.cast()) };
                continue;
            }
            assert_eq!(r, want, "{}", last_error());
            assert!(t.is_null());
        }
        assert_eq!((live_counts(), tensors()), before);
        unsafe { vkcuda_buffer_destroy(b) };
    }
}

/// A tensor outlives the buffer's handle and the context: the data stays, and
/// its deleter releases everything, once.
fn tensor_outlives_handle_and_context(make_ctx: impl Fn() -> *mut vkcuda_context, io: &dyn Io) {
    let baseline = (live_counts(), tensors(), fd_count());
    let ctx = make_ctx();
    let v = Vk::new(ctx);
    let b = create_buffer(ctx, 1 << 20, 0);
    vulkan_fill(&v, b, 3);
    let bytes = vulkan_read(&v, b);
    let t1 = export(b, &spec(1, 32, &[1 << 18], 0, 0));
    let t2 = export(b, &spec(1, 8, &[1 << 10], 4096, 0));
    drop(v);
    unsafe {
        vkcuda_buffer_destroy(b);
        vkcuda_context_destroy(ctx);
    }
    let held = live_counts();
    assert_eq!(held[0], baseline.0[0] + 1, "the tensors keep the context");
    assert_eq!(held[1], baseline.0[1] + 1, "and the VkBuffer");
    assert_eq!(held[2], baseline.0[2] + 1, "and the memory");
    assert_eq!(tensors(), baseline.1 + 2);
    let d1 = unsafe { &(*t1).dl_tensor };
    assert_eq!(
        io.read(d1.data as u64, 1 << 20),
        bytes,
        "readable after destroy"
    );
    unsafe { delete(t1) };
    assert_eq!(live_counts(), held, "one tensor still holds the memory");
    let d2 = unsafe { &(*t2).dl_tensor };
    assert_eq!(io.read(d2.data as u64, 1 << 10), &bytes[4096..4096 + 1024]);
    unsafe { delete(t2) };
    assert_eq!(
        live_counts(),
        baseline.0,
        "the last deleter released everything"
    );
    assert_eq!(tensors(), baseline.1);
    assert_eq!(fd_count(), baseline.2, "no fd left");
}

/// A wrapped buffer: the tensor holds the library's CUDA import of the engine's
/// memory, which outlives the engine's own objects.
fn wrapped_buffer_tensor(ctx: *mut vkcuda_context, io: &dyn Io) {
    let v = Vk::new(ctx);
    // The "engine's" memory: another shared buffer's, wrapped at an offset.
    let owner = create_buffer(ctx, 1 << 16, 0);
    vulkan_fill(&v, owner, 11);
    let bytes = vulkan_read(&v, owner);
    let oi = buffer_info(owner);
    let wrap = vkcuda_buffer_wrap_info {
        flags: 0,
        buffer: oi.buffer,
        memory: oi.memory,
        allocation_size: oi.allocation_size,
        offset: 0,
        size: oi.size,
        dedicated: oi.dedicated,
        export_handle_types: ash::vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD.as_raw(),
    };
    let mut w = ptr::null_mut();
    ok(unsafe { vkcuda_buffer_wrap(ctx, &wrap, &mut w) });
    let t = export(w, &spec(2, 32, &[1 << 14], 0, 0));
    unsafe {
        vkcuda_buffer_destroy(w);
        vkcuda_buffer_destroy(owner); // the engine frees its memory
    }
    let d = unsafe { &(*t).dl_tensor };
    assert_eq!(
        io.read(d.data as u64, 1 << 16),
        bytes,
        "the import keeps the allocation"
    );
    unsafe { delete(t) };
}

/// 10,000 exports and deletes: no fd, object or tensor left.
fn ten_thousand_cycles(ctx: *mut vkcuda_context) {
    let b = create_buffer(ctx, 1 << 16, 0);
    let info = spec(2, 32, &[128, 128], 0, 0);
    let before = (fd_count(), live_counts(), tensors());
    for i in 0..10_000 {
        let t = export(b, &info);
        if i % 2 == 1 {
            // Half of them outlive a new export of the same buffer.
            let u = export(b, &info);
            unsafe { delete(u) };
        }
        unsafe { delete(t) };
    }
    assert_eq!((fd_count(), live_counts(), tensors()), before);
    println!(
        "10,000 export/delete cycles: fds {} -> {}",
        before.0,
        fd_count()
    );
    unsafe { vkcuda_buffer_destroy(b) };
}

// ---------------------------------------------------------------------------------
// The fake driver paired with lavapipe, in a child process.

/// The UUID of the device a Vulkan-only standalone context picks, if its memory
/// fds are memfds the fake driver can map (lavapipe's).
fn lavapipe_uuid() -> Option<String> {
    let ctx = vulkan_only_context();
    let s = device_support(ctx);
    let name = unsafe { std::ffi::CStr::from_ptr(s.device_name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    unsafe { vkcuda_context_destroy(ctx) };
    if !name.contains("llvmpipe") {
        println!("SKIPPED: the Vulkan device is {name}, not lavapipe: the fake driver maps only lavapipe's memfds (the GPU test covers this device)");
        return None;
    }
    Some(uuid_hex(&s.device_uuid))
}

fn run_child(case: &str) {
    let Some(uuid) = lavapipe_uuid() else { return };
    // The soname lets the child find the loaded driver again (`fake_live`).
    let dir = fake_cuda_driver("fake-cuda-dlpack", &["-Wl,-soname,libcuda.so.1"]);
    let out = this_test(case, true)
        .env(CHILD_ENV, "1")
        .env("LD_LIBRARY_PATH", library_path_with(&dir))
        .env("FAKE_CUDA_UUID", uuid)
        .env_remove(vkcuda::pairing::CUDA_DISABLE_ENV)
        .output()
        .unwrap();
    child_passed(case, &out);
}

/// In the child: the fake driver is loaded and paired.
fn fake_paired_context() -> *mut vkcuda_context {
    let mut v = 0;
    ok(unsafe { vkcuda_cuda_driver_get_version(&mut v) });
    assert_eq!(v, 12080, "the fake driver is the one loaded");
    let mut ctx = ptr::null_mut();
    ok(unsafe { vkcuda_context_create_standalone(ptr::null(), &mut ctx) });
    ctx
}

/// What the fake driver still holds (allocations, mappings, imports, retains).
fn fake_live() -> i32 {
    unsafe {
        let h = libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
        assert!(!h.is_null(), "the fake driver is loaded");
        let f = libc::dlsym(h, c"fake_cuda_live".as_ptr());
        assert!(!f.is_null());
        let f: extern "C" fn() -> i32 = std::mem::transmute(f);
        let n = f();
        libc::dlclose(h);
        n
    }
}

#[test]
fn fake_driver_tensor_fields_and_data() {
    run_child("child_tensor_fields_and_data");
}

#[test]
fn fake_driver_tensor_outlives_handle_and_context() {
    run_child("child_tensor_outlives_handle_and_context");
}

#[test]
fn fake_driver_wrapped_buffer() {
    run_child("child_wrapped_buffer");
}

#[test]
fn fake_driver_ten_thousand_cycles() {
    run_child("child_ten_thousand_cycles");
}

#[test]
#[ignore = "runs in a child process of fake_driver_tensor_fields_and_data"]
fn child_tensor_fields_and_data() {
    if !in_child("child_tensor_fields_and_data") {
        return;
    }
    let ctx = fake_paired_context();
    tensor_fields_and_data(ctx, &HostIo);
    unsafe { vkcuda_context_destroy(ctx) };
}

#[test]
#[ignore = "runs in a child process of fake_driver_tensor_outlives_handle_and_context"]
fn child_tensor_outlives_handle_and_context() {
    if !in_child("child_tensor_outlives_handle_and_context") {
        return;
    }
    // One context first: the baseline then includes what the driver keeps.
    let warm = fake_paired_context();
    unsafe { vkcuda_context_destroy(warm) };
    let fake_before = fake_live();
    tensor_outlives_handle_and_context(fake_paired_context, &HostIo);
    assert_eq!(
        fake_live(),
        fake_before,
        "the fake driver holds nothing more"
    );
}

#[test]
#[ignore = "runs in a child process of fake_driver_wrapped_buffer"]
fn child_wrapped_buffer() {
    if !in_child("child_wrapped_buffer") {
        return;
    }
    let ctx = fake_paired_context();
    let before = (live_counts(), fake_live());
    wrapped_buffer_tensor(ctx, &HostIo);
    assert_eq!((live_counts(), fake_live()), before);
    unsafe { vkcuda_context_destroy(ctx) };
}

#[test]
#[ignore = "runs in a child process of fake_driver_ten_thousand_cycles"]
fn child_ten_thousand_cycles() {
    if !in_child("child_ten_thousand_cycles") {
        return;
    }
    let ctx = fake_paired_context();
    let before = fake_live();
    ten_thousand_cycles(ctx);
    assert_eq!(fake_live(), before);
    unsafe { vkcuda_context_destroy(ctx) };
}

// ---------------------------------------------------------------------------------
// The same on a GPU, with the real driver.

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_dlpack_tensors() {
    let Some(ctx) = cuda_context_or_skip("gpu_dlpack_tensors") else {
        return;
    };
    let io = Cuda::of(ctx);
    tensor_fields_and_data(ctx, &io);
    wrapped_buffer_tensor(ctx, &io);
    ten_thousand_cycles(ctx);
    let make = || cuda_context_or_skip("gpu_dlpack_tensors").unwrap();
    // `io`'s CUcontext is the device's primary context, retained by the tensors' context.
    tensor_outlives_handle_and_context(make, &io);
    unsafe { vkcuda_context_destroy(ctx) };
}
