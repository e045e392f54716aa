//! Shared buffers. On the CPU: the Vulkan half for real on lavapipe (export an fd
//! from one VkDevice, import it into a second, data written through one view and
//! read through the other), and every refusal with its kind and words. On a GPU
//! (`gpu_*`, ignored without `--include-ignored`): both halves for real, wrapped
//! engine memory, 1000 cycles, a failed import, buffers past 4 GiB. The C door's
//! argument checks and fd ownership are capi/tests/misuse/.
//!
//! The tests of this file run one at a time (`serial`): several count the
//! process's open fds, which another test's contexts and exports would change.

mod support;
use support::*;

use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Instant;

use ash::vk;
use support::cuda::Cuda;
use vkcuda::buffer::{Allocator, Layout, Wrap};
use vkcuda::dlpack::Spec;
use vkcuda::handoff::Scope;
use vkcuda::{ipc, Buffer, Context, ErrorKind};

fn none() -> vk::BufferUsageFlags {
    vk::BufferUsageFlags::empty()
}

fn create(ctx: &Arc<Context>, size: u64, allocator: Allocator) -> Buffer {
    Buffer::create(ctx, size, none(), allocator).unwrap()
}

/// Whether this device's exported memory fds tell their size (see `fd_knows_size`).
fn exported_fds_know_size(ctx: &Arc<Context>) -> bool {
    let fd = create(ctx, 4096, Allocator::Vulkan).export_fd().unwrap();
    fd_knows_size(fd.as_raw_fd())
}

/// Writes a pattern into a buffer of `a` via a staging copy, exports it, imports
/// the fd into `b`, copies it out there and compares every byte.
fn roundtrip(size: u64, seed: u32) {
    let (a, b) = (vulkan_only_context(), vulkan_only_context());
    let (va, vb) = (Vk::of(&a), Vk::of(&b));
    let buf = create(&a, size, Allocator::Vulkan);
    let layout = buf.layout();
    assert_eq!(layout.size, size);
    assert!(layout.allocation_size >= size);
    refused(buf.cuda_ptr(), ErrorKind::CudaUnavailable, "no CUDA side");
    va.fill_pattern(buf.vk_buffer(), size, seed);

    let fd = buf.export_fd().unwrap();
    let imported = Buffer::import_fd(&b, fd.as_fd(), layout, none()).unwrap();
    assert_eq!(imported.layout(), layout);
    let bad = vb.pattern_mismatches(imported.vk_buffer(), size, seed);
    assert_eq!(
        bad, 0,
        "{bad} of {size} bytes differ after the fd round trip"
    );

    // And back: device b writes, device a sees it.
    vb.fill_pattern(imported.vk_buffer(), size, seed + 1);
    assert_eq!(va.pattern_mismatches(buf.vk_buffer(), size, seed + 1), 0);
}

/// 4 bytes, 1 MiB + 1 and 16 MiB.
#[test]
fn fd_roundtrip_between_two_devices() {
    let _g = serial();
    for (size, seed) in [(4, 1), ((1 << 20) + 1, 2), (16 << 20, 3)] {
        roundtrip(size, seed);
    }
}

#[test]
fn buffer_data_crosses_contexts_through_an_fd() {
    let _g = serial();
    let a = vulkan_only_context();
    let b = vulkan_only_context();
    let (va, vb) = (Vk::of(&a), Vk::of(&b));
    let size = 256 * 1024 + 12;
    let data = bytes(size, 7);
    let shared = Buffer::create(&a, size as u64, none(), Allocator::Vulkan).unwrap();
    va.write(shared.vk_buffer(), &data);
    // A hands the memory out (VK_QUEUE_FAMILY_EXTERNAL), B takes it in.
    va.run(|cmd| unsafe {
        shared
            .cmd_release_to_cuda(cmd, &Scope::new(va.family))
            .unwrap()
    });
    let fd = shared.export_fd().unwrap();
    let second_fd = shared.export_fd().unwrap();
    let at = file_offset(fd.as_raw_fd(), Some(100));
    let imported = Buffer::import_fd(&b, fd.as_fd(), shared.layout(), none()).unwrap();
    vb.run(|cmd| unsafe {
        imported
            .cmd_acquire_from_cuda(cmd, &Scope::new(vb.family))
            .unwrap()
    });
    // The fd stays the caller's: the drivers took duplicates, and its file offset
    // (lavapipe's memfds have one; the driver reads their header) is where it was.
    assert_eq!(file_offset(fd.as_raw_fd(), None), at);
    drop(fd);
    assert_eq!(imported.layout(), shared.layout());
    assert_ne!(imported.vk_buffer(), vk::Buffer::null());
    assert!(!imported.is_wrapped());
    // Context A and its buffer go first: the import keeps the memory.
    let layout = shared.layout();
    drop(shared);
    drop(va);
    drop(a);
    assert_same(
        &vb.read(imported.vk_buffer(), size),
        &data,
        "read through context B's import",
    );
    // A second import of the same memory: what B writes through one, it reads
    // through the other.
    let third = Buffer::import_fd(&b, second_fd.as_fd(), layout, none()).unwrap();
    let fresh = bytes(size, 99);
    vb.write(third.vk_buffer(), &fresh);
    assert_same(
        &vb.read(imported.vk_buffer(), size),
        &fresh,
        "one memory, two imports",
    );
}

