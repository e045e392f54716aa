//! `Buffer::export_dlpack`: the tensor's fields read back, its data compared
//! element by element with what Vulkan wrote (and the other way), its reference to
//! the buffer's memory (a tensor outlives the buffer and the context and is freed
//! exactly once), every check of the spec, and no leak over 10,000 cycles. (The C
//! door's part, `vkcuda_buffer_export_dlpack`'s NULLs, handle kinds and C-only
//! fields, is the misuse matrix's: capi/tests/misuse/dlpack.rs.)
//!
//! A kDLCUDA tensor needs a CUDA pointer, so on the CPU the tests run in a child
//! process with the fake libcuda of tests/fake_cuda paired to the lavapipe device
//! (FAKE_CUDA_UUID): there a CUDA pointer is the host address of the memory
//! Vulkan uses, so the data checks are real. On a GPU the same checks run with the
//! real driver (reading and writing with cuMemcpy).

mod support;
use support::device::{fake_paired_context, run_lavapipe_child};
use support::*;

use std::sync::Arc;

use ash::vk;
use dlpack_rs::ffi::{DLManagedTensor, DLManagedTensorVersioned};
use support::cuda::Cuda;
use vkcuda::buffer::{Allocator, Wrap};
use vkcuda::dlpack::{DType, Spec, Tensor};
use vkcuda::{Buffer, Context, ErrorKind};

const F32: DType = DType {
    code: 2,
    bits: 32,
    lanes: 1,
};

fn dtype(code: u8, bits: u8) -> DType {
    DType {
        code,
        bits,
        lanes: 1,
    }
}

fn spec(dtype: DType, shape: &[i64], offset: u64) -> Spec<'_> {
    Spec {
        dtype,
        shape,
        offset,
        ..Spec::default()
    }
}

fn create(ctx: &Arc<Context>, size: u64) -> Buffer {
    Buffer::create(ctx, size, vk::BufferUsageFlags::empty(), Allocator::Vulkan).unwrap()
}

fn tensors() -> i64 {
    vkcuda::live_objects().dlpack_tensors
}

// ---------------------------------------------------------------------------------
// Without CUDA: every check, then CUDA_UNAVAILABLE.

/// (Holds what was `dlpack_checks_the_spec_before_it_needs_cuda` of the Rust API
/// suite: the same checks with their words.)
#[test]
fn vulkan_only_context_checks_arguments_then_refuses() {
    let ctx = vulkan_only_context();
    let b = create(&ctx, 4096);
    let before = (live_counts(), tensors());
    let e = b.export_dlpack(&spec(F32, &[32, 32], 0)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CudaUnavailable, "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("kDLCUDA") && msg.contains("needs the buffer's CUDA view"),
        "{msg}"
    );
    // The default: the whole buffer as bytes; still no CUDA view.
    let e = b.export_dlpack(&Spec::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CudaUnavailable, "{e}");
    // The spec is checked before the CUDA side is asked for.
    for (i, (s, want, words)) in bad_specs().iter().enumerate() {
        let e = b.export_dlpack(s).unwrap_err();
        assert_eq!(e.kind(), *want, "bad spec {i} ({s:?}): {e}");
        assert!(e.to_string().contains(words), "bad spec {i}: {e}");
    }
    assert_eq!((live_counts(), tensors()), before, "nothing was made");
}

