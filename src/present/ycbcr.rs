//! The sampling pass of a ring of shared video frames: a compute shader samples
//! the frame through its `VkSamplerYcbcrConversion` into the ring's RGB image
//! (RGBA8 for 8-bit frames, RGBA16F for deeper ones), which the ring then blits
//! into the target like any ring image. The shader is `ycbcr.comp` beside this
//! file; its SPIR-V is committed (`ycbcr_rgba8.spv`, `ycbcr_rgba16f.spv`; the
//! command that builds them is in the shader's header).

use std::io::Cursor;
use std::sync::Arc;

use ash::vk;

use crate::context::Context;
use crate::error::{Error, Result};
use crate::image::{Conversion, Image};
use crate::vulkan::support::find_memory_type;

const SPIRV_RGBA8: &[u8] = include_bytes!("ycbcr_rgba8.spv");
const SPIRV_RGBA16F: &[u8] = include_bytes!("ycbcr_rgba16f.spv");

/// The shader's workgroup edge (`local_size_x` and `local_size_y`).
const GROUP: u32 = 16;

/// The Vulkan objects of one ring's sampling pass. Every handle starts null and
/// is destroyed on drop (destroying a null handle does nothing), so a pass that
/// fails half-way through [`Sampling::new`] leaks nothing.
pub(super) struct Sampling {
    ctx: Arc<Context>,
    conversion: vk::SamplerYcbcrConversion,
    sampler: vk::Sampler,
    /// One view per slot, with the conversion.
    views: Vec<vk::ImageView>,
    set_layout: vk::DescriptorSetLayout,
    layout: vk::PipelineLayout,
    module: vk::ShaderModule,
    pipeline: vk::Pipeline,
    pool: vk::DescriptorPool,
    /// One descriptor set per slot.
    sets: Vec<vk::DescriptorSet>,
    /// The RGB image the pass writes and the blit reads (OPTIMAL, STORAGE |
    /// TRANSFER_SRC, not shared), its memory and its storage view.
    rgb: vk::Image,
    rgb_memory: vk::DeviceMemory,
    rgb_view: vk::ImageView,
    rgb_format: vk::Format,
    width: u32,
    height: u32,
}

/// The RGB format a frame of `bits` per sample is sampled into.
pub(super) fn rgb_format(bits: u32) -> vk::Format {
    if bits > 8 {
        vk::Format::R16G16B16A16_SFLOAT
    } else {
        vk::Format::R8G8B8A8_UNORM
    }
}

