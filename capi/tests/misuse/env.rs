//! The environment the cases run in: a context and one object of each kind, made
//! once per matrix run and shared by every case.

use std::mem::MaybeUninit;
use std::ptr;

use ash::vk;

use crate::support::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// No CUDA driver (or VKCUDA_DISABLE_CUDA).
    None,
    /// tests/fake_cuda: a driver whose one device matches no Vulkan device.
    Fake,
    /// A real driver with a device paired to the context.
    Real,
}

pub struct Env {
    pub ctx: *mut vkcuda_context,
    /// The context has a CUDA side.
    pub cuda: bool,
    pub driver: Driver,
    pub vk: Vk,
    pub cmd: vk::CommandBuffer,
    pub engine: EngineDevice,
    /// 64 KiB, Vulkan-allocated.
    pub buffer: *mut vkcuda_buffer,
    /// A 4 KiB staging buffer.
    pub host_buffer: *mut vkcuda_host_buffer,
    /// 16x16 R8G8B8A8_UNORM with 5 mip levels and the default usage (storage included).
    pub image: *mut vkcuda_image,
    /// 16x16 R8G8B8A8_UNORM, transfer and sampled only.
    pub image_no_storage: *mut vkcuda_image,
    /// The kernel knows the size of the driver's exported memory fds (see
    /// `Mutation::needs_fd_size`).
    pub fd_sizes_known: bool,
    /// The device's maxTimelineSemaphoreValueDifference (NVIDIA: UINT64_MAX, so
    /// no signal is too far ahead there).
    pub max_timeline_difference: u64,
    /// 3 images of 8x8 R8G8B8A8_UNORM, the default usage, in one batch.
    pub batch: *mut vkcuda_batch,
    /// 3 buffers of 1000 bytes in one batch.
    pub buffer_batch: *mut vkcuda_batch,
    /// 3 images of 8x8 R8G8B8A8_UNORM on the copy path (forced).
    pub copy_batch: *mut vkcuda_batch,
    /// None where the device cannot make shared semaphores.
    pub timeline: Option<*mut vkcuda_semaphore>,
    pub binary: Option<*mut vkcuda_semaphore>,
}

/// 3 images of 8x8 R8G8B8A8_UNORM (default usage), or 3 buffers of 1000 bytes.
pub fn batch_create_info(kind: u32) -> vkcuda_batch_create_info {
    vkcuda_batch_create_info {
        flags: 0,
        kind,
        count: 3,
        format: vk::Format::R8G8B8A8_UNORM.as_raw(),
        width: 8,
        height: 8,
        image_usage: 0,
        buffer_usage: 0,
        size: 1000,
    }
}

pub fn create_batch(
    ctx: *const vkcuda_context,
    info: &vkcuda_batch_create_info,
) -> *mut vkcuda_batch {
    let mut b = ptr::null_mut();
    ok(unsafe { vkcuda_batch_create(ctx, info, &mut b) });
    b
}

/// 16x16 R8G8B8A8_UNORM, one layer.
pub fn image_create_info(usage: u32, levels: u32) -> vkcuda_image_create_info {
    vkcuda_image_create_info {
        mip_levels: levels,
        array_layers: 1,
        usage,
        ..image_desc(0, vk::Format::R8G8B8A8_UNORM, 16, 16, 1)
    }
}

pub fn semaphore(ctx: *const vkcuda_context, ty: i32) -> Option<*mut vkcuda_semaphore> {
    let mut s = ptr::null_mut();
    match unsafe { vkcuda_semaphore_create(ctx, &semaphore_create_info(ty, 0), &mut s) } {
        VKCUDA_SUCCESS => Some(s),
        VKCUDA_ERROR_EXTENSION_NOT_PRESENT | VKCUDA_ERROR_UNSUPPORTED => None,
        r => panic!("vkcuda_semaphore_create: {r:?}: {}", last_error()),
    }
}