/// (Sizes past the heap or maxBufferSize: tests/faults.rs `sizes_at_the_device_limits`.)
#[test]
fn buffer_refusals_say_why() {
    let _g = serial();
    let ctx = vulkan_only_context();
    refused(
        Buffer::create(&ctx, 0, none(), Allocator::Vulkan),
        ErrorKind::InvalidArgument,
        "size must not be 0",
    );
    refused(
        Buffer::create(&ctx, 1 << 63, none(), Allocator::Vulkan),
        ErrorKind::InvalidArgument,
        "absurd",
    );
    refused(
        Buffer::create(
            &ctx,
            64,
            vk::BufferUsageFlags::from_raw(0x4000_0000),
            Allocator::Vulkan,
        ),
        ErrorKind::InvalidArgument,
        "not buffer usages the library accepts",
    );
    refused(
        Buffer::create(
            &ctx,
            64,
            vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS,
            Allocator::Vulkan,
        ),
        ErrorKind::Unsupported,
        "SHADER_DEVICE_ADDRESS",
    );
    refused(
        Buffer::create(&ctx, 64, none(), Allocator::Cuda),
        ErrorKind::CudaUnavailable,
        "no CUDA side",
    );
    let buf = Buffer::create(&ctx, 4096, none(), Allocator::Vulkan).unwrap();
    assert_eq!(buf.usage(), vkcuda::buffer::DEFAULT_USAGE);
    refused(buf.cuda_ptr(), ErrorKind::CudaUnavailable, "no CUDA side");
    // A pipe is not a memory handle: refused before any driver sees it.
    let (r, _w) = pipe();
    refused(
        Buffer::import_fd(&ctx, r.as_fd(), buf.layout(), none()),
        ErrorKind::InvalidArgument,
        "not a memory handle",
    );
    // A layout larger than the memory object (where the kernel knows its size:
    // lavapipe's memfds, not NVIDIA's opaque fds), and one that overflows.
    let fd = buf.export_fd().unwrap();
    if fd_knows_size(fd.as_raw_fd()) {
        let big = Layout {
            allocation_size: buf.layout().allocation_size * 4,
            size: buf.layout().allocation_size * 4,
            ..buf.layout()
        };
        refused(
            Buffer::import_fd(&ctx, fd.as_fd(), big, none()),
            ErrorKind::InvalidArgument,
            "larger than the memory object's real size",
        );
    }
    let overflow = Layout {
        offset: u64::MAX - 8,
        ..buf.layout()
    };
    refused(
        Buffer::import_fd(&ctx, fd.as_fd(), overflow, none()),
        ErrorKind::InvalidArgument,
        "overflows",
    );
}

/// The engine's own exportable memory for a wrap: 64 KiB, a buffer of 16 KiB at
/// offset 0 (freed on drop).
struct EngineMemory<'a> {
    v: &'a Vk,
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
}

impl<'a> EngineMemory<'a> {
    fn new(v: &'a Vk) -> Self {
        let mut ext = vk::ExternalMemoryBufferCreateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let info = vk::BufferCreateInfo::default()
            .size(16384)
            .usage(vk::BufferUsageFlags::STORAGE_BUFFER)
            .push_next(&mut ext);
        let buffer = unsafe { v.device.create_buffer(&info, None) }.unwrap();
        let req = unsafe { v.device.get_buffer_memory_requirements(buffer) };
        let mut export = vk::ExportMemoryAllocateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(65536)
            .memory_type_index(req.memory_type_bits.trailing_zeros())
            .push_next(&mut export);
        let memory = unsafe { v.device.allocate_memory(&alloc, None) }.unwrap();
        unsafe { v.device.bind_buffer_memory(buffer, memory, 0) }.unwrap();
        EngineMemory { v, buffer, memory }
    }

    fn wrap(&self, allocation_size: u64, offset: u64, size: u64) -> Wrap {
        Wrap {
            buffer: self.buffer,
            memory: self.memory,
            allocation_size,
            offset,
            size,
            dedicated: false,
            export_handle_types: vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD,
        }
    }
}

