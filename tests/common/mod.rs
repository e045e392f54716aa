//! Helpers for the integration tests: they call the exported C functions the way a
//! C caller would, and use `ash` only for the test's own Vulkan work (staging
//! buffers, copies), loaded from the context's `vkGetInstanceProcAddr`.
#![allow(dead_code)]

pub mod fake_driver;

use std::ffi::CStr;
use std::ptr;

use ash::vk;
pub use vkcuda::ffi::vkcuda_result::*;
pub use vkcuda::ffi::*;

pub fn last_error() -> String {
    unsafe { CStr::from_ptr(vkcuda_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

/// Panics with the library's message unless `r` is success.
#[track_caller]
pub fn ok(r: vkcuda_result) {
    assert_eq!(r, VKCUDA_SUCCESS, "{}", last_error());
}

/// Asserts `r` is `want` and that a message was set; returns the message.
#[track_caller]
pub fn fails(r: vkcuda_result, want: vkcuda_result) -> String {
    let msg = last_error();
    assert_eq!(r, want, "message: {msg}");
    assert!(!msg.is_empty(), "no message for {want:?}");
    msg
}

pub fn gpu_required() -> bool {
    std::env::var("VKCUDA_REQUIRE_GPU")
        .map(|v| v == "1")
        .unwrap_or(false)
}

/// A standalone context paired with CUDA, or None (after printing why) when this
/// machine has no CUDA GPU. With VKCUDA_REQUIRE_GPU=1 a missing GPU fails the test.
pub fn cuda_context_or_skip(test: &str) -> Option<*mut vkcuda_context> {
    let mut ctx = ptr::null_mut();
    let r = unsafe { vkcuda_context_create_standalone(ptr::null(), &mut ctx) };
    if r == VKCUDA_SUCCESS {
        return Some(ctx);
    }
    let why = last_error();
    if gpu_required() {
        panic!("{test}: VKCUDA_REQUIRE_GPU=1 but no CUDA-paired device: {r:?}: {why}");
    }
    eprintln!("SKIPPED {test}: no CUDA GPU here ({r:?}: {why}); set VKCUDA_REQUIRE_GPU=1 to make this a failure");
    None
}

pub fn vulkan_only_context() -> *mut vkcuda_context {
    let info = vkcuda_standalone_create_info {
        flags: VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT,
        physical_device_index: 0,
    };
    let mut ctx = ptr::null_mut();
    ok(unsafe { vkcuda_context_create_standalone(&info, &mut ctx) });
    assert!(!ctx.is_null());
    ctx
}

/// Open fds of this process. The first call makes and destroys one standalone
/// context (its result ignored): on NVIDIA devices the library keeps one instance,
/// with its fds, from the first standalone context until the process exits
/// (`keep_nvidia_instance` in src/vulkan/standalone.rs), so a baseline taken
/// before any context would count that instance as a leak.
pub fn fd_count() -> usize {
    static WARMED: std::sync::Once = std::sync::Once::new();
    WARMED.call_once(|| {
        let info = vkcuda_standalone_create_info {
            flags: VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT,
            physical_device_index: 0,
        };
        let mut ctx = ptr::null_mut();
        if unsafe { vkcuda_context_create_standalone(&info, &mut ctx) } == VKCUDA_SUCCESS {
            unsafe { vkcuda_context_destroy(ctx) };
        }
    });
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

pub fn fd_is_open(fd: i32) -> bool {
    unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
}

/// The test's own Vulkan work on a context's device.
pub struct Vk {
    pub instance: ash::Instance,
    pub device: ash::Device,
    pub physical: vk::PhysicalDevice,
    pub queue: vk::Queue,
    pub family: u32,
    pub pool: vk::CommandPool,
}

impl Vk {
    /// Loads from a standalone context's handles (which include a queue).
    pub fn new(ctx: *const vkcuda_context) -> Vk {
        let mut h: vkcuda_vulkan_handles = unsafe { std::mem::zeroed() };
        ok(unsafe { vkcuda_context_get_vulkan_handles(ctx, &mut h) });
        let static_fn = ash::StaticFn {
            get_instance_proc_addr: h.get_instance_proc_addr.expect("gipa"),
        };
        let instance = unsafe { ash::Instance::load(&static_fn, h.instance) };
        let device = unsafe { ash::Device::load(instance.fp_v1_0(), h.device) };
        assert_ne!(
            h.queue,
            vk::Queue::null(),
            "a standalone context has a queue"
        );
        let pool = unsafe {
            device.create_command_pool(
                &vk::CommandPoolCreateInfo::default()
                    .queue_family_index(h.queue_family_index)
                    .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER),
                None,
            )
        }
        .unwrap();
        Vk {
            instance,
            device,
            physical: h.physical_device,
            queue: h.queue,
            family: h.queue_family_index,
            pool,
        }
    }

    /// A host-visible, coherent buffer, mapped.
    pub fn host_buffer(&self, size: u64) -> HostBuffer {
        let buffer = unsafe {
            self.device.create_buffer(
                &vk::BufferCreateInfo::default()
                    .size(size)
                    .usage(vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST),
                None,
            )
        }
        .unwrap();
        let req = unsafe { self.device.get_buffer_memory_requirements(buffer) };
        let props = unsafe {
            self.instance
                .get_physical_device_memory_properties(self.physical)
        };
        let want = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        let index = (0..props.memory_type_count)
            .find(|&i| {
                req.memory_type_bits & (1 << i) != 0
                    && props.memory_types[i as usize].property_flags.contains(want)
            })
            .expect("host-visible memory");
        let memory = unsafe {
            self.device.allocate_memory(
                &vk::MemoryAllocateInfo::default()
                    .allocation_size(req.size)
                    .memory_type_index(index),
                None,
            )
        }
        .unwrap();
        unsafe { self.device.bind_buffer_memory(buffer, memory, 0) }.unwrap();
        let ptr = unsafe {
            self.device
                .map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())
        }
        .unwrap();
        HostBuffer {
            buffer,
            memory,
            ptr: ptr.cast(),
            size,
        }
    }

    pub fn destroy_host_buffer(&self, b: HostBuffer) {
        unsafe {
            self.device.destroy_buffer(b.buffer, None);
            self.device.free_memory(b.memory, None);
        }
    }

    /// Records with `record`, submits, and waits for completion.
    pub fn run(&self, record: impl FnOnce(vk::CommandBuffer)) {
        let cmd = unsafe {
            self.device.allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(self.pool)
                    .command_buffer_count(1),
            )
        }
        .unwrap()[0];
        unsafe {
            self.device
                .begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())
                .unwrap();
        }
        record(cmd);
        unsafe {
            self.device.end_command_buffer(cmd).unwrap();
            let fence = self
                .device
                .create_fence(&vk::FenceCreateInfo::default(), None)
                .unwrap();
            let cmds = [cmd];
            self.device
                .queue_submit(
                    self.queue,
                    &[vk::SubmitInfo::default().command_buffers(&cmds)],
                    fence,
                )
                .unwrap();
            self.device
                .wait_for_fences(&[fence], true, u64::MAX)
                .unwrap();
            self.device.destroy_fence(fence, None);
            self.device.free_command_buffers(self.pool, &cmds);
        }
    }

    pub fn copy(&self, src: vk::Buffer, dst: vk::Buffer, size: u64) {
        self.run(|cmd| unsafe {
            self.device
                .cmd_copy_buffer(cmd, src, dst, &[vk::BufferCopy::default().size(size)]);
        });
    }
}

