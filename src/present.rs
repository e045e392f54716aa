//! Presenting what CUDA draws: a ring of shared images that CUDA writes and the
//! engine blits into its swapchain image, paced by one timeline semaphore.
//!
//! The engine keeps its window, surface, swapchain, acquire and present calls; the
//! ring gives it, per frame, the commands to record and the semaphores its submit
//! waits on and signals. One frame `k` (1, 2, ...) goes through slot `(k - 1) % count`:
//!
//! 1. The producer (CUDA: [`Ring::cuda_begin`] / [`Ring::cuda_end`]; or any queue:
//!    [`Ring::begin_write`] / [`Ring::end_write`]) waits until Vulkan has copied the
//!    slot's previous frame out (`Write::free_value`), writes the image (in
//!    `GENERAL` layout, owned by `VK_QUEUE_FAMILY_EXTERNAL`), then waits for the
//!    previous frame's copy (`Write::order_value`, so the timeline never goes
//!    backwards) and signals `Write::signal_value` (`2k`).
//! 2. The engine acquires a swapchain image and calls [`Ring::cmd_present`]: it
//!    records the acquire of the slot from CUDA, the blit into the swapchain image
//!    (RGBA <-> BGRA and scaling to the swapchain's extent are the blit's), the
//!    release back to CUDA and the swapchain image's transition to
//!    `PRESENT_SRC_KHR`; the returned [`Submit`] lists what the engine's submit
//!    waits on (the timeline at `2k` and the engine's image-acquired semaphore) and
//!    signals (the timeline at `2k + 1` and the engine's render-finished semaphore).
//!
//! So CUDA never writes an image Vulkan is still copying out of, and Vulkan never
//! copies an image CUDA is still writing. Before the first frame the engine
//! records [`Ring::cmd_prepare`] once (the release of every slot to CUDA; its
//! submit signals 1). The ring's images never change size: a resized swapchain
//! (new images, a new extent) needs nothing from the ring, and a minimised window
//! (extent 0) records nothing but still passes the frame on (its submit waits and
//! signals the timeline only), so CUDA never stalls.
//!
//! **Video frames.** A ring of a multi-planar (YCbCr) format (NV12, P010, ...:
//! [`Description::format`]) holds shared video frames ([`Image::is_frame`]:
//! LINEAR, one allocation, each plane pitched device memory CUDA writes through
//! [`Image::plane_pointer`], as NVDEC's output). Its present samples the frame
//! through the frame's `VkSamplerYcbcrConversion` ([`Ring::set_video_color`],
//! [`Image::ycbcr_conversion`]) with a compute pass into an RGB image of the
//! ring (RGBA8 for 8-bit frames, RGBA16F for deeper ones), then blits that like
//! any ring image; its submit waits for the timeline at `COMPUTE_SHADER`. The
//! engine's device needs the `samplerYcbcrConversion` feature (a standalone
//! context enables it where the device has it) and its queue compute. The RGB
//! image is one per ring, reused frame after frame: submit a video ring's presents
//! to one queue (each waits for the previous one's blit in submission order).
//!
//! ```
//! use vkcuda::ash::vk;
//! use vkcuda::context::{Context, CudaChoice};
//! use vkcuda::present::{Description, Ring};
//!
//! # fn main() -> vkcuda::Result<()> {
//! let ctx = Context::standalone(None, CudaChoice::None)?;
//! let ring = Ring::create(&ctx, &Description::new(vk::Format::R8G8B8A8_UNORM, 64, 64, 2))?;
//! assert_eq!(ring.images().len(), 2);
//! // A format the ring cannot blit is refused by name.
//! let e = Ring::create(&ctx, &Description::new(vk::Format::R32_UINT, 64, 64, 2)).unwrap_err();
//! assert!(e.message().contains("VK_FORMAT_R32_UINT"));
//! // So is a ring of 0.
//! assert!(Ring::create(&ctx, &Description::new(vk::Format::R8G8B8A8_UNORM, 64, 64, 0)).is_err());
//! # Ok(())
//! # }
//! ```

use std::sync::{Arc, Mutex, MutexGuard};

use ash::vk;
use cudarc::driver::sys::CUstream;

mod ycbcr;

use super::vulkan::handoff::{self as barrier, Direction, ImageRange, Scope};
use super::vulkan::image as vkimage;
use super::vulkan::semaphore as vksem;
use crate::context::Context;
use crate::error::{Error, ErrorKind, Result};
use crate::format;
use crate::image::{Description as ImageDescription, Image, VideoColor};
use crate::semaphore::{Kind, Semaphore};

/// The formats a ring's images may have: 8-bit RGBA and BGRA (UNORM or SRGB) and
/// 16-bit float RGBA.
pub const FORMATS: [vk::Format; 5] = [
    vk::Format::R8G8B8A8_UNORM,
    vk::Format::R8G8B8A8_SRGB,
    vk::Format::B8G8R8A8_UNORM,
    vk::Format::B8G8R8A8_SRGB,
    vk::Format::R16G16B16A16_SFLOAT,
];

/// The layouts a [`Target`] may be in before and after.
const TARGET_LAYOUTS: [vk::ImageLayout; 7] = [
    vk::ImageLayout::UNDEFINED,
    vk::ImageLayout::PRESENT_SRC_KHR,
    vk::ImageLayout::GENERAL,
    vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
    vk::ImageLayout::TRANSFER_DST_OPTIMAL,
    vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
    vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
];