impl Drop for EngineMemory<'_> {
    fn drop(&mut self) {
        unsafe {
            self.v.device.destroy_buffer(self.buffer, None);
            self.v.device.free_memory(self.memory, None);
        }
    }
}

#[test]
fn wrap_checks_sizes_before_anything_else() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let v = Vk::of(&ctx);
    let m = EngineMemory::new(&v);
    // SAFETY: the engine's live buffer bound to its memory, both outliving the wraps.
    let wrap = |w: Wrap| unsafe { Buffer::wrap(&ctx, &w) };
    let invalid = ErrorKind::InvalidArgument;
    let knows_size = exported_fds_know_size(&ctx);
    let before = fd_count();
    refused(wrap(m.wrap(65536, 0, 0)), invalid, "size");
    refused(
        wrap(m.wrap(65536, 65536 - 100, 16384)),
        invalid,
        "past the end",
    );
    refused(wrap(m.wrap(65536, 4, 1000)), invalid, "alignment");
    refused(wrap(m.wrap(65536, 0, 32768)), invalid, "memory requirement");
    if knows_size {
        let e = refused(wrap(m.wrap(1 << 20, 0, 16384)), invalid, "real size");
        println!("memory smaller than claimed: {e}");
        // To the byte: a memfd driver's header (lavapipe: 4 KiB and 40 bytes) is
        // not part of the allocation.
        for claimed in [65536 + 4096, 65536 + 1] {
            let words = format!(
                "allocation_size {claimed} is larger than the memory object's real size 65536"
            );
            refused(wrap(m.wrap(claimed, 0, 16384)), invalid, &words);
        }
    } else {
        println!("fd size unknown to the kernel: a claimed allocation_size cannot be checked here");
    }
    refused(wrap(m.wrap(0, 0, 16384)), invalid, "");
    assert_eq!(fd_count(), before, "no fd leaked on any of the failures");
    // All checks pass; a Vulkan-only context makes no CUDA view.
    let wrapped = wrap(m.wrap(65536, 0, 16384)).unwrap();
    assert!(wrapped.is_wrapped());
    refused(wrapped.cuda_ptr(), ErrorKind::CudaUnavailable, "");
    assert_eq!(
        (wrapped.vk_buffer(), wrapped.vk_memory()),
        (m.buffer, m.memory)
    );
    drop(wrapped);
    // Memory the engine says it allocated without OPAQUE_FD export info is refused
    // before any driver call (exporting it would be undefined behaviour).
    let mut w = m.wrap(65536, 0, 16384);
    w.export_handle_types = vk::ExternalMemoryHandleTypeFlags::empty();
    let e = refused(wrap(w), invalid, "export_handle_types is 0");
    assert!(
        e.message().contains("VkExportMemoryAllocateInfo")
            && e.message().contains("pMemoryAllocateNext"),
        "names the missing export info and the VMA fix: {e}"
    );
    w.export_handle_types = vk::ExternalMemoryHandleTypeFlags::DMA_BUF_EXT;
    refused(
        wrap(w),
        invalid,
        "without VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT",
    );
}

#[test]
fn thousand_cycles_leak_no_fds() {
    let _g = serial();
    let (a, b) = (vulkan_only_context(), vulkan_only_context());
    // Warm up once so lazily opened driver files are not counted.
    drop(create(&a, 4096, Allocator::Vulkan));
    let (before, objects) = (fd_count(), live_counts());
    for i in 0..1000u64 {
        let buf = create(&a, 4096 + i, Allocator::Vulkan);
        let fd = buf.export_fd().unwrap();
        Buffer::import_fd(&b, fd.as_fd(), buf.layout(), none()).unwrap();
    }
    assert_eq!(
        fd_count(),
        before,
        "open fds after 1000 export/import/destroy cycles"
    );
    assert_eq!(live_counts(), objects, "the library's live objects");
}

#[test]
fn barriers_record_into_a_command_buffer() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let v = Vk::of(&ctx);
    let buf = create(&ctx, 4096, Allocator::Vulkan);
    let scope = Scope::new(v.family);
    v.run(|cmd| unsafe {
        buf.cmd_release_to_cuda(cmd, &scope).unwrap();
        buf.cmd_acquire_from_cuda(cmd, &scope).unwrap();
    });
}