impl Sampling {
    /// The pass over `frames` (the ring's slots, all of one format and size)
    /// sampled as `conversion` says, into an RGB image of `rgb_format`.
    pub(super) fn new(
        ctx: &Arc<Context>,
        frames: &[Image],
        conversion: &Conversion,
        rgb_format: vk::Format,
    ) -> Result<Sampling> {
        let dev = &ctx.vk;
        let d = &dev.device;
        let desc = frames[0].description();
        let mut s = Sampling {
            ctx: ctx.clone(),
            conversion: vk::SamplerYcbcrConversion::null(),
            sampler: vk::Sampler::null(),
            views: Vec::with_capacity(frames.len()),
            set_layout: vk::DescriptorSetLayout::null(),
            layout: vk::PipelineLayout::null(),
            module: vk::ShaderModule::null(),
            pipeline: vk::Pipeline::null(),
            pool: vk::DescriptorPool::null(),
            sets: Vec::new(),
            rgb: vk::Image::null(),
            rgb_memory: vk::DeviceMemory::null(),
            rgb_view: vk::ImageView::null(),
            rgb_format,
            width: desc.width,
            height: desc.height,
        };
        let ci = conversion.create_info();
        // SAFETY (every call below): the context's device; create infos built
        // here live for their call; the handles made are owned by `s`.
        s.conversion = unsafe { d.create_sampler_ycbcr_conversion(&ci, None) }
            .map_err(|r| dev.error("vkCreateSamplerYcbcrConversion", r))?;
        let mut conv_info = vk::SamplerYcbcrConversionInfo::default().conversion(s.conversion);
        s.sampler = unsafe {
            d.create_sampler(
                &vk::SamplerCreateInfo::default()
                    .mag_filter(ci.chroma_filter)
                    .min_filter(ci.chroma_filter)
                    .address_mode_u(vk::SamplerAddressMode::CLAMP_TO_EDGE)
                    .address_mode_v(vk::SamplerAddressMode::CLAMP_TO_EDGE)
                    .address_mode_w(vk::SamplerAddressMode::CLAMP_TO_EDGE)
                    .push_next(&mut conv_info),
                None,
            )
        }
        .map_err(|r| dev.error("vkCreateSampler (YCbCr)", r))?;
        for f in frames {
            let mut conv_info = vk::SamplerYcbcrConversionInfo::default().conversion(s.conversion);
            let view = unsafe {
                d.create_image_view(
                    &vk::ImageViewCreateInfo::default()
                        .image(f.vk_image())
                        .view_type(vk::ImageViewType::TYPE_2D)
                        .format(ci.format)
                        .subresource_range(color_range())
                        .push_next(&mut conv_info),
                    None,
                )
            }
            .map_err(|r| dev.error("vkCreateImageView (a video frame's YCbCr view)", r))?;
            s.views.push(view);
        }
        s.create_rgb()?;
        let samplers = [s.sampler];
        let bindings = [
            vk::DescriptorSetLayoutBinding::default()
                .binding(0)
                .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
                .immutable_samplers(&samplers),
            vk::DescriptorSetLayoutBinding::default()
                .binding(1)
                .descriptor_type(vk::DescriptorType::STORAGE_IMAGE)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE),
        ];
        s.set_layout = unsafe {
            d.create_descriptor_set_layout(
                &vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings),
                None,
            )
        }
        .map_err(|r| dev.error("vkCreateDescriptorSetLayout", r))?;
        let ranges = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::COMPUTE)
            .size(8)];
        let set_layouts = [s.set_layout];
        s.layout = unsafe {
            d.create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default()
                    .set_layouts(&set_layouts)
                    .push_constant_ranges(&ranges),
                None,
            )
        }
        .map_err(|r| dev.error("vkCreatePipelineLayout", r))?;
        let bytes = if rgb_format == vk::Format::R8G8B8A8_UNORM {
            SPIRV_RGBA8
        } else {
            SPIRV_RGBA16F
        };
        let code = ash::util::read_spv(&mut Cursor::new(bytes))
            .map_err(|e| Error::invalid(format!("the committed SPIR-V is unreadable: {e}")))?;
        s.module = unsafe {
            d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&code), None)
        }
        .map_err(|r| dev.error("vkCreateShaderModule", r))?;
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(s.module)
            .name(c"main");
        s.pipeline = unsafe {
            d.create_compute_pipelines(
                vk::PipelineCache::null(),
                &[vk::ComputePipelineCreateInfo::default()
                    .stage(stage)
                    .layout(s.layout)],
                None,
            )
        }
        .map_err(|(_, r)| dev.error("vkCreateComputePipelines", r))?[0];
        let n = frames.len() as u32;
        let sizes = [
            vk::DescriptorPoolSize {
                ty: vk::DescriptorType::COMBINED_IMAGE_SAMPLER,
                // A YCbCr conversion may take up to 3 descriptors per binding.
                descriptor_count: 3 * n,
            },
            vk::DescriptorPoolSize {
                ty: vk::DescriptorType::STORAGE_IMAGE,
                descriptor_count: n,
            },
        ];
        s.pool = unsafe {
            d.create_descriptor_pool(
                &vk::DescriptorPoolCreateInfo::default()
                    .max_sets(n)
                    .pool_sizes(&sizes),
                None,
            )
        }
        .map_err(|r| dev.error("vkCreateDescriptorPool", r))?;
        let layouts = vec![s.set_layout; frames.len()];
        s.sets = unsafe {
            d.allocate_descriptor_sets(
                &vk::DescriptorSetAllocateInfo::default()
                    .descriptor_pool(s.pool)
                    .set_layouts(&layouts),
            )
        }
        .map_err(|r| dev.error("vkAllocateDescriptorSets", r))?;
        let storage = [vk::DescriptorImageInfo::default()
            .image_view(s.rgb_view)
            .image_layout(vk::ImageLayout::GENERAL)];
        for (&set, &view) in s.sets.iter().zip(&s.views) {
            let sampled = [vk::DescriptorImageInfo::default()
                .image_view(view)
                .image_layout(vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL)];
            unsafe {
                d.update_descriptor_sets(
                    &[
                        vk::WriteDescriptorSet::default()
                            .dst_set(set)
                            .dst_binding(0)
                            .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
                            .image_info(&sampled),
                        vk::WriteDescriptorSet::default()
                            .dst_set(set)
                            .dst_binding(1)
                            .descriptor_type(vk::DescriptorType::STORAGE_IMAGE)
                            .image_info(&storage),
                    ],
                    &[],
                )
            };
        }
        Ok(s)
    }

    /// The RGB image, its memory and its view.
    fn create_rgb(&mut self) -> Result<()> {
        let dev = &self.ctx.vk;
        let d = &dev.device;
        // SAFETY: the context's device; the handles made are owned by `self`.
        self.rgb = unsafe {
            d.create_image(
                &vk::ImageCreateInfo::default()
                    .image_type(vk::ImageType::TYPE_2D)
                    .format(self.rgb_format)
                    .extent(vk::Extent3D {
                        width: self.width,
                        height: self.height,
                        depth: 1,
                    })
                    .mip_levels(1)
                    .array_layers(1)
                    .samples(vk::SampleCountFlags::TYPE_1)
                    .tiling(vk::ImageTiling::OPTIMAL)
                    .usage(vk::ImageUsageFlags::STORAGE | vk::ImageUsageFlags::TRANSFER_SRC)
                    .sharing_mode(vk::SharingMode::EXCLUSIVE)
                    .initial_layout(vk::ImageLayout::UNDEFINED),
                None,
            )
        }
        .map_err(|r| dev.error("vkCreateImage (the ring's RGB image)", r))?;
        crate::stats::VK_IMAGES.add();
        let req = unsafe { d.get_image_memory_requirements(self.rgb) };
        let type_index = find_memory_type(
            &dev.props.memory,
            req.memory_type_bits,
            vk::MemoryPropertyFlags::DEVICE_LOCAL,
            vk::MemoryPropertyFlags::empty(),
        )
        .ok_or_else(|| {
            Error::unsupported("no DEVICE_LOCAL memory type for the ring's RGB image")
        })?;
        self.rgb_memory = unsafe {
            d.allocate_memory(
                &vk::MemoryAllocateInfo::default()
                    .allocation_size(req.size)
                    .memory_type_index(type_index),
                None,
            )
        }
        .map_err(|r| dev.error("vkAllocateMemory (the ring's RGB image)", r))?;
        crate::stats::VK_MEMORIES.add();
        unsafe { d.bind_image_memory(self.rgb, self.rgb_memory, 0) }
            .map_err(|r| dev.error("vkBindImageMemory (the ring's RGB image)", r))?;
        self.rgb_view = unsafe {
            d.create_image_view(
                &vk::ImageViewCreateInfo::default()
                    .image(self.rgb)
                    .view_type(vk::ImageViewType::TYPE_2D)
                    .format(self.rgb_format)
                    .subresource_range(color_range()),
                None,
            )
        }
        .map_err(|r| dev.error("vkCreateImageView (the ring's RGB image)", r))?;
        Ok(())
    }

    /// The RGB image the blit reads.
    pub(super) fn rgb(&self) -> vk::Image {
        self.rgb
    }

    /// Records the pass over slot `slot` (in `SHADER_READ_ONLY_OPTIMAL`): the RGB
    /// image from `UNDEFINED` to `GENERAL` after every earlier command of the
    /// queue (the previous frame's blit read it), the dispatch, and the RGB image
    /// to `TRANSFER_SRC_OPTIMAL` for the blit.
    ///
    /// # Safety
    /// `cmd` is a command buffer of the ring's device in the recording state, for
    /// a queue with compute, externally synchronised by the caller.
    pub(super) unsafe fn record(&self, cmd: vk::CommandBuffer, slot: usize) {
        let d = &self.ctx.vk.device;
        let to_general = [transition(
            self.rgb,
            (vk::AccessFlags::empty(), vk::ImageLayout::UNDEFINED),
            (vk::AccessFlags::SHADER_WRITE, vk::ImageLayout::GENERAL),
        )];
        // The previous frame's blit read the image (TRANSFER): a write-after-read
        // needs only the execution dependency.
        d.cmd_pipeline_barrier(
            cmd,
            vk::PipelineStageFlags::TRANSFER,
            vk::PipelineStageFlags::COMPUTE_SHADER,
            vk::DependencyFlags::empty(),
            &[],
            &[],
            &to_general,
        );
        d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, self.pipeline);
        d.cmd_bind_descriptor_sets(
            cmd,
            vk::PipelineBindPoint::COMPUTE,
            self.layout,
            0,
            &[self.sets[slot]],
            &[],
        );
        let mut size = [0u8; 8];
        size[..4].copy_from_slice(&self.width.to_ne_bytes());
        size[4..].copy_from_slice(&self.height.to_ne_bytes());
        d.cmd_push_constants(cmd, self.layout, vk::ShaderStageFlags::COMPUTE, 0, &size);
        d.cmd_dispatch(
            cmd,
            self.width.div_ceil(GROUP),
            self.height.div_ceil(GROUP),
            1,
        );
        let to_src = [transition(
            self.rgb,
            (vk::AccessFlags::SHADER_WRITE, vk::ImageLayout::GENERAL),
            (
                vk::AccessFlags::TRANSFER_READ,
                vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
            ),
        )];
        d.cmd_pipeline_barrier(
            cmd,
            vk::PipelineStageFlags::COMPUTE_SHADER,
            vk::PipelineStageFlags::TRANSFER,
            vk::DependencyFlags::empty(),
            &[],
            &[],
            &to_src,
        );
    }
}

