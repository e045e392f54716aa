//! Share wgpu buffers and textures with CUDA, zero-copy, through vkcuda.
//!
//! wgpu can wrap raw Vulkan objects through its HAL, but it cannot export memory or
//! semaphores and it records no queue-family ownership transfers. This crate adds
//! what is missing, over wgpu 30's Vulkan backend:
//!
//! - [`Interop::request_device`] opens a wgpu device whose `VkDevice` has the
//!   extensions vkcuda needs (`VK_KHR_external_memory_fd`, required, and
//!   `VK_KHR_external_semaphore_fd` where the device has it: without it there are
//!   no shared semaphores; timeline semaphores are core since Vulkan 1.2 and wgpu
//!   enables them), and pairs it with the CUDA device of the same UUID
//!   ([`Interop::from_device`] pairs a device the caller opened with
//!   [`required_device_extensions`]; wgpu itself enables the memory extension
//!   wherever it exists, so any wgpu device of such an adapter shares buffers).
//! - [`Interop::create_buffer`] and [`Interop::create_texture`] allocate exportable
//!   memory with vkcuda, import it into CUDA (a device pointer; a mipmapped array)
//!   and wrap the same `VkBuffer`/`VkImage` into a [`wgpu::Buffer`]/[`wgpu::Texture`]
//!   (`create_buffer_from_hal`, `create_texture_from_hal`). wgpu never frees the
//!   memory: the shared object lives until both the wrapper and wgpu's last use of
//!   it are gone.
//! - [`Interop::submit`] submits wgpu command buffers with the handoff around them:
//!   the acquire from CUDA before them, the release to CUDA after them (each one
//!   pipeline barrier recorded by vkcuda into a command buffer of its own, queue
//!   family to and from `VK_QUEUE_FAMILY_EXTERNAL`), and the submission waits for
//!   and signals a [`SharedSemaphore`] (a timeline semaphore CUDA waits on and
//!   signals with `cuda_wait`/`cuda_signal`).
//!
//! # A frame
//! ```no_run
//! use vkcuda_wgpu::{CudaChoice, Handoff, Interop};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
//!     backends: wgpu::Backends::VULKAN,
//!     ..wgpu::InstanceDescriptor::new_without_display_handle()
//! });
//! let adapter = pollster::block_on(instance.request_adapter(&Default::default()))?;
//! let interop = Interop::request_device(&adapter, &Default::default(), CudaChoice::Primary)?;
//! let buffer = interop.create_buffer(&wgpu::BufferDescriptor {
//!     label: Some("shared"),
//!     size: 4096,
//!     usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
//!     mapped_at_creation: false,
//! })?;
//! let timeline = interop.create_semaphore(0)?;
//! let encoder = interop.device().create_command_encoder(&Default::default());
//! // ... a compute pass writes buffer.wgpu() ...
//! interop.submit(
//!     [encoder.finish()],
//!     &Handoff { release: &[(&buffer).into()], signal: Some((&timeline, 1)), ..Default::default() },
//! )?;
//! let stream = std::ptr::null_mut(); // a CUstream of interop.cuda()?.context
//! timeline.cuda_wait(1, stream)?;
//! // ... a kernel reads and writes buffer.cuda_ptr()? on `stream` ...
//! timeline.cuda_signal(2, stream)?;
//! // The next frame takes the buffer back before wgpu uses it:
//! let encoder = interop.device().create_command_encoder(&Default::default());
//! interop.submit(
//!     [encoder.finish()],
//!     &Handoff { acquire: &[(&buffer).into()], wait: Some((&timeline, 2)), ..Default::default() },
//! )?;
//! # Ok(())
//! # }
//! ```
//!
//! # What wgpu 30 lacks, and the fallbacks used
//! - Commands recorded through the HAL cannot share a [`wgpu::CommandEncoder`] with
//!   wgpu's own commands (wgpu 30 encodes deferred and panics on the mix): each
//!   handoff barrier is a command buffer of its own, placed in the same
//!   `queue.submit` before or after the caller's.
//! - wgpu tracks texture layouts and cannot be told a layout changed behind its
//!   back: a texture is released from, and acquired back into, one layout the
//!   bridge picks from its usage (`GENERAL` for storage textures; see
//!   [`SharedTexture::resting_layout`]), and a `transition_resources` call in its
//!   own wgpu command buffer puts the texture there before the release.
//! - Semaphores are attached with the HAL queue's `add_wait_semaphore` /
//!   `add_signal_semaphore`, which apply to the next submission of that queue:
//!   [`Interop::submit`] submits right after, but no other thread may submit on
//!   the same queue meanwhile (`queue.submit`, a `map_async` or `write_buffer`
//!   flush).
//! - wgpu cannot map external memory: shared buffers may not have `MAP_READ` or
//!   `MAP_WRITE` (copy into a mappable wgpu buffer instead).

#![deny(missing_docs)]

mod error;

use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ash::vk;
use wgpu_hal::api::Vulkan;

pub use error::{Error, Result};
pub use vkcuda::context::{CudaChoice, CudaInfo};
pub use vkcuda::{Error as VkcudaError, ErrorKind as VkcudaErrorKind};

use vkcuda::handoff::{self, Direction, Resource, Scope};
use vkcuda::image::{Description, Dimension};
use vkcuda::semaphore::Kind;
use vkcuda::{Buffer, Context, Image, Semaphore};