/// Not a test of the library: a deliberate write-after-write hazard (two copies
/// into one buffer with no barrier between them) that synchronization validation
/// must report. The GPU scripts run it under the validation layer
/// (`--ignored --exact validation_layer_canary`) and trust a clean log only once it
/// has shown `SYNC-HAZARD-WRITE-AFTER-WRITE`. It records the hazard only when named
/// on the command line: `--include-ignored` runs of the whole file under the layer
/// (the GPU scripts') must not see it.
#[test]
#[ignore = "a deliberate hazard for the validation layer; run by scripts/gpu-test.sh"]
fn validation_layer_canary() {
    let _g = serial();
    if !std::env::args().any(|a| a == "validation_layer_canary") {
        println!("validation_layer_canary: not named on the command line: no hazard recorded");
        return;
    }
    let ctx = vulkan_only_context();
    let vk = Vk::of(&ctx);
    let (a, b) = (vk.host_buffer(4096), vk.host_buffer(4096));
    a.bytes().fill(7);
    vk.run(|cmd| unsafe {
        let region = [vk::BufferCopy::default().size(4096)];
        vk.device.cmd_copy_buffer(cmd, a.buffer, b.buffer, &region);
        vk.device.cmd_copy_buffer(cmd, a.buffer, b.buffer, &region);
    });
    assert!(b.bytes().iter().all(|&x| x == 7));
    vk.destroy_host_buffer(a);
    vk.destroy_host_buffer(b);
}

// ---------------------------------------------------------------------------------
// GPU: both halves for real, CUDA writing and reading with driver-API copies.

fn mismatches(data: &[u8], seed: u32) -> usize {
    data.iter()
        .enumerate()
        .filter(|(i, &x)| x != pattern(*i, seed))
        .count()
}

fn both_directions(ctx: &Arc<Context>, v: &Vk, cuda: &Cuda, size: u64, allocator: Allocator) {
    let b = create(ctx, size, allocator);
    let (layout, dptr) = (b.layout(), b.cuda_ptr().unwrap());
    assert_eq!(layout.size, size);
    assert_ne!(dptr, 0);
    assert!(layout.allocation_size >= size);
    let seed = size as u32 ^ (allocator == Allocator::Cuda) as u32;
    let host = v.host_buffer(size);
    let region = [vk::BufferCopy::default().size(size)];

    // CUDA writes, Vulkan reads.
    cuda.write(dptr, &bytes(size as usize, seed));
    host.bytes().fill(0);
    let h = Scope::new(v.family);
    v.run(|cmd| unsafe {
        b.cmd_acquire_from_cuda(cmd, &h).unwrap();
        v.device
            .cmd_copy_buffer(cmd, b.vk_buffer(), host.buffer, &region);
    });
    let bad = mismatches(host.bytes(), seed);
    assert_eq!(
        bad, 0,
        "CUDA->Vulkan, {allocator:?}, {size} bytes: {bad} differ"
    );

    // Vulkan writes, CUDA reads.
    host.bytes()
        .copy_from_slice(&bytes(size as usize, seed + 7));
    v.run(|cmd| unsafe {
        v.device
            .cmd_copy_buffer(cmd, host.buffer, b.vk_buffer(), &region);
        b.cmd_release_to_cuda(cmd, &h).unwrap();
    });
    let bad = mismatches(&cuda.read(dptr, size as usize), seed + 7);
    assert_eq!(
        bad, 0,
        "Vulkan->CUDA, {allocator:?}, {size} bytes: {bad} differ"
    );
    println!(
        "{allocator:?}: {size} bytes (allocation {}, dedicated {}) checked both ways",
        layout.allocation_size, layout.dedicated
    );
    v.destroy_host_buffer(host);
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_buffers_both_directions() {
    let _g = serial();
    let Some(ctx) = cuda_context_or_skip("gpu_buffers_both_directions") else {
        return;
    };
    let v = Vk::of(&ctx);
    let cuda = Cuda::of_context(&ctx);
    for size in [4u64, (1 << 20) + 1, 64 << 20, 1 << 30] {
        for allocator in [Allocator::Cuda, Allocator::Vulkan] {
            both_directions(&ctx, &v, &cuda, size, allocator);
        }
    }
}

/// The engine's own exportable allocation holding two buffers; the second is
/// wrapped (freed on drop).
struct EngineAllocation<'a> {
    v: &'a Vk,
    memory: vk::DeviceMemory,
    buffers: [vk::Buffer; 2],
    offset: u64,
    allocation_size: u64,
}