impl Drop for Vk {
    fn drop(&mut self) {
        unsafe { self.device.destroy_command_pool(self.pool, None) };
    }
}

pub struct HostBuffer {
    pub buffer: vk::Buffer,
    pub memory: vk::DeviceMemory,
    pub ptr: *mut u8,
    pub size: u64,
}

impl HostBuffer {
    // The mapping is the GPU's memory, not Rust's: a shared view is handed out mutably.
    #[allow(clippy::mut_from_ref)]
    pub fn bytes(&self) -> &mut [u8] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.size as usize) }
    }
}

/// The byte pattern tests write: depends on the position and a seed.
pub fn pattern(i: usize, seed: u32) -> u8 {
    ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) >> 13) as u8
}

pub fn buffer_info(b: *const vkcuda_buffer) -> vkcuda_buffer_info {
    let mut info: vkcuda_buffer_info = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_buffer_get_info(b, &mut info) });
    info
}

pub fn create_buffer(ctx: *const vkcuda_context, size: u64, allocator: i32) -> *mut vkcuda_buffer {
    let info = vkcuda_buffer_create_info {
        flags: 0,
        allocator: vkcuda_allocator_raw(allocator),
        size,
        usage: 0,
    };
    let mut b = ptr::null_mut();
    ok(unsafe { vkcuda_buffer_create(ctx, &info, &mut b) });
    b
}

/// Creates an instance and a device the way an engine would, with the given
/// device extensions, on lavapipe or the first device.
pub struct EngineDevice {
    pub entry: ash::Entry,
    pub instance: ash::Instance,
    pub physical: vk::PhysicalDevice,
    pub device: ash::Device,
}

impl EngineDevice {
    pub fn new(
        extensions: &[&CStr],
        pick: impl Fn(&ash::Instance, vk::PhysicalDevice) -> bool,
    ) -> EngineDevice {
        let entry = unsafe { ash::Entry::load() }.expect("libvulkan");
        let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_2);
        let instance = unsafe {
            entry.create_instance(
                &vk::InstanceCreateInfo::default().application_info(&app),
                None,
            )
        }
        .unwrap();
        let physical = unsafe { instance.enumerate_physical_devices() }
            .unwrap()
            .into_iter()
            .find(|&p| pick(&instance, p))
            .expect("a physical device");
        let exts: Vec<_> = extensions.iter().map(|e| e.as_ptr()).collect();
        let prio = [1.0f32];
        let queues = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(0)
            .queue_priorities(&prio)];
        let mut v12 = vk::PhysicalDeviceVulkan12Features::default().timeline_semaphore(true);
        let device = unsafe {
            instance.create_device(
                physical,
                &vk::DeviceCreateInfo::default()
                    .queue_create_infos(&queues)
                    .enabled_extension_names(&exts)
                    .push_next(&mut v12),
                None,
            )
        }
        .unwrap();
        EngineDevice {
            entry,
            instance,
            physical,
            device,
        }
    }

    pub fn create_info(&self, flags: u32) -> vkcuda_context_create_info {
        vkcuda_context_create_info {
            flags,
            instance: self.instance.handle(),
            physical_device: self.physical,
            device: self.device.handle(),
            get_instance_proc_addr: Some(self.entry.static_fn().get_instance_proc_addr),
            get_device_proc_addr: None,
            cuda_context: ptr::null_mut(),
        }
    }
}

impl Drop for EngineDevice {
    fn drop(&mut self) {
        unsafe {
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}
