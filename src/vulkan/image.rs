//! Exportable images: support queries (format features, external image format
//! properties), `VkImage` creation with exportable memory (one dedicated
//! allocation, or one allocation per plane of a disjoint multi-planar image), and
//! the memory requirements of an engine's image.

use ash::vk;

use super::memory::HANDLE_TYPE;
use super::support::find_memory_type;
use super::VulkanDevice;
use crate::error::{Error, Result};
use crate::format;
use crate::stats;

/// What `vkCreateImage` gets (sharing is always EXCLUSIVE). Tiling is OPTIMAL,
/// or LINEAR for shared video frames (multi-planar, non-disjoint, one dedicated
/// allocation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageParams {
    pub image_type: vk::ImageType,
    pub tiling: vk::ImageTiling,
    pub format: vk::Format,
    pub extent: vk::Extent3D,
    pub mip_levels: u32,
    pub array_layers: u32,
    pub flags: vk::ImageCreateFlags,
    pub usage: vk::ImageUsageFlags,
}

/// One allocation of an image: the memory of a single-plane image or of a video
/// frame, or of one plane of a disjoint multi-planar image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlaneMemory {
    /// The `VkDeviceMemory`.
    pub memory: vk::DeviceMemory,
    /// The size of the whole allocation.
    pub allocation_size: u64,
    /// Where the plane (or the single-plane image) is bound in `memory`: 0 unless
    /// an engine's image was wrapped inside a block shared with other resources.
    pub offset: u64,
    /// `memory` is a dedicated allocation for the image (single-plane images the
    /// library makes or imports; never a plane of a disjoint image).
    pub dedicated: bool,
}

/// A `VkImage` bound at offset 0 of exportable memory of its own: one dedicated
/// allocation (`planes.len() == 1`), or one allocation per plane of a disjoint
/// multi-planar image (never dedicated: `VkMemoryDedicatedAllocateInfo` may not
/// name a disjoint image).
#[derive(Clone, Debug)]
pub struct ImageMemory {
    pub image: vk::Image,
    pub planes: Vec<PlaneMemory>,
}

impl ImageMemory {
    /// Destroys the image, then frees the memory.
    pub fn destroy(&self, dev: &VulkanDevice) {
        // SAFETY: all were created on this device and the caller no longer uses them.
        unsafe {
            dev.device.destroy_image(self.image, None);
            for p in &self.planes {
                dev.device.free_memory(p.memory, None);
                stats::VK_MEMORIES.sub();
            }
        }
        stats::VK_IMAGES.sub();
    }
}

/// The aspect of plane `p` of a multi-planar image.
pub fn plane_aspect(p: usize) -> vk::ImageAspectFlags {
    [
        vk::ImageAspectFlags::PLANE_0,
        vk::ImageAspectFlags::PLANE_1,
        vk::ImageAspectFlags::PLANE_2,
    ][p]
}

/// The format features each usage needs (optimal tiling).
pub const USAGE_FEATURES: [(vk::ImageUsageFlags, vk::FormatFeatureFlags, &str); 7] = [
    (
        vk::ImageUsageFlags::TRANSFER_SRC,
        vk::FormatFeatureFlags::TRANSFER_SRC,
        "VK_IMAGE_USAGE_TRANSFER_SRC_BIT",
    ),
    (
        vk::ImageUsageFlags::TRANSFER_DST,
        vk::FormatFeatureFlags::TRANSFER_DST,
        "VK_IMAGE_USAGE_TRANSFER_DST_BIT",
    ),
    (
        vk::ImageUsageFlags::SAMPLED,
        vk::FormatFeatureFlags::SAMPLED_IMAGE,
        "VK_IMAGE_USAGE_SAMPLED_BIT",
    ),
    (
        vk::ImageUsageFlags::STORAGE,
        vk::FormatFeatureFlags::STORAGE_IMAGE,
        "VK_IMAGE_USAGE_STORAGE_BIT",
    ),
    (
        vk::ImageUsageFlags::COLOR_ATTACHMENT,
        vk::FormatFeatureFlags::COLOR_ATTACHMENT,
        "VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT",
    ),
    (
        vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT,
        vk::FormatFeatureFlags::DEPTH_STENCIL_ATTACHMENT,
        "VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT",
    ),
    (
        vk::ImageUsageFlags::INPUT_ATTACHMENT,
        vk::FormatFeatureFlags::COLOR_ATTACHMENT,
        "VK_IMAGE_USAGE_INPUT_ATTACHMENT_BIT",
    ),
];