fn engine_allocation(v: &Vk, each: u64) -> EngineAllocation<'_> {
    let mk = || {
        let mut ext = vk::ExternalMemoryBufferCreateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let usage = vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST;
        let info = vk::BufferCreateInfo::default()
            .size(each)
            .usage(usage)
            .push_next(&mut ext);
        unsafe { v.device.create_buffer(&info, None) }.unwrap()
    };
    let buffers = [mk(), mk()];
    let req = unsafe { v.device.get_buffer_memory_requirements(buffers[0]) };
    let offset = req.size.next_multiple_of(req.alignment);
    let allocation_size = offset + req.size;
    let mut export = vk::ExportMemoryAllocateInfo::default()
        .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
    let alloc = vk::MemoryAllocateInfo::default()
        .allocation_size(allocation_size)
        .memory_type_index(device_local_type(v, req.memory_type_bits))
        .push_next(&mut export);
    let memory = unsafe { v.device.allocate_memory(&alloc, None) }.unwrap();
    unsafe {
        v.device.bind_buffer_memory(buffers[0], memory, 0).unwrap();
        v.device
            .bind_buffer_memory(buffers[1], memory, offset)
            .unwrap();
    }
    EngineAllocation {
        v,
        memory,
        buffers,
        offset,
        allocation_size,
    }
}

impl Drop for EngineAllocation<'_> {
    fn drop(&mut self) {
        unsafe {
            self.v.device.destroy_buffer(self.buffers[0], None);
            self.v.device.destroy_buffer(self.buffers[1], None);
            self.v.device.free_memory(self.memory, None);
        }
    }
}

