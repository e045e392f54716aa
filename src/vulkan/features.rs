//! What the engine enabled on its `VkDevice` that decides which pipeline stages
//! and accesses a handoff barrier may name: the optional features and the
//! extensions that bring stages of their own (geometry and tessellation shaders,
//! transform feedback, mesh shaders, ray tracing, ...). Vulkan cannot be asked
//! what a device was created with, so a context made over the engine's device
//! is told ([`EnabledFeatures::from_device_create_info`]), or assumes what every
//! device has.

use std::ffi::{c_char, CStr};

use ash::vk;

/// The features and extensions enabled on a `VkDevice` that the handoff barriers
/// depend on: a stage bit (or an access bit) whose feature or extension is not
/// enabled is refused before anything is recorded (a barrier naming it is invalid
/// Vulkan: `VUID-vkCmdPipelineBarrier-srcStageMask-04090` … `-04097`,
/// `VUID-VkBufferMemoryBarrier2-srcStageMask-03929` … `-03935` and their kin).
///
/// `Default` (everything `false`) is what the specification requires of every
/// device: the core stages and accesses other than the geometry and tessellation
/// shaders. A context over the engine's device assumes it unless told more
/// ([`Context::from_engine_with_features`](crate::Context::from_engine_with_features));
/// a standalone context knows what it enabled (synchronization2 where the device
/// has it, nothing else of this list).
///
/// ```
/// use vkcuda::context::EnabledFeatures;
///
/// let mut f = EnabledFeatures::default();
/// f.geometry_shader = true; // the engine enabled VkPhysicalDeviceFeatures::geometryShader
/// assert!(!f.tessellation_shader);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EnabledFeatures {
    /// `VkPhysicalDeviceFeatures::geometryShader`: `GEOMETRY_SHADER`.
    pub geometry_shader: bool,
    /// `VkPhysicalDeviceFeatures::tessellationShader`: `TESSELLATION_CONTROL_SHADER`
    /// and `TESSELLATION_EVALUATION_SHADER`.
    pub tessellation_shader: bool,
    /// `transformFeedback` (`VK_EXT_transform_feedback`): `TRANSFORM_FEEDBACK_EXT`
    /// and the three transform feedback accesses.
    pub transform_feedback: bool,
    /// `conditionalRendering` (`VK_EXT_conditional_rendering`):
    /// `CONDITIONAL_RENDERING_EXT` and `CONDITIONAL_RENDERING_READ_EXT`.
    pub conditional_rendering: bool,
    /// `fragmentDensityMap` (`VK_EXT_fragment_density_map`):
    /// `FRAGMENT_DENSITY_PROCESS_EXT` and `FRAGMENT_DENSITY_MAP_READ_EXT`.
    pub fragment_density_map: bool,
    /// `attachmentFragmentShadingRate` (`VK_KHR_fragment_shading_rate`):
    /// `FRAGMENT_SHADING_RATE_ATTACHMENT_KHR` and its read access.
    pub attachment_fragment_shading_rate: bool,
    /// `shadingRateImage` (`VK_NV_shading_rate_image`): the same stage and access
    /// under their NV names.
    pub shading_rate_image: bool,
    /// `meshShader` (`VK_EXT_mesh_shader` or `VK_NV_mesh_shader`): `MESH_SHADER_EXT`.
    pub mesh_shader: bool,
    /// `taskShader` (`VK_EXT_mesh_shader` or `VK_NV_mesh_shader`): `TASK_SHADER_EXT`.
    pub task_shader: bool,
    /// `rayTracingPipeline` (`VK_KHR_ray_tracing_pipeline`): `RAY_TRACING_SHADER_KHR`.
    pub ray_tracing_pipeline: bool,
    /// `accelerationStructure` (`VK_KHR_acceleration_structure`):
    /// `ACCELERATION_STRUCTURE_BUILD_KHR` and the acceleration structure accesses.
    pub acceleration_structure: bool,
    /// `rayQuery` (`VK_KHR_ray_query`): `ACCELERATION_STRUCTURE_READ_KHR` by the
    /// shader stages other than ray tracing.
    pub ray_query: bool,
    /// The `VK_NV_ray_tracing` extension: its ray tracing and acceleration
    /// structure stages and accesses.
    pub nv_ray_tracing: bool,
    /// `VK_NV_device_generated_commands` or `VK_EXT_device_generated_commands`:
    /// `COMMAND_PREPROCESS_NV` and the command preprocess accesses.
    pub device_generated_commands: bool,
    /// `VK_EXT_blend_operation_advanced`: `COLOR_ATTACHMENT_READ_NONCOHERENT_EXT`.
    pub blend_operation_advanced: bool,
    /// `VK_KHR_video_decode_queue`: `VIDEO_DECODE_KHR` (synchronization2 only).
    pub video_decode_queue: bool,
    /// `VK_KHR_video_encode_queue`: `VIDEO_ENCODE_KHR` (synchronization2 only).
    pub video_encode_queue: bool,
    /// `VK_KHR_ray_tracing_maintenance1`: `ACCELERATION_STRUCTURE_COPY_KHR`
    /// (synchronization2 only).
    pub ray_tracing_maintenance1: bool,
    /// `VK_NV_optical_flow`: `OPTICAL_FLOW_NV` (synchronization2 only).
    pub optical_flow: bool,
    /// `VK_EXT_opacity_micromap`: `MICROMAP_BUILD_EXT` (synchronization2 only).
    pub opacity_micromap: bool,
    /// `synchronization2` (Vulkan 1.3 or `VK_KHR_synchronization2`): the handoff
    /// barriers are recorded with `vkCmdPipelineBarrier2`.
    pub synchronization2: bool,
}