/// Vulkan flags for messages: their names, or "none".
fn flags_text<T: std::fmt::Debug + PartialEq + Default>(flags: T) -> String {
    if flags == T::default() {
        "none".into()
    } else {
        format!("{flags:?}")
    }
}

/// The optimal-tiling features of `format` on the device.
pub fn optimal_features(dev: &VulkanDevice, format: vk::Format) -> vk::FormatFeatureFlags {
    features(dev, format, vk::ImageTiling::OPTIMAL)
}

/// The features of `format` with `tiling` (OPTIMAL or LINEAR) on the device.
pub fn features(
    dev: &VulkanDevice,
    format: vk::Format,
    tiling: vk::ImageTiling,
) -> vk::FormatFeatureFlags {
    // SAFETY: valid physical device.
    let props = unsafe {
        dev.instance
            .get_physical_device_format_properties(dev.physical, format)
    };
    if tiling == vk::ImageTiling::LINEAR {
        props.linear_tiling_features
    } else {
        props.optimal_tiling_features
    }
}

/// "optimal" or "linear".
pub fn tiling_name(tiling: vk::ImageTiling) -> &'static str {
    if tiling == vk::ImageTiling::LINEAR {
        "linear"
    } else {
        "optimal"
    }
}

/// Refuses usages the format's features with `tiling` do not allow, naming the
/// usage and the missing feature.
pub fn check_usage_features(
    dev: &VulkanDevice,
    format: vk::Format,
    tiling: vk::ImageTiling,
    usage: vk::ImageUsageFlags,
) -> Result<()> {
    usage_refusal(format, tiling, features(dev, format, tiling), usage)
}

/// [`check_usage_features`] against features already read.
fn usage_refusal(
    format: vk::Format,
    tiling: vk::ImageTiling,
    features: vk::FormatFeatureFlags,
    usage: vk::ImageUsageFlags,
) -> Result<()> {
    for (u, f, name) in USAGE_FEATURES {
        if usage.contains(u) && !features.contains(f) {
            return Err(Error::unsupported(format!(
                "{} does not support {name} on this device: its {}-tiling format features \
                 ({}) lack {f:?}",
                format::display(format),
                tiling_name(tiling),
                flags_text(features)
            )));
        }
    }
    Ok(())
}

/// The usage bits of `usage` whose format features `features` has.
fn usable(usage: vk::ImageUsageFlags, features: vk::FormatFeatureFlags) -> vk::ImageUsageFlags {
    let mut usage = usage;
    for (u, feature, _) in USAGE_FEATURES {
        if usage.contains(u) && !features.contains(feature) {
            usage &= !u;
        }
    }
    usage
}

/// What `vkGetPhysicalDeviceImageFormatProperties2` says of images of one
/// [`ImageParams`] shared as `OPAQUE_FD`, or the error it returned.
type External =
    std::result::Result<(vk::ImageFormatProperties, vk::ExternalMemoryProperties), vk::Result>;

/// What the device supports for images of one format and tiling, asked in one
/// go before an image is made: the format's features with that tiling and the
/// exportable-image properties of each usage the caller may make it with (each
/// reduced to the bits the features allow; an empty one is not asked about, nor
/// any for a disjoint image of a format without `DISJOINT`).
/// Every check of an image's description against the device reads this
/// snapshot, so none asks the driver again.
#[derive(Clone, Debug)]
pub struct FormatSupport {
    /// The image type, format, tiling, flags and extent asked about.
    params: ImageParams,
    /// The format's features with `params.tiling`.
    pub features: vk::FormatFeatureFlags,
    /// Per usage asked about: the exportable-image properties.
    external: Vec<(vk::ImageUsageFlags, External)>,
}