/// Specs a 4096-byte buffer refuses, with the kind and words of the refusal.
fn bad_specs() -> Vec<(Spec<'static>, ErrorKind, &'static str)> {
    const I: ErrorKind = ErrorKind::InvalidArgument;
    const U: ErrorKind = ErrorKind::Unsupported;
    static NEG: [i64; 2] = [-1, 1];
    static WIDE: [i64; 2] = [1024, 1];
    static NINE: [i64; 9] = [1; 9];
    let lanes0 = DType {
        code: 2,
        bits: 32,
        lanes: 0,
    };
    vec![
        (spec(F32, &[33, 32], 0), I, "past its end"), // 4224 bytes
        (spec(F32, &[32, 32], 4), I, "past its end"), // from offset 4
        (spec(F32, &[16], 2), I, "not a multiple"),   // offset not a multiple of 4
        (spec(F32, &[16], 8192), I, ""),              // offset past the end
        (spec(F32, &[-1], 0), I, ""),                 // negative dimension
        (spec(dtype(2, 7), &[16], 0), I, "bits"),     // 7-bit float
        (spec(dtype(99, 8), &[16], 0), I, "not a DLPack type code"),
        (spec(dtype(3, 64), &[16], 0), U, "not exported"), // opaque handle
        (spec(dtype(10, 8), &[16], 0), U, "not exported"), // float8 (DLPack 1.1+)
        (
            Spec {
                read_only: true,
                legacy: true,
                ..spec(dtype(1, 8), &[16], 0)
            },
            I,
            "cannot be marked read-only",
        ),
        (spec(dtype(1, 8), &[i64::MAX, i64::MAX], 0), I, ""), // overflows
        (spec(lanes0, &[16], 0), I, "lanes"),
        (spec(dtype(1, 8), &NINE, 0), I, "ndim 9"),
        (spec(F32, &[], 3), I, "not a multiple"), // the rest from offset 3
        (
            Spec {
                strides: Some(&NEG),
                ..spec(F32, &[4, 4], 0)
            },
            I,
            "",
        ),
        (
            Spec {
                strides: Some(&WIDE), // reaches element 1027: 4112 bytes
                ..spec(F32, &[2, 4], 0)
            },
            I,
            "",
        ),
        (
            Spec {
                strides: Some(&WIDE),
                ..spec(dtype(1, 8), &[], 0)
            },
            I,
            "without a shape",
        ),
        (
            Spec {
                strides: Some(&WIDE[..1]),
                ..spec(F32, &[2, 4], 0)
            },
            I,
            "1 strides for 2 dimensions",
        ),
    ]
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
        // SAFETY: the fake driver's device pointers are host addresses of live memory.
        unsafe { std::slice::from_raw_parts(ptr as *const u8, len) }.to_vec()
    }
    fn write(&self, ptr: u64, data: &[u8]) {
        // SAFETY: as in `read`.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), ptr as *mut u8, data.len()) };
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
fn vulkan_fill(v: &Vk, b: &Buffer, seed: u32) {
    v.fill_pattern(b.vk_buffer(), b.layout().size, seed);
}

/// What Vulkan copies out of the shared buffer.
fn vulkan_read(v: &Vk, b: &Buffer) -> Vec<u8> {
    let size = b.layout().size;
    let staging = v.host_buffer(size);
    v.copy(b.vk_buffer(), staging.buffer, size);
    let out = staging.bytes().to_vec();
    v.destroy_host_buffer(staging);
    out
}

/// The versioned struct behind a tensor.
fn versioned(t: &Tensor) -> &DLManagedTensorVersioned {
    assert!(!t.is_legacy());
    // SAFETY: a live versioned tensor, owned by `t`.
    unsafe { &*t.as_ptr().cast::<DLManagedTensorVersioned>() }
}

/// The fields of a versioned tensor, and its elements against what Vulkan wrote,
/// then elements written through the tensor against what Vulkan reads.
fn tensor_fields_and_data(ctx: &Arc<Context>, io: &dyn Io) {
    let v = Vk::of(ctx);
    let ordinal = ctx.cuda_info().unwrap().ordinal;
    let size = 1 << 16;
    for allocator in [Allocator::Vulkan, Allocator::Cuda] {
        let b = match Buffer::create(ctx, size, vk::BufferUsageFlags::empty(), allocator) {
            Err(e) if allocator == Allocator::Cuda && !gpu_required() => {
                println!("CUDA-allocated buffer not made here: {e}");
                continue;
            }
            r => r.unwrap(),
        };
        let base = b.cuda_ptr().unwrap();
        vulkan_fill(&v, &b, 7 + (allocator == Allocator::Cuda) as u32);
        let bytes = vulkan_read(&v, &b);

        // float32 64x128 from byte 4096: C-contiguous.
        let t = b.export_dlpack(&spec(F32, &[64, 128], 4096)).unwrap();
        let m = versioned(&t);
        assert_eq!((m.version.major, m.version.minor), (1, 0));
        assert_eq!(m.flags, 0);
        assert!(!m.manager_ctx.is_null());
        assert_eq!(m.dl_tensor.byte_offset, 0);
        assert_eq!(m.dl_tensor.device.device_type, dlpack_rs::ffi::K_DL_CUDA);
        assert_eq!(t.data(), base + 4096, "data = CUDA view + offset");
        assert_eq!(t.device_id(), ordinal);
        assert_eq!(t.dtype(), F32);
        assert_eq!((t.shape(), t.strides()), (&[64, 128][..], &[128, 1][..]));
        assert!(!t.is_read_only());
        let got = io.read(t.data(), 64 * 128 * 4);
        let mismatches = got
            .iter()
            .zip(&bytes[4096..])
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(mismatches, 0, "elements read through the tensor");
        println!(
            "{allocator:?}: {} float32 elements read through the tensor, {mismatches} mismatches",
            64 * 128
        );
        // Write through the tensor; Vulkan reads every byte.
        let mine: Vec<u8> = (0..64 * 128 * 4).map(|i| pattern(i, 99)).collect();
        io.write(t.data(), &mine);
        let back = vulkan_read(&v, &b);
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
        drop(t);

        // Explicit strides (a transposed view), read-only.
        let t = b
            .export_dlpack(&Spec {
                strides: Some(&[1, 16]),
                read_only: true,
                ..spec(dtype(0, 16), &[16, 8], 0)
            })
            .unwrap();
        assert_eq!(versioned(&t).flags, 1, "DLPACK_FLAG_BITMASK_READ_ONLY");
        assert!(t.is_read_only());
        assert_eq!(t.strides(), [1, 16]);
        assert_eq!(t.dtype(), dtype(0, 16));
        drop(t);

        // Legacy DLManagedTensor, the whole buffer as bytes (the default dtype and shape).
        let t = b
            .export_dlpack(&Spec {
                legacy: true,
                ..Spec::default()
            })
            .unwrap();
        assert!(t.is_legacy() && !t.is_read_only());
        // SAFETY: a live legacy tensor, owned by `t`.
        let l = unsafe { &*t.as_ptr().cast::<DLManagedTensor>() };
        assert_eq!(l.dl_tensor.data as u64, base);
        assert_eq!(t.shape(), [size as i64]);
        assert_eq!(t.dtype(), DType::UINT8);
        assert_eq!(t.data(), base);
        assert_eq!(io.read(base, size as usize), vulkan_read(&v, &b));
        drop(t);

        // An empty tensor at the very end.
        let t = b.export_dlpack(&spec(dtype(1, 64), &[0], size)).unwrap();
        assert_eq!(t.data(), base + size);
        drop(t);

        // The refused specs allocate nothing here either.
        let before = (live_counts(), tensors());
        for (s, want, _) in bad_specs() {
            // A 64 KiB buffer fits some 4 KiB-refusals: only the ones still wrong.
            if let Err(e) = b.export_dlpack(&s) {
                assert_eq!(e.kind(), want, "{s:?}: {e}");
            }
        }
        assert_eq!((live_counts(), tensors()), before);
    }
}

/// A tensor outlives the buffer and the context: the data stays, and its deleter
/// releases everything, once (also when handed over with `into_raw` and taken
/// back).
fn tensor_outlives_handle_and_context(make_ctx: impl Fn() -> Arc<Context>, io: &dyn Io) {
    let baseline = (live_counts(), tensors(), fd_count());
    let ctx = make_ctx();
    let v = Vk::of(&ctx);
    let b = create(&ctx, 1 << 20);
    vulkan_fill(&v, &b, 3);
    let bytes = vulkan_read(&v, &b);
    let t1 = b.export_dlpack(&spec(dtype(1, 32), &[1 << 18], 0)).unwrap();
    let t2 = b
        .export_dlpack(&spec(dtype(1, 8), &[1 << 10], 4096))
        .unwrap();
    drop((v, b, ctx));
    let held = live_counts();
    assert_eq!(held[0], baseline.0[0] + 1, "the tensors keep the context");
    assert_eq!(held[1], baseline.0[1] + 1, "and the VkBuffer");
    assert_eq!(held[2], baseline.0[2] + 1, "and the memory");
    assert_eq!(tensors(), baseline.1 + 2);
    assert_eq!(io.read(t1.data(), 1 << 20), bytes, "readable after drop");
    drop(t1);
    assert_eq!(live_counts(), held, "one tensor still holds the memory");
    assert_eq!(io.read(t2.data(), 1 << 10), &bytes[4096..4096 + 1024]);
    // Handed over and taken back: one deleter call in all.
    let raw = t2.into_raw();
    assert_eq!(tensors(), baseline.1 + 1, "a raw tensor is still alive");
    // SAFETY: `raw` came from `into_raw` of a versioned tensor, not deleted since.
    drop(unsafe { Tensor::from_raw(raw, false) }.unwrap());
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
fn wrapped_buffer_tensor(ctx: &Arc<Context>, io: &dyn Io) {
    let v = Vk::of(ctx);
    // The "engine's" memory: another shared buffer's, wrapped.
    let owner = create(ctx, 1 << 16);
    vulkan_fill(&v, &owner, 11);
    let bytes = vulkan_read(&v, &owner);
    let l = owner.layout();
    let wrap = Wrap {
        buffer: owner.vk_buffer(),
        memory: owner.vk_memory(),
        allocation_size: l.allocation_size,
        offset: l.offset,
        size: l.size,
        dedicated: l.dedicated,
        export_handle_types: vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD,
    };
    // SAFETY: `owner`'s buffer and memory, alive until the wrap is dropped.
    let w = unsafe { Buffer::wrap(ctx, &wrap) }.unwrap();
    let t = w.export_dlpack(&spec(F32, &[1 << 14], 0)).unwrap();
    drop(w);
    drop(owner); // the engine frees its memory
    assert_eq!(
        io.read(t.data(), 1 << 16),
        bytes,
        "the import keeps the allocation"
    );
}

/// 10,000 exports and deletes: no fd, object or tensor left.
fn ten_thousand_cycles(ctx: &Arc<Context>) {
    let b = create(ctx, 1 << 16);
    let s = spec(F32, &[128, 128], 0);
    let before = (fd_count(), live_counts(), tensors());
    for i in 0..10_000 {
        let t = b.export_dlpack(&s).unwrap();
        if i % 2 == 1 {
            // Half of them outlive a new export of the same buffer.
            drop(b.export_dlpack(&s).unwrap());
        }
        drop(t);
    }
    assert_eq!((fd_count(), live_counts(), tensors()), before);
    println!(
        "10,000 export/delete cycles: fds {} -> {}",
        before.0,
        fd_count()
    );
}

// ---------------------------------------------------------------------------------
// The fake driver paired with lavapipe, in a child process.

/// The four behaviours above with the stand-in driver, in one child process
/// (one build of the driver, one paired context per behaviour).
#[test]
fn fake_driver_tensors() {
    run_lavapipe_child("child_tensors", "fake-cuda-dlpack");
}

#[test]
#[ignore = "runs in a child process of fake_driver_tensors"]
fn child_tensors() {
    child_only!("child_tensors");
    tensor_fields_and_data(&fake_paired_context(), &HostIo);

    // One context first: the baseline then includes what the driver keeps.
    drop(fake_paired_context());
    let fake_before = fake_live();
    tensor_outlives_handle_and_context(fake_paired_context, &HostIo);
    assert_eq!(
        fake_live(),
        fake_before,
        "the fake driver holds nothing more"
    );

    let ctx = fake_paired_context();
    let before = (live_counts(), fake_live());
    wrapped_buffer_tensor(&ctx, &HostIo);
    assert_eq!((live_counts(), fake_live()), before);

    let before = fake_live();
    ten_thousand_cycles(&ctx);
    assert_eq!(fake_live(), before);
}

// ---------------------------------------------------------------------------------
// The same on a GPU, with the real driver.

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_dlpack_tensors() {
    let Some(ctx) = cuda_context_or_skip("gpu_dlpack_tensors") else {
        return;
    };
    let io = Cuda::of_context(&ctx);
    tensor_fields_and_data(&ctx, &io);
    wrapped_buffer_tensor(&ctx, &io);
    ten_thousand_cycles(&ctx);
    let make = || cuda_context_or_skip("gpu_dlpack_tensors").unwrap();
    // `io`'s CUcontext is the device's primary context, retained by the tensors' context.
    tensor_outlives_handle_and_context(make, &io);
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_dlpack_tensor_outlives_its_buffer() {
    let Some(ctx) = cuda_context_or_skip("gpu_dlpack_tensor_outlives_its_buffer") else {
        return;
    };
    let cuda = Cuda::of_context(&ctx);
    let ordinal = ctx.cuda_info().unwrap().ordinal;
    let live = tensors();
    let buf = create(&ctx, 64 * 64 * 4);
    let data: Vec<u8> = (0..64 * 64 * 4).map(|i| pattern(i, 51)).collect();
    cuda.write(buf.cuda_ptr().unwrap(), &data);
    let t = buf
        .export_dlpack(&Spec {
            read_only: true,
            ..spec(F32, &[32, 64], 64 * 4 * 32)
        })
        .unwrap();
    assert_eq!(t.data(), buf.cuda_ptr().unwrap() + 64 * 4 * 32);
    assert_eq!((t.shape(), t.strides()), (&[32, 64][..], &[64, 1][..]));
    assert_eq!(
        (t.device_id(), t.is_legacy(), t.is_read_only()),
        (ordinal, false, true)
    );
    assert_eq!(tensors(), live + 1);
    // The buffer and the context go; the tensor's memory stays.
    drop((buf, ctx));
    assert_eq!(
        cuda.read(t.data(), 64 * 4 * 32),
        &data[64 * 4 * 32..],
        "the tensor's memory after the buffer was dropped"
    );
    // Handed over and taken back: one deleter call in all.
    let raw = t.into_raw();
    // SAFETY: `raw` came from `into_raw` of a versioned tensor, not deleted since.
    drop(unsafe { Tensor::from_raw(raw, false) }.unwrap());
    assert_eq!(tensors(), live);
}