/// How many structures of a `pNext` chain are read at most (a chain that loops
/// back on itself ends there).
const CHAIN_LIMIT: usize = 256;

/// The head of every Vulkan structure.
#[repr(C)]
struct Header {
    s_type: vk::StructureType,
    p_next: *const Header,
}

impl EnabledFeatures {
    /// Reads what an engine enabled from the `VkDeviceCreateInfo` it created its
    /// device with: the extension names, `pEnabledFeatures` or a
    /// `VkPhysicalDeviceFeatures2` in the `pNext` chain, and the feature structures
    /// of the chain this type has fields for (`VkPhysicalDeviceVulkan13Features`,
    /// `VkPhysicalDeviceSynchronization2Features`,
    /// `VkPhysicalDeviceTransformFeedbackFeaturesEXT`, `...MeshShaderFeaturesEXT`,
    /// ...). A feature counts only where the extension that brings it is enabled
    /// too; other structures of the chain are skipped, and the chain is read up to
    /// 256 structures.
    ///
    /// # Safety
    /// `info` is a valid `VkDeviceCreateInfo`: its extension names are
    /// `enabledExtensionCount` NUL-terminated strings, `pEnabledFeatures` is NULL or
    /// valid, and every structure of its `pNext` chain starts with `sType` and
    /// `pNext` and is the structure its `sType` names.
    pub unsafe fn from_device_create_info(info: &vk::DeviceCreateInfo) -> EnabledFeatures {
        let mut f = EnabledFeatures::default();
        let names: &[*const c_char] =
            if info.enabled_extension_count == 0 || info.pp_enabled_extension_names.is_null() {
                &[]
            } else {
                std::slice::from_raw_parts(
                    info.pp_enabled_extension_names,
                    info.enabled_extension_count as usize,
                )
            };
        let has = |want: &CStr| {
            names
                .iter()
                .any(|&n| !n.is_null() && CStr::from_ptr(n) == want)
        };
        if let Some(core) = info.p_enabled_features.as_ref() {
            f.core(core);
        }
        let mut next = info.p_next as *const Header;
        for _ in 0..CHAIN_LIMIT {
            let Some(h) = next.as_ref() else { break };
            f.read(h, &has);
            next = h.p_next;
        }
        f.nv_ray_tracing = has(ash::nv::ray_tracing::NAME);
        f.device_generated_commands = has(ash::nv::device_generated_commands::NAME)
            || has(c"VK_EXT_device_generated_commands");
        f.blend_operation_advanced = has(ash::ext::blend_operation_advanced::NAME);
        f.video_decode_queue = has(ash::khr::video_decode_queue::NAME);
        f.video_encode_queue = has(ash::khr::video_encode_queue::NAME);
        f.ray_tracing_maintenance1 = has(ash::khr::ray_tracing_maintenance1::NAME);
        f.optical_flow = has(ash::nv::optical_flow::NAME);
        f.opacity_micromap = has(ash::ext::opacity_micromap::NAME);
        f
    }