impl EngineAllocation<'_> {
    /// The second buffer, `size` bytes of it, wrapped.
    fn wrap(&self, ctx: &Arc<Context>, size: u64) -> vkcuda::Result<Buffer> {
        let w = Wrap {
            buffer: self.buffers[1],
            memory: self.memory,
            allocation_size: self.allocation_size,
            offset: self.offset,
            size,
            dedicated: false,
            export_handle_types: vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD,
        };
        // SAFETY: the engine's live buffer bound to its memory, outliving the wrap.
        unsafe { Buffer::wrap(ctx, &w) }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_wrap_engine_memory() {
    let _g = serial();
    let Some(ctx) = cuda_context_or_skip("gpu_wrap_engine_memory") else {
        return;
    };
    let v = Vk::of(&ctx);
    let cuda = Cuda::of_context(&ctx);
    let size = (3 << 20) + 5;
    let a = engine_allocation(&v, size);
    let b = a.wrap(&ctx, size).unwrap();
    assert!(b.is_wrapped());
    assert_eq!(b.vk_buffer(), a.buffers[1]);
    assert_eq!(b.layout().offset, a.offset);
    cuda.write(b.cuda_ptr().unwrap(), &bytes(size as usize, 99));
    let host = v.host_buffer(size);
    v.copy(a.buffers[1], host.buffer, size);
    assert_eq!(
        mismatches(host.bytes(), 99),
        0,
        "CUDA wrote through the wrapped view at offset {}",
        a.offset
    );
    // A wrapped memory with a size larger than the allocation is refused.
    refused(
        a.wrap(&ctx, a.allocation_size),
        ErrorKind::InvalidArgument,
        "",
    );
    // What NVIDIA's opaque fds tell about their size (informational).
    let fd = b.export_fd().unwrap();
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    unsafe { libc::fstat(fd.as_raw_fd(), &mut st) };
    println!(
        "NVIDIA OPAQUE_FD: st_size {} st_mode {:o} lseek-end {}",
        st.st_size,
        st.st_mode,
        unsafe { libc::lseek(fd.as_raw_fd(), 0, libc::SEEK_END) }
    );
    v.destroy_host_buffer(host);
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_thousand_cycles_do_not_grow() {
    let _g = serial();
    let Some(ctx) = cuda_context_or_skip("gpu_thousand_cycles_do_not_grow") else {
        return;
    };
    let v = Vk::of(&ctx);
    let cuda = Cuda::of_context(&ctx);
    let a = engine_allocation(&v, 1 << 20);
    let allocators = [Allocator::Vulkan, Allocator::Cuda];
    // Warm up each path once (lazy driver state).
    for alloc in allocators {
        drop(create(&ctx, 1 << 20, alloc));
    }
    drop(a.wrap(&ctx, 1 << 20).unwrap());
    let (fds, free, objs) = (fd_count(), cuda.free_memory(), live_objects());
    let start = Instant::now();
    for _ in 0..1000 {
        for alloc in allocators {
            drop(create(&ctx, 1 << 20, alloc).export_fd().unwrap());
        }
        drop(a.wrap(&ctx, 1 << 20).unwrap());
    }
    let (fds2, free2, objs2) = (fd_count(), cuda.free_memory(), live_objects());
    println!(
        "1000 x (Vulkan, CUDA, wrapped) create/export/destroy in {:?}: fds {fds} -> {fds2}, \
         CUDA free {free} -> {free2}, live vk buffers {} -> {}, vk memories {} -> {}, cuda allocations {} -> {}, \
         cuda imports {} -> {}",
        start.elapsed(),
        objs.vk_buffers,
        objs2.vk_buffers,
        objs.vk_memories,
        objs2.vk_memories,
        objs.cuda_allocations,
        objs2.cuda_allocations,
        objs.cuda_external_memories,
        objs2.cuda_external_memories
    );
    assert_eq!(fds, fds2, "open fds");
    assert!(
        free2 + (4 << 20) >= free,
        "CUDA free memory went down by {}",
        free - free2
    );
    assert_eq!(objs.vk_buffers, objs2.vk_buffers);
    assert_eq!(objs.vk_memories, objs2.vk_memories);
    assert_eq!(objs.cuda_allocations, objs2.cuda_allocations);
    assert_eq!(objs.cuda_external_memories, objs2.cuda_external_memories);
}

/// A failed import (an allocation size larger than the memory object) must leave
/// the library, the device and the exported memory usable.
#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_failed_imports_leave_the_library_usable() {
    let _g = serial();
    let Some(ctx) = cuda_context_or_skip("gpu_failed_imports_leave_the_library_usable") else {
        return;
    };
    let b = create(&ctx, 65536, Allocator::Vulkan);
    let import = |fd: &OwnedFd, allocation_size: u64| {
        let layout = Layout {
            allocator: Allocator::Vulkan,
            allocation_size,
            offset: 0,
            ..b.layout()
        };
        let r = Buffer::import_fd(&ctx, fd.as_fd(), layout, none());
        println!("  import of fd {fd:?} with allocation_size {allocation_size}: {r:?}");
        r.is_ok()
    };
    let size = b.layout().allocation_size;
    let fd = b.export_fd().unwrap();
    let r1 = import(&fd, size * 2);
    let fresh = Buffer::create(&ctx, 65536, none(), Allocator::Vulkan);
    println!("  a new buffer after the failed import: {fresh:?}");
    let r3 = import(&b.export_fd().unwrap(), size);
    let r4 = import(&fd, size);
    let other = cuda_context_or_skip("second context").unwrap();
    let in_other = Buffer::create(&other, 65536, none(), Allocator::Vulkan);
    println!("  a buffer in a new context: {in_other:?}");
    println!(
        "failed import: {r1}; afterwards: new buffer {}, import of a new fd {r3}, of the same fd {r4}, new context {}",
        fresh.is_ok(),
        in_other.is_ok()
    );
    assert!(!r1);
    assert!(fresh.is_ok(), "a new buffer after a failed import");
    assert!(r3, "importing a new fd of the same memory");
    assert!(in_other.is_ok(), "a buffer in a new context");
}

// --- Buffers past 4 GiB (issue 29, item 12). On the H200 (maxMemoryAllocationSize
// 4,292,870,144; maxBufferSize 1 TiB; heap 140 GiB) each size is made with each
// allocator, zeroed, and marked in 4 KiB windows at 0, on both sides of every
// 4 GiB boundary and at the end, each byte a function of its absolute offset (a
// 32-bit truncation lands a mark elsewhere and leaves zeros where it belongs):
// CUDA writes (cuMemcpyHtoD) and Vulkan reads (vkCmdCopyBuffer of the windows to a
// host buffer); Vulkan writes and CUDA reads (cuMemcpyDtoH); a DLPack tensor over
// the whole buffer and one starting past 4 GiB have the right shape, strides and
// data pointer, and CUDA reads the marks through the latter; a child process
// imports the exported fd with the description, checks the marks with CUDA and
// Vulkan and writes its own, which the parent reads. Each buffer is destroyed
// before the next. One line per size and allocator.

const GIB: u64 = 1 << 30;
const WINDOW: u64 = 4096;
const LARGE_FD_ENV: &str = "VKCUDA_TEST_LARGE_FD";
const LARGE_RECORD_ENV: &str = "VKCUDA_TEST_LARGE_RECORD";

/// The byte written at absolute offset `off` with `seed` (never 0: the buffer is
/// zeroed first).
fn mark(off: u64, seed: u32) -> u8 {
    let x = (off ^ ((seed as u64) << 56)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (x >> 57) as u8 ^ (off as u8) ^ (seed as u8).wrapping_mul(37) | 1
}

/// The windows' first offsets: 0, both sides of every 4 GiB boundary, the end.
fn windows(size: u64) -> Vec<u64> {
    let mut w = vec![0];
    let mut b = 4 * GIB;
    while b < size {
        w.extend([b - WINDOW, b]);
        b += 4 * GIB;
    }
    w.push(size - WINDOW);
    w.dedup();
    w
}

fn marks(start: u64, seed: u32) -> Vec<u8> {
    (start..start + WINDOW).map(|o| mark(o, seed)).collect()
}

/// Wrong bytes of `got` (one Vec per window) against the marks of `seed`.
fn wrong(got: &[Vec<u8>], ws: &[u64], seed: u32) -> usize {
    got.iter()
        .zip(ws)
        .map(|(g, &w)| {
            g.iter()
                .zip(marks(w, seed))
                .filter(|(a, b)| **a != *b)
                .count()
        })
        .sum()
}

fn vk_regions(ws: &[u64], device_is_src: bool) -> Vec<vk::BufferCopy> {
    ws.iter()
        .enumerate()
        .map(|(i, &w)| {
            let (src, dst) = if device_is_src {
                (w, i as u64 * WINDOW)
            } else {
                (i as u64 * WINDOW, w)
            };
            vk::BufferCopy::default()
                .src_offset(src)
                .dst_offset(dst)
                .size(WINDOW)
        })
        .collect()
}

fn vk_read_windows(v: &Vk, buf: vk::Buffer, ws: &[u64]) -> Vec<Vec<u8>> {
    let host = v.host_buffer(ws.len() as u64 * WINDOW);
    let regions = vk_regions(ws, true);
    v.run(|cmd| unsafe { v.device.cmd_copy_buffer(cmd, buf, host.buffer, &regions) });
    let out = host
        .bytes()
        .chunks(WINDOW as usize)
        .map(<[u8]>::to_vec)
        .collect();
    v.destroy_host_buffer(host);
    out
}

fn vk_write_windows(v: &Vk, buf: vk::Buffer, ws: &[u64], seed: u32) {
    let host = v.host_buffer(ws.len() as u64 * WINDOW);
    for (chunk, &w) in host.bytes().chunks_mut(WINDOW as usize).zip(ws) {
        chunk.copy_from_slice(&marks(w, seed));
    }
    let regions = vk_regions(ws, false);
    v.run(|cmd| unsafe { v.device.cmd_copy_buffer(cmd, host.buffer, buf, &regions) });
    v.destroy_host_buffer(host);
}

fn cuda_write_windows(cu: &Cuda, ptr: u64, ws: &[u64], seed: u32) {
    for &w in ws {
        cu.write(ptr + w, &marks(w, seed));
    }
}

fn cuda_read_windows(cu: &Cuda, ptr: u64, ws: &[u64]) -> Vec<Vec<u8>> {
    ws.iter()
        .map(|&w| cu.read(ptr + w, WINDOW as usize))
        .collect()
}

/// A uint8 DLPack tensor of `b` from `offset` over the rest: checks its fields
/// and returns the CUDA read of its first window.
fn dlpack_check(b: &Buffer, offset: u64, cu: &Cuda) -> Vec<u8> {
    let spec = Spec {
        offset,
        ..Spec::default()
    };
    let t = b.export_dlpack(&spec).unwrap();
    assert_eq!(t.shape().len(), 1, "one dimension");
    let size = b.layout().size;
    assert_eq!(
        t.shape()[0] as u64,
        size - offset,
        "shape[0] is every byte from the offset"
    );
    assert_eq!(t.strides(), [1]);
    assert_eq!(
        t.data(),
        b.cuda_ptr().unwrap() + offset,
        "data is the CUDA view plus the offset"
    );
    cu.read(t.data(), WINDOW as usize)
}

fn large_buffer(ctx: &Arc<Context>, size: u64) {
    use cudarc::driver::sys as cu;
    let v = Vk::of(ctx);
    let cuda = Cuda::of_context(ctx);
    let ws = windows(size);
    let objects = live_counts();
    for allocator in [Allocator::Vulkan, Allocator::Cuda] {
        let t = Instant::now();
        let b = Buffer::create(ctx, size, none(), allocator)
            .unwrap_or_else(|e| panic!("{size} bytes, {allocator:?}-allocated: {e}"));
        let (layout, dptr) = (b.layout(), b.cuda_ptr().unwrap());
        assert_eq!(layout.size, size);
        assert!(layout.allocation_size >= size);
        cuda.within(|| {
            support::cuda::check(unsafe { cu::cuMemsetD8_v2(dptr, 0, size as usize) });
            support::cuda::check(unsafe { cu::cuCtxSynchronize() });
        });

        // CUDA writes, Vulkan reads; then Vulkan writes, CUDA reads.
        cuda_write_windows(&cuda, dptr, &ws, 1);
        let cuda_to_vk = wrong(&vk_read_windows(&v, b.vk_buffer(), &ws), &ws, 1);
        vk_write_windows(&v, b.vk_buffer(), &ws, 2);
        let vk_to_cuda = wrong(&cuda_read_windows(&cuda, dptr, &ws), &ws, 2);

        // DLPack: the whole buffer, and a tensor starting past the last 4 GiB boundary.
        let last = *ws.last().unwrap();
        let whole = dlpack_check(&b, 0, &cuda);
        let tail = dlpack_check(&b, last, &cuda);
        let dlpack_wrong = wrong(&[whole, tail], &[0, last], 2);

        // Another process: the fd and the description; it reads seed 2, writes seed 3.
        let record = ipc::describe_buffer(&b).to_bytes().unwrap();
        let fd = b.export_fd().unwrap();
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, 0) };
        let out = this_test("child_large_buffer_peer", true)
            .env(CHILD_ENV, "1")
            .env(LARGE_FD_ENV, fd.as_raw_fd().to_string())
            .env(LARGE_RECORD_ENV, hex_of(&record))
            .output()
            .unwrap();
        drop(fd);
        let child = child_passed("child_large_buffer_peer", &out);
        let child_line = child
            .lines()
            .find(|l| l.starts_with("child:"))
            .unwrap_or("child: (no line)")
            .to_string();
        let from_child = wrong(&vk_read_windows(&v, b.vk_buffer(), &ws), &ws, 3);

        drop(b);
        println!(
            "{:>4.1} GiB {allocator:?}-allocated: allocation {} bytes, {} windows of 4 KiB up to offset {last}: \
             CUDA->Vulkan {cuda_to_vk} wrong, Vulkan->CUDA {vk_to_cuda} wrong, DLPack (shape {size} \
             and {} from offset {last}) {dlpack_wrong} wrong, {child_line}, child's writes read \
             here {from_child} wrong ({:.1} s)",
            size as f64 / GIB as f64,
            layout.allocation_size,
            ws.len(),
            size - last,
            t.elapsed().as_secs_f64()
        );
        assert_eq!(
            (cuda_to_vk, vk_to_cuda, dlpack_wrong, from_child),
            (0, 0, 0, 0),
            "wrong bytes (CUDA->Vulkan, Vulkan->CUDA, DLPack, from the child)"
        );
    }
    assert_eq!(live_counts(), objects, "every buffer destroyed");
}

