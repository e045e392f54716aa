//! Every call this crate makes into vkcuda, in one place: the context over the
//! wgpu device's handles, the shared objects, the handoff barriers and the error
//! type. When vkcuda's Rust API moves, only this file follows it.

use std::ffi::CStr;
use std::sync::Arc;
use std::time::Duration;

use ash::vk;

pub use vkcuda::context::{CudaChoice, CudaInfo};
pub use vkcuda::{Error as VkcudaError, ErrorKind as VkcudaErrorKind};

/// The vkcuda objects under the bridge's wrappers.
pub type Context = vkcuda::context::Context;
/// A shared buffer.
pub type Buffer = vkcuda::buffer::Buffer;
/// A shared image.
pub type Image = vkcuda::image::Image;
/// An exportable semaphore imported into CUDA.
pub type Semaphore = vkcuda::semaphore::Semaphore;

/// The device extensions vkcuda needs on the `VkDevice` (the external memory and
/// semaphore fd extensions); timeline semaphores come with Vulkan 1.2.
pub fn device_extensions() -> [&'static CStr; 2] {
    // SAFETY: vkcuda hands out pointers to its `&'static CStr` extension names.
    vkcuda::pairing::device_extension_names().map(|p| unsafe { CStr::from_ptr(p) })
}

/// The one extension shared memory needs (`VK_KHR_external_memory_fd`); the
/// semaphore one only shared semaphores.
pub fn memory_extension() -> &'static CStr {
    ash::khr::external_memory_fd::NAME
}

/// The engine's handles, as vkcuda takes them.
pub struct Handles {
    pub instance: vk::Instance,
    pub physical: vk::PhysicalDevice,
    pub device: vk::Device,
    pub get_instance_proc_addr: vk::PFN_vkGetInstanceProcAddr,
}

/// A context over a device the caller owns (wgpu's): vkcuda never destroys it.
///
/// # Safety
/// As for `vkcuda::Context::from_engine`: `h` holds the live handles of one
/// device (wgpu's, through its HAL), which outlive the context.
pub unsafe fn context(h: &Handles, cuda: CudaChoice) -> Result<Arc<Context>, VkcudaError> {
    let handles = vkcuda::context::EngineHandles {
        instance: h.instance,
        physical: h.physical,
        device: h.device,
        get_instance_proc_addr: h.get_instance_proc_addr,
        get_device_proc_addr: None,
        // wgpu 30 does not enable synchronization2: vkcuda records vkCmdPipelineBarrier.
        synchronization2: false,
    };
    // SAFETY: this function's contract.
    unsafe { Context::from_engine(&handles, cuda) }
}

/// The context's CUDA side, or CUDA_UNAVAILABLE.
pub fn cuda_info(ctx: &Context) -> Result<CudaInfo, VkcudaError> {
    ctx.cuda_info()
}

/// An exportable buffer allocated by Vulkan and imported into CUDA.
pub fn create_buffer(
    ctx: &Arc<Context>,
    size: u64,
    usage: vk::BufferUsageFlags,
) -> Result<Buffer, VkcudaError> {
    Buffer::create(ctx, size, usage, vkcuda::buffer::Allocator::Vulkan)
}

/// The buffer's `VkBuffer`.
pub fn buffer_handle(b: &Buffer) -> vk::Buffer {
    b.vk_buffer()
}

/// The buffer's CUDA device pointer, or CUDA_UNAVAILABLE.
pub fn buffer_cuda_ptr(b: &Buffer) -> Result<u64, VkcudaError> {
    b.cuda_ptr()
}

/// What a texture is, in vkcuda's terms.
pub struct ImageShape {
    pub dimension: vk::ImageType,
    pub format: vk::Format,
    pub extent: vk::Extent3D,
    pub mip_levels: u32,
    pub array_layers: u32,
    pub cube: bool,
    pub usage: vk::ImageUsageFlags,
}

