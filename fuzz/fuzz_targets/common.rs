//! What every target shares: one Vulkan-only context on the first Vulkan device
//! (lavapipe on the CPU machine), a shared buffer and image made once, a command
//! buffer to record barriers into, and the checks every call gets.
#![allow(dead_code)]

use std::ffi::CStr;
use std::ptr;
use std::sync::{Mutex, OnceLock};

use ash::vk;
pub use vkcuda_c::image::*;
pub use vkcuda_c::vkcuda_result::*;
pub use vkcuda_c::*;

pub struct Shared {
    pub ctx: *mut vkcuda_context,
    /// 64 KiB, Vulkan-allocated.
    pub buffer: *mut vkcuda_buffer,
    /// 16x16 R8G8B8A8_UNORM, 5 levels, the default usage.
    pub image: *mut vkcuda_image,
    pub device: ash::Device,
    pub cmd: Mutex<Recording>,
    /// Live objects once the above exist: every input must leave them so.
    pub live: [i64; 8],
    pub max_allocation: u64,
    pub largest_heap: u64,
}

pub struct Recording {
    pub pool: vk::CommandPool,
    pub cmd: vk::CommandBuffer,
    pub recorded: usize,
}

// The handles are used from the fuzzing thread only (libFuzzer runs inputs one at
// a time); the library documents them as usable from any thread.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

pub fn shared() -> &'static Shared {
    static S: OnceLock<Shared> = OnceLock::new();
    S.get_or_init(|| unsafe {
        let info = vkcuda_standalone_create_info {
            flags: VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT,
            physical_device_index: 0,
        };
        let mut ctx = ptr::null_mut();
        assert_eq!(
            vkcuda_context_create_standalone(&info, &mut ctx),
            VKCUDA_SUCCESS,
            "{}",
            message()
        );
        let b = vkcuda_buffer_create_info {
            flags: 0,
            allocator: vkcuda_allocator_raw(0),
            size: 65536,
            usage: 0,
        };
        let mut buffer = ptr::null_mut();
        assert_eq!(vkcuda_buffer_create(ctx, &b, &mut buffer), VKCUDA_SUCCESS);
        let mut image = ptr::null_mut();
        assert_eq!(
            vkcuda_image_create(ctx, &image_info(16, 16, 5), &mut image),
            VKCUDA_SUCCESS
        );
        let mut h: vkcuda_vulkan_handles = std::mem::zeroed();
        assert_eq!(vkcuda_context_get_vulkan_handles(ctx, &mut h), VKCUDA_SUCCESS);
        let static_fn = ash::StaticFn {
            get_instance_proc_addr: h.get_instance_proc_addr.unwrap(),
        };
        let instance = ash::Instance::load(&static_fn, h.instance);
        let device = ash::Device::load(instance.fp_v1_0(), h.device);
        let pool = device
            .create_command_pool(
                &vk::CommandPoolCreateInfo::default()
                    .queue_family_index(h.queue_family_index)
                    .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER),
                None,
            )
            .unwrap();
        let cmd = device
            .allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(pool)
                    .command_buffer_count(1),
            )
            .unwrap()[0];
        device
            .begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())
            .unwrap();
        let mut maint3 = vk::PhysicalDeviceMaintenance3Properties::default();
        let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut maint3);
        instance.get_physical_device_properties2(h.physical_device, &mut p2);
        let max_allocation = maint3.max_memory_allocation_size;
        let mem = instance.get_physical_device_memory_properties(h.physical_device);
        let largest_heap = mem.memory_heaps[..mem.memory_heap_count as usize]
            .iter()
            .map(|h| h.size)
            .max()
            .unwrap();
        Shared {
            ctx,
            buffer,
            image,
            device,
            cmd: Mutex::new(Recording {
                pool,
                cmd,
                recorded: 0,
            }),
            live: live(),
            max_allocation,
            largest_heap,
        }
    })
}