impl Env {
    /// Starts the shared command buffer afresh, before each case: a case records
    /// into an empty one, so the validation layer judges its commands alone, not
    /// next to the layouts and accesses of the earlier cases' recordings (which
    /// are never submitted).
    pub fn fresh_commands(&self) {
        unsafe {
            // Ending fails on a buffer the layer or driver marked invalid; the reset
            // below recovers it either way.
            let _ = self.vk.device.end_command_buffer(self.cmd);
            self.vk
                .device
                .reset_command_buffer(self.cmd, vk::CommandBufferResetFlags::empty())
                .unwrap();
            self.vk
                .device
                .begin_command_buffer(self.cmd, &vk::CommandBufferBeginInfo::default())
                .unwrap();
        }
    }

    /// A value past maxTimelineSemaphoreValueDifference from `current`, if the
    /// device's limit leaves one.
    pub fn too_far_ahead(&self, current: u64) -> Option<u64> {
        current
            .checked_add(self.max_timeline_difference)
            .and_then(|v| v.checked_add(1))
    }

    pub fn new(ctx: *mut vkcuda_context, cuda: bool, driver: Driver) -> Env {
        let vk = Vk::new(ctx);
        let cmd = vk.command_buffer();
        let engine = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
        let buffer = create_buffer(ctx, 65536, 0);
        let mut host_buffer = ptr::null_mut();
        ok(unsafe { vkcuda_host_buffer_create(ctx, 4096, &mut host_buffer) });
        let mut image = ptr::null_mut();
        ok(unsafe { vkcuda_image_create(ctx, &image_create_info(0, 5), &mut image) });
        let mut image_no_storage = ptr::null_mut();
        let usage = (vk::ImageUsageFlags::TRANSFER_SRC
            | vk::ImageUsageFlags::TRANSFER_DST
            | vk::ImageUsageFlags::SAMPLED)
            .as_raw();
        ok(unsafe {
            vkcuda_image_create(ctx, &image_create_info(usage, 1), &mut image_no_storage)
        });
        let batch = create_batch(ctx, &batch_create_info(VKCUDA_BATCH_KIND_IMAGES));
        let buffer_batch = create_batch(ctx, &batch_create_info(VKCUDA_BATCH_KIND_BUFFERS));
        let copy_batch = create_batch(
            ctx,
            &vkcuda_batch_create_info {
                flags: VKCUDA_BATCH_CREATE_FORCE_COPY_BIT,
                ..batch_create_info(VKCUDA_BATCH_KIND_IMAGES)
            },
        );
        let fd_sizes_known = {
            let mut fd = -1;
            ok(unsafe { vkcuda_buffer_export_fd(buffer, &mut fd) });
            let known = fd_knows_size(fd);
            unsafe { libc::close(fd) };
            known
        };
        let max_timeline_difference = {
            let mut p12 = vk::PhysicalDeviceVulkan12Properties::default();
            let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut p12);
            unsafe {
                vk.instance
                    .get_physical_device_properties2(vk.physical, &mut p2)
            };
            p12.max_timeline_semaphore_value_difference
        };
        Env {
            ctx,
            cuda,
            driver,
            fd_sizes_known,
            max_timeline_difference,
            vk,
            cmd,
            engine,
            buffer,
            host_buffer,
            image,
            image_no_storage,
            batch,
            buffer_batch,
            copy_batch,
            timeline: semaphore(ctx, 0),
            binary: semaphore(ctx, 1),
        }
    }

    pub fn name(&self) -> String {
        format!(
            "{} context, CUDA driver: {:?}",
            if self.cuda {
                "CUDA-paired"
            } else {
                "Vulkan-only"
            },
            self.driver
        )
    }

    pub fn buffer_info(&self) -> vkcuda_buffer_info {
        buffer_info(self.buffer)
    }

    pub fn describe(&self, kind: Kind) -> vkcuda_share_description {
        let mut d = MaybeUninit::<vkcuda_share_description>::zeroed();
        match kind {
            Kind::Buffer => ok(unsafe { vkcuda_buffer_describe(self.buffer, d.as_mut_ptr()) }),
            Kind::Image => ok(unsafe { vkcuda_image_describe(self.image, d.as_mut_ptr()) }),
            Kind::Semaphore => {
                ok(unsafe { vkcuda_buffer_describe(self.buffer, d.as_mut_ptr()) });
                let d = unsafe { d.as_mut_ptr().as_mut().unwrap() };
                d.kind = vkcuda_share_kind_raw(2);
                d.buffer = unsafe { std::mem::zeroed() };
                d.semaphore.semaphore_type = vkcuda_semaphore_type_raw(0);
                d.semaphore.value = 0;
            }
        }
        unsafe { d.assume_init() }
    }

    /// A new memory fd of the shared buffer (the caller closes it).
    pub fn buffer_fd(&self) -> i32 {
        let mut fd = -1;
        ok(unsafe { vkcuda_buffer_export_fd(self.buffer, &mut fd) });
        fd
    }

    pub fn image_fd(&self) -> i32 {
        let mut fd = -1;
        ok(unsafe { vkcuda_image_export_fd(self.image, &mut fd) });
        fd
    }

    /// A new memory fd (the caller closes it): the image's for `Kind::Image`, the
    /// buffer's otherwise (semaphore descriptions get a memory fd too: every case
    /// fails before the fd is read).
    pub fn memory_fd(&self, kind: Kind) -> i32 {
        match kind {
            Kind::Image => self.image_fd(),
            _ => self.buffer_fd(),
        }
    }

    /// `call` with a fresh `memory_fd`; a failed import leaves the fd the caller's:
    /// it must still be open afterwards, and is closed here.
    pub fn with_fd(&self, kind: Kind, call: impl FnOnce(i32) -> vkcuda_result) -> vkcuda_result {
        let fd = self.memory_fd(kind);
        let r = call(fd);
        assert!(fd_is_open(fd), "a failed call closed the caller's fd");
        crate::matrix::close(fd);
        r
    }

    pub fn import_info(&self) -> vkcuda_buffer_import_info {
        buffer_import_info(&self.buffer_info())
    }

    pub fn wrap_info(&self) -> vkcuda_buffer_wrap_info {
        let i = self.buffer_info();
        vkcuda_buffer_wrap_info {
            flags: 0,
            buffer: i.buffer,
            memory: i.memory,
            allocation_size: i.allocation_size,
            offset: i.offset,
            size: i.size,
            dedicated: i.dedicated,
            export_handle_types: vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD.as_raw(),
        }
    }

    pub fn image_wrap_info(&self) -> vkcuda_image_wrap_info {
        let i = image_info(self.image);
        image_wrap_info(i.image, i.memory, i.allocation_size, image_desc_of(&i))
    }

    pub fn largest_heap(&self) -> u64 {
        let props = unsafe {
            self.vk
                .instance
                .get_physical_device_memory_properties(self.vk.physical)
        };
        props.memory_heaps[..props.memory_heap_count as usize]
            .iter()
            .map(|h| h.size)
            .max()
            .unwrap()
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        unsafe {
            self.vk.device.end_command_buffer(self.cmd).unwrap();
            self.vk
                .device
                .free_command_buffers(self.vk.pool, &[self.cmd]);
            for s in [self.timeline, self.binary].into_iter().flatten() {
                vkcuda_semaphore_destroy(s);
            }
            vkcuda_batch_destroy(self.batch);
            vkcuda_batch_destroy(self.buffer_batch);
            vkcuda_batch_destroy(self.copy_batch);
            vkcuda_image_destroy(self.image_no_storage);
            vkcuda_image_destroy(self.image);
            vkcuda_buffer_destroy(self.buffer);
            vkcuda_host_buffer_destroy(self.host_buffer);
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Buffer,
    Semaphore,
    Image,
}

/// For `NullRow::needs`: why a row that needs the shared timeline semaphore cannot
/// run here.
pub fn no_timeline(e: &Env) -> Option<&'static str> {
    e.timeline
        .is_none()
        .then_some("no shared semaphores on this device")
}