/// The most images a ring may have.
pub const MAX_COUNT: u32 = 16;

/// What a ring is: `count` images of `format`, `width` x `height`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Description {
    /// One of [`FORMATS`], or a multi-planar (YCbCr) format the device makes
    /// shared video frames of: a ring of video frames (see the module).
    pub format: vk::Format,
    /// The images' width.
    pub width: u32,
    /// The images' height.
    pub height: u32,
    /// How many images (1 to [`MAX_COUNT`]): how many frames CUDA may be ahead
    /// of the engine's copies. 2 or 3 let CUDA write one while Vulkan copies another.
    pub count: u32,
}

impl Description {
    /// A ring of `count` images of `format`, `width` x `height`.
    pub fn new(format: vk::Format, width: u32, height: u32, count: u32) -> Description {
        Description {
            format,
            width,
            height,
            count,
        }
    }
}

/// Where the engine wants frame `frame` copied: its swapchain image (or any
/// colour image of its device that can be blitted into).
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// The `VkDevice` the image belongs to: it must be the ring's context's
    /// ([`ErrorKind::DeviceMismatch`] otherwise; nothing is recorded).
    pub device: vk::Device,
    /// The image, with `TRANSFER_DST` usage (a swapchain image: the swapchain was
    /// created with `VK_IMAGE_USAGE_TRANSFER_DST_BIT`). Null only with a zero extent.
    pub image: vk::Image,
    /// Its format: one the device can blit into from the ring's format.
    pub format: vk::Format,
    /// Its extent (the swapchain's); a zero width or height (a minimised window)
    /// records nothing and passes the frame on.
    pub extent: vk::Extent2D,
    /// The layout it is in (`UNDEFINED` for a freshly acquired swapchain image:
    /// its old contents are overwritten).
    pub old_layout: vk::ImageLayout,
    /// The layout to leave it in: `PRESENT_SRC_KHR` for a swapchain image
    /// (`UNDEFINED` means that), or another for an image the engine reads next.
    pub new_layout: vk::ImageLayout,
    /// The engine's binary semaphore signalled by `vkAcquireNextImageKHR`, or null:
    /// listed in [`Submit`]'s waits.
    pub acquired: vk::Semaphore,
    /// The engine's binary semaphore its `vkQueuePresentKHR` waits on, or null:
    /// listed in [`Submit`]'s signals.
    pub rendered: vk::Semaphore,
    /// `LINEAR` or `NEAREST` scaling (`LINEAR` falls back to `NEAREST` where the
    /// ring's format cannot be filtered linearly).
    pub filter: vk::Filter,
}

impl Target {
    /// A swapchain image of `device` in `format` and `extent`, from `UNDEFINED`
    /// to `PRESENT_SRC_KHR`, linear scaling, no binary semaphores.
    pub fn new(
        device: vk::Device,
        image: vk::Image,
        format: vk::Format,
        extent: vk::Extent2D,
    ) -> Target {
        Target {
            device,
            image,
            format,
            extent,
            old_layout: vk::ImageLayout::UNDEFINED,
            new_layout: vk::ImageLayout::PRESENT_SRC_KHR,
            acquired: vk::Semaphore::null(),
            rendered: vk::Semaphore::null(),
            filter: vk::Filter::LINEAR,
        }
    }
}

/// What the engine's submit of the recorded commands waits on and signals: put
/// `wait_*` and `signal_*` into its `VkSubmitInfo` (with a
/// `VkTimelineSemaphoreSubmitInfo` of the values; a binary semaphore's value is
/// ignored). The engine must submit it, in the order frames were recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Submit {
    /// The frame this submit copies out (1, 2, ...).
    pub frame: u64,
    /// The slot the frame is in.
    pub index: u32,
    /// Whether anything was recorded (false for a zero extent: the submit then
    /// only waits for CUDA and signals the timeline; do not present).
    pub recorded: bool,
    /// The semaphores to wait on: the ring's timeline, then the target's
    /// `acquired` semaphore when it is set and something was recorded.
    pub wait_semaphores: [vk::Semaphore; 2],
    /// Their values (the binary one's is 0).
    pub wait_values: [u64; 2],
    /// Their stages: `TRANSFER` (the blit).
    pub wait_stages: [vk::PipelineStageFlags; 2],
    /// How many of `wait_*` are used (1 or 2).
    pub wait_count: u32,
    /// The semaphores to signal: the ring's timeline, then the target's
    /// `rendered` semaphore when it is set and something was recorded.
    pub signal_semaphores: [vk::Semaphore; 2],
    /// Their values.
    pub signal_values: [u64; 2],
    /// How many of `signal_*` are used (1 or 2).
    pub signal_count: u32,
}

/// One frame for the producer to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Write {
    /// The frame (1, 2, ...).
    pub frame: u64,
    /// The slot to write ([`Ring::image`]).
    pub index: u32,
    /// Wait for this timeline value before writing: the slot's previous frame is
    /// copied out (1, the prepare submit, for the first `count` frames).
    pub free_value: u64,
    /// Wait for this value before signalling: the previous frame is copied out
    /// (the timeline's values are signalled in order).
    pub order_value: u64,
    /// Signal this value when the image is written (`2 * frame`).
    pub signal_value: u64,
}