/// The CUDA stream type of vkcuda's calls (`cudarc::driver::sys::CUstream`).
pub type CuStream = cudarc::driver::sys::CUstream;

/// The device extensions vkcuda needs, for a caller that opens its wgpu device
/// itself (`wgpu_hal::vulkan::Adapter::open_with_callback`) and then calls
/// [`Interop::from_device`].
pub fn required_device_extensions() -> Vec<&'static CStr> {
    device_extensions().to_vec()
}

/// The device extensions vkcuda needs on the `VkDevice` (the external memory and
/// semaphore fd extensions); timeline semaphores come with Vulkan 1.2.
fn device_extensions() -> [&'static CStr; 2] {
    // SAFETY: vkcuda hands out pointers to its `&'static CStr` extension names.
    vkcuda::pairing::device_extension_names().map(|p| unsafe { CStr::from_ptr(p) })
}

/// A wgpu device paired with CUDA: it makes shared buffers, textures and
/// semaphores and submits wgpu work with the handoff around it. Cheap to clone
/// (one `Arc`); `Send` and `Sync`.
#[derive(Clone)]
pub struct Interop {
    inner: Arc<Inner>,
}

struct Inner {
    // The vkcuda context drops first: it borrows the device below.
    ctx: Arc<Context>,
    adapter: wgpu::Adapter,
    device: wgpu::Device,
    queue: wgpu::Queue,
    raw_device: vk::Device,
    queue_family: u32,
}

/// The adapter's checks: Vulkan 1.2 (timeline semaphores), and the extensions.
fn check_adapter(hal: &wgpu_hal::vulkan::Adapter) -> Result<()> {
    let caps = hal.physical_device_capabilities();
    let props = caps.properties();
    let name = props
        .device_name_as_c_str()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let instance_version = hal.shared_instance().instance_api_version();
    let version = props.api_version.min(instance_version);
    if version < vk::API_VERSION_1_2 {
        return Err(Error::Unsupported(format!(
            "{name}: Vulkan {}.{} (device {}.{}, instance {}.{}); vkcuda needs 1.2 for timeline \
             semaphores",
            vk::api_version_major(version),
            vk::api_version_minor(version),
            vk::api_version_major(props.api_version),
            vk::api_version_minor(props.api_version),
            vk::api_version_major(instance_version),
            vk::api_version_minor(instance_version),
        )));
    }
    let memory = ash::khr::external_memory_fd::NAME;
    if !caps.supports_extension(memory) {
        return Err(Error::Unsupported(format!(
            "{name} has no {}: it cannot share memory with CUDA",
            memory.to_string_lossy()
        )));
    }
    Ok(())
}

impl Interop {
    /// Opens a device on `adapter` (wgpu's `request_device` with `desc`, plus the
    /// extensions vkcuda needs) and pairs it with CUDA as `cuda` says:
    /// [`CudaChoice::Primary`] takes the primary context of the CUDA device whose
    /// UUID is the adapter's (what the CUDA runtime, PyTorch and CuPy use),
    /// [`CudaChoice::None`] makes a Vulkan-only bridge (every CUDA call returns
    /// CUDA_UNAVAILABLE; the handoffs still record).
    ///
    /// Errors: [`Error::NotVulkan`] for an adapter of another backend,
    /// [`Error::Unsupported`] when it lacks `VK_KHR_external_memory_fd` or Vulkan 1.2,
    /// vkcuda's CUDA_UNAVAILABLE ([`Error::cuda_unavailable`]) without a CUDA driver.
    pub fn request_device(
        adapter: &wgpu::Adapter,
        desc: &wgpu::DeviceDescriptor<'_>,
        cuda: CudaChoice,
    ) -> Result<Interop> {
        let open = {
            // SAFETY: only handles and capabilities are read; the device is opened
            // by the adapter's own `open_with_callback`, which only gets
            // extensions added (all checked present).
            let hal = unsafe { adapter.as_hal::<Vulkan>() }
                .ok_or(Error::NotVulkan { what: "adapter" })?;
            check_adapter(&hal)?;
            let wanted: Vec<_> = device_extensions()
                .into_iter()
                .filter(|e| hal.physical_device_capabilities().supports_extension(e))
                .collect();
            let callback = Box::new(move |args: wgpu_hal::vulkan::CreateDeviceCallbackArgs| {
                for ext in wanted {
                    if !args.extensions.contains(&ext) {
                        args.extensions.push(ext);
                    }
                }
            });
            // SAFETY: the callback only adds extensions the adapter supports.
            unsafe {
                hal.open_with_callback(
                    desc.required_features,
                    &desc.required_limits,
                    &desc.memory_hints,
                    Some(callback),
                )
            }
            .map_err(|e| Error::Unsupported(format!("opening the Vulkan device failed: {e}")))?
        };
        // SAFETY: `open` was opened on this adapter, with `desc`'s features.
        let (device, queue) = unsafe { adapter.create_device_from_hal::<Vulkan>(open, desc) }
            .map_err(|e| Error::Unsupported(format!("wgpu refused the device: {e}")))?;
        Self::from_device(adapter, &device, &queue, cuda)
    }

