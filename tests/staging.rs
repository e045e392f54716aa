//! `vkcuda::HostBuffer` through the Rust API: made on a standalone context, its
//! bytes copied by real Vulkan transfers (recorded here with `ash`, loaded from the
//! context's `vkGetInstanceProcAddr`) into a shared `Buffer` and back out, every
//! byte compared; counted in `live_objects` and freed on drop; sizes refused with
//! their reason. Self-contained: runs on any Vulkan device (lavapipe here; on a GPU
//! machine the first device, whose host-visible memory types differ). (Named
//! `staging`, not `host_buffer`: CTest names every suite `rust_<file>` whatever its
//! crate, and capi/tests/host_buffer.rs is the C door's.)

use std::sync::{Arc, Mutex, MutexGuard};

use vkcuda::ash::{self, vk};
use vkcuda::buffer::Allocator;
use vkcuda::context::CudaChoice;
use vkcuda::{Buffer, Context, ErrorKind, HostBuffer};

/// One test at a time: the live-object counts are the process's.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// (VkBuffers, VkDeviceMemorys) the library holds now.
fn counts() -> (i64, i64) {
    let l = vkcuda::live_objects();
    (l.vk_buffers, l.vk_memories)
}

/// Random bytes (xorshift64*, seeded).
fn random_bytes(n: usize, mut seed: u64) -> Vec<u8> {
    (0..n)
        .map(|_| {
            seed ^= seed >> 12;
            seed ^= seed << 25;
            seed ^= seed >> 27;
            (seed.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

/// The context's device and queue, loaded with ash, and a command pool.
struct Copier {
    device: ash::Device,
    queue: vk::Queue,
    pool: vk::CommandPool,
}

impl Copier {
    fn new(ctx: &Arc<Context>) -> Copier {
        let h = ctx.vulkan_handles();
        let (family, queue) = h.queue.expect("a standalone context has a queue");
        let static_fn = ash::StaticFn {
            get_instance_proc_addr: h.get_instance_proc_addr,
        };
        // SAFETY: the context's live handles, loaded through its own entry point.
        let device = unsafe {
            let instance = ash::Instance::load(&static_fn, h.instance);
            ash::Device::load(instance.fp_v1_0(), h.device)
        };
        let info = vk::CommandPoolCreateInfo::default().queue_family_index(family);
        // SAFETY: a valid create info on the context's device.
        let pool = unsafe { device.create_command_pool(&info, None) }.unwrap();
        Copier {
            device,
            queue,
            pool,
        }
    }

    /// `vkCmdCopyBuffer` of `size` bytes from `src` to `dst`, submitted and waited for.
    fn copy(&self, src: vk::Buffer, dst: vk::Buffer, size: u64) {
        let d = &self.device;
        // SAFETY: objects of this device; the fence wait ends the command buffer's use.
        unsafe {
            let alloc = vk::CommandBufferAllocateInfo::default()
                .command_pool(self.pool)
                .command_buffer_count(1);
            let cmd = d.allocate_command_buffers(&alloc).unwrap()[0];
            d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())
                .unwrap();
            d.cmd_copy_buffer(cmd, src, dst, &[vk::BufferCopy::default().size(size)]);
            d.end_command_buffer(cmd).unwrap();
            let fence = d
                .create_fence(&vk::FenceCreateInfo::default(), None)
                .unwrap();
            let cmds = [cmd];
            let submit = vk::SubmitInfo::default().command_buffers(&cmds);
            d.queue_submit(self.queue, &[submit], fence).unwrap();
            d.wait_for_fences(&[fence], true, u64::MAX).unwrap();
            d.destroy_fence(fence, None);
            d.free_command_buffers(self.pool, &cmds);
        }
    }
}

impl Drop for Copier {
    fn drop(&mut self) {
        // SAFETY: every submit was waited for.
        unsafe { self.device.destroy_command_pool(self.pool, None) };
    }
}

#[test]
fn host_buffers_carry_bytes_through_vulkan_copies() {
    let _g = serial();
    let ctx = Context::standalone(None, CudaChoice::None).unwrap();
    let copier = Copier::new(&ctx);
    // An odd size: what the caller sees is what it asked for.
    let n: u64 = (3 << 20) + 5;
    let shared = Buffer::create(&ctx, n, vk::BufferUsageFlags::empty(), Allocator::Vulkan).unwrap();
    let before = counts();
    let mut up = HostBuffer::new(&ctx, n).unwrap();
    let mut down = HostBuffer::new(&ctx, n).unwrap();
    assert_eq!(counts(), (before.0 + 2, before.1 + 2));
    assert_eq!((up.size(), down.size()), (n, n));
    assert_eq!(up.bytes().len(), n as usize);
    assert_ne!(up.vk_buffer(), vk::Buffer::null());
    assert_ne!(up.vk_buffer(), down.vk_buffer());
    assert_eq!(up.as_ptr().cast_const(), up.bytes().as_ptr());
    assert!(Arc::ptr_eq(up.context(), &ctx));

    // Random bytes, then a compressible pattern (a ramp and a constant half).
    let half = n as usize / 2;
    let ramp: Vec<u8> = (0..n as usize)
        .map(|i| if i < half { (i % 251) as u8 } else { 0x5A })
        .collect();
    for (round, want) in [random_bytes(n as usize, 0x9E37_79B9), ramp]
        .into_iter()
        .enumerate()
    {
        up.bytes_mut().copy_from_slice(&want);
        down.bytes_mut().fill(!want[0]);
        copier.copy(up.vk_buffer(), shared.vk_buffer(), n);
        copier.copy(shared.vk_buffer(), down.vk_buffer(), n);
        let bad = down
            .bytes()
            .iter()
            .zip(&want)
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(
            bad, 0,
            "round {round}: {bad} of {n} bytes differ after the round trip"
        );
        assert_eq!(up.bytes(), &want[..], "round {round}: the source changed");
    }
    drop(up);
    drop(down);
    assert_eq!(
        counts(),
        before,
        "dropping a HostBuffer frees its buffer and memory"
    );
    drop(shared);
    drop(copier);
}

#[test]
fn host_buffer_sizes_are_refused_with_their_reason() {
    let _g = serial();
    let ctx = Context::standalone(None, CudaChoice::None).unwrap();
    let before = counts();
    for (size, words) in [
        (0, "size must not be 0"),
        (u64::MAX, "absurd"),
        (1 << 63, "absurd"),
        (1 << 50, "larger than the device's"),
    ] {
        let e = HostBuffer::new(&ctx, size).unwrap_err();
        assert_eq!(
            e.kind(),
            ErrorKind::InvalidArgument,
            "{size}: {}",
            e.message()
        );
        assert!(e.message().contains(words), "{size}: {}", e.message());
    }
    assert_eq!(counts(), before);
    // The smallest size works, and a HostBuffer moves to another thread.
    let one = HostBuffer::new(&ctx, 1).unwrap();
    let size = std::thread::spawn(move || one.size()).join().unwrap();
    assert_eq!(size, 1);
    assert_eq!(counts(), before);
}