/// A ring of shared images CUDA writes and the engine presents (see the module).
///
/// Thread-safety: `Send` and `Sync`; the calls are serialised by a lock. A
/// `VkCommandBuffer` passed in is externally synchronised, as in Vulkan.
pub struct Ring {
    images: Vec<Image>,
    timeline: Timeline,
    desc: Description,
    /// `LINEAR` blits are allowed on the ring's format.
    linear_filter: bool,
    state: Mutex<State>,
    /// A ring of video frames: the RGB format its frames are sampled into.
    video: Option<vk::Format>,
    /// A ring of video frames: its sampling pass, made by `cmd_prepare` (with
    /// the colour description set by then; locked after `state`).
    sampling: Mutex<Option<ycbcr::Sampling>>,
}

/// The timeline: shared with CUDA, or a plain Vulkan one in a Vulkan-only
/// context (the producer is then another Vulkan queue or the host).
enum Timeline {
    Shared(Semaphore),
    Plain(Arc<Context>, vk::Semaphore),
}

/// Where the frames are.
#[derive(Debug, Default)]
struct State {
    /// `cmd_prepare` was recorded.
    prepared: bool,
    /// The last frame handed to the producer.
    begun: u64,
    /// The last frame the producer finished (its signal is enqueued).
    ended: u64,
    /// The last frame recorded for presentation.
    presented: u64,
}

impl Ring {
    /// Creates `desc.count` shared images of `desc.format` (transfer source and
    /// destination, and storage and sampled where the format allows: CUDA writes
    /// them through surfaces) and one timeline semaphore starting at 0 (shared with
    /// CUDA; a plain Vulkan one in a Vulkan-only context). A count of 0 or over
    /// [`MAX_COUNT`], a format not in [`FORMATS`], or one the device cannot blit
    /// from is refused, naming it.
    pub fn create(ctx: &Arc<Context>, desc: &Description) -> Result<Ring> {
        if desc.count == 0 || desc.count > MAX_COUNT {
            return Err(Error::invalid(format!(
                "a present ring has 1 to {MAX_COUNT} images, not {}",
                desc.count
            )));
        }
        if desc.width == 0 || desc.height == 0 {
            return Err(Error::invalid(format!(
                "a present ring's images are at least 1x1, not {}x{}",
                desc.width, desc.height
            )));
        }
        // A multi-planar format: a ring of shared video frames, sampled into an
        // RGB image that is blitted.
        let planar = format::layout(desc.format).ok().and_then(|l| l.planar());
        if !FORMATS.contains(&desc.format) && planar.is_none() {
            return Err(Error::unsupported(format!(
                "{} cannot be presented from a ring: its images are one of {}, or shared video \
                 frames of a multi-planar (YCbCr) format",
                format::display(desc.format),
                FORMATS.map(format::display).join(", ")
            )));
        }
        let blit_format = planar.map_or(desc.format, |p| ycbcr::rgb_format(p.bits));
        let features = vkimage::optimal_features(&ctx.vk, blit_format);
        if !features.contains(vk::FormatFeatureFlags::BLIT_SRC) {
            return Err(Error::unsupported(format!(
                "the device cannot blit from {} images (no VK_FORMAT_FEATURE_BLIT_SRC_BIT with \
                 optimal tiling)",
                format::display(blit_format)
            )));
        }
        if planar.is_some() && !features.contains(vk::FormatFeatureFlags::STORAGE_IMAGE) {
            return Err(Error::unsupported(format!(
                "the device cannot write {} storage images (no \
                 VK_FORMAT_FEATURE_STORAGE_IMAGE_BIT with optimal tiling): a video frame is \
                 sampled into one",
                format::display(blit_format)
            )));
        }
        let linear_filter = features.contains(vk::FormatFeatureFlags::SAMPLED_IMAGE_FILTER_LINEAR);
        let timeline = match ctx.cuda {
            Some(_) => Timeline::Shared(Semaphore::create(ctx, Kind::Timeline, 0, None)?),
            None => Timeline::Plain(ctx.clone(), vksem::create_plain_timeline(&ctx.vk, 0)?),
        };
        let image_desc = ImageDescription {
            linear: planar.is_some(),
            ..ImageDescription::new_2d(desc.format, desc.width, desc.height)
        };
        let images = (0..desc.count)
            .map(|_| Image::create(ctx, &image_desc))
            .collect::<Result<Vec<_>>>()?;
        if planar.is_some() && !images[0].is_frame() {
            return Err(Error::unsupported(format!(
                "the device made no shared video frame of {}",
                format::display(desc.format)
            )));
        }
        if planar.is_none()
            && !images[0]
                .description()
                .usage
                .contains(vk::ImageUsageFlags::TRANSFER_SRC)
        {
            return Err(Error::unsupported(format!(
                "the device cannot make exportable {} images with transfer-source usage",
                format::display(desc.format)
            )));
        }
        Ok(Ring {
            images,
            timeline,
            desc: *desc,
            linear_filter,
            state: Mutex::new(State::default()),
            video: planar.map(|_| blit_format),
            sampling: Mutex::new(None),
        })
    }

    /// Whether the ring holds shared video frames (a multi-planar format).
    pub fn is_video(&self) -> bool {
        self.video.is_some()
    }