    /// Pairs a device the caller opened on `adapter` (with
    /// [`required_device_extensions`] enabled) with CUDA. The device, its queue and
    /// the adapter are checked to be one Vulkan device: [`Error::NotVulkan`] or
    /// [`Error::OtherDevice`] otherwise; a device without `VK_KHR_external_memory_fd`
    /// is [`Error::Unsupported`] (one without `VK_KHR_external_semaphore_fd` works,
    /// and [`create_semaphore`](Self::create_semaphore) names the extension).
    pub fn from_device(
        adapter: &wgpu::Adapter,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        cuda: CudaChoice,
    ) -> Result<Interop> {
        // SAFETY (the three as_hal calls): only handles are read, nothing destroyed.
        let hal_adapter =
            unsafe { adapter.as_hal::<Vulkan>() }.ok_or(Error::NotVulkan { what: "adapter" })?;
        let hal_device =
            unsafe { device.as_hal::<Vulkan>() }.ok_or(Error::NotVulkan { what: "device" })?;
        let hal_queue =
            unsafe { queue.as_hal::<Vulkan>() }.ok_or(Error::NotVulkan { what: "queue" })?;
        let raw_device = hal_device.raw_device().handle();
        if hal_device.raw_physical_device() != hal_adapter.raw_physical_device() {
            return Err(Error::OtherDevice {
                what: "the wgpu device was opened on another adapter; it".into(),
            });
        }
        if hal_queue.raw_device().handle() != raw_device {
            return Err(Error::OtherDevice {
                what: "the wgpu queue".into(),
            });
        }
        let memory = ash::khr::external_memory_fd::NAME;
        if !hal_device.enabled_device_extensions().contains(&memory) {
            return Err(Error::Unsupported(format!(
                "the wgpu device was opened without {}: open it with \
                 vkcuda_wgpu::required_device_extensions() (or Interop::request_device)",
                memory.to_string_lossy()
            )));
        }
        let shared = hal_device.shared_instance();
        // SAFETY: wgpu's live instance, physical device and device (checked above to
        // be one device); `Inner` holds the wgpu device and drops the context first.
        let ctx = unsafe {
            Context::from_engine(
                &vkcuda::context::EngineHandles {
                    instance: shared.raw_instance().handle(),
                    physical: hal_device.raw_physical_device(),
                    device: raw_device,
                    get_instance_proc_addr: shared.entry().static_fn().get_instance_proc_addr,
                    get_device_proc_addr: None,
                    // wgpu 30 does not enable synchronization2: vkcuda records
                    // vkCmdPipelineBarrier.
                    synchronization2: false,
                },
                cuda,
            )
        }?;
        Ok(Interop {
            inner: Arc::new(Inner {
                ctx,
                adapter: adapter.clone(),
                device: device.clone(),
                queue: queue.clone(),
                raw_device,
                queue_family: hal_device.queue_family_index(),
            }),
        })
    }

    /// The wgpu device.
    pub fn device(&self) -> &wgpu::Device {
        &self.inner.device
    }