impl FormatSupport {
    /// Asks the device about images of `p` (its usage ignored) with each of
    /// `usages`, less the bits whose features the format lacks.
    pub fn query(dev: &VulkanDevice, p: &ImageParams, usages: &[vk::ImageUsageFlags]) -> Self {
        let features = features(dev, p.format, p.tiling);
        let mut external: Vec<(vk::ImageUsageFlags, External)> = Vec::new();
        // A disjoint image of a format without the feature is refused from the
        // features alone: the driver is not asked about one.
        let disjoint_refused = p.flags.contains(vk::ImageCreateFlags::DISJOINT)
            && !features.contains(vk::FormatFeatureFlags::DISJOINT);
        for &u in usages.iter().filter(|_| !disjoint_refused) {
            let usage = usable(u, features);
            if usage.is_empty() || external.iter().any(|(v, _)| *v == usage) {
                continue;
            }
            let q = ImageParams { usage, ..*p };
            external.push((usage, query_external(&dev.instance, dev.physical, &q)));
        }
        FormatSupport {
            params: ImageParams {
                usage: vk::ImageUsageFlags::empty(),
                ..*p
            },
            features,
            external,
        }
    }

    /// `usage` less the bits whose format features the format lacks.
    pub fn usable(&self, usage: vk::ImageUsageFlags) -> vk::ImageUsageFlags {
        usable(usage, self.features)
    }

    /// Refuses usages the format's features do not allow, naming the usage and
    /// the missing feature ([`check_usage_features`]).
    pub fn check_usage(&self, usage: vk::ImageUsageFlags) -> Result<()> {
        usage_refusal(self.params.format, self.params.tiling, self.features, usage)
    }

    /// Checks an image of the snapshot's parameters with `usage` (one of those
    /// asked about, with its features) against what the device supports for
    /// exportable images: the format/usage/type combination, the extent, mip
    /// levels and array layers limits.
    pub fn check_exportable(&self, usage: vk::ImageUsageFlags) -> Result<()> {
        let p = ImageParams {
            usage,
            ..self.params
        };
        // Every usage the library checks was asked about; another one would be
        // refused as the driver refuses a combination it does not support.
        let r = self
            .external
            .iter()
            .find(|(u, _)| *u == usage)
            .map_or(Err(vk::Result::ERROR_FORMAT_NOT_SUPPORTED), |(_, r)| *r);
        let (limits, ext) = external_result(&p, r)?;
        check_external(&p, &limits, &ext)
    }
}

/// Where plane `plane` (aspect `aspect`) of a LINEAR image lies in its memory:
/// offset, row pitch and size (`vkGetImageSubresourceLayout`, level 0, layer 0).
pub fn subresource_layout(
    dev: &VulkanDevice,
    image: vk::Image,
    aspect: vk::ImageAspectFlags,
) -> vk::SubresourceLayout {
    let sub = vk::ImageSubresource {
        aspect_mask: aspect,
        mip_level: 0,
        array_layer: 0,
    };
    // SAFETY: the caller passes a LINEAR image of this device and one of its aspects.
    unsafe { dev.device.get_image_subresource_layout(image, sub) }
}

/// What the device supports for images of `p` shared as `OPAQUE_FD`, or
/// `Unsupported` with the reason.
pub fn external_image_properties(
    dev: &VulkanDevice,
    p: &ImageParams,
) -> Result<(vk::ImageFormatProperties, vk::ExternalMemoryProperties)> {
    external_image_properties_of(&dev.instance, dev.physical, p)
}