    /// Sets the colour description every frame of a video ring is sampled with
    /// (the decoder's: matrix, range, chroma siting; [`VideoColor::DEFAULT`]
    /// until set), on every slot's image. Set before
    /// [`cmd_prepare`](Self::cmd_prepare), which makes the sampling pass with it
    /// (after it: [`ErrorKind::InvalidState`]). Refused for a ring that is not of
    /// video frames, and for a description the device cannot sample (a chroma
    /// siting its format features lack: the ring keeps its previous one).
    pub fn set_video_color(&self, color: &VideoColor) -> Result<()> {
        // The description itself first (as an image's), then the ring.
        color.check()?;
        color.model()?;
        if self.video.is_none() {
            return Err(Error::invalid(format!(
                "the ring's {} images are not video frames: a colour description is for a ring \
                 of a multi-planar (YCbCr) format",
                format::display(self.desc.format)
            )));
        };
        let state = self.state();
        if state.prepared {
            return Err(Error::new(
                ErrorKind::InvalidState,
                "the ring is prepared: its colour description is set before cmd_prepare",
            ));
        }
        let old = self.images[0].video_color()?;
        let set = |c: &VideoColor| self.images.iter().try_for_each(|im| im.set_video_color(c));
        match set(color).and_then(|()| self.images[0].ycbcr_conversion()) {
            Ok(_) => {
                drop(state);
                Ok(())
            }
            Err(e) => {
                let _ = set(&old);
                Err(e)
            }
        }
    }

    /// The colour description a video ring's frames are sampled with.
    pub fn video_color(&self) -> Result<VideoColor> {
        if self.video.is_none() {
            return Err(Error::invalid(format!(
                "the ring's {} images are not video frames",
                format::display(self.desc.format)
            )));
        }
        self.images[0].video_color()
    }

    /// What the ring is.
    pub fn description(&self) -> &Description {
        &self.desc
    }

    /// The ring's images, slot by slot.
    pub fn images(&self) -> &[Image] {
        &self.images
    }

    /// The image of slot `index` (what [`Write::index`] names); `None` past the end.
    pub fn image(&self, index: u32) -> Option<&Image> {
        self.images.get(index as usize)
    }

    /// The timeline semaphore the engine's submits wait on and signal.
    pub fn vk_timeline(&self) -> vk::Semaphore {
        match &self.timeline {
            Timeline::Shared(s) => s.vk_semaphore(),
            Timeline::Plain(_, s) => *s,
        }
    }

    /// The shared timeline (`None` in a Vulkan-only context).
    pub fn timeline(&self) -> Option<&Semaphore> {
        match &self.timeline {
            Timeline::Shared(s) => Some(s),
            Timeline::Plain(..) => None,
        }
    }

