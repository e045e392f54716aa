//! The test's own Vulkan work, with `ash` loaded from a context's
//! `vkGetInstanceProcAddr`: `Vk` (submits, copies, barriers, host buffers),
//! `layout_barrier`, `device_local_type`, and `EngineDevice` (an instance and a
//! device made the way an engine makes them). The C door's constructors (`Vk::new`
//! of a C context, `EngineDevice::create_info`, `OneDevice`, `TwoDevices`) are in
//! capi/tests/support/door.rs.

use std::ffi::CStr;

use ash::vk;

use super::checks::pattern;

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
    /// Loads from a standalone context of the Rust API (`vkcuda::Context`), whose
    /// handles include a queue.
    pub fn of(ctx: &vkcuda::Context) -> Vk {
        let h = ctx.vulkan_handles();
        let (family, queue) = h.queue.expect("a standalone context has a queue");
        let gipa = h.get_instance_proc_addr;
        Vk::load(gipa, h.instance, h.physical_device, h.device, family, queue)
    }

    /// The functions of `instance` and `device` through `gipa`, and a command pool
    /// of `family`.
    pub fn load(
        gipa: vk::PFN_vkGetInstanceProcAddr,
        instance: vk::Instance,
        physical: vk::PhysicalDevice,
        device: vk::Device,
        family: u32,
        queue: vk::Queue,
    ) -> Vk {
        let static_fn = ash::StaticFn {
            get_instance_proc_addr: gipa,
        };
        let instance = unsafe { ash::Instance::load(&static_fn, instance) };
        let device = unsafe { ash::Device::load(instance.fp_v1_0(), device) };
        let pool = unsafe {
            device.create_command_pool(
                &vk::CommandPoolCreateInfo::default()
                    .queue_family_index(family)
                    .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER),
                None,
            )
        }
        .unwrap();
        Vk {
            instance,
            device,
            physical,
            queue,
            family,
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

    /// A host-visible, coherent buffer, mapped (transfer source and destination).
    pub fn host_buffer(&self, size: u64) -> HostBuffer {
        self.host_buffer_for(size, vk::BufferUsageFlags::empty())
    }

    /// The same with `usage` too (a storage buffer a shader writes, ...).
    pub fn host_buffer_for(&self, size: u64, usage: vk::BufferUsageFlags) -> HostBuffer {
        let buffer = unsafe {
            self.device.create_buffer(
                &vk::BufferCreateInfo::default().size(size).usage(
                    vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST | usage,
                ),
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

    /// Submits `cmd` (ended) waiting for and signalling timeline values, `fence`
    /// (may be null) signalled when it completes; does not wait.
    pub fn submit_timeline(
        &self,
        waits: &[(vk::Semaphore, u64)],
        signals: &[(vk::Semaphore, u64)],
        cmd: vk::CommandBuffer,
        fence: vk::Fence,
    ) {
        let ws: Vec<_> = waits.iter().map(|w| w.0).collect();
        let wv: Vec<_> = waits.iter().map(|w| w.1).collect();
        let ss: Vec<_> = signals.iter().map(|s| s.0).collect();
        let sv: Vec<_> = signals.iter().map(|s| s.1).collect();
        let stages = vec![vk::PipelineStageFlags::ALL_COMMANDS; ws.len()];
        let mut tl = vk::TimelineSemaphoreSubmitInfo::default()
            .wait_semaphore_values(&wv)
            .signal_semaphore_values(&sv);
        let cmds = [cmd];
        let info = vk::SubmitInfo::default()
            .command_buffers(&cmds)
            .wait_semaphores(&ws)
            .wait_dst_stage_mask(&stages)
            .signal_semaphores(&ss)
            .push_next(&mut tl);
        unsafe { self.device.queue_submit(self.queue, &[info], fence) }.unwrap();
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

    /// Writes `data` into `buffer` through a host-visible staging buffer.
    pub fn write(&self, buffer: vk::Buffer, data: &[u8]) {
        let host = self.host_buffer(data.len() as u64);
        host.bytes().copy_from_slice(data);
        self.copy(host.buffer, buffer, data.len() as u64);
        self.destroy_host_buffer(host);
    }

    /// The first `len` bytes of `buffer`, through a staging buffer.
    pub fn read(&self, buffer: vk::Buffer, len: usize) -> Vec<u8> {
        let host = self.host_buffer(len as u64);
        host.bytes().fill(0);
        self.copy(buffer, host.buffer, len as u64);
        let out = host.bytes().to_vec();
        self.destroy_host_buffer(host);
        out
    }

    /// Uploads tightly packed `data` into level 0, layer 0 of a single-plane 2D
    /// colour image of `width` x `height` and leaves it in TRANSFER_DST_OPTIMAL.
    pub fn upload(&self, image: vk::Image, width: u32, height: u32, data: &[u8]) {
        let host = self.host_buffer(data.len() as u64);
        host.bytes().copy_from_slice(data);
        let (from, to) = (
            vk::ImageLayout::UNDEFINED,
            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
        );
        self.run(|cmd| unsafe {
            self.image_barrier(cmd, layout_barrier(image, color_range(), from, to));
            let region = [color_region(width, height)];
            self.device
                .cmd_copy_buffer_to_image(cmd, host.buffer, image, to, &region);
        });
        self.destroy_host_buffer(host);
    }

    /// The first `len` bytes of level 0, layer 0 of a single-plane 2D colour image
    /// that is in `layout` (left in TRANSFER_SRC_OPTIMAL).
    pub fn download(
        &self,
        image: vk::Image,
        width: u32,
        height: u32,
        layout: vk::ImageLayout,
        len: usize,
    ) -> Vec<u8> {
        let host = self.host_buffer(len as u64);
        host.bytes().fill(0);
        let to = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
        self.run(|cmd| unsafe {
            self.image_barrier(cmd, layout_barrier(image, color_range(), layout, to));
            let region = [color_region(width, height)];
            self.device
                .cmd_copy_image_to_buffer(cmd, image, to, host.buffer, &region);
        });
        let out = host.bytes().to_vec();
        self.destroy_host_buffer(host);
        out
    }

    /// Writes `pattern(i, seed)` at every byte `i` of `buffer` (`size` bytes).
    pub fn fill_pattern(&self, buffer: vk::Buffer, size: u64, seed: u32) {
        let stage = self.host_buffer(size);
        for (i, x) in stage.bytes().iter_mut().enumerate() {
            *x = pattern(i, seed);
        }
        self.copy(stage.buffer, buffer, size);
        self.destroy_host_buffer(stage);
    }

    /// The bytes of `buffer` (`size` bytes) that differ from `pattern(i, seed)`.
    pub fn pattern_mismatches(&self, buffer: vk::Buffer, size: u64, seed: u32) -> usize {
        let out = self.host_buffer(size);
        out.bytes().fill(!pattern(0, seed));
        self.copy(buffer, out.buffer, size);
        let bytes = out.bytes().iter().enumerate();
        let bad = bytes.filter(|(i, &x)| x != pattern(*i, seed)).count();
        self.destroy_host_buffer(out);
        bad
    }
}

impl Drop for Vk {
    fn drop(&mut self) {
        unsafe { self.device.destroy_command_pool(self.pool, None) };
    }
}

/// Level 0, layer 0 of a colour image.
pub fn color_range() -> vk::ImageSubresourceRange {
    vk::ImageSubresourceRange::default()
        .aspect_mask(vk::ImageAspectFlags::COLOR)
        .level_count(1)
        .layer_count(1)
}

/// A copy of level 0, layer 0 of a `width` x `height` colour image, tightly packed
/// at offset 0 of the buffer.
pub fn color_region(width: u32, height: u32) -> vk::BufferImageCopy {
    vk::BufferImageCopy::default()
        .image_subresource(
            vk::ImageSubresourceLayers::default()
                .aspect_mask(vk::ImageAspectFlags::COLOR)
                .layer_count(1),
        )
        .image_extent(vk::Extent3D {
            width,
            height,
            depth: 1,
        })
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

    /// Whether the driver hides Vulkan 1.1 commands from a device of an instance
    /// created with apiVersion 1.0 (Mesa does: `vkGetDeviceProcAddr` returns NULL;
    /// NVIDIA's driver resolves them, and then they work).
    pub fn hides_1_1_commands(&self) -> bool {
        let gdpa = self.instance.fp_v1_0().get_device_proc_addr;
        unsafe {
            gdpa(
                self.device.handle(),
                c"vkGetBufferMemoryRequirements2".as_ptr(),
            )
        }
        .is_none()
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

/// A 2D image of one level, layer and sample.
pub fn image_2d<'a>(
    format: vk::Format,
    (width, height): (u32, u32),
    tiling: vk::ImageTiling,
    usage: vk::ImageUsageFlags,
) -> vk::ImageCreateInfo<'a> {
    vk::ImageCreateInfo::default()
        .image_type(vk::ImageType::TYPE_2D)
        .format(format)
        .extent(vk::Extent3D {
            width,
            height,
            depth: 1,
        })
        .mip_levels(1)
        .array_layers(1)
        .samples(vk::SampleCountFlags::TYPE_1)
        .tiling(tiling)
        .usage(usage)
}

/// An image of `info` bound to its own device-local memory.
pub fn device_local_image(v: &Vk, info: &vk::ImageCreateInfo) -> (vk::Image, vk::DeviceMemory) {
    let image = unsafe { v.device.create_image(info, None) }.unwrap();
    let req = unsafe { v.device.get_image_memory_requirements(image) };
    let memory = device_local_memory(v, req);
    unsafe { v.device.bind_image_memory(image, memory, 0) }.unwrap();
    (image, memory)
}

/// Device-local memory for `req`, not bound.
pub fn device_local_memory(v: &Vk, req: vk::MemoryRequirements) -> vk::DeviceMemory {
    let info = vk::MemoryAllocateInfo::default()
        .allocation_size(req.size)
        .memory_type_index(device_local_type(v, req.memory_type_bits));
    unsafe { v.device.allocate_memory(&info, None) }.unwrap()
}

/// A device-local memory type among `bits`.
pub fn device_local_type(v: &Vk, bits: u32) -> u32 {
    let props = unsafe { v.instance.get_physical_device_memory_properties(v.physical) };
    (0..props.memory_type_count)
        .find(|&t| {
            bits & (1 << t) != 0
                && props.memory_types[t as usize]
                    .property_flags
                    .contains(vk::MemoryPropertyFlags::DEVICE_LOCAL)
        })
        .expect("a device-local memory type")
}