/// The same for a physical device before any `VkDevice` exists.
pub fn external_image_properties_of(
    instance: &ash::Instance,
    physical: vk::PhysicalDevice,
    p: &ImageParams,
) -> Result<(vk::ImageFormatProperties, vk::ExternalMemoryProperties)> {
    external_result(p, query_external(instance, physical, p))
}

/// `vkGetPhysicalDeviceImageFormatProperties2` for images of `p` shared as
/// `OPAQUE_FD`.
fn query_external(
    instance: &ash::Instance,
    physical: vk::PhysicalDevice,
    p: &ImageParams,
) -> External {
    let mut ext_info =
        vk::PhysicalDeviceExternalImageFormatInfo::default().handle_type(HANDLE_TYPE);
    let info = vk::PhysicalDeviceImageFormatInfo2::default()
        .format(p.format)
        .ty(p.image_type)
        .tiling(p.tiling)
        .usage(p.usage)
        .flags(p.flags)
        .push_next(&mut ext_info);
    let mut ext_props = vk::ExternalImageFormatProperties::default();
    let mut props = vk::ImageFormatProperties2::default().push_next(&mut ext_props);
    // SAFETY: valid physical device; structs owned here.
    unsafe { instance.get_physical_device_image_format_properties2(physical, &info, &mut props) }?;
    let image_props = props.image_format_properties;
    Ok((image_props, ext_props.external_memory_properties))
}

/// The answer of [`query_external`] for `p`, or `Unsupported` with the reason.
fn external_result(
    p: &ImageParams,
    r: External,
) -> Result<(vk::ImageFormatProperties, vk::ExternalMemoryProperties)> {
    match r {
        Ok(props) => Ok(props),
        Err(vk::Result::ERROR_FORMAT_NOT_SUPPORTED) => Err(Error::unsupported(format!(
            "the device does not support {:?} images of {} with usage {} and flags {} \
             ({} tiling) as exportable OPAQUE_FD memory: \
             vkGetPhysicalDeviceImageFormatProperties2 returned VK_ERROR_FORMAT_NOT_SUPPORTED",
            p.image_type,
            format::display(p.format),
            flags_text(p.usage),
            flags_text(p.flags),
            tiling_name(p.tiling)
        ))),
        Err(r) => Err(Error::vk("vkGetPhysicalDeviceImageFormatProperties2", r)),
    }
}

/// Checks an image of `p` against the properties the device gave for it, as
/// exportable images: the format/usage/type combination, the extent, mip levels
/// and array layers limits.
fn check_external(
    p: &ImageParams,
    limits: &vk::ImageFormatProperties,
    ext: &vk::ExternalMemoryProperties,
) -> Result<()> {
    if !ext
        .external_memory_features
        .contains(vk::ExternalMemoryFeatureFlags::EXPORTABLE)
    {
        return Err(Error::unsupported(format!(
            "the device cannot export OPAQUE_FD memory for {:?} images of {} with usage {} \
             (external memory features: {})",
            p.image_type,
            format::display(p.format),
            flags_text(p.usage),
            flags_text(ext.external_memory_features)
        )));
    }
    if p.flags.contains(vk::ImageCreateFlags::DISJOINT)
        && ext
            .external_memory_features
            .contains(vk::ExternalMemoryFeatureFlags::DEDICATED_ONLY)
    {
        return Err(Error::unsupported(format!(
            "the device exports OPAQUE_FD memory for images of {} with usage {} only as \
             dedicated allocations (DEDICATED_ONLY), which the planes of a disjoint image cannot \
             have",
            format::display(p.format),
            flags_text(p.usage)
        )));
    }
    let e = p.extent;
    let m = limits.max_extent;
    if e.width > m.width || e.height > m.height || e.depth > m.depth {
        return Err(Error::unsupported(format!(
            "extent {}x{}x{} is larger than the device allows for exportable {:?} images of {} \
             ({}x{}x{})",
            e.width,
            e.height,
            e.depth,
            p.image_type,
            format::display(p.format),
            m.width,
            m.height,
            m.depth
        )));
    }
    if p.mip_levels > limits.max_mip_levels {
        return Err(Error::unsupported(format!(
            "{} mip levels are more than the device allows for these images ({})",
            p.mip_levels, limits.max_mip_levels
        )));
    }
    if p.array_layers > limits.max_array_layers {
        return Err(Error::unsupported(format!(
            "{} array layers are more than the device allows for these images ({})",
            p.array_layers, limits.max_array_layers
        )));
    }
    Ok(())
}

