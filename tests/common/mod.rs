//! Helpers for the integration tests: they call the exported C functions the way a
//! C caller would, and use `ash` only for the test's own Vulkan work (staging
//! buffers, copies), loaded from the context's `vkGetInstanceProcAddr`.
//!
//! What is here, for a new test file (`mod common; use common::*;`, or from a
//! directory test `#[path = "../common/mod.rs"] mod common;`):
//!   - results: `ok`, `fails`, `last_error`;
//!   - contexts: `vulkan_only_context`, `cuda_context_or_skip`, `EngineDevice`;
//!   - counting: `serial` (one test at a time per file), `fd_count`, `fd_is_open`,
//!     `fd_knows_size`, `live_objects`, `live_counts`;
//!   - objects: `buffer_create_info`, `create_buffer`, `buffer_info`,
//!     `buffer_import_info`, `image_desc`, `image_desc_of`, `image_info`,
//!     `texture_info`, `semaphore_create_info`, `create_semaphore`, `handoff_info`;
//!   - the test's own Vulkan work: `Vk` (`run`, `command_buffer`, `copy`,
//!     `image_barrier`, `host_buffer`), `layout_barrier`, `pattern`;
//!   - child processes: `fake_cuda_driver`, `library_path_with`, `this_test`,
//!     `child_passed`.
//!
//! # GPU-only tests: skipped is not passed
//! A test that needs a CUDA GPU from its first statement (it starts with
//! `cuda_context_or_skip`) is marked, word for word,
//!
//! ```text
//! #[test]
//! #[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
//! ```
//!
//! so that `cargo test` on a machine without a GPU reports it as ignored, not as
//! passed in 0.00 s. tests/conventions.rs checks the mark both ways.
//! - To run them: `VKCUDA_REQUIRE_GPU=1 cargo test -- --include-ignored` (or a
//!   bundled test executable with `--include-ignored`). With VKCUDA_REQUIRE_GPU=1
//!   a machine without a CUDA device paired to a Vulkan device fails them; without
//!   it they print `SKIPPED ...` on stderr and return.
//! - Tests that run on lavapipe and only skip a part (no GPU, not root, no external
//!   semaphores on the device) are not ignored: they say on stderr what they left
//!   out.
//! - Tests ignored for another reason must stay harmless under `--include-ignored`
//!   (the GPU scripts run whole files that way, also under the validation layer):
//!   the `child_*` tests, started by their parent test as `--ignored --exact NAME`
//!   (`this_test`), return at once without their parent's environment variable;
//!   `validation_layer_canary` (tests/buffer.rs) records its hazard only when named
//!   on the command line (`--ignored --exact validation_layer_canary`).
//! - libtest refuses `--ignored` together with `--include-ignored`: a command that
//!   selects ignored tests by name keeps `--ignored` alone.
#![allow(dead_code)]

pub mod fake_driver;

use std::ffi::{CStr, OsString};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::ptr;
use std::sync::{Mutex, MutexGuard};

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

/// Tests of one file that count fds or live objects, or set process limits, take
/// this lock: those counts are per process and libtest runs tests on threads.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

pub fn live_objects() -> vkcuda_live_objects {
    let mut l: vkcuda_live_objects = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_live_objects_get(&mut l) });
    l
}