    /// The wgpu queue every handoff is submitted to.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.inner.queue
    }

    /// The adapter the device was opened on.
    pub fn adapter(&self) -> &wgpu::Adapter {
        &self.inner.adapter
    }

    /// The CUDA side: its `CUcontext` (make it current before launching kernels on
    /// the shared memory), device and UUID. CUDA_UNAVAILABLE for a Vulkan-only bridge.
    pub fn cuda(&self) -> Result<CudaInfo> {
        Ok(self.inner.ctx.cuda_info()?)
    }

    /// The vkcuda context over the wgpu device, for vkcuda's own API.
    pub fn context(&self) -> &Arc<vkcuda::context::Context> {
        &self.inner.ctx
    }

    /// The queue family the wgpu queue belongs to (the engine's side of every
    /// ownership transfer).
    pub fn queue_family(&self) -> u32 {
        self.inner.queue_family
    }

    /// The wgpu device's `VkDevice`.
    pub fn vk_device(&self) -> vk::Device {
        self.inner.raw_device
    }

    /// A buffer of `desc.size` bytes shared with CUDA: exportable Vulkan memory,
    /// imported into CUDA ([`SharedBuffer::cuda_ptr`]) and wrapped into wgpu
    /// ([`SharedBuffer::wgpu`]). `desc.usage` may not hold `MAP_READ`/`MAP_WRITE`
    /// (wgpu cannot map external memory) nor be empty; `mapped_at_creation` must be
    /// false. The contents start undefined (wgpu takes them as initialised).
    pub fn create_buffer(&self, desc: &wgpu::BufferDescriptor<'_>) -> Result<SharedBuffer> {
        use wgpu::BufferUsages as U;
        let label = desc.label.unwrap_or("shared buffer");
        if desc.usage.intersects(U::MAP_READ | U::MAP_WRITE) || desc.mapped_at_creation {
            return Err(Error::InvalidArgument(format!(
                "{label}: wgpu cannot map memory it did not allocate, so a shared buffer has \
                 no MAP_READ/MAP_WRITE usage nor mapped_at_creation (copy into a mappable \
                 wgpu buffer to read it on the host)"
            )));
        }
        if desc.size == 0 || desc.usage.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "{label}: a shared buffer needs a size (not 0) and a usage (not empty)"
            )));
        }
        // What wgpu-hal would create the VkBuffer with for this usage; wgpu also
        // clears and copies into every buffer (TRANSFER_DST) and reads indirect
        // arguments with a shader (STORAGE).
        let mut usage = vk::BufferUsageFlags::TRANSFER_DST | vk::BufferUsageFlags::TRANSFER_SRC;
        for (u, v) in [
            (U::UNIFORM, vk::BufferUsageFlags::UNIFORM_BUFFER),
            (U::STORAGE, vk::BufferUsageFlags::STORAGE_BUFFER),
            (U::INDEX, vk::BufferUsageFlags::INDEX_BUFFER),
            (U::VERTEX, vk::BufferUsageFlags::VERTEX_BUFFER),
            (
                U::INDIRECT,
                vk::BufferUsageFlags::INDIRECT_BUFFER | vk::BufferUsageFlags::STORAGE_BUFFER,
            ),
            (U::QUERY_RESOLVE, vk::BufferUsageFlags::STORAGE_BUFFER),
        ] {
            if desc.usage.contains(u) {
                usage |= v;
            }
        }
        let shared = Arc::new(Buffer::create(
            &self.inner.ctx,
            desc.size,
            usage,
            vkcuda::buffer::Allocator::Vulkan,
        )?);
        let keep = shared.clone();
        // SAFETY: the VkBuffer is of this device, bound to `desc.size` bytes of
        // memory with (at least) the usage wgpu-hal derives from `desc.usage`; the
        // drop callback keeps the vkcuda buffer (and so the VkBuffer and its memory)
        // alive until wgpu destroys its wrapper, after its last use on the GPU.
        let wgpu_buffer = unsafe {
            let hal = wgpu_hal::vulkan::Buffer::from_raw_externally_owned(
                shared.vk_buffer(),
                Box::new(move || drop(keep)),
            );
            self.inner
                .device
                .create_buffer_from_hal::<Vulkan>(hal, desc)
        };
        Ok(SharedBuffer {
            shared,
            wgpu: wgpu_buffer,
            device: self.inner.raw_device,
            with_cuda: AtomicBool::new(false),
        })
    }

    /// A texture shared with CUDA: an exportable `VkImage` (dedicated memory)
    /// imported into CUDA as a mipmapped array ([`SharedTexture::cuda_array`]) and
    /// wrapped into wgpu ([`SharedTexture::wgpu`]). Single-sampled colour formats,
    /// no `view_formats`; vkcuda refuses a format or usage the driver cannot export.
    pub fn create_texture(&self, desc: &wgpu::TextureDescriptor<'_>) -> Result<SharedTexture> {
        use wgpu::TextureUsages as U;
        let label = desc.label.unwrap_or("shared texture");
        if desc.sample_count != 1 || !desc.view_formats.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "{label}: a shared texture has sample_count 1 and no view_formats (CUDA arrays \
                 are single-sampled; the image is created without MUTABLE_FORMAT)"
            )));
        }
        if desc.format.is_depth_stencil_format() || desc.format.is_multi_planar_format() {
            return Err(Error::InvalidArgument(format!(
                "{label}: {:?} cannot be shared as a texture (colour formats only)",
                desc.format
            )));
        }
        if desc.usage.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "{label}: a shared texture needs a usage"
            )));
        }
        let mut usage = vk::ImageUsageFlags::empty();
        for (u, v) in [
            (U::COPY_SRC, vk::ImageUsageFlags::TRANSFER_SRC),
            // wgpu clears textures with copies or render passes.
            (U::COPY_DST, vk::ImageUsageFlags::TRANSFER_DST),
            (U::TEXTURE_BINDING, vk::ImageUsageFlags::SAMPLED),
            (U::STORAGE_BINDING, vk::ImageUsageFlags::STORAGE),
            (U::RENDER_ATTACHMENT, vk::ImageUsageFlags::COLOR_ATTACHMENT),
        ] {
            if desc.usage.contains(u) {
                usage |= v;
            }
        }
        let format = {
            // SAFETY: reads the adapter's format table only.
            let hal = unsafe { self.inner.adapter.as_hal::<Vulkan>() }
                .ok_or(Error::NotVulkan { what: "adapter" })?;
            hal.texture_format_as_raw(desc.format)
        };
        let (dimension, extent, layers) = match desc.dimension {
            wgpu::TextureDimension::D1 => (vk::ImageType::TYPE_1D, (desc.size.width, 1, 1), 1),
            wgpu::TextureDimension::D2 => (
                vk::ImageType::TYPE_2D,
                (desc.size.width, desc.size.height, 1),
                desc.size.depth_or_array_layers,
            ),
            wgpu::TextureDimension::D3 => (
                vk::ImageType::TYPE_3D,
                (
                    desc.size.width,
                    desc.size.height,
                    desc.size.depth_or_array_layers,
                ),
                1,
            ),
        };
        let hal_desc = wgpu_hal::TextureDescriptor {
            label: desc.label,
            size: desc.size,
            mip_level_count: desc.mip_level_count,
            sample_count: 1,
            dimension: desc.dimension,
            format: desc.format,
            usage: wgpu::TextureUses::empty(),
            memory_flags: wgpu_hal::MemoryFlags::empty(),
            view_formats: Vec::new(),
        };
        let image = Arc::new(Image::create(
            &self.inner.ctx,
            &Description {
                dimension: match dimension {
                    vk::ImageType::TYPE_1D => Dimension::D1,
                    vk::ImageType::TYPE_3D => Dimension::D3,
                    _ => Dimension::D2,
                },
                format,
                width: extent.0,
                height: extent.1,
                depth: extent.2,
                mip_levels: desc.mip_level_count,
                array_layers: layers,
                // wgpu-hal creates such images CUBE_COMPATIBLE.
                cube: hal_desc.is_cube_compatible(),
                usage,
                linear: false,
            },
        )?);
        let (resting_use, resting_layout) = resting_state(desc.usage);
        let keep = image.clone();
        // SAFETY: the VkImage is of this device and was created as `desc` says;
        // wgpu-hal neither destroys it nor its memory (External); the callback keeps
        // the vkcuda image alive until wgpu destroys its wrapper.
        let wgpu_texture = unsafe {
            let hal_device = self
                .inner
                .device
                .as_hal::<Vulkan>()
                .ok_or(Error::NotVulkan { what: "device" })?;
            let hal = hal_device.texture_from_raw(
                image.vk_image(),
                &hal_desc,
                Some(Box::new(move || drop(keep))),
                wgpu_hal::vulkan::TextureMemory::External,
            );
            drop(hal_device);
            self.inner.device.create_texture_from_hal::<Vulkan>(
                hal,
                desc,
                wgpu::TextureUses::UNINITIALIZED,
            )
        };
        Ok(SharedTexture {
            image,
            wgpu: wgpu_texture,
            device: self.inner.raw_device,
            resting_use,
            resting_layout,
            with_cuda: AtomicBool::new(false),
        })
    }

    /// A timeline semaphore shared with CUDA, at `initial` (a device without
    /// `VK_KHR_external_semaphore_fd` has none: vkcuda's EXTENSION_NOT_PRESENT,
    /// naming it). wgpu submissions wait
    /// for and signal it through [`Handoff::wait`]/[`Handoff::signal`], CUDA streams
    /// through [`SharedSemaphore::cuda_wait`]/[`SharedSemaphore::cuda_signal`].
    pub fn create_semaphore(&self, initial: u64) -> Result<SharedSemaphore> {
        Ok(SharedSemaphore {
            sem: Semaphore::create(&self.inner.ctx, Kind::Timeline, initial, None)?,
            device: self.inner.raw_device,
        })
    }

    /// Submits `commands` to the queue with the handoff around them, in one
    /// `queue.submit`: a command buffer acquiring `h.acquire` from CUDA, the
    /// caller's, then (textures) wgpu's transition into each texture's resting
    /// layout and a command buffer releasing `h.release` to CUDA. The submission
    /// waits (every stage) for `h.wait` and signals `h.signal` when done.
    ///
    /// Checked first, nothing submitted on failure: each resource and semaphore is
    /// the bridge's device's ([`Error::OtherDevice`]); an acquired resource is held
    /// by CUDA and a released one is not ([`Error::InvalidState`]); the signal value
    /// is above the semaphore's current value. No other thread may submit to this
    /// queue while the call runs (wgpu-hal attaches semaphores to the next submission).
    pub fn submit<I>(&self, commands: I, h: &Handoff<'_>) -> Result<wgpu::SubmissionIndex>
    where
        I: IntoIterator<Item = wgpu::CommandBuffer>,
    {
        for r in h.acquire {
            self.check_resource(r, false, false)?;
        }
        for r in h.release {
            // Taken back and handed over again in one submission (a frame loop).
            let acquired = h.acquire.iter().any(|a| a.same(r));
            self.check_resource(r, true, acquired)?;
        }
        for (s, _) in h.wait.iter().chain(h.signal.iter()) {
            if s.device != self.inner.raw_device {
                return Err(Error::OtherDevice {
                    what: "the shared semaphore".into(),
                });
            }
        }
        if let Some((s, v)) = h.signal {
            let current = s.value()?;
            if v <= current {
                return Err(Error::InvalidState(format!(
                    "signal value {v} is not above the timeline's current value {current}: \
                     timeline values must strictly increase"
                )));
            }
        }
        let mut buffers = Vec::with_capacity(4);
        if !h.acquire.is_empty() {
            buffers.push(self.record(h.acquire, false)?);
        }
        buffers.extend(commands);
        if !h.release.is_empty() {
            let textures: Vec<_> = h
                .release
                .iter()
                .filter_map(|r| match r {
                    Shared::Texture(t) => Some(wgpu::TextureTransition {
                        texture: &t.wgpu,
                        selector: None,
                        state: t.resting_use,
                    }),
                    Shared::Buffer(_) => None,
                })
                .collect();
            if !textures.is_empty() {
                let mut enc =
                    self.inner
                        .device
                        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                            label: Some("vkcuda-wgpu: textures to their resting layout"),
                        });
                enc.transition_resources(std::iter::empty(), textures.into_iter());
                buffers.push(enc.finish());
            }
            buffers.push(self.record(h.release, true)?);
        }
        if h.wait.is_some() || h.signal.is_some() {
            // SAFETY: the semaphores are this device's (checked); they are attached
            // to the submission right below.
            let hal = unsafe { self.inner.queue.as_hal::<Vulkan>() }
                .ok_or(Error::NotVulkan { what: "queue" })?;
            if let Some((s, v)) = h.wait {
                hal.add_wait_semaphore(
                    s.vk_semaphore(),
                    Some(v),
                    vk::PipelineStageFlags::ALL_COMMANDS,
                );
            }
            if let Some((s, v)) = h.signal {
                hal.add_signal_semaphore(s.vk_semaphore(), Some(v));
            }
        }
        for r in h.acquire {
            r.with_cuda().store(false, Ordering::Release);
        }
        for r in h.release {
            r.with_cuda().store(true, Ordering::Release);
        }
        Ok(self.inner.queue.submit(buffers))
    }

    /// Shows what CUDA drew on a window: takes `shared` back from CUDA (after
    /// `wait`, CUDA's signal), copies it into `target` (the
    /// [`wgpu::SurfaceTexture::texture`] of `surface.get_current_texture()`), hands
    /// it back to CUDA and signals `signal` (CUDA's next frame waits for it), in
    /// one submission; the caller then presents the surface texture
    /// (`interop.queue().present(surface_texture)`).
    /// The surface must be configured with `COPY_DST` in its usage and the shared
    /// texture's format (or its sRGB twin); the shared texture needs `COPY_SRC`.
    /// The copy covers the extent both textures have (a window resized to another
    /// size than the shared texture shows its top-left part, or is filled in part:
    /// recreate the shared texture at the new size); a zero extent copies nothing
    /// and still hands the texture over. For scaling or another format, sample the
    /// texture in a render pass of your own between [`Interop::submit`]'s acquire
    /// and release instead.
    ///
    /// Errors, with nothing submitted: `target` without `COPY_DST`, `shared`
    /// without `COPY_SRC`, formats a copy cannot convert between, multisampled or
    /// non-2D textures ([`Error::InvalidArgument`]); a target of another device
    /// (wgpu's validation error, caught: [`Error::InvalidArgument`]); and
    /// [`Interop::submit`]'s (CUDA does not hold `shared`, a signal value that does
    /// not move forward, ...).
    ///
    /// ```no_run
    /// use vkcuda_wgpu::{CuStream, Handoff, Interop, Shared, SharedSemaphore, SharedTexture};
    ///
    /// /// Frame `k` (1, 2, ...): CUDA draws into `shared` on `stream`, the window
    /// /// shows it. Before frame 1 the texture went to CUDA with
    /// /// `interop.submit([], &Handoff { release: &[(&shared).into()], signal:
    /// /// Some((&timeline, 1)), ..Default::default() })`, and the surface was
    /// /// configured with `usage: RENDER_ATTACHMENT | COPY_DST` and the shared
    /// /// texture's format.
    /// fn frame(
    ///     interop: &Interop,
    ///     surface: &wgpu::Surface<'_>,
    ///     shared: &SharedTexture,
    ///     timeline: &SharedSemaphore,
    ///     stream: CuStream,
    ///     k: u64,
    /// ) -> Result<(), Box<dyn std::error::Error>> {
    ///     timeline.cuda_wait(2 * k - 1, stream)?; // the previous copy is done
    ///     // ... a kernel writes shared.cuda_array(0)? through a surface on `stream` ...
    ///     timeline.cuda_signal(2 * k, stream)?;
    ///     let (wait, signal) = (Some((timeline, 2 * k)), Some((timeline, 2 * k + 1)));
    ///     match surface.get_current_texture() {
    ///         wgpu::CurrentSurfaceTexture::Success(out) => {
    ///             interop.present_copy(shared, &out.texture, wait, signal)?;
    ///             interop.queue().present(out);
    ///         }
    ///         _ => {
    ///             // Nothing to show (minimised, or reconfigure the surface): the
    ///             // frame is still passed on, so CUDA's next wait is met.
    ///             let t: [Shared; 1] = [shared.into()];
    ///             let h = Handoff { acquire: &t, release: &t, wait, signal };
    ///             interop.submit([], &h)?;
    ///         }
    ///     }
    ///     Ok(())
    /// }
    /// ```
    pub fn present_copy(
        &self,
        shared: &SharedTexture,
        target: &wgpu::Texture,
        wait: Option<(&SharedSemaphore, u64)>,
        signal: Option<(&SharedSemaphore, u64)>,
    ) -> Result<wgpu::SubmissionIndex> {
        let src = &shared.wgpu;
        let bad = |what: String| Err(Error::InvalidArgument(what));
        if !src.usage().contains(wgpu::TextureUsages::COPY_SRC) {
            return bad(format!(
                "the shared texture's usage {:?} lacks COPY_SRC: it cannot be copied to the \
                 surface",
                src.usage()
            ));
        }
        if !target.usage().contains(wgpu::TextureUsages::COPY_DST) {
            return bad(format!(
                "the target's usage {:?} lacks COPY_DST: configure the surface with \
                 `usage: RENDER_ATTACHMENT | COPY_DST`",
                target.usage()
            ));
        }
        if src.format().remove_srgb_suffix() != target.format().remove_srgb_suffix() {
            return bad(format!(
                "the shared texture is {:?} and the target {:?}: a copy does not convert \
                 formats (configure the surface with the shared texture's format, or create \
                 the shared texture in the surface's)",
                src.format(),
                target.format()
            ));
        }
        for (t, what) in [(src, "shared texture"), (target, "target")] {
            if t.dimension() != wgpu::TextureDimension::D2 || t.sample_count() != 1 {
                return bad(format!(
                    "the {what} is {:?} with {} samples: only single-sampled 2D textures are \
                     copied",
                    t.dimension(),
                    t.sample_count()
                ));
            }
        }
        let extent = wgpu::Extent3d {
            width: src.width().min(target.width()),
            height: src.height().min(target.height()),
            depth_or_array_layers: 1,
        };
        let device = &self.inner.device;
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("vkcuda-wgpu: the shared texture to the surface"),
        });
        if extent.width > 0 && extent.height > 0 {
            enc.copy_texture_to_texture(src.as_image_copy(), target.as_image_copy(), extent);
        }
        let copy = enc.finish();
        if let Some(e) = ready(scope.pop()) {
            return bad(format!(
                "wgpu refused the copy to the target (a texture of another device?): {e}"
            ));
        }
        let texture: [Shared; 1] = [shared.into()];
        self.submit(
            [copy],
            &Handoff {
                acquire: &texture,
                release: &texture,
                wait,
                signal,
            },
        )
    }

    /// A command buffer holding only the handoff barrier of `list` (wgpu 30 keeps
    /// raw commands out of encoders that hold wgpu commands).
    fn record(&self, list: &[Shared<'_>], release: bool) -> Result<wgpu::CommandBuffer> {
        let items: Vec<_> = list
            .iter()
            .map(|r| match r {
                Shared::Buffer(b) => Resource::Buffer(&b.shared),
                Shared::Texture(t) => Resource::Image(&t.image, t.resting_layout),
            })
            .collect();
        let mut enc = self
            .inner
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some(if release {
                    "vkcuda-wgpu: release to CUDA"
                } else {
                    "vkcuda-wgpu: acquire from CUDA"
                }),
            });
        let family = self.inner.queue_family;
        // SAFETY: the HAL encoder is open and recording; only one barrier is
        // recorded into it, and the encoder is finished by wgpu below.
        let recorded = unsafe {
            enc.as_hal_mut::<Vulkan, _, _>(|e| match e {
                // One barrier with vkcuda's default scope (every command, every
                // memory access): wgpu may have used the resources in any stage.
                Some(e) => handoff::batch(
                    e.raw_handle(),
                    if release {
                        Direction::Release
                    } else {
                        Direction::Acquire
                    },
                    &Scope::new(family),
                    items.iter().map(|r| Ok(*r)),
                )
                .map_err(Error::from),
                None => Err(Error::NotVulkan {
                    what: "command encoder",
                }),
            })
        };
        recorded?;
        Ok(enc.finish())
    }

    fn check_resource(&self, r: &Shared<'_>, to_cuda: bool, acquired: bool) -> Result<()> {
        let (device, what) = match r {
            Shared::Buffer(b) => (b.device, "shared buffer"),
            Shared::Texture(t) => (t.device, "shared texture"),
        };
        if device != self.inner.raw_device {
            return Err(Error::OtherDevice {
                what: format!("a {what} handed to this bridge's submit"),
            });
        }
        let held = r.with_cuda().load(Ordering::Acquire) && !acquired;
        match (to_cuda, held) {
            (true, true) => Err(Error::InvalidState(format!(
                "a {what} released to CUDA again: CUDA holds it already (acquire it back first)"
            ))),
            (false, false) => Err(Error::InvalidState(format!(
                "a {what} acquired from CUDA that CUDA does not hold (it was never released, \
                 or was acquired back already)"
            ))),
            _ => Ok(()),
        }
    }
}