/// An exportable image (dedicated memory) imported into CUDA as a mipmapped array.
pub fn create_image(ctx: &Arc<Context>, s: &ImageShape) -> Result<Image, VkcudaError> {
    use vkcuda::image::{Description, Dimension};
    let dimension = match s.dimension {
        vk::ImageType::TYPE_1D => Dimension::D1,
        vk::ImageType::TYPE_3D => Dimension::D3,
        _ => Dimension::D2,
    };
    Image::create(
        ctx,
        &Description {
            dimension,
            format: s.format,
            width: s.extent.width,
            height: s.extent.height,
            depth: s.extent.depth,
            mip_levels: s.mip_levels,
            array_layers: s.array_layers,
            cube: s.cube,
            usage: s.usage,
            linear: false,
        },
    )
}

/// The image's `VkImage`.
pub fn image_handle(im: &Image) -> vk::Image {
    im.vk_image()
}

/// The CUDA array of one mip level (plane 0).
pub fn image_level_array(
    im: &Image,
    level: u32,
) -> Result<cudarc::driver::sys::CUarray, VkcudaError> {
    im.level_array(0, level)
}

/// A timeline semaphore, exportable, imported into CUDA.
pub fn create_timeline(ctx: &Arc<Context>, initial: u64) -> Result<Semaphore, VkcudaError> {
    Semaphore::create(ctx, vkcuda::semaphore::Kind::Timeline, initial, None)
}

/// The semaphore's `VkSemaphore`.
pub fn semaphore_handle(s: &Semaphore) -> vk::Semaphore {
    s.vk_semaphore()
}

/// The semaphore's current value.
pub fn semaphore_value(s: &Semaphore) -> Result<u64, VkcudaError> {
    s.value()
}

/// Waits on the host (spinning, then polling) for `value`.
pub fn semaphore_host_wait(
    s: &Semaphore,
    value: u64,
    timeout: Duration,
) -> Result<(), VkcudaError> {
    s.host_wait(value, timeout)
}

/// Signals `value` from the host.
pub fn semaphore_host_signal(s: &Semaphore, value: u64) -> Result<(), VkcudaError> {
    s.host_signal(value)
}

/// Enqueues a CUDA wait for `value` on `stream`.
pub fn semaphore_cuda_wait(
    s: &Semaphore,
    value: u64,
    stream: cudarc::driver::sys::CUstream,
) -> Result<(), VkcudaError> {
    s.cuda_wait(value, stream)
}

/// Enqueues a CUDA signal of `value` on `stream`.
pub fn semaphore_cuda_signal(
    s: &Semaphore,
    value: u64,
    stream: cudarc::driver::sys::CUstream,
) -> Result<(), VkcudaError> {
    s.cuda_signal(value, stream)
}

/// One resource of a handoff barrier.
pub enum Resource<'a> {
    /// A whole buffer.
    Buffer(&'a Buffer),
    /// A whole image and the engine's layout on its side of the transfer.
    Image(&'a Image, vk::ImageLayout),
}

/// Records ONE barrier handing `resources` to CUDA (`release`) or back, on
/// `queue_family`, with vkcuda's default scope (every command, every memory
/// access): wgpu may have used the resources in any stage.
///
/// # Safety
/// `cmd` is a command buffer of the resources' device in the recording state.
pub unsafe fn record_handoff(
    cmd: vk::CommandBuffer,
    release: bool,
    queue_family: u32,
    resources: &[Resource<'_>],
) -> Result<(), VkcudaError> {
    use vkcuda::handoff::{batch, Direction, Resource as R, Scope};
    let dir = if release {
        Direction::Release
    } else {
        Direction::Acquire
    };
    let scope = Scope::with_defaults(queue_family, 0, 0);
    let items = resources.iter().map(|r| {
        Ok(match *r {
            Resource::Buffer(b) => R::Buffer(b),
            Resource::Image(im, layout) => R::Image(im, layout),
        })
    });
    // SAFETY: the caller's contract.
    unsafe { batch(cmd, dir, &scope, items) }
}