/// The live-object counts as one comparable value: contexts, VkBuffers,
/// VkDeviceMemorys, VkImages, VkSemaphores, CUDA allocations, CUDA external
/// memories, CUDA external semaphores.
pub fn live_counts() -> [i64; 8] {
    let l = live_objects();
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

/// Whether the kernel knows the size of what `fd` refers to (lavapipe's memfds: yes;
/// NVIDIA's opaque fds: no).
pub fn fd_knows_size(fd: i32) -> bool {
    let dup = vkcuda::fd::dup_borrowed(fd).unwrap();
    vkcuda::fd::known_size(&dup).is_some()
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

    /// The test's Vulkan work on an engine's device (queue family 0, queue 0).
    pub fn for_engine(
        instance: &ash::Instance,
        device: &ash::Device,
        physical: vk::PhysicalDevice,
    ) -> Vk {
        let queue = unsafe { device.get_device_queue(0, 0) };
        let pool = unsafe {
            device.create_command_pool(
                &vk::CommandPoolCreateInfo::default()
                    .queue_family_index(0)
                    .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER),
                None,
            )
        }
        .unwrap();
        Vk {
            instance: instance.clone(),
            device: device.clone(),
            physical,
            queue,
            family: 0,
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

    /// A new primary command buffer of the pool, begun.
    pub fn command_buffer(&self) -> vk::CommandBuffer {
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
        cmd
    }

    /// Records with `record`, submits, and waits for completion.
    pub fn run(&self, record: impl FnOnce(vk::CommandBuffer)) {
        let cmd = self.command_buffer();
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

    /// Records one image barrier between all commands before and after it.
    pub fn image_barrier(&self, cmd: vk::CommandBuffer, barrier: vk::ImageMemoryBarrier) {
        unsafe {
            self.device.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::DependencyFlags::empty(),
                &[],
                &[],
                &[barrier],
            )
        };
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

/// A layout change of `range` of `image` (all memory writes before, all accesses
/// after; no queue family transfer: set the families on the result for one).
pub fn layout_barrier(
    image: vk::Image,
    range: vk::ImageSubresourceRange,
    from: vk::ImageLayout,
    to: vk::ImageLayout,
) -> vk::ImageMemoryBarrier<'static> {
    vk::ImageMemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::MEMORY_WRITE)
        .dst_access_mask(vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE)
        .old_layout(from)
        .new_layout(to)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .image(image)
        .subresource_range(range)
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

/// `allocator`: 0 Vulkan, 1 CUDA (as `vkcuda_allocator`); no flags, the default usage.
pub fn buffer_create_info(size: u64, allocator: i32) -> vkcuda_buffer_create_info {
    vkcuda_buffer_create_info {
        flags: 0,
        allocator: vkcuda_allocator_raw(allocator),
        size,
        usage: 0,
    }
}

pub fn create_buffer(ctx: *const vkcuda_context, size: u64, allocator: i32) -> *mut vkcuda_buffer {
    let mut b = ptr::null_mut();
    ok(unsafe { vkcuda_buffer_create(ctx, &buffer_create_info(size, allocator), &mut b) });
    b
}

/// What importing a buffer's memory fd needs, from the buffer's info.
pub fn buffer_import_info(i: &vkcuda_buffer_info) -> vkcuda_buffer_import_info {
    vkcuda_buffer_import_info {
        flags: 0,
        allocator: vkcuda_allocator_raw(i.allocator as i32),
        allocation_size: i.allocation_size,
        offset: i.offset,
        size: i.size,
        dedicated: i.dedicated,
        usage: 0,
    }
}

/// An image description with every optional field 0 (the defaults: a full mip
/// chain, one layer, the default usage). `image_type`: 0 2D, 1 1D, 3 3D.
pub fn image_desc(
    image_type: i32,
    format: vk::Format,
    width: u32,
    height: u32,
    depth: u32,
) -> vkcuda_image_create_info {
    vkcuda_image_create_info {
        flags: 0,
        image_type: vkcuda_image_type_raw(image_type),
        format: format.as_raw(),
        extent: vk::Extent3D {
            width,
            height,
            depth,
        },
        mip_levels: 0,
        array_layers: 0,
        usage: 0,
    }
}

/// The description an image's info holds (resolved: levels, layers and usage as
/// made), as wrap and import take it.
pub fn image_desc_of(i: &vkcuda_image_info) -> vkcuda_image_create_info {
    vkcuda_image_create_info {
        flags: i.flags,
        image_type: vkcuda_image_type_raw(i.image_type as i32),
        format: i.format,
        extent: i.extent,
        mip_levels: i.mip_levels,
        array_layers: i.array_layers,
        usage: i.usage,
    }
}

/// A texture of level 0: point filtering, clamped, element-type reads, no flags.
pub fn texture_info() -> vkcuda_texture_info {
    vkcuda_texture_info {
        flags: 0,
        level: 0,
        filter: vkcuda_filter_raw(0),
        address_mode: vkcuda_address_mode_raw(0),
        read_mode: vkcuda_read_mode_raw(0),
        border_color: [0.0; 4],
    }
}

pub fn image_info(im: *const vkcuda_image) -> vkcuda_image_info {
    let mut i: vkcuda_image_info = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_image_get_info(im, &mut i) });
    i
}

/// `semaphore_type`: 0 timeline, 1 binary.
pub fn semaphore_create_info(
    semaphore_type: i32,
    initial_value: u64,
) -> vkcuda_semaphore_create_info {
    vkcuda_semaphore_create_info {
        flags: 0,
        semaphore_type: vkcuda_semaphore_type_raw(semaphore_type),
        initial_value,
        host_wait_spin_ns: 0,
    }
}

pub fn create_semaphore(
    ctx: *const vkcuda_context,
    semaphore_type: i32,
    initial_value: u64,
) -> *mut vkcuda_semaphore {
    let mut s = ptr::null_mut();
    let info = semaphore_create_info(semaphore_type, initial_value);
    ok(unsafe { vkcuda_semaphore_create(ctx, &info, &mut s) });
    s
}

/// A handoff to or from `queue_family_index` with the default stages and accesses.
pub fn handoff_info(queue_family_index: u32) -> vkcuda_handoff_info {
    vkcuda_handoff_info {
        flags: 0,
        queue_family_index,
        stage_mask: 0,
        access_mask: 0,
    }
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
        Self::with_version(vk::API_VERSION_1_2, &[], extensions, pick)
    }

    /// An instance of `api_version` with `instance_extensions`, and a device with
    /// `extensions` (the timeline semaphore feature only from Vulkan 1.2 on): an
    /// engine written for an older Vulkan.
    pub fn with_version(
        api_version: u32,
        instance_extensions: &[&CStr],
        extensions: &[&CStr],
        pick: impl Fn(&ash::Instance, vk::PhysicalDevice) -> bool,
    ) -> EngineDevice {
        let entry = unsafe { ash::Entry::load() }.expect("libvulkan");
        let app = vk::ApplicationInfo::default().api_version(api_version);
        let iexts: Vec<_> = instance_extensions.iter().map(|e| e.as_ptr()).collect();
        let instance = unsafe {
            entry.create_instance(
                &vk::InstanceCreateInfo::default()
                    .application_info(&app)
                    .enabled_extension_names(&iexts),
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
        let mut info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_extension_names(&exts);
        if api_version >= vk::API_VERSION_1_2 {
            info = info.push_next(&mut v12);
        }
        let device = unsafe { instance.create_device(physical, &info, None) }.unwrap();
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

// ---------------------------------------------------------------------------------
// Child processes: the fake CUDA driver, and this test executable run again.

/// Builds tests/fake_cuda/libcuda.c (with `extra` compiler arguments) into
/// `$CARGO_TARGET_TMPDIR/name` as libcuda.so.1 with a libcuda.so link to it, and
/// returns that directory (put it first in LD_LIBRARY_PATH).
pub fn fake_cuda_driver(name: &str, extra: &[&str]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fake_cuda/libcuda.c");
    let status = Command::new("cc")
        .args([
            "-shared", "-fPIC", "-O1", "-Wall", "-Wextra", "-Werror", "-o",
        ])
        .arg(dir.join("libcuda.so.1"))
        .arg(&src)
        .args(extra)
        .status()
        .expect("a C compiler (cc) to build the fake libcuda");
    assert!(status.success());
    // cudarc tries libcuda.so before libcuda.so.1: without this name a machine with
    // the NVIDIA driver (its libcuda.so in the system path) loads the real driver.
    let _ = std::fs::remove_file(dir.join("libcuda.so"));
    std::os::unix::fs::symlink("libcuda.so.1", dir.join("libcuda.so")).unwrap();
    dir
}

/// LD_LIBRARY_PATH with `dir` first; what was there stays (a validation layer or a
/// loader found through the path stays found).
pub fn library_path_with(dir: &std::path::Path) -> OsString {
    let mut p = dir.as_os_str().to_owned();
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        p.push(":");
        p.push(old);
    }
    p
}

/// This test executable again, running only the test `name` (an `#[ignore]`d one
/// when `ignored`), output not captured.
pub fn this_test(name: &str, ignored: bool) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    if ignored {
        c.arg("--ignored");
    }
    c.args(["--exact", name, "--nocapture", "--test-threads=1"]);
    c
}

/// The output of a `this_test` child, printed; asserts it exited 0 and ran its one
/// test. Returns stdout and stderr together.
#[track_caller]
pub fn child_passed(name: &str, out: &Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("---- child {name} ----\n{text}---- end of child {name} ----");
    assert!(out.status.success(), "child {name} failed: {}", out.status);
    assert!(
        text.contains("1 passed"),
        "child {name} ran its test: {text}"
    );
    text
}