/// Destroys what an unfinished creation made when it returns early.
struct Partial<'a> {
    dev: &'a VulkanDevice,
    image: vk::Image,
    /// One per plane allocated so far.
    memory: Vec<PlaneMemory>,
}

impl Partial<'_> {
    fn finish(mut self) -> ImageMemory {
        stats::VK_IMAGES.add();
        for _ in &self.memory {
            stats::VK_MEMORIES.add();
        }
        let out = ImageMemory {
            image: self.image,
            planes: std::mem::take(&mut self.memory),
        };
        self.image = vk::Image::null();
        out
    }
}

impl Drop for Partial<'_> {
    fn drop(&mut self) {
        // SAFETY: each handle was created on this device and is not used by anyone.
        unsafe {
            if self.image != vk::Image::null() {
                self.dev.device.destroy_image(self.image, None);
            }
            for p in &self.memory {
                self.dev.device.free_memory(p.memory, None);
            }
        }
    }
}

/// Whether the driver requires (first) or prefers (second) a dedicated allocation
/// for `image` (`VkMemoryDedicatedRequirements`).
pub fn dedicated_requirements(dev: &VulkanDevice, image: vk::Image) -> (bool, bool) {
    let info = vk::ImageMemoryRequirementsInfo2::default().image(image);
    let mut ded = vk::MemoryDedicatedRequirements::default();
    let mut req = vk::MemoryRequirements2::default().push_next(&mut ded);
    // SAFETY: a valid image of this device; structs owned here.
    unsafe { dev.device.get_image_memory_requirements2(&info, &mut req) };
    (
        ded.requires_dedicated_allocation == vk::TRUE,
        ded.prefers_dedicated_allocation == vk::TRUE,
    )
}

/// The memory requirements of an image (any image of this device) with a single
/// allocation.
pub fn requirements(dev: &VulkanDevice, image: vk::Image) -> vk::MemoryRequirements {
    let info = vk::ImageMemoryRequirementsInfo2::default().image(image);
    let mut req = vk::MemoryRequirements2::default();
    // SAFETY: the caller passes an image of this device.
    unsafe { dev.device.get_image_memory_requirements2(&info, &mut req) };
    req.memory_requirements
}

/// The memory requirements of plane `plane` of a disjoint multi-planar image
/// (`VkImagePlaneMemoryRequirementsInfo`).
pub fn plane_requirements(
    dev: &VulkanDevice,
    image: vk::Image,
    plane: usize,
) -> vk::MemoryRequirements {
    let mut plane_info =
        vk::ImagePlaneMemoryRequirementsInfo::default().plane_aspect(plane_aspect(plane));
    let info = vk::ImageMemoryRequirementsInfo2::default()
        .image(image)
        .push_next(&mut plane_info);
    let mut req = vk::MemoryRequirements2::default();
    // SAFETY: the caller passes a disjoint multi-planar image of this device with
    // at least `plane + 1` planes.
    unsafe { dev.device.get_image_memory_requirements2(&info, &mut req) };
    req.memory_requirements
}

/// The requirements of each of `planes` planes: the image's for one plane (a
/// single allocation), each plane's for a disjoint image.
pub fn requirements_per_plane(
    dev: &VulkanDevice,
    image: vk::Image,
    planes: usize,
) -> Vec<vk::MemoryRequirements> {
    if planes == 1 {
        vec![requirements(dev, image)]
    } else {
        (0..planes)
            .map(|p| plane_requirements(dev, image, p))
            .collect()
    }
}