/// Bytes as hex digits.
fn hex_of(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_large_buffer_4_5_gib() {
    let _g = serial();
    let Some(ctx) = cuda_context_or_skip("gpu_large_buffer_4_5_gib") else {
        return;
    };
    large_buffer(&ctx, 9 * GIB / 2);
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_large_buffer_8_gib() {
    let _g = serial();
    let Some(ctx) = cuda_context_or_skip("gpu_large_buffer_8_gib") else {
        return;
    };
    large_buffer(&ctx, 8 * GIB);
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_large_buffer_16_gib() {
    let _g = serial();
    let Some(ctx) = cuda_context_or_skip("gpu_large_buffer_16_gib") else {
        return;
    };
    large_buffer(&ctx, 16 * GIB);
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_large_buffer_48_gib() {
    let _g = serial();
    let Some(ctx) = cuda_context_or_skip("gpu_large_buffer_48_gib") else {
        return;
    };
    large_buffer(&ctx, 48 * GIB);
}

/// The other process of `large_buffer`: imports the inherited fd with the
/// description, checks seed 2 through CUDA and Vulkan, writes seed 3 with CUDA.
#[test]
#[ignore = "runs in a child process of the gpu_large_buffer_* tests"]
fn child_large_buffer_peer() {
    child_only!("child_large_buffer_peer");
    let fd: i32 = std::env::var(LARGE_FD_ENV).unwrap().parse().unwrap();
    // SAFETY: the parent left this fd open for this process, and nothing else owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let hex = std::env::var(LARGE_RECORD_ENV).unwrap();
    let record: Vec<u8> = (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let d = ipc::Description::parse(&record).unwrap();
    let ctx = Context::standalone(None, vkcuda::CudaChoice::Primary).unwrap();
    let b = ipc::import_buffer(&ctx, &d, fd.as_fd(), none()).unwrap();
    let (size, dptr) = (b.layout().size, b.cuda_ptr().unwrap());
    let ws = windows(size);
    let v = Vk::of(&ctx);
    let cuda = Cuda::of_context(&ctx);
    let by_cuda = wrong(&cuda_read_windows(&cuda, dptr, &ws), &ws, 2);
    let by_vk = wrong(&vk_read_windows(&v, b.vk_buffer(), &ws), &ws, 2);
    cuda_write_windows(&cuda, dptr, &ws, 3);
    println!("child: imported {size} bytes, marks read by CUDA {by_cuda} wrong and by Vulkan {by_vk} wrong");
    assert_eq!((by_cuda, by_vk), (0, 0));
}