/// The value of a future that native wgpu resolves at once (an error scope's
/// pop); `None` if it is still pending after a few polls.
fn ready<T>(f: impl std::future::Future<Output = Option<T>>) -> Option<T> {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    for _ in 0..16 {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
    None
}

/// The use (and its layout) a texture rests in while CUDA holds it: storage if it
/// has that usage (`GENERAL`, CUDA's layout: the transfer changes no layout),
/// else the first of copy source, sampled, copy destination, render target.
fn resting_state(u: wgpu::TextureUsages) -> (wgpu::TextureUses, vk::ImageLayout) {
    use wgpu::TextureUsages as U;
    use wgpu::TextureUses as S;
    if u.contains(U::STORAGE_BINDING) {
        (S::STORAGE_READ_WRITE, vk::ImageLayout::GENERAL)
    } else if u.contains(U::COPY_SRC) {
        (S::COPY_SRC, vk::ImageLayout::TRANSFER_SRC_OPTIMAL)
    } else if u.contains(U::TEXTURE_BINDING) {
        (S::RESOURCE, vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL)
    } else if u.contains(U::COPY_DST) {
        (S::COPY_DST, vk::ImageLayout::TRANSFER_DST_OPTIMAL)
    } else {
        (S::COLOR_TARGET, vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
    }
}

/// What [`Interop::submit`] hands over around the caller's command buffers.
#[derive(Default, Clone, Copy)]
pub struct Handoff<'a> {
    /// Taken back from CUDA before the command buffers (CUDA holds them: they were
    /// released by an earlier submit).
    pub acquire: &'a [Shared<'a>],
    /// Handed to CUDA after the command buffers.
    pub release: &'a [Shared<'a>],
    /// The submission waits until the semaphore reaches this value (CUDA's signal).
    pub wait: Option<(&'a SharedSemaphore, u64)>,
    /// The submission signals this value when its work is done (CUDA waits for it).
    pub signal: Option<(&'a SharedSemaphore, u64)>,
}

/// A shared buffer or texture in a [`Handoff`] (`(&buffer).into()`).
#[derive(Clone, Copy)]
pub enum Shared<'a> {
    /// A whole buffer.
    Buffer(&'a SharedBuffer),
    /// A whole texture (every level and layer).
    Texture(&'a SharedTexture),
}

impl Shared<'_> {
    fn same(&self, other: &Shared<'_>) -> bool {
        std::ptr::eq(self.with_cuda(), other.with_cuda())
    }

    fn with_cuda(&self) -> &AtomicBool {
        match self {
            Shared::Buffer(b) => &b.with_cuda,
            Shared::Texture(t) => &t.with_cuda,
        }
    }
}

impl<'a> From<&'a SharedBuffer> for Shared<'a> {
    fn from(b: &'a SharedBuffer) -> Self {
        Shared::Buffer(b)
    }
}