    fn core(&mut self, core: &vk::PhysicalDeviceFeatures) {
        self.geometry_shader |= core.geometry_shader == vk::TRUE;
        self.tessellation_shader |= core.tessellation_shader == vk::TRUE;
    }

    /// One structure of the chain: the features it enables, where `has` says the
    /// extension that brings them is enabled.
    unsafe fn read(&mut self, h: &Header, has: &impl Fn(&CStr) -> bool) {
        use vk::StructureType as T;
        let p = h as *const Header;
        let on = |b: vk::Bool32| b == vk::TRUE;
        match h.s_type {
            T::PHYSICAL_DEVICE_FEATURES_2 => {
                self.core(&(*p.cast::<vk::PhysicalDeviceFeatures2>()).features)
            }
            T::PHYSICAL_DEVICE_VULKAN_1_3_FEATURES => {
                let s = &*p.cast::<vk::PhysicalDeviceVulkan13Features>();
                self.synchronization2 |= on(s.synchronization2);
            }
            T::PHYSICAL_DEVICE_SYNCHRONIZATION_2_FEATURES => {
                let s = &*p.cast::<vk::PhysicalDeviceSynchronization2Features>();
                self.synchronization2 |= on(s.synchronization2);
            }
            T::PHYSICAL_DEVICE_TRANSFORM_FEEDBACK_FEATURES_EXT
                if has(ash::ext::transform_feedback::NAME) =>
            {
                let s = &*p.cast::<vk::PhysicalDeviceTransformFeedbackFeaturesEXT>();
                self.transform_feedback |= on(s.transform_feedback);
            }
            T::PHYSICAL_DEVICE_CONDITIONAL_RENDERING_FEATURES_EXT
                if has(ash::ext::conditional_rendering::NAME) =>
            {
                let s = &*p.cast::<vk::PhysicalDeviceConditionalRenderingFeaturesEXT>();
                self.conditional_rendering |= on(s.conditional_rendering);
            }
            T::PHYSICAL_DEVICE_FRAGMENT_DENSITY_MAP_FEATURES_EXT
                if has(ash::ext::fragment_density_map::NAME) =>
            {
                let s = &*p.cast::<vk::PhysicalDeviceFragmentDensityMapFeaturesEXT>();
                self.fragment_density_map |= on(s.fragment_density_map);
            }
            T::PHYSICAL_DEVICE_FRAGMENT_SHADING_RATE_FEATURES_KHR
                if has(ash::khr::fragment_shading_rate::NAME) =>
            {
                let s = &*p.cast::<vk::PhysicalDeviceFragmentShadingRateFeaturesKHR>();
                self.attachment_fragment_shading_rate |= on(s.attachment_fragment_shading_rate);
            }
            T::PHYSICAL_DEVICE_SHADING_RATE_IMAGE_FEATURES_NV
                if has(ash::nv::shading_rate_image::NAME) =>
            {
                let s = &*p.cast::<vk::PhysicalDeviceShadingRateImageFeaturesNV>();
                self.shading_rate_image |= on(s.shading_rate_image);
            }
            T::PHYSICAL_DEVICE_MESH_SHADER_FEATURES_EXT if has(ash::ext::mesh_shader::NAME) => {
                let s = &*p.cast::<vk::PhysicalDeviceMeshShaderFeaturesEXT>();
                self.mesh_shader |= on(s.mesh_shader);
                self.task_shader |= on(s.task_shader);
            }
            T::PHYSICAL_DEVICE_MESH_SHADER_FEATURES_NV if has(ash::nv::mesh_shader::NAME) => {
                let s = &*p.cast::<vk::PhysicalDeviceMeshShaderFeaturesNV>();
                self.mesh_shader |= on(s.mesh_shader);
                self.task_shader |= on(s.task_shader);
            }
            T::PHYSICAL_DEVICE_RAY_TRACING_PIPELINE_FEATURES_KHR
                if has(ash::khr::ray_tracing_pipeline::NAME) =>
            {
                let s = &*p.cast::<vk::PhysicalDeviceRayTracingPipelineFeaturesKHR>();
                self.ray_tracing_pipeline |= on(s.ray_tracing_pipeline);
            }
            T::PHYSICAL_DEVICE_ACCELERATION_STRUCTURE_FEATURES_KHR
                if has(ash::khr::acceleration_structure::NAME) =>
            {
                let s = &*p.cast::<vk::PhysicalDeviceAccelerationStructureFeaturesKHR>();
                self.acceleration_structure |= on(s.acceleration_structure);
            }
            T::PHYSICAL_DEVICE_RAY_QUERY_FEATURES_KHR if has(ash::khr::ray_query::NAME) => {
                let s = &*p.cast::<vk::PhysicalDeviceRayQueryFeaturesKHR>();
                self.ray_query |= on(s.ray_query);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_and_the_extensions_are_read() {
        let core = vk::PhysicalDeviceFeatures::default().tessellation_shader(true);
        let mut tf =
            vk::PhysicalDeviceTransformFeedbackFeaturesEXT::default().transform_feedback(true);
        // Without its extension a feature does not count.
        let mut mesh = vk::PhysicalDeviceMeshShaderFeaturesEXT::default()
            .mesh_shader(true)
            .task_shader(true);
        let mut v13 = vk::PhysicalDeviceVulkan13Features::default().synchronization2(true);
        let exts = [
            ash::ext::transform_feedback::NAME.as_ptr(),
            ash::ext::blend_operation_advanced::NAME.as_ptr(),
        ];
        let info = vk::DeviceCreateInfo::default()
            .enabled_features(&core)
            .enabled_extension_names(&exts)
            .push_next(&mut tf)
            .push_next(&mut mesh)
            .push_next(&mut v13);
        let f = unsafe { EnabledFeatures::from_device_create_info(&info) };
        let want = EnabledFeatures {
            tessellation_shader: true,
            transform_feedback: true,
            blend_operation_advanced: true,
            synchronization2: true,
            ..Default::default()
        };
        assert_eq!(f, want);

        // VkPhysicalDeviceFeatures2 in the chain instead of pEnabledFeatures.
        let mut f2 = vk::PhysicalDeviceFeatures2::default()
            .features(vk::PhysicalDeviceFeatures::default().geometry_shader(true));
        let info = vk::DeviceCreateInfo::default().push_next(&mut f2);
        let f = unsafe { EnabledFeatures::from_device_create_info(&info) };
        assert!(f.geometry_shader && !f.tessellation_shader && !f.synchronization2);
    }

    #[test]
    fn a_chain_that_loops_ends() {
        let mut a = vk::PhysicalDeviceConditionalRenderingFeaturesEXT::default()
            .conditional_rendering(true);
        let exts = [ash::ext::conditional_rendering::NAME.as_ptr()];
        let mut info = vk::DeviceCreateInfo::default().enabled_extension_names(&exts);
        // a -> a -> a ...
        a.p_next = (&mut a as *mut vk::PhysicalDeviceConditionalRenderingFeaturesEXT).cast();
        info.p_next = (&a as *const vk::PhysicalDeviceConditionalRenderingFeaturesEXT).cast();
        let f = unsafe { EnabledFeatures::from_device_create_info(&info) };
        assert!(f.conditional_rendering);
    }
}