/// Binds every plane's memory at offset 0: `vkBindImageMemory` for one
/// allocation, one `vkBindImageMemory2` with a `VkBindImagePlaneMemoryInfo` per
/// plane for a disjoint image.
fn bind(dev: &VulkanDevice, image: vk::Image, memory: &[PlaneMemory]) -> Result<()> {
    if let [one] = memory {
        // SAFETY: the memory was allocated for this image, offset 0.
        return unsafe { dev.device.bind_image_memory(image, one.memory, 0) }
            .map_err(|r| dev.error("vkBindImageMemory", r));
    }
    let mut planes: Vec<_> = (0..memory.len())
        .map(|p| vk::BindImagePlaneMemoryInfo::default().plane_aspect(plane_aspect(p)))
        .collect();
    let infos: Vec<_> = memory
        .iter()
        .zip(planes.iter_mut())
        .map(|(m, plane)| {
            vk::BindImageMemoryInfo::default()
                .image(image)
                .memory(m.memory)
                .memory_offset(0)
                .push_next(plane)
        })
        .collect();
    // SAFETY: each allocation was made for its plane of this image, offset 0.
    unsafe { dev.device.bind_image_memory2(&infos) }
        .map_err(|r| dev.error("vkBindImageMemory2 (one allocation per plane)", r))
}

/// A `VkImage` of `p` created for `OPAQUE_FD` external memory (optimal tiling,
/// exclusive, initial layout UNDEFINED), not yet bound.
fn create_external_image<'a>(dev: &'a VulkanDevice, p: &ImageParams) -> Result<Partial<'a>> {
    dev.memory_fd()?;
    let mut ext = vk::ExternalMemoryImageCreateInfo::default().handle_types(HANDLE_TYPE);
    let info = vk::ImageCreateInfo::default()
        .flags(p.flags)
        .image_type(p.image_type)
        .format(p.format)
        .extent(p.extent)
        .mip_levels(p.mip_levels)
        .array_layers(p.array_layers)
        .samples(vk::SampleCountFlags::TYPE_1)
        .tiling(p.tiling)
        .usage(p.usage)
        .sharing_mode(vk::SharingMode::EXCLUSIVE)
        .initial_layout(vk::ImageLayout::UNDEFINED)
        .push_next(&mut ext);
    // SAFETY: valid device; the create info lives for the call.
    let image = unsafe { dev.device.create_image(&info, None) }
        .map_err(|r| dev.error("vkCreateImage", r))?;
    Ok(Partial {
        dev,
        image,
        memory: Vec::new(),
    })
}

/// A `VkImage` of `p` bound to memory imported from `handles`, one `OPAQUE_FD`
/// per plane of `sizes[plane]` bytes exported by another device or process: a
/// dedicated allocation for a single-plane image, one allocation per plane of a
/// disjoint image. The fds are consumed on success and closed on failure (they
/// are the caller's duplicates).
pub fn import_image(
    dev: &VulkanDevice,
    p: &ImageParams,
    handles: Vec<std::os::fd::OwnedFd>,
    sizes: &[u64],
) -> Result<ImageMemory> {
    assert_eq!(handles.len(), sizes.len(), "one fd per plane");
    let mut partial = create_external_image(dev, p)?;
    let image = partial.image;
    let planes = sizes.len();
    let reqs = requirements_per_plane(dev, image, planes);
    for (plane, (req, &size)) in reqs.iter().zip(sizes).enumerate() {
        if size < req.size {
            return Err(Error::invalid(format!(
                "allocation_size {size} is less than the {} bytes {} needs",
                req.size,
                what_needs(planes, plane)
            )));
        }
        if planes == 1 {
            super::memory::check_dedicated_size(
                size,
                req.size,
                "this image",
                "VUID-VkMemoryDedicatedAllocateInfo-image-01433",
            )?;
        }
    }
    for ((handle, req), &size) in handles.into_iter().zip(&reqs).zip(sizes) {
        let type_index = find_memory_type(
            &dev.props.memory,
            req.memory_type_bits,
            vk::MemoryPropertyFlags::DEVICE_LOCAL,
            vk::MemoryPropertyFlags::empty(),
        )
        .ok_or_else(|| {
            Error::unsupported("no DEVICE_LOCAL memory type is allowed for the imported image")
        })?;
        let handle = crate::fd::Handoff::new(handle);
        let mut import = vk::ImportMemoryFdInfoKHR::default()
            .handle_type(HANDLE_TYPE)
            .fd(handle.raw());
        let mut dedicated = vk::MemoryDedicatedAllocateInfo::default().image(image);
        let mut alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(size)
            .memory_type_index(type_index)
            .push_next(&mut import);
        if planes == 1 {
            alloc = alloc.push_next(&mut dedicated);
        }
        // SAFETY: valid device; the allocate info lives for the call.
        let memory = unsafe { dev.device.allocate_memory(&alloc, None) }
            .map_err(|r| dev.error("vkAllocateMemory (importing an image's OPAQUE_FD)", r))?;
        handle.taken();
        partial.memory.push(PlaneMemory {
            memory,
            allocation_size: size,
            offset: 0,
            dedicated: planes == 1,
        });
    }
    bind(dev, image, &partial.memory)?;
    Ok(partial.finish())
}