impl<'a> From<&'a SharedTexture> for Shared<'a> {
    fn from(t: &'a SharedTexture) -> Self {
        Shared::Texture(t)
    }
}

/// A buffer shared between wgpu and CUDA: one allocation, a [`wgpu::Buffer`] and a
/// CUDA device pointer. Dropping it drops the bridge's references; the memory goes
/// when wgpu is done with it too. CUDA work on it must be finished first.
pub struct SharedBuffer {
    shared: Arc<Buffer>,
    wgpu: wgpu::Buffer,
    device: vk::Device,
    with_cuda: AtomicBool,
}

impl SharedBuffer {
    /// The wgpu buffer (bind it, copy from and to it as any other).
    pub fn wgpu(&self) -> &wgpu::Buffer {
        &self.wgpu
    }

    /// The CUDA device pointer of its first byte (a `CUdeviceptr`); CUDA_UNAVAILABLE
    /// for a Vulkan-only bridge.
    pub fn cuda_ptr(&self) -> Result<u64> {
        Ok(self.shared.cuda_ptr()?)
    }

    /// Its size in bytes.
    pub fn size(&self) -> u64 {
        self.wgpu.size()
    }

    /// Whether CUDA holds it now (released and not yet acquired back).
    pub fn with_cuda(&self) -> bool {
        self.with_cuda.load(Ordering::Acquire)
    }