    /// The context the ring was made from.
    pub fn context(&self) -> &Arc<Context> {
        self.images[0].context()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records into `cmd` the release of every slot to CUDA (from `UNDEFINED`, to
    /// `GENERAL` and `VK_QUEUE_FAMILY_EXTERNAL`), once, before the first frame;
    /// the engine's submit signals the returned value (1) on the timeline, which
    /// the first frames' producer waits for. A second call is refused. A ring of
    /// video frames first makes its sampling pass with the colour description
    /// set by then ([`set_video_color`](Self::set_video_color)); one the device
    /// cannot sample is refused ([`ErrorKind::Unsupported`]), nothing recorded.
    ///
    /// # Safety
    /// `cmd` is a command buffer of the ring's device in the recording state, for
    /// a queue of `queue_family`, externally synchronised by the caller.
    pub unsafe fn cmd_prepare(&self, cmd: vk::CommandBuffer, queue_family: u32) -> Result<Submit> {
        let dev = &self.context().vk;
        let mut state = self.state();
        if state.prepared {
            return Err(Error::new(
                ErrorKind::InvalidState,
                "the ring is prepared already: cmd_prepare is recorded once",
            ));
        }
        null_command_buffer(cmd)?;
        let scope = Scope::new(queue_family);
        check_scope(&scope, dev, Direction::Release)?;
        if let Some(rgb) = self.video {
            // The sampling pass, with the colour description set by now.
            let conversion = self.images[0].ycbcr_conversion()?;
            let pass = ycbcr::Sampling::new(self.context(), &self.images, &conversion, rgb)?;
            *self.sampling.lock().unwrap_or_else(|p| p.into_inner()) = Some(pass);
        }
        let barriers: Vec<_> = self
            .images
            .iter()
            .map(|im| {
                barrier::image_barrier(
                    Direction::Release,
                    &scope,
                    &self.range(im, vk::ImageLayout::UNDEFINED),
                )
            })
            .collect();
        // SAFETY: the caller's command buffer of this device; barriers built here.
        barrier::record_barriers(dev, cmd, &[], &barriers);
        state.prepared = true;
        let mut s = self.submit(0, 0, false);
        s.wait_count = 0;
        s.signal_values[0] = 1;
        Ok(s)
    }

    /// Hands the producer the next frame to write: its slot and the timeline
    /// values it waits for and signals ([`Write`]). Refused before
    /// [`cmd_prepare`](Self::cmd_prepare), while a frame is being written, and
    /// when every slot holds a frame not yet recorded for presentation.
    pub fn begin_write(&self) -> Result<Write> {
        let mut state = self.state();
        let w = self.next_write(&state)?;
        state.begun = w.frame;
        Ok(w)
    }

    fn next_write(&self, state: &State) -> Result<Write> {
        if !state.prepared {
            return Err(Error::new(
                ErrorKind::InvalidState,
                "the ring is not prepared: record cmd_prepare (vkcuda_present_ring_cmd_prepare) \
                 and submit it before the first frame",
            ));
        }
        if state.begun != state.ended {
            return Err(Error::new(
                ErrorKind::InvalidState,
                format!(
                    "frame {} is being written: end it before beginning another",
                    state.begun
                ),
            ));
        }
        let k = state.begun + 1;
        let n = u64::from(self.desc.count);
        if k > state.presented + n {
            return Err(Error::new(
                ErrorKind::InvalidState,
                format!(
                    "every slot of the ring holds a frame not yet presented: record the present \
                     of frame {} before writing frame {k}",
                    state.presented + 1
                ),
            ));
        }
        Ok(self.write_of(k))
    }

    /// Frame `k`'s slot and timeline values.
    fn write_of(&self, k: u64) -> Write {
        let n = u64::from(self.desc.count);
        Write {
            frame: k,
            index: ((k - 1) % n) as u32,
            free_value: if k > n { 2 * (k - n) + 1 } else { 1 },
            order_value: 2 * (k - 1) + 1,
            signal_value: 2 * k,
        }
    }

    /// Tells the ring the producer finished frame `frame` (its signal of
    /// `Write::signal_value` is submitted or enqueued): the frame may be presented.
    pub fn end_write(&self, frame: u64) -> Result<()> {
        let mut state = self.state();
        if state.begun == state.ended || frame != state.begun {
            return Err(Error::new(
                ErrorKind::InvalidState,
                format!(
                    "frame {frame} is not being written (the frame begun last is {}, {})",
                    state.begun,
                    if state.begun == state.ended {
                        "already ended"
                    } else {
                        "not ended"
                    }
                ),
            ));
        }
        state.ended = frame;
        Ok(())
    }

    /// [`begin_write`](Self::begin_write) for CUDA: enqueues on `stream` the wait
    /// for the slot to be free, and returns the frame. `stream` must be of the
    /// context's CUDA context or a default stream.
    pub fn cuda_begin(&self, stream: CUstream) -> Result<Write> {
        let sem = self.shared()?;
        let mut state = self.state();
        let w = self.next_write(&state)?;
        self.context().check_stream(stream)?;
        sem.cuda_wait(w.free_value, stream)?;
        state.begun = w.frame;
        Ok(w)
    }

    /// [`end_write`](Self::end_write) for CUDA: enqueues on `stream` the wait for
    /// the previous frame's copy and the signal that frame `frame` is written.
    pub fn cuda_end(&self, frame: u64, stream: CUstream) -> Result<()> {
        let sem = self.shared()?;
        let mut state = self.state();
        if state.begun == state.ended || frame != state.begun {
            drop(state);
            return self.end_write(frame); // its message
        }
        self.context().check_stream(stream)?;
        sem.cuda_wait(2 * (frame - 1) + 1, stream)?;
        sem.cuda_signal(2 * frame, stream)?;
        state.ended = frame;
        Ok(())
    }

    /// The producer's side on a Vulkan queue (a Vulkan-only context's stand-in for
    /// CUDA, or a copy the engine makes itself): records into `cmd` the acquire of
    /// `write`'s slot from CUDA (to `TRANSFER_DST_OPTIMAL`), the copy of the whole
    /// image from `buffer` at `offset` (texels packed row after row; a video
    /// frame's planes one after the other, each packed), and the
    /// release back to CUDA (`GENERAL`), and ends the frame: the engine's submit
    /// must wait for `write.order_value` (which follows `write.free_value`) and
    /// signal `write.signal_value` on [`vk_timeline`](Self::vk_timeline). Frame `k`
    /// is uploaded once the present of frame `k - 1` is recorded (and submitted
    /// first: on one queue the upload's wait would otherwise block the copy it
    /// waits for); so a Vulkan producer is one frame ahead at most, where CUDA, on
    /// its own stream, may be up to the ring's count ahead.
    ///
    /// # Safety
    /// `cmd` is a command buffer of the ring's device in the recording state, for a
    /// queue of `queue_family`, externally synchronised by the caller; `buffer` is
    /// a buffer of that device with `TRANSFER_SRC` usage holding the image's bytes
    /// at `offset`.
    pub unsafe fn cmd_upload(
        &self,
        cmd: vk::CommandBuffer,
        queue_family: u32,
        write: &Write,
        buffer: vk::Buffer,
        offset: u64,
    ) -> Result<()> {
        let dev = &self.context().vk;
        let mut state = self.state();
        if state.begun == state.ended || write.frame != state.begun {
            return Err(Error::new(
                ErrorKind::InvalidState,
                format!(
                    "frame {} is not being written (begin_write hands out the frame)",
                    write.frame
                ),
            ));
        }
        let expected = Write {
            frame: write.frame,
            ..self.write_of(write.frame)
        };
        if *write != expected {
            let show = |w: &Write| {
                format!(
                    "{{image_index {}, free_value {}, order_value {}, signal_value {}}}",
                    w.index, w.free_value, w.order_value, w.signal_value
                )
            };
            return Err(Error::invalid(format!(
                "write is {}, but begin_write handed out {} for frame {}",
                show(write),
                show(&expected),
                write.frame
            )));
        }
        if state.presented + 1 < write.frame {
            // Its submit waits for the previous frame's copy: queued ahead of that
            // copy on one queue, it would wait forever.
            return Err(Error::new(
                ErrorKind::InvalidState,
                format!(
                    "frame {} is uploaded on a Vulkan queue after the present of frame {} is \
                     recorded (its submit waits for that copy; queued ahead of it, it would wait \
                     forever)",
                    write.frame,
                    write.frame - 1
                ),
            ));
        }
        null_command_buffer(cmd)?;
        if buffer == vk::Buffer::null() {
            return Err(Error::null("buffer"));
        }
        let scope = Scope::with_defaults(
            queue_family,
            vk::PipelineStageFlags::TRANSFER,
            vk::AccessFlags::TRANSFER_WRITE,
        );
        check_scope(&scope, dev, Direction::Acquire)?;
        let im = &self.images[((write.frame - 1) % u64::from(self.desc.count)) as usize];
        let slot = self.range(im, vk::ImageLayout::TRANSFER_DST_OPTIMAL);
        let acquire = [barrier::image_barrier(Direction::Acquire, &scope, &slot)];
        barrier::record_barriers(dev, cmd, &[], &acquire);
        // One region per plane, the planes packed one after the other.
        let mut at = offset;
        let regions: Vec<_> = (0..im.plane_count())
            .map(|p| {
                let extent = im.plane_extent(p);
                let region = vk::BufferImageCopy {
                    buffer_offset: at,
                    buffer_row_length: 0,
                    buffer_image_height: 0,
                    image_subresource: vk::ImageSubresourceLayers {
                        aspect_mask: im.plane_aspect(p),
                        mip_level: 0,
                        base_array_layer: 0,
                        layer_count: 1,
                    },
                    image_offset: vk::Offset3D::default(),
                    image_extent: vk::Extent3D { depth: 1, ..extent },
                };
                at += u64::from(extent.width)
                    * u64::from(extent.height)
                    * u64::from(im.layout().plane(p).info.bytes_per_texel());
                region
            })
            .collect();
        dev.device.cmd_copy_buffer_to_image(
            cmd,
            buffer,
            im.vk_image(),
            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
            &regions,
        );
        let release = [barrier::image_barrier(Direction::Release, &scope, &slot)];
        barrier::record_barriers(dev, cmd, &[], &release);
        state.ended = write.frame;
        Ok(())
    }

    fn shared(&self) -> Result<&Semaphore> {
        self.timeline().ok_or_else(|| {
            Error::new(
                ErrorKind::CudaUnavailable,
                "the ring's context is Vulkan-only: its producer uses begin_write and end_write",
            )
        })
    }

    /// Records into `cmd` the presentation of the next frame CUDA finished: the
    /// acquire of its slot from CUDA (to `TRANSFER_SRC_OPTIMAL`) and of `target`
    /// (to `TRANSFER_DST_OPTIMAL`) in one barrier, the blit of the whole image to
    /// the whole target (format conversion and scaling), and one barrier that
    /// releases the slot back to CUDA and moves `target` to its new layout
    /// (`PRESENT_SRC_KHR`). A video frame is first sampled through its YCbCr
    /// conversion into the ring's RGB image, which is blitted (the submit waits
    /// for the timeline at `COMPUTE_SHADER`). A zero extent records nothing.
    /// Returns what the engine's submit waits on and signals.
    ///
    /// Refused, with nothing recorded: a target of another `VkDevice`
    /// ([`ErrorKind::DeviceMismatch`]), a target format the device cannot blit into
    /// from the ring's (named), a null image with a non-zero extent, and a frame
    /// the producer has not finished ([`ErrorKind::InvalidState`]).
    ///
    /// # Safety
    /// `cmd` is a command buffer of the ring's device in the recording state, for a
    /// queue of `queue_family`, externally synchronised by the caller; `target`
    /// describes an image of that device truthfully (format, extent, layout,
    /// `TRANSFER_DST` usage).
    pub unsafe fn cmd_present(
        &self,
        cmd: vk::CommandBuffer,
        queue_family: u32,
        target: &Target,
    ) -> Result<Submit> {
        let dev = &self.context().vk;
        if target.device != dev.device.handle() {
            return Err(Error::new(
                ErrorKind::DeviceMismatch,
                format!(
                    "the target image belongs to VkDevice {:?}, not to the ring's VkDevice {:?}: \
                     a blit copies between images of one device",
                    target.device,
                    dev.device.handle()
                ),
            ));
        }
        let mut state = self.state();
        let k = state.presented + 1;
        if k > state.ended {
            let why = if !state.prepared {
                "the ring is not prepared (cmd_prepare) and no frame was written".to_string()
            } else if state.begun == k {
                format!("frame {k} is still being written: CUDA has not released it (cuda_end)")
            } else {
                format!("no frame waits to be presented: frame {k} was not written yet")
            };
            return Err(Error::new(ErrorKind::InvalidState, why));
        }
        let index = ((k - 1) % u64::from(self.desc.count)) as u32;
        let visible = target.extent.width != 0 && target.extent.height != 0;
        if visible {
            null_command_buffer(cmd)?;
            self.check_target(target)?;
            let (stage, access) = self.slot_use();
            let scope = Scope::with_defaults(queue_family, stage, access);
            check_scope(&scope, dev, Direction::Acquire)?;
            let slot = &self.images[index as usize];
            let pass = self.sampling.lock().unwrap_or_else(|p| p.into_inner());
            let video = pass.as_ref().map(|p| (p, index as usize));
            self.record_blit(cmd, &scope, slot, target, video);
        }
        state.presented = k;
        let mut s = self.submit(k, index, visible);
        s.wait_stages[0] = self.slot_use().0;
        if visible && target.acquired != vk::Semaphore::null() {
            s.wait_semaphores[1] = target.acquired;
            s.wait_count = 2;
        }
        if visible && target.rendered != vk::Semaphore::null() {
            s.signal_semaphores[1] = target.rendered;
            s.signal_count = 2;
        }
        Ok(s)
    }

    /// The stage and access that read a slot in `cmd_present`: the blit
    /// (`TRANSFER`), or a video frame's sampling pass (`COMPUTE_SHADER`).
    fn slot_use(&self) -> (vk::PipelineStageFlags, vk::AccessFlags) {
        if self.video.is_some() {
            (
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::AccessFlags::SHADER_READ,
            )
        } else {
            (
                vk::PipelineStageFlags::TRANSFER,
                vk::AccessFlags::TRANSFER_READ,
            )
        }
    }

    /// The target's image and format, checked before anything is recorded.
    fn check_target(&self, t: &Target) -> Result<()> {
        let dev = &self.context().vk;
        if t.image == vk::Image::null() {
            return Err(Error::new(
                ErrorKind::NullPointer,
                "the target image is VK_NULL_HANDLE (only a zero extent may have none)",
            ));
        }
        let name = format::display(t.format);
        // A value that is no VkFormat goes to no driver query
        // (VUID-vkGetPhysicalDeviceFormatProperties-format-parameter).
        let Some(spelled) = format::name(t.format) else {
            return Err(Error::unsupported(format!(
                "the target format {name} is not a VkFormat: the ring's images cannot be \
                 blitted into it"
            )));
        };
        let features = vkimage::optimal_features(dev, t.format);
        let why = if spelled.ends_with("_UINT") || spelled.ends_with("_SINT") {
            Some("an integer format: a blit from a float or normalised format cannot write it")
        } else if spelled.starts_with("VK_FORMAT_D") || spelled.starts_with("VK_FORMAT_S8") {
            Some("a depth/stencil format: a blit from a colour format cannot write it")
        } else if !features.contains(vk::FormatFeatureFlags::BLIT_DST) {
            Some("the device has no VK_FORMAT_FEATURE_BLIT_DST_BIT for it with optimal tiling")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(Error::unsupported(format!(
                "the ring's {} images cannot be blitted into a {name} image: {why}",
                format::display(self.desc.format)
            )));
        }
        for (layout, what) in [(t.old_layout, "old_layout"), (t.new_layout, "new_layout")] {
            if !TARGET_LAYOUTS.contains(&layout) {
                return Err(Error::invalid(format!(
                    "target {what} is {:?} ({}): a target image is in UNDEFINED (old_layout: \
                     contents discarded; new_layout: PRESENT_SRC_KHR), PRESENT_SRC_KHR, GENERAL, \
                     TRANSFER_SRC/DST_OPTIMAL, COLOR_ATTACHMENT_OPTIMAL or SHADER_READ_ONLY_OPTIMAL",
                    layout,
                    layout.as_raw()
                )));
            }
        }
        if t.filter != vk::Filter::LINEAR && t.filter != vk::Filter::NEAREST {
            return Err(Error::invalid(format!(
                "target filter {} is not VK_FILTER_NEAREST or VK_FILTER_LINEAR",
                t.filter.as_raw()
            )));
        }
        Ok(())
    }

    /// Records the acquire of slot `src` and of the target, the blit (of a video
    /// frame: its sampling pass into the RGB image, then the blit of that), and
    /// the release of the slot and the target's move to its new layout.
    unsafe fn record_blit(
        &self,
        cmd: vk::CommandBuffer,
        scope: &Scope,
        src: &Image,
        t: &Target,
        video: Option<(&ycbcr::Sampling, usize)>,
    ) {
        let dev = &self.context().vk;
        let new_layout = match t.new_layout {
            vk::ImageLayout::UNDEFINED => vk::ImageLayout::PRESENT_SRC_KHR,
            l => l,
        };
        let slot_layout = if video.is_some() {
            vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL
        } else {
            vk::ImageLayout::TRANSFER_SRC_OPTIMAL
        };
        let slot = self.range(src, slot_layout);
        let slot_acquire =
            barrier::image_barrier1(&barrier::image_barrier(Direction::Acquire, scope, &slot));
        let target_acquire = ycbcr::transition(
            t.image,
            (vk::AccessFlags::empty(), t.old_layout),
            (
                vk::AccessFlags::TRANSFER_WRITE,
                vk::ImageLayout::TRANSFER_DST_OPTIMAL,
            ),
        );
        // The source stage is the one the submit waits at (the timeline: TRANSFER,
        // or COMPUTE_SHADER for a video frame's pass; the acquired semaphore:
        // TRANSFER), so this barrier's layout transitions follow those waits.
        let blit_src = match video {
            Some((pass, index)) => {
                dev.device.cmd_pipeline_barrier(
                    cmd,
                    vk::PipelineStageFlags::COMPUTE_SHADER,
                    vk::PipelineStageFlags::COMPUTE_SHADER,
                    vk::DependencyFlags::empty(),
                    &[],
                    &[],
                    &[slot_acquire],
                );
                pass.record(cmd, index);
                dev.device.cmd_pipeline_barrier(
                    cmd,
                    vk::PipelineStageFlags::TRANSFER,
                    vk::PipelineStageFlags::TRANSFER,
                    vk::DependencyFlags::empty(),
                    &[],
                    &[],
                    &[target_acquire],
                );
                pass.rgb()
            }
            None => {
                dev.device.cmd_pipeline_barrier(
                    cmd,
                    vk::PipelineStageFlags::TRANSFER,
                    vk::PipelineStageFlags::TRANSFER,
                    vk::DependencyFlags::empty(),
                    &[],
                    &[],
                    &[slot_acquire, target_acquire],
                );
                src.vk_image()
            }
        };
        let layers = vk::ImageSubresourceLayers {
            aspect_mask: vk::ImageAspectFlags::COLOR,
            mip_level: 0,
            base_array_layer: 0,
            layer_count: 1,
        };
        let corner = |w: u32, h: u32| vk::Offset3D {
            x: w as i32,
            y: h as i32,
            z: 1,
        };
        let region = vk::ImageBlit {
            src_subresource: layers,
            src_offsets: [
                vk::Offset3D::default(),
                corner(self.desc.width, self.desc.height),
            ],
            dst_subresource: layers,
            dst_offsets: [
                vk::Offset3D::default(),
                corner(t.extent.width, t.extent.height),
            ],
        };
        let filter = if t.filter == vk::Filter::LINEAR && self.linear_filter {
            vk::Filter::LINEAR
        } else {
            vk::Filter::NEAREST
        };
        dev.device.cmd_blit_image(
            cmd,
            blit_src,
            vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
            t.image,
            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
            &[region],
            filter,
        );
        // Nothing was written to the slot: no write to make available.
        let release_scope = *scope;
        let mut back = barrier::image_barrier1(&barrier::image_barrier(
            Direction::Release,
            &release_scope,
            &slot,
        ));
        back.src_access_mask = vk::AccessFlags::empty();
        // Every later command of the queue waits for this barrier (ALL_COMMANDS): the
        // slot's next acquire, frames later, is then ordered after this release in
        // submission order too, not only through CUDA's timeline values (which the
        // validation layer cannot see). A layout other than PRESENT_SRC_KHR is for
        // the engine's next commands: the blit's writes are made visible to them;
        // presenting is ordered by the engine's semaphore.
        let after = vk::PipelineStageFlags::ALL_COMMANDS;
        let after_access = if new_layout == vk::ImageLayout::PRESENT_SRC_KHR {
            vk::AccessFlags::empty()
        } else {
            vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE
        };
        let release = [
            back,
            ycbcr::transition(
                t.image,
                (
                    vk::AccessFlags::TRANSFER_WRITE,
                    vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                ),
                (after_access, new_layout),
            ),
        ];
        dev.device.cmd_pipeline_barrier(
            cmd,
            vk::PipelineStageFlags::TRANSFER | scope.stages,
            after,
            vk::DependencyFlags::empty(),
            &[],
            &[],
            &release,
        );
    }

    /// A slot's whole-image range in `layout`.
    fn range(&self, im: &Image, layout: vk::ImageLayout) -> ImageRange {
        im.handoff_range(layout)
    }

    /// The submit of frame `k`: waits for `2k` at TRANSFER, signals `2k + 1`.
    fn submit(&self, k: u64, index: u32, recorded: bool) -> Submit {
        let t = self.vk_timeline();
        Submit {
            frame: k,
            index,
            recorded,
            wait_semaphores: [t, vk::Semaphore::null()],
            wait_values: [2 * k, 0],
            wait_stages: [vk::PipelineStageFlags::TRANSFER; 2],
            wait_count: 1,
            signal_semaphores: [t, vk::Semaphore::null()],
            signal_values: [2 * k + 1, 0],
            signal_count: 1,
        }
    }
}

/// The scope's check, its message naming the argument as these calls have it.
fn check_scope(scope: &Scope, dev: &super::vulkan::VulkanDevice, dir: Direction) -> Result<()> {
    scope.check(&dev.rules, dir).map_err(|mut e| {
        e.message = e
            .message
            .replace("info->queue_family_index", "queue_family_index");
        e
    })
}

fn null_command_buffer(cmd: vk::CommandBuffer) -> Result<()> {
    if cmd == vk::CommandBuffer::null() {
        return Err(Error::new(
            ErrorKind::NullPointer,
            "the command buffer is NULL",
        ));
    }
    Ok(())
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("desc", &self.desc)
            .field("timeline", &self.vk_timeline())
            .finish_non_exhaustive()
    }
}

impl Drop for Timeline {
    fn drop(&mut self) {
        if let Timeline::Plain(ctx, sem) = self {
            vksem::destroy(&ctx.vk, *sem);
        }
    }
}
