//! One full-frame pass that samples a multi-planar image through a
//! `VkSamplerYcbcrConversion` into RGBA8 (the compute shader of
//! examples/video/shaders/ycbcr.comp, its SPIR-V read from the committed header):
//! for tests/video.rs (every pixel against the host's conversion) and
//! bench/planar.rs (the cost of sampling a LINEAR frame vs an OPTIMAL image).

use ash::vk;

use super::vulkan::{color_range, device_local_memory, HostBuffer, Vk};

/// The SPIR-V words of examples/video/shaders/ycbcr.comp.
pub fn ycbcr_spirv() -> Vec<u32> {
    let h = include_str!("../../examples/video/spirv/ycbcr_comp_spv.h");
    let body = &h[h.find("ycbcr_comp_spv[] = {").unwrap()..];
    let body = &body[body.find('{').unwrap() + 1..body.find("};").unwrap()];
    body.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| u32::from_str_radix(t.trim_start_matches("0x"), 16).unwrap())
        .collect()
}

/// The conversion, sampler, view, pipeline and output of one sampling pass over
/// `image` (in SHADER_READ_ONLY_OPTIMAL when the pass runs).
pub struct YcbcrPass {
    pub out: HostBuffer,
    conv: vk::SamplerYcbcrConversion,
    sampler: vk::Sampler,
    view: vk::ImageView,
    dsl: vk::DescriptorSetLayout,
    layout: vk::PipelineLayout,
    module: vk::ShaderModule,
    pipeline: vk::Pipeline,
    pool: vk::DescriptorPool,
    set: vk::DescriptorSet,
    size: [u32; 2],
}