fn what_needs(planes: usize, plane: usize) -> String {
    if planes == 1 {
        "this image".into()
    } else {
        format!("plane {plane} of this image")
    }
}

/// A `VkImage` of `p` (optimal tiling, exclusive, initial layout UNDEFINED) with
/// exportable `OPAQUE_FD` memory of its own: one dedicated allocation when
/// `planes` is 1, else one (non-dedicated) allocation per plane of the disjoint
/// image (`p.flags` has `DISJOINT`). Check it first
/// ([`FormatSupport::check_exportable`]).
pub fn create_exportable_image(
    dev: &VulkanDevice,
    p: &ImageParams,
    planes: usize,
) -> Result<ImageMemory> {
    let mut partial = create_external_image(dev, p)?;
    let image = partial.image;
    let reqs = requirements_per_plane(dev, image, planes);
    let max = dev.props.max_allocation_size;
    for (plane, req) in reqs.iter().enumerate() {
        if max != 0 && req.size > max {
            return Err(Error::unsupported(format!(
                "{} needs {} bytes, more than the device's maxMemoryAllocationSize {max}",
                what_needs(planes, plane),
                req.size
            )));
        }
    }
    for req in &reqs {
        let type_index = find_memory_type(
            &dev.props.memory,
            req.memory_type_bits,
            vk::MemoryPropertyFlags::DEVICE_LOCAL,
            vk::MemoryPropertyFlags::empty(),
        )
        .ok_or_else(|| {
            Error::unsupported(format!(
                "no DEVICE_LOCAL memory type is allowed for an exportable image (memoryTypeBits {:#x})",
                req.memory_type_bits
            ))
        })?;
        let mut export = vk::ExportMemoryAllocateInfo::default().handle_types(HANDLE_TYPE);
        let mut dedicated = vk::MemoryDedicatedAllocateInfo::default().image(image);
        let mut alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(req.size)
            .memory_type_index(type_index)
            .push_next(&mut export);
        let what = if planes == 1 {
            alloc = alloc.push_next(&mut dedicated);
            "vkAllocateMemory (dedicated, exportable, for an image)"
        } else {
            "vkAllocateMemory (exportable, for a plane of a disjoint image)"
        };
        // SAFETY: valid device; the allocate info lives for the call.
        let memory =
            unsafe { dev.device.allocate_memory(&alloc, None) }.map_err(|r| dev.error(what, r))?;
        partial.memory.push(PlaneMemory {
            memory,
            allocation_size: req.size,
            offset: 0,
            dedicated: planes == 1,
        });
    }
    bind(dev, image, &partial.memory)?;
    Ok(partial.finish())
}