/// A layout change of a one-level, one-layer colour image on one queue: `from`
/// and `to` are (access, layout) before and after.
pub(super) fn transition(
    image: vk::Image,
    from: (vk::AccessFlags, vk::ImageLayout),
    to: (vk::AccessFlags, vk::ImageLayout),
) -> vk::ImageMemoryBarrier<'static> {
    vk::ImageMemoryBarrier::default()
        .src_access_mask(from.0)
        .dst_access_mask(to.0)
        .old_layout(from.1)
        .new_layout(to.1)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .image(image)
        .subresource_range(color_range())
}

fn color_range() -> vk::ImageSubresourceRange {
    vk::ImageSubresourceRange {
        aspect_mask: vk::ImageAspectFlags::COLOR,
        base_mip_level: 0,
        level_count: 1,
        base_array_layer: 0,
        layer_count: 1,
    }
}

impl Drop for Sampling {
    fn drop(&mut self) {
        let d = &self.ctx.vk.device;
        // SAFETY: handles of this device made by `new` (or null); the ring's
        // owner waited for the commands that use them (Ring's drop contract).
        unsafe {
            d.destroy_pipeline(self.pipeline, None);
            d.destroy_shader_module(self.module, None);
            d.destroy_pipeline_layout(self.layout, None);
            d.destroy_descriptor_pool(self.pool, None);
            d.destroy_descriptor_set_layout(self.set_layout, None);
            for &v in &self.views {
                d.destroy_image_view(v, None);
            }
            d.destroy_image_view(self.rgb_view, None);
            d.destroy_image(self.rgb, None);
            d.free_memory(self.rgb_memory, None);
            if self.rgb != vk::Image::null() {
                crate::stats::VK_IMAGES.sub();
            }
            if self.rgb_memory != vk::DeviceMemory::null() {
                crate::stats::VK_MEMORIES.sub();
            }
            d.destroy_sampler(self.sampler, None);
            d.destroy_sampler_ycbcr_conversion(self.conversion, None);
        }
    }
}