impl YcbcrPass {
    /// `host_output`: the RGBA8 output in host-visible memory (to compare on the
    /// host), else in device-local memory (to time the sampling, not the writes
    /// across the bus).
    pub fn new(
        v: &Vk,
        image: vk::Image,
        ci: &vk::SamplerYcbcrConversionCreateInfo,
        (w, h): (u32, u32),
        host_output: bool,
    ) -> YcbcrPass {
        let d = &v.device;
        let conv = unsafe { d.create_sampler_ycbcr_conversion(ci, None) }.unwrap();
        let mut conv_info = vk::SamplerYcbcrConversionInfo::default().conversion(conv);
        let sampler = unsafe {
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
        .unwrap();
        let mut conv_info = vk::SamplerYcbcrConversionInfo::default().conversion(conv);
        let view = unsafe {
            d.create_image_view(
                &vk::ImageViewCreateInfo::default()
                    .image(image)
                    .view_type(vk::ImageViewType::TYPE_2D)
                    .format(ci.format)
                    .subresource_range(color_range())
                    .push_next(&mut conv_info),
                None,
            )
        }
        .unwrap();
        let out = if host_output {
            v.host_buffer_for(
                w as u64 * h as u64 * 4,
                vk::BufferUsageFlags::STORAGE_BUFFER,
            )
        } else {
            device_buffer(v, w as u64 * h as u64 * 4)
        };
        let samplers = [sampler];
        let bindings = [
            vk::DescriptorSetLayoutBinding::default()
                .binding(0)
                .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
                .immutable_samplers(&samplers),
            vk::DescriptorSetLayoutBinding::default()
                .binding(1)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE),
        ];
        let dsl = unsafe {
            d.create_descriptor_set_layout(
                &vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings),
                None,
            )
        }
        .unwrap();
        let ranges = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::COMPUTE)
            .size(8)];
        let dsls = [dsl];
        let layout = unsafe {
            d.create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default()
                    .set_layouts(&dsls)
                    .push_constant_ranges(&ranges),
                None,
            )
        }
        .unwrap();
        let code = ycbcr_spirv();
        let module = unsafe {
            d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&code), None)
        }
        .unwrap();
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(c"main");
        let pipeline = unsafe {
            d.create_compute_pipelines(
                vk::PipelineCache::null(),
                &[vk::ComputePipelineCreateInfo::default()
                    .stage(stage)
                    .layout(layout)],
                None,
            )
        }
        .unwrap()[0];
        let sizes = [
            vk::DescriptorPoolSize {
                ty: vk::DescriptorType::COMBINED_IMAGE_SAMPLER,
                // A YCbCr conversion may take several descriptors.
                descriptor_count: 4,
            },
            vk::DescriptorPoolSize {
                ty: vk::DescriptorType::STORAGE_BUFFER,
                descriptor_count: 1,
            },
        ];
        let pool = unsafe {
            d.create_descriptor_pool(
                &vk::DescriptorPoolCreateInfo::default()
                    .max_sets(1)
                    .pool_sizes(&sizes),
                None,
            )
        }
        .unwrap();
        let set = unsafe {
            d.allocate_descriptor_sets(
                &vk::DescriptorSetAllocateInfo::default()
                    .descriptor_pool(pool)
                    .set_layouts(&dsls),
            )
        }
        .unwrap()[0];
        let image_infos = [vk::DescriptorImageInfo::default()
            .image_view(view)
            .image_layout(vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL)];
        let buffer_infos = [vk::DescriptorBufferInfo::default()
            .buffer(out.buffer)
            .range(vk::WHOLE_SIZE)];
        unsafe {
            d.update_descriptor_sets(
                &[
                    vk::WriteDescriptorSet::default()
                        .dst_set(set)
                        .dst_binding(0)
                        .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
                        .image_info(&image_infos),
                    vk::WriteDescriptorSet::default()
                        .dst_set(set)
                        .dst_binding(1)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .buffer_info(&buffer_infos),
                ],
                &[],
            )
        };
        YcbcrPass {
            out,
            conv,
            sampler,
            view,
            dsl,
            layout,
            module,
            pipeline,
            pool,
            set,
            size: [w, h],
        }
    }

    /// Records the pass, then a barrier that makes its output visible to the host.
    pub fn record(&self, v: &Vk, cmd: vk::CommandBuffer) {
        let d = &v.device;
        unsafe {
            d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, self.pipeline);
            d.cmd_bind_descriptor_sets(
                cmd,
                vk::PipelineBindPoint::COMPUTE,
                self.layout,
                0,
                &[self.set],
                &[],
            );
            let bytes: Vec<u8> = self.size.iter().flat_map(|x| x.to_ne_bytes()).collect();
            d.cmd_push_constants(cmd, self.layout, vk::ShaderStageFlags::COMPUTE, 0, &bytes);
            d.cmd_dispatch(cmd, self.size[0].div_ceil(16), self.size[1].div_ceil(16), 1);
            d.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::PipelineStageFlags::HOST | vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::DependencyFlags::empty(),
                &[vk::MemoryBarrier::default()
                    .src_access_mask(vk::AccessFlags::SHADER_WRITE)
                    .dst_access_mask(vk::AccessFlags::HOST_READ | vk::AccessFlags::SHADER_WRITE)],
                &[],
                &[],
            );
        }
    }

    pub fn destroy(self, v: &Vk) {
        let d = &v.device;
        unsafe {
            d.destroy_pipeline(self.pipeline, None);
            d.destroy_shader_module(self.module, None);
            d.destroy_pipeline_layout(self.layout, None);
            d.destroy_descriptor_pool(self.pool, None);
            d.destroy_descriptor_set_layout(self.dsl, None);
            d.destroy_image_view(self.view, None);
            d.destroy_sampler(self.sampler, None);
            d.destroy_sampler_ycbcr_conversion(self.conv, None);
        }
        v.destroy_host_buffer(self.out);
    }
}

/// A device-local storage buffer (not mapped: `ptr` is null), freed like a host buffer.
fn device_buffer(v: &Vk, size: u64) -> HostBuffer {
    let d = &v.device;
    let buffer = unsafe {
        d.create_buffer(
            &vk::BufferCreateInfo::default()
                .size(size)
                .usage(vk::BufferUsageFlags::STORAGE_BUFFER),
            None,
        )
    }
    .unwrap();
    let req = unsafe { d.get_buffer_memory_requirements(buffer) };
    let memory = device_local_memory(v, req);
    unsafe { d.bind_buffer_memory(buffer, memory, 0) }.unwrap();
    HostBuffer {
        buffer,
        memory,
        ptr: std::ptr::null_mut(),
        size,
    }
}