    /// The `VkBuffer` under both views.
    pub fn vk_buffer(&self) -> vk::Buffer {
        self.shared.vk_buffer()
    }

    /// The vkcuda buffer, for vkcuda's own API (DLPack, export, ...).
    pub fn vkcuda(&self) -> &Arc<vkcuda::buffer::Buffer> {
        &self.shared
    }
}

/// A texture shared between wgpu and CUDA: one `VkImage`, a [`wgpu::Texture`] and
/// a CUDA mipmapped array.
pub struct SharedTexture {
    image: Arc<Image>,
    wgpu: wgpu::Texture,
    device: vk::Device,
    resting_use: wgpu::TextureUses,
    resting_layout: vk::ImageLayout,
    with_cuda: AtomicBool,
}

impl SharedTexture {
    /// The wgpu texture.
    pub fn wgpu(&self) -> &wgpu::Texture {
        &self.wgpu
    }

    /// The CUDA array of mip level `level` (copy with `cuMemcpy2D`, or make a
    /// surface object for kernels); CUDA_UNAVAILABLE for a Vulkan-only bridge.
    pub fn cuda_array(&self, level: u32) -> Result<cudarc::driver::sys::CUarray> {
        Ok(self.image.level_array(0, level)?)
    }

    /// The layout the texture is released from and acquired back into: `GENERAL`
    /// with `STORAGE_BINDING`, else `TRANSFER_SRC_OPTIMAL` with `COPY_SRC`, else
    /// `SHADER_READ_ONLY_OPTIMAL` with `TEXTURE_BINDING`, else
    /// `TRANSFER_DST_OPTIMAL`, else `COLOR_ATTACHMENT_OPTIMAL`. wgpu's tracker
    /// holds the matching use while CUDA has the texture.
    pub fn resting_layout(&self) -> vk::ImageLayout {
        self.resting_layout
    }