impl Shared {
    /// The command buffer being recorded, reset now and then so it stays small.
    pub fn with_cmd(&self, f: impl FnOnce(vk::CommandBuffer)) {
        let mut r = self.cmd.lock().unwrap();
        if r.recorded > 4096 {
            unsafe {
                self.device.end_command_buffer(r.cmd).unwrap();
                self.device
                    .reset_command_buffer(r.cmd, vk::CommandBufferResetFlags::empty())
                    .unwrap();
                self.device
                    .begin_command_buffer(r.cmd, &vk::CommandBufferBeginInfo::default())
                    .unwrap();
            }
            r.recorded = 0;
        }
        r.recorded += 1;
        f(r.cmd);
    }

    /// Nothing made by the input is left: live objects as after setup, fds as when
    /// the input started (libFuzzer opens descriptors of its own between inputs).
    pub fn no_leak(&self, fds_at_start: usize, what: &str) {
        assert_eq!(live(), self.live, "{what}: live objects leaked");
        let now = fd_count();
        assert_eq!(
            now,
            fds_at_start,
            "{what}: file descriptors leaked: open now: {:?}",
            open_fds()
        );
    }
}

pub fn image_info(w: u32, h: u32, levels: u32) -> vkcuda_image_create_info {
    vkcuda_image_create_info {
        flags: 0,
        image_type: vkcuda_image_type_raw(0),
        format: vk::Format::R8G8B8A8_UNORM.as_raw(),
        extent: vk::Extent3D {
            width: w,
            height: h,
            depth: 1,
        },
        mip_levels: levels,
        array_layers: 1,
        usage: 0,
    }
}

pub fn message() -> String {
    unsafe { CStr::from_ptr(vkcuda_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

/// Every result: never a panic caught at the boundary; a failure names the
/// function and says something; a success leaves no message.
#[track_caller]
pub fn check(name: &str, r: vkcuda_result) -> vkcuda_result {
    let msg = message();
    assert_ne!(r, VKCUDA_ERROR_PANIC, "{name} panicked: {msg}");
    if r == VKCUDA_SUCCESS {
        assert!(msg.is_empty(), "{name} succeeded with a message: {msg}");
    } else {
        assert!(
            msg.starts_with(&format!("{name}: ")) && msg.len() > name.len() + 2,
            "{name} returned {r:?} with the message {msg:?}"
        );
    }
    r
}

pub fn live() -> [i64; 8] {
    let mut l: vkcuda_live_objects = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { vkcuda_live_objects_get(&mut l) }, VKCUDA_SUCCESS);
    [
        l.contexts,
        l.vk_buffers,
        l.vk_memories,
        l.vk_images,
        l.vk_semaphores,
        l.cuda_allocations,
        l.cuda_external_memories,
        l.cuda_external_semaphores,
    ]
}

pub fn fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// The open fds and what they are, for a leak report.
pub fn open_fds() -> Vec<String> {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .map(|e| {
            let to = std::fs::read_link(e.path()).map(|p| p.display().to_string());
            format!(
                "{} -> {}",
                e.file_name().to_string_lossy(),
                to.unwrap_or_default()
            )
        })
        .collect()
}

pub fn fd_is_open(fd: i32) -> bool {
    unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
}

/// A size from the input: an edge value picked by `sel`, or `raw` made small.
pub fn size(sel: u8, raw: u64, s: &Shared) -> u64 {
    match sel % 16 {
        0 => 0,
        1 => 1,
        2 => s.max_allocation,
        3 => s.max_allocation + 1,
        4 => s.largest_heap,
        5 => s.largest_heap + 1,
        6 => 1 << 63,
        7 => u64::MAX,
        8 => raw,
        9 => u64::MAX - (raw & 0xFFFF),
        _ => raw % (4 << 20) + 1,
    }
}

/// A 32-bit count or dimension: an edge value or `raw` made small.
pub fn dim(sel: u8, raw: u32) -> u32 {
    match sel % 8 {
        0 => 0,
        1 => 1,
        2 => u32::MAX,
        3 => raw,
        4 => 1 << (raw % 16),
        _ => raw % 70,
    }
}