    /// Whether CUDA holds it now.
    pub fn with_cuda(&self) -> bool {
        self.with_cuda.load(Ordering::Acquire)
    }

    /// The `VkImage` under both views.
    pub fn vk_image(&self) -> vk::Image {
        self.image.vk_image()
    }

    /// The vkcuda image, for vkcuda's own API (surfaces, textures, export).
    pub fn vkcuda(&self) -> &Arc<vkcuda::image::Image> {
        &self.image
    }
}

/// A timeline semaphore shared between wgpu's queue and CUDA streams.
pub struct SharedSemaphore {
    sem: Semaphore,
    device: vk::Device,
}

impl SharedSemaphore {
    /// The current value.
    pub fn value(&self) -> Result<u64> {
        Ok(self.sem.value()?)
    }

    /// Enqueues on `stream` a wait until the value reaches `value`.
    pub fn cuda_wait(&self, value: u64, stream: CuStream) -> Result<()> {
        Ok(self.sem.cuda_wait(value, stream)?)
    }

    /// Enqueues on `stream` a signal of `value` (above every earlier signal).
    pub fn cuda_signal(&self, value: u64, stream: CuStream) -> Result<()> {
        Ok(self.sem.cuda_signal(value, stream)?)
    }

    /// Signals `value` from the host.
    pub fn host_signal(&self, value: u64) -> Result<()> {
        Ok(self.sem.host_signal(value)?)
    }

    /// Waits on the host until the value reaches `value`, at most `timeout`
    /// (vkcuda spins on the counter, then polls: not `vkWaitSemaphores`, which is
    /// slow when GPU work alternates between Vulkan and CUDA).
    pub fn host_wait(&self, value: u64, timeout: Duration) -> Result<()> {
        Ok(self.sem.host_wait(value, timeout)?)
    }

    /// The `VkSemaphore`.
    pub fn vk_semaphore(&self) -> vk::Semaphore {
        self.sem.vk_semaphore()
    }

    /// The vkcuda semaphore, for vkcuda's own API.
    pub fn vkcuda(&self) -> &vkcuda::semaphore::Semaphore {
        &self.sem
    }
}
