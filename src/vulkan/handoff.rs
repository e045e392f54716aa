//! The queue-family ownership transfers that hand a buffer or an image between an
//! engine's queue family and `VK_QUEUE_FAMILY_EXTERNAL` (CUDA): the release
//! barrier recorded before the engine signals CUDA, the acquire barrier after it
//! waits for CUDA. Images are handed over in `GENERAL` layout, which is the layout
//! CUDA's view of the memory assumes.
//!
//! One function, [`record`], records any number of buffers and images in one
//! pipeline barrier; which resources may share it is decided a floor up, in
//! `crate::handoff` (a single buffer or image is the batch of one).

use std::cell::RefCell;

use ash::vk;

use super::features::EnabledFeatures;
use super::VulkanDevice;
use crate::error::{Error, Result};

/// Which way the resources go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From the engine's queue family to CUDA (`VK_QUEUE_FAMILY_EXTERNAL`).
    Release,
    /// From CUDA back to the engine's queue family.
    Acquire,
}

/// The engine's side of the transfer.
#[derive(Clone, Copy, Debug)]
pub struct Scope {
    /// The queue family the command buffer is submitted to.
    pub queue_family: u32,
    /// Release: the stages that used the resources before. Acquire: the stages
    /// that use them after.
    pub stages: vk::PipelineStageFlags,
    /// Release: the writes to make available. Acquire: the accesses that follow.
    pub access: vk::AccessFlags,
}

impl Scope {
    /// The engine's queue family with the library's defaults: every command
    /// (`ALL_COMMANDS`), every memory read and write.
    pub fn new(queue_family: u32) -> Scope {
        Scope::with_defaults(
            queue_family,
            vk::PipelineStageFlags::empty(),
            vk::AccessFlags::empty(),
        )
    }

    /// A scope with the library's defaults for empty masks: every command
    /// (`ALL_COMMANDS`) for empty `stages`, every memory read and write for empty
    /// `access`. With synchronization2 the barrier is `vkCmdPipelineBarrier2`, and
    /// the synchronization2 stages whose bits fit 32 bits (`VIDEO_DECODE_KHR`, ...)
    /// are given as the same bit here
    /// (`vk::PipelineStageFlags::from_raw(vk::PipelineStageFlags2::VIDEO_DECODE_KHR.as_raw() as u32)`).
    pub fn with_defaults(
        queue_family: u32,
        stages: vk::PipelineStageFlags,
        access: vk::AccessFlags,
    ) -> Scope {
        Scope {
            queue_family,
            stages: if stages.is_empty() {
                vk::PipelineStageFlags::ALL_COMMANDS
            } else {
                stages
            },
            access: if access.is_empty() {
                vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE
            } else {
                access
            },
        }
    }
}

/// Every bit of `VkPipelineStageFlagBits`, core and extensions: what the stage
/// mask of `vkCmdPipelineBarrier` may hold (the barrier of a context without
/// synchronization2).
pub const STAGES_SYNC1: u32 = {
    use vk::PipelineStageFlags as S;
    S::TOP_OF_PIPE.as_raw()
        | S::DRAW_INDIRECT.as_raw()
        | S::VERTEX_INPUT.as_raw()
        | S::VERTEX_SHADER.as_raw()
        | S::TESSELLATION_CONTROL_SHADER.as_raw()
        | S::TESSELLATION_EVALUATION_SHADER.as_raw()
        | S::GEOMETRY_SHADER.as_raw()
        | S::FRAGMENT_SHADER.as_raw()
        | S::EARLY_FRAGMENT_TESTS.as_raw()
        | S::LATE_FRAGMENT_TESTS.as_raw()
        | S::COLOR_ATTACHMENT_OUTPUT.as_raw()
        | S::COMPUTE_SHADER.as_raw()
        | S::TRANSFER.as_raw()
        | S::BOTTOM_OF_PIPE.as_raw()
        | S::HOST.as_raw()
        | S::ALL_GRAPHICS.as_raw()
        | S::ALL_COMMANDS.as_raw()
        | S::TRANSFORM_FEEDBACK_EXT.as_raw()
        | S::CONDITIONAL_RENDERING_EXT.as_raw()
        | S::ACCELERATION_STRUCTURE_BUILD_KHR.as_raw()
        | S::RAY_TRACING_SHADER_KHR.as_raw()
        | S::FRAGMENT_DENSITY_PROCESS_EXT.as_raw()
        | S::FRAGMENT_SHADING_RATE_ATTACHMENT_KHR.as_raw()
        | S::COMMAND_PREPROCESS_NV.as_raw()
        | S::TASK_SHADER_EXT.as_raw()
        | S::MESH_SHADER_EXT.as_raw()
};

/// The bits of `VkPipelineStageFlagBits2` that fit the 32-bit mask the C API
/// takes: what `vkCmdPipelineBarrier2` may get from it (the same stages as
/// [`STAGES_SYNC1`] in the same bits, and a few synchronization2-only ones).
pub const STAGES_SYNC2: u32 = {
    use vk::PipelineStageFlags2 as S;
    let low = STAGES_SYNC1 as u64
        | S::VIDEO_DECODE_KHR.as_raw()
        | S::VIDEO_ENCODE_KHR.as_raw()
        | S::ACCELERATION_STRUCTURE_COPY_KHR.as_raw()
        | S::OPTICAL_FLOW_NV.as_raw()
        | S::MICROMAP_BUILD_EXT.as_raw();
    assert!(low <= u32::MAX as u64);
    low as u32
};

/// Every bit of `VkAccessFlagBits`, core and extensions: what the access masks of
/// `VkBufferMemoryBarrier` / `VkImageMemoryBarrier` may hold.
pub const ACCESS_SYNC1: u32 = {
    use vk::AccessFlags as A;
    A::INDIRECT_COMMAND_READ.as_raw()
        | A::INDEX_READ.as_raw()
        | A::VERTEX_ATTRIBUTE_READ.as_raw()
        | A::UNIFORM_READ.as_raw()
        | A::INPUT_ATTACHMENT_READ.as_raw()
        | A::SHADER_READ.as_raw()
        | A::SHADER_WRITE.as_raw()
        | A::COLOR_ATTACHMENT_READ.as_raw()
        | A::COLOR_ATTACHMENT_WRITE.as_raw()
        | A::DEPTH_STENCIL_ATTACHMENT_READ.as_raw()
        | A::DEPTH_STENCIL_ATTACHMENT_WRITE.as_raw()
        | A::TRANSFER_READ.as_raw()
        | A::TRANSFER_WRITE.as_raw()
        | A::HOST_READ.as_raw()
        | A::HOST_WRITE.as_raw()
        | A::MEMORY_READ.as_raw()
        | A::MEMORY_WRITE.as_raw()
        | A::TRANSFORM_FEEDBACK_WRITE_EXT.as_raw()
        | A::TRANSFORM_FEEDBACK_COUNTER_READ_EXT.as_raw()
        | A::TRANSFORM_FEEDBACK_COUNTER_WRITE_EXT.as_raw()
        | A::CONDITIONAL_RENDERING_READ_EXT.as_raw()
        | A::COLOR_ATTACHMENT_READ_NONCOHERENT_EXT.as_raw()
        | A::ACCELERATION_STRUCTURE_READ_KHR.as_raw()
        | A::ACCELERATION_STRUCTURE_WRITE_KHR.as_raw()
        | A::FRAGMENT_DENSITY_MAP_READ_EXT.as_raw()
        | A::FRAGMENT_SHADING_RATE_ATTACHMENT_READ_KHR.as_raw()
        | A::COMMAND_PREPROCESS_READ_NV.as_raw()
        | A::COMMAND_PREPROCESS_WRITE_NV.as_raw()
};

/// The bits of `VkAccessFlagBits2` that fit the 32-bit mask: the same accesses as
/// [`ACCESS_SYNC1`] in the same bits (the synchronization2-only ones are all above
/// bit 31).
pub const ACCESS_SYNC2: u32 = {
    use vk::AccessFlags2 as A;
    let low = ACCESS_SYNC1 as u64
        | A::TRANSFORM_FEEDBACK_COUNTER_WRITE_EXT.as_raw()
        | A::FRAGMENT_SHADING_RATE_ATTACHMENT_READ_KHR.as_raw();
    assert!(low <= u32::MAX as u64);
    low as u32
};

/// The stages (of [`STAGES_SYNC2`], the widest mask) that the queues of a family
/// with `flags` can run: the table of supported pipeline stages in the Vulkan
/// specification (`VUID-vkCmdPipelineBarrier-srcStageMask-4098`,
/// `VUID-vkCmdPipelineBarrier2-srcStageMask-03849` and the others of the family).
/// A family of graphics or compute also runs transfers.
pub fn stages_of_queue(flags: vk::QueueFlags) -> u32 {
    use vk::PipelineStageFlags as S;
    use vk::PipelineStageFlags2 as S2;
    use vk::QueueFlags as Q;
    let graphics = flags.contains(Q::GRAPHICS);
    let compute = flags.contains(Q::COMPUTE);
    let transfer = flags.contains(Q::TRANSFER) || graphics || compute;
    let mut m = S::TOP_OF_PIPE.as_raw()
        | S::BOTTOM_OF_PIPE.as_raw()
        | S::HOST.as_raw()
        | S::ALL_COMMANDS.as_raw();
    if transfer {
        m |= S::TRANSFER.as_raw();
    }
    if graphics || compute {
        m |= S::DRAW_INDIRECT.as_raw()
            | S::CONDITIONAL_RENDERING_EXT.as_raw()
            | S::COMMAND_PREPROCESS_NV.as_raw();
    }
    if graphics {
        m |= S::VERTEX_INPUT.as_raw()
            | S::VERTEX_SHADER.as_raw()
            | S::TESSELLATION_CONTROL_SHADER.as_raw()
            | S::TESSELLATION_EVALUATION_SHADER.as_raw()
            | S::GEOMETRY_SHADER.as_raw()
            | S::FRAGMENT_SHADER.as_raw()
            | S::EARLY_FRAGMENT_TESTS.as_raw()
            | S::LATE_FRAGMENT_TESTS.as_raw()
            | S::COLOR_ATTACHMENT_OUTPUT.as_raw()
            | S::ALL_GRAPHICS.as_raw()
            | S::TRANSFORM_FEEDBACK_EXT.as_raw()
            | S::FRAGMENT_DENSITY_PROCESS_EXT.as_raw()
            | S::FRAGMENT_SHADING_RATE_ATTACHMENT_KHR.as_raw()
            | S::TASK_SHADER_EXT.as_raw()
            | S::MESH_SHADER_EXT.as_raw();
    }
    if compute {
        m |= S::COMPUTE_SHADER.as_raw()
            | S::ACCELERATION_STRUCTURE_BUILD_KHR.as_raw()
            | S::RAY_TRACING_SHADER_KHR.as_raw()
            | S2::ACCELERATION_STRUCTURE_COPY_KHR.as_raw() as u32
            | S2::MICROMAP_BUILD_EXT.as_raw() as u32;
    }
    if flags.contains(Q::VIDEO_DECODE_KHR) {
        m |= S2::VIDEO_DECODE_KHR.as_raw() as u32;
    }
    if flags.contains(Q::VIDEO_ENCODE_KHR) {
        m |= S2::VIDEO_ENCODE_KHR.as_raw() as u32;
    }
    if flags.contains(Q::OPTICAL_FLOW_NV) {
        m |= S2::OPTICAL_FLOW_NV.as_raw() as u32;
    }
    m
}

/// `VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT`: made by every stage.
const MEMORY_ACCESS: u32 =
    vk::AccessFlags::MEMORY_READ.as_raw() | vk::AccessFlags::MEMORY_WRITE.as_raw();

/// `VK_PIPELINE_STAGE_HOST_BIT`: refused in a handoff, which is a queue family
/// ownership transfer (`VUID-VkBufferMemoryBarrier2-srcStageMask-03851`: with the
/// host stage the two families must be equal), whatever the barrier call, so that
/// a handoff means the same with and without synchronization2.
const HOST_STAGE: u32 = vk::PipelineStageFlags::HOST.as_raw();

/// `VK_ACCESS_HOST_READ_BIT | VK_ACCESS_HOST_WRITE_BIT`: made only by the host
/// stage (not even by `ALL_COMMANDS`: `VUID-VkBufferMemoryBarrier2-srcAccessMask-03916`,
/// `-03917`), so refused with it.
const HOST_ACCESS: u32 = vk::AccessFlags::HOST_READ.as_raw() | vk::AccessFlags::HOST_WRITE.as_raw();

/// The `VK_PIPELINE_STAGE_*_SHADER_BIT` stages of the 32-bit masks.
const SHADER_STAGES: u32 = {
    use vk::PipelineStageFlags as S;
    S::VERTEX_SHADER.as_raw()
        | S::TESSELLATION_CONTROL_SHADER.as_raw()
        | S::TESSELLATION_EVALUATION_SHADER.as_raw()
        | S::GEOMETRY_SHADER.as_raw()
        | S::FRAGMENT_SHADER.as_raw()
        | S::COMPUTE_SHADER.as_raw()
        | S::RAY_TRACING_SHADER_KHR.as_raw()
        | S::TASK_SHADER_EXT.as_raw()
        | S::MESH_SHADER_EXT.as_raw()
};

/// The table of supported access types of the Vulkan specification, for the
/// access bits of the 32-bit masks: each access with the stages that make it and
/// the number of the synchronization2 VUID that says so
/// (`VUID-VkBufferMemoryBarrier2-srcAccessMask-NNNNN`; `vkCmdPipelineBarrier`
/// refers to the same table: `-srcAccessMask-02815`, `-dstAccessMask-02816`).
/// `ALL_COMMANDS` makes every access and `MEMORY_READ`/`MEMORY_WRITE` are made by
/// every stage: neither is listed. `ALL_TRANSFER` is `TRANSFER`'s bit.
const ACCESS_TABLE: [(u32, u32, &str); 26] = {
    use vk::AccessFlags as A;
    use vk::PipelineStageFlags as S;
    let g = S::ALL_GRAPHICS.as_raw();
    let as_build = S::ACCELERATION_STRUCTURE_BUILD_KHR.as_raw();
    let as_copy = vk::PipelineStageFlags2::ACCELERATION_STRUCTURE_COPY_KHR.as_raw() as u32;
    let micromap = vk::PipelineStageFlags2::MICROMAP_BUILD_EXT.as_raw() as u32;
    let transfer = S::TRANSFER.as_raw();
    let colour = S::COLOR_ATTACHMENT_OUTPUT.as_raw() | g;
    let tests = S::EARLY_FRAGMENT_TESTS.as_raw() | S::LATE_FRAGMENT_TESTS.as_raw() | g;
    let tf = S::TRANSFORM_FEEDBACK_EXT.as_raw() | g;
    [
        (
            A::INDIRECT_COMMAND_READ.as_raw(),
            S::DRAW_INDIRECT.as_raw() | as_build | g,
            "03900",
        ),
        (
            A::INDEX_READ.as_raw(),
            S::VERTEX_INPUT.as_raw() | g,
            "03901",
        ),
        (
            A::VERTEX_ATTRIBUTE_READ.as_raw(),
            S::VERTEX_INPUT.as_raw() | g,
            "03902",
        ),
        (A::UNIFORM_READ.as_raw(), SHADER_STAGES | g, "03904"),
        (
            A::INPUT_ATTACHMENT_READ.as_raw(),
            S::FRAGMENT_SHADER.as_raw() | g,
            "03903",
        ),
        (
            A::SHADER_READ.as_raw(),
            SHADER_STAGES | as_build | micromap | g,
            "07454",
        ),
        (A::SHADER_WRITE.as_raw(), SHADER_STAGES | g, "03909"),
        (A::COLOR_ATTACHMENT_READ.as_raw(), colour, "03910"),
        (A::COLOR_ATTACHMENT_WRITE.as_raw(), colour, "03911"),
        (A::DEPTH_STENCIL_ATTACHMENT_READ.as_raw(), tests, "03912"),
        (A::DEPTH_STENCIL_ATTACHMENT_WRITE.as_raw(), tests, "03913"),
        (
            A::TRANSFER_READ.as_raw(),
            transfer | as_build | as_copy,
            "03914",
        ),
        (
            A::TRANSFER_WRITE.as_raw(),
            transfer | as_build | as_copy,
            "03915",
        ),
        (A::HOST_READ.as_raw(), S::HOST.as_raw(), "03916"),
        (A::HOST_WRITE.as_raw(), S::HOST.as_raw(), "03917"),
        (
            A::COMMAND_PREPROCESS_READ_NV.as_raw(),
            S::COMMAND_PREPROCESS_NV.as_raw(),
            "03924",
        ),
        (
            A::COMMAND_PREPROCESS_WRITE_NV.as_raw(),
            S::COMMAND_PREPROCESS_NV.as_raw(),
            "03925",
        ),
        (
            A::COLOR_ATTACHMENT_READ_NONCOHERENT_EXT.as_raw(),
            colour,
            "03926",
        ),
        (
            A::CONDITIONAL_RENDERING_READ_EXT.as_raw(),
            S::CONDITIONAL_RENDERING_EXT.as_raw() | g,
            "03918",
        ),
        (
            A::ACCELERATION_STRUCTURE_READ_KHR.as_raw(),
            as_build | as_copy | SHADER_STAGES,
            "03927",
        ),
        (
            A::ACCELERATION_STRUCTURE_WRITE_KHR.as_raw(),
            as_build | as_copy,
            "03928",
        ),
        (
            A::FRAGMENT_SHADING_RATE_ATTACHMENT_READ_KHR.as_raw(),
            S::FRAGMENT_SHADING_RATE_ATTACHMENT_KHR.as_raw() | g,
            "03923",
        ),
        (
            A::FRAGMENT_DENSITY_MAP_READ_EXT.as_raw(),
            S::FRAGMENT_DENSITY_PROCESS_EXT.as_raw() | g,
            "03919",
        ),
        (A::TRANSFORM_FEEDBACK_WRITE_EXT.as_raw(), tf, "03920"),
        (
            A::TRANSFORM_FEEDBACK_COUNTER_READ_EXT.as_raw(),
            tf | S::DRAW_INDIRECT.as_raw(),
            "04747",
        ),
        (
            A::TRANSFORM_FEEDBACK_COUNTER_WRITE_EXT.as_raw(),
            tf,
            "03922",
        ),
    ]
};

/// A stage or access bit that only a device with a feature or extension enabled
/// may name: the bits, what they need (in words), whether `f` has it, and the
/// VUIDs of `vkCmdPipelineBarrier` and of the synchronization2 barriers that say
/// so (empty where an extension's bit is simply not a valid value without it).
struct Gate {
    bits: u32,
    needs: &'static str,
    enabled: fn(&EnabledFeatures) -> bool,
    vuid1: &'static str,
    vuid2: &'static str,
}

/// The stages that need a feature or an extension, the rest of the 32-bit masks
/// being core stages that every device has (`VUID-vkCmdPipelineBarrier-srcStageMask-04090`
/// … `-04097`, `-07318`, `-07949`, `-10754`; `VUID-VkBufferMemoryBarrier2-srcStageMask-03929`
/// … `-03935`, `-07316`, `-07946`).
const STAGE_GATES: [Gate; 16] = {
    use vk::PipelineStageFlags as S;
    use vk::PipelineStageFlags2 as S2;
    [
        Gate {
            bits: S::GEOMETRY_SHADER.as_raw(),
            needs: "the geometryShader feature",
            enabled: |f| f.geometry_shader,
            vuid1: "04090",
            vuid2: "03929",
        },
        Gate {
            bits: S::TESSELLATION_CONTROL_SHADER.as_raw() | S::TESSELLATION_EVALUATION_SHADER.as_raw(),
            needs: "the tessellationShader feature",
            enabled: |f| f.tessellation_shader,
            vuid1: "04091",
            vuid2: "03930",
        },
        Gate {
            bits: S::CONDITIONAL_RENDERING_EXT.as_raw(),
            needs: "the conditionalRendering feature (VK_EXT_conditional_rendering)",
            enabled: |f| f.conditional_rendering,
            vuid1: "04092",
            vuid2: "03931",
        },
        Gate {
            bits: S::FRAGMENT_DENSITY_PROCESS_EXT.as_raw(),
            needs: "the fragmentDensityMap feature (VK_EXT_fragment_density_map)",
            enabled: |f| f.fragment_density_map,
            vuid1: "04093",
            vuid2: "03932",
        },
        Gate {
            bits: S::TRANSFORM_FEEDBACK_EXT.as_raw(),
            needs: "the transformFeedback feature (VK_EXT_transform_feedback)",
            enabled: |f| f.transform_feedback,
            vuid1: "04094",
            vuid2: "03933",
        },
        Gate {
            bits: S::MESH_SHADER_EXT.as_raw(),
            needs: "the meshShader feature (VK_EXT_mesh_shader or VK_NV_mesh_shader)",
            enabled: |f| f.mesh_shader,
            vuid1: "04095",
            vuid2: "03934",
        },
        Gate {
            bits: S::TASK_SHADER_EXT.as_raw(),
            needs: "the taskShader feature (VK_EXT_mesh_shader or VK_NV_mesh_shader)",
            enabled: |f| f.task_shader,
            vuid1: "04096",
            vuid2: "03935",
        },
        Gate {
            bits: S::FRAGMENT_SHADING_RATE_ATTACHMENT_KHR.as_raw(),
            needs: "the attachmentFragmentShadingRate feature (VK_KHR_fragment_shading_rate) or the \
                    shadingRateImage feature (VK_NV_shading_rate_image)",
            enabled: |f| f.attachment_fragment_shading_rate || f.shading_rate_image,
            vuid1: "07318",
            vuid2: "07316",
        },
        Gate {
            bits: S::RAY_TRACING_SHADER_KHR.as_raw(),
            needs: "the rayTracingPipeline feature (VK_KHR_ray_tracing_pipeline) or VK_NV_ray_tracing",
            enabled: |f| f.ray_tracing_pipeline || f.nv_ray_tracing,
            vuid1: "07949",
            vuid2: "07946",
        },
        Gate {
            bits: S::ACCELERATION_STRUCTURE_BUILD_KHR.as_raw(),
            needs: "the accelerationStructure feature (VK_KHR_acceleration_structure) or VK_NV_ray_tracing",
            enabled: |f| f.acceleration_structure || f.nv_ray_tracing,
            vuid1: "10754",
            vuid2: "",
        },
        Gate {
            bits: S::COMMAND_PREPROCESS_NV.as_raw(),
            needs: "VK_NV_device_generated_commands or VK_EXT_device_generated_commands",
            enabled: |f| f.device_generated_commands,
            vuid1: "",
            vuid2: "",
        },
        Gate {
            bits: S2::VIDEO_DECODE_KHR.as_raw() as u32,
            needs: "VK_KHR_video_decode_queue",
            enabled: |f| f.video_decode_queue,
            vuid1: "",
            vuid2: "",
        },
        Gate {
            bits: S2::VIDEO_ENCODE_KHR.as_raw() as u32,
            needs: "VK_KHR_video_encode_queue",
            enabled: |f| f.video_encode_queue,
            vuid1: "",
            vuid2: "",
        },
        Gate {
            bits: S2::ACCELERATION_STRUCTURE_COPY_KHR.as_raw() as u32,
            needs: "VK_KHR_ray_tracing_maintenance1",
            enabled: |f| f.ray_tracing_maintenance1,
            vuid1: "",
            vuid2: "",
        },
        Gate {
            bits: S2::OPTICAL_FLOW_NV.as_raw() as u32,
            needs: "VK_NV_optical_flow",
            enabled: |f| f.optical_flow,
            vuid1: "",
            vuid2: "",
        },
        Gate {
            bits: S2::MICROMAP_BUILD_EXT.as_raw() as u32,
            needs: "VK_EXT_opacity_micromap",
            enabled: |f| f.opacity_micromap,
            vuid1: "",
            vuid2: "",
        },
    ]
};

/// The access bits that an extension brings (the others of the 32-bit masks are
/// core): valid values only where it is enabled, and made only by its stages.
const ACCESS_GATES: [Gate; 7] = {
    use vk::AccessFlags as A;
    [
        Gate {
            bits: A::TRANSFORM_FEEDBACK_WRITE_EXT.as_raw()
                | A::TRANSFORM_FEEDBACK_COUNTER_READ_EXT.as_raw()
                | A::TRANSFORM_FEEDBACK_COUNTER_WRITE_EXT.as_raw(),
            needs: "the transformFeedback feature (VK_EXT_transform_feedback)",
            enabled: |f| f.transform_feedback,
            vuid1: "",
            vuid2: "",
        },
        Gate {
            bits: A::CONDITIONAL_RENDERING_READ_EXT.as_raw(),
            needs: "the conditionalRendering feature (VK_EXT_conditional_rendering)",
            enabled: |f| f.conditional_rendering,
            vuid1: "",
            vuid2: "",
        },
        Gate {
            bits: A::FRAGMENT_DENSITY_MAP_READ_EXT.as_raw(),
            needs: "the fragmentDensityMap feature (VK_EXT_fragment_density_map)",
            enabled: |f| f.fragment_density_map,
            vuid1: "",
            vuid2: "",
        },
        Gate {
            bits: A::FRAGMENT_SHADING_RATE_ATTACHMENT_READ_KHR.as_raw(),
            needs: "the attachmentFragmentShadingRate feature (VK_KHR_fragment_shading_rate) or the \
                    shadingRateImage feature (VK_NV_shading_rate_image)",
            enabled: |f| f.attachment_fragment_shading_rate || f.shading_rate_image,
            vuid1: "",
            vuid2: "",
        },
        Gate {
            bits: A::ACCELERATION_STRUCTURE_READ_KHR.as_raw() | A::ACCELERATION_STRUCTURE_WRITE_KHR.as_raw(),
            needs: "the accelerationStructure feature (VK_KHR_acceleration_structure) or VK_NV_ray_tracing",
            enabled: |f| f.acceleration_structure || f.nv_ray_tracing,
            vuid1: "",
            vuid2: "",
        },
        Gate {
            bits: A::COMMAND_PREPROCESS_READ_NV.as_raw() | A::COMMAND_PREPROCESS_WRITE_NV.as_raw(),
            needs: "VK_NV_device_generated_commands or VK_EXT_device_generated_commands",
            enabled: |f| f.device_generated_commands,
            vuid1: "",
            vuid2: "",
        },
        Gate {
            bits: A::COLOR_ATTACHMENT_READ_NONCOHERENT_EXT.as_raw(),
            needs: "VK_EXT_blend_operation_advanced",
            enabled: |f| f.blend_operation_advanced,
            vuid1: "",
            vuid2: "",
        },
    ]
};

/// The bits of `gates` that `f` does not enable.
fn gated(gates: &[Gate], f: &EnabledFeatures) -> u32 {
    gates
        .iter()
        .filter(|g| !(g.enabled)(f))
        .fold(0, |m, g| m | g.bits)
}

/// What a context's handoff barriers may name, worked out once when the context
/// is made (from the barrier call, the device's queue families and the features
/// the context knows are enabled), so a call checks its masks with a few loads
/// and comparisons.
pub struct Rules {
    /// `vkCmdPipelineBarrier2` (synchronization2) or `vkCmdPipelineBarrier`.
    sync2: bool,
    /// What the context knows is enabled.
    features: EnabledFeatures,
    /// Per queue family: the stages its queues run that the barrier call takes and
    /// the device has enabled.
    family_stages: Box<[u32]>,
    /// Per queue family: the stages its queues run (for the messages).
    family_runs: Box<[u32]>,
    /// Per stage bit: the accesses the stage makes, of the enabled ones
    /// (`ALL_COMMANDS`: every enabled access), `MEMORY_READ`/`WRITE` left out.
    makes: [u32; 32],
    /// Every access bit the barrier may name: the enabled ones and `MEMORY_*`.
    access: u32,
    /// The stages that may not go with `ACCELERATION_STRUCTURE_READ`: the shader
    /// stages other than ray tracing, without `rayQuery`
    /// (`VUID-VkBufferMemoryBarrier2-srcAccessMask-06257`).
    not_with_as_read: u32,
}

impl Rules {
    /// The rules of a device whose queue families run `runs` (one mask per
    /// family, [`stages_of_queue`]), recording with `vkCmdPipelineBarrier2` when
    /// `sync2`, with `features` enabled.
    pub fn new(sync2: bool, runs: &[u32], features: EnabledFeatures) -> Rules {
        let (call_stages, call_access) = match sync2 {
            true => (STAGES_SYNC2, ACCESS_SYNC2),
            false => (STAGES_SYNC1, ACCESS_SYNC1),
        };
        // No host stage or access: a queue family ownership transfer is not a host
        // operation (HOST_STAGE's doc).
        let stages = call_stages & !gated(&STAGE_GATES, &features) & !HOST_STAGE;
        let access = call_access & !gated(&ACCESS_GATES, &features) & !HOST_ACCESS;
        let mut makes = [0u32; 32];
        for (bit, m) in makes.iter_mut().enumerate() {
            let stage = 1u32 << bit;
            if stage == vk::PipelineStageFlags::ALL_COMMANDS.as_raw() {
                *m = access & !MEMORY_ACCESS;
            } else if stage & stages != 0 {
                *m = ACCESS_TABLE
                    .iter()
                    .filter(|(_, by, _)| by & stage != 0)
                    .fold(0, |m, (a, _, _)| m | a)
                    & access;
            }
        }
        let not_with_as_read = match features.ray_query {
            true => 0,
            false => SHADER_STAGES & !vk::PipelineStageFlags::RAY_TRACING_SHADER_KHR.as_raw(),
        };
        Rules {
            sync2,
            features,
            family_stages: runs.iter().map(|r| r & stages).collect(),
            family_runs: runs.into(),
            makes,
            access,
            not_with_as_read,
        }
    }

    /// What the context knows is enabled.
    pub fn features(&self) -> &EnabledFeatures {
        &self.features
    }

    /// Whether every access of `access` (no `MEMORY_*`, not 0) is made by a stage of
    /// `stages` (the table of supported access types).
    #[inline]
    fn made_by(&self, stages: u32, access: u32) -> bool {
        let mut makes = 0;
        let mut s = stages;
        while s != 0 {
            makes |= self.makes[s.trailing_zeros() as usize];
            s &= s - 1;
        }
        access & !makes == 0
            && (access & vk::AccessFlags::ACCELERATION_STRUCTURE_READ_KHR.as_raw() == 0
                || stages & self.not_with_as_read == 0)
    }
}

/// `VK_PIPELINE_STAGE_GEOMETRY_SHADER_BIT | ...` (or the `_2_` names for
/// synchronization2) of `bits`, for messages.
fn stage_names(bits: u32, sync2: bool) -> String {
    bit_names(bits, |b| match sync2 {
        true => (
            "VK_PIPELINE_STAGE_2_",
            format!("{:?}", vk::PipelineStageFlags2::from_raw(u64::from(b))),
        ),
        false => (
            "VK_PIPELINE_STAGE_",
            format!("{:?}", vk::PipelineStageFlags::from_raw(b)),
        ),
    })
}

/// `VK_ACCESS_SHADER_WRITE_BIT | ...` (or the `_2_` names) of `bits`.
fn access_names(bits: u32, sync2: bool) -> String {
    bit_names(bits, |b| match sync2 {
        true => (
            "VK_ACCESS_2_",
            format!("{:?}", vk::AccessFlags2::from_raw(u64::from(b))),
        ),
        false => ("VK_ACCESS_", format!("{:?}", vk::AccessFlags::from_raw(b))),
    })
}

/// Each bit of `bits` by its Vulkan name: ash's name of the bit (the first of
/// its aliases) with the prefix, `_BIT` before a vendor suffix.
fn bit_names(bits: u32, name: impl Fn(u32) -> (&'static str, String)) -> String {
    let mut out = Vec::new();
    let mut s = bits;
    while s != 0 {
        let b = 1 << s.trailing_zeros();
        s &= s - 1;
        let (prefix, debug) = name(b);
        let n = debug.split(" | ").next().unwrap_or_default();
        if n.is_empty() || n.starts_with(|c: char| c.is_ascii_digit()) {
            out.push(format!("{b:#x}"));
            continue;
        }
        let (stem, vendor) = match n.rsplit_once('_') {
            Some((stem, v)) if matches!(v, "KHR" | "EXT" | "NV" | "HUAWEI" | "AMD" | "QCOM") => {
                (stem, format!("_{v}"))
            }
            _ => (n, String::new()),
        };
        out.push(format!("{prefix}{stem}_BIT{vendor}"));
    }
    out.join(" | ")
}

impl Scope {
    /// Checks the engine's side against the context's [`Rules`], before anything
    /// is recorded: a queue family the device has (not `VK_QUEUE_FAMILY_IGNORED`,
    /// `EXTERNAL` or `FOREIGN`: the other side of the transfer is CUDA's), stage
    /// bits that exist for the barrier call the context records with, that the
    /// family's queues can run and whose feature or extension is enabled, access
    /// bits that exist and are enabled, and accesses that the stages make (the
    /// table of supported access types). A bounds-checked load and a few masks,
    /// plus one load per stage bit when the access mask names more than
    /// `MEMORY_READ`/`MEMORY_WRITE`.
    #[inline]
    pub(crate) fn check(&self, rules: &Rules, dir: Direction) -> Result<()> {
        let (s, a) = (self.stages.as_raw(), self.access.as_raw());
        if let Some(&ok) = rules.family_stages.get(self.queue_family as usize) {
            let specific = a & !MEMORY_ACCESS;
            if s & !ok == 0
                && a & !rules.access == 0
                && (specific == 0 || rules.made_by(s, specific))
            {
                return Ok(());
            }
        }
        Err(self.refusal(rules, dir))
    }

    /// What [`check`](Self::check) found wrong, in words.
    #[cold]
    fn refusal(&self, rules: &Rules, dir: Direction) -> Error {
        let sync2 = rules.sync2;
        let (call_stages, call_access) = match sync2 {
            true => (STAGES_SYNC2, ACCESS_SYNC2),
            false => (STAGES_SYNC1, ACCESS_SYNC1),
        };
        let (barrier, stage_type, access_type) = match sync2 {
            true => (
                "vkCmdPipelineBarrier2 (the context has synchronization2)",
                "the 32-bit part of VkPipelineStageFlagBits2",
                "the 32-bit part of VkAccessFlagBits2",
            ),
            false => (
                "vkCmdPipelineBarrier",
                "VkPipelineStageFlagBits",
                "VkAccessFlagBits",
            ),
        };
        let side = match dir {
            Direction::Release => "src",
            Direction::Acquire => "dst",
        };
        let vuid = |sync1: &str, sync2_: &str, what: &str| match (sync2, sync2_.is_empty()) {
            (true, false) => format!(
                " (VUID-VkBufferMemoryBarrier2-{side}{what}-{sync2_}, and of VkImageMemoryBarrier2)"
            ),
            (false, _) if !sync1.is_empty() => {
                format!(" (VUID-vkCmdPipelineBarrier-{side}{what}-{sync1})")
            }
            _ => String::new(),
        };
        let n = rules.family_runs.len() as u32;
        let q = self.queue_family;
        if q >= n {
            let which = match q {
                vk::QUEUE_FAMILY_IGNORED => " (VK_QUEUE_FAMILY_IGNORED)",
                vk::QUEUE_FAMILY_EXTERNAL => {
                    " (VK_QUEUE_FAMILY_EXTERNAL, which is CUDA's side of the transfer)"
                }
                vk::QUEUE_FAMILY_FOREIGN_EXT => " (VK_QUEUE_FAMILY_FOREIGN_EXT)",
                _ => "",
            };
            let families = match n {
                1 => "the device has 1 queue family (index 0)".to_string(),
                n => format!("the device has {n} queue families (0 to {})", n - 1),
            };
            return Error::invalid(format!(
                "info->queue_family_index is {q}{which}, but it must be the engine's queue family \
                 that the command buffer is submitted to: {families}"
            ));
        }
        let s = self.stages.as_raw();
        let a = self.access.as_raw();
        let bad = s & !call_stages;
        if bad != 0 {
            return Error::invalid(format!(
                "info->stage_mask {s:#x} has bits {bad:#x} that are not {stage_type}, which \
                 {barrier} takes"
            ));
        }
        if s & HOST_STAGE != 0 {
            return Error::invalid(format!(
                "info->stage_mask {s:#x} has {}: a handoff is a queue family ownership transfer, \
                 which host operations are no part of{} (the queue submission itself makes the \
                 host's writes visible to the device)",
                stage_names(HOST_STAGE, sync2),
                match sync2 {
                    true =>
                        " (VUID-VkBufferMemoryBarrier2-srcStageMask-03851, \
                             VUID-VkImageMemoryBarrier2-srcStageMask-03854)",
                    false => "",
                }
            ));
        }
        let bad = s & !rules.family_runs[q as usize];
        if bad != 0 {
            return Error::invalid(format!(
                "info->stage_mask {s:#x} has stages {bad:#x} ({}) that the queues of family {q} \
                 cannot run (the pipeline stages a queue supports follow its VkQueueFamilyProperties::\
                 queueFlags)",
                stage_names(bad, sync2)
            ));
        }
        let not_enabled = |gates: &[Gate], bits: u32, what: &str, vuid_what: &str| {
            let said: Vec<String> = gates
                .iter()
                .filter(|g| g.bits & bits != 0 && !(g.enabled)(&rules.features))
                .map(|g| {
                    let names = match what {
                        "stage_mask" => stage_names(g.bits & bits, sync2),
                        _ => access_names(g.bits & bits, sync2),
                    };
                    format!(
                        "{names}, which needs {}{}",
                        g.needs,
                        vuid(g.vuid1, g.vuid2, vuid_what)
                    )
                })
                .collect();
            (!said.is_empty()).then(|| {
                Error::invalid(format!(
                    "info->{what} {:#x} has {}: the context does not know it enabled (a context over \
                     the engine's device assumes what every device has unless it is told: \
                     vkcuda_context_create_with_device_info, Context::from_engine_with_features; \
                     a standalone context enables none of them)",
                    if what == "stage_mask" { s } else { a },
                    said.join("; ")
                ))
            })
        };
        if let Some(e) = not_enabled(&STAGE_GATES, s, "stage_mask", "StageMask") {
            return e;
        }
        let bad = a & !call_access;
        if bad != 0 {
            return Error::invalid(format!(
                "info->access_mask {a:#x} has bits {bad:#x} that are not {access_type}, which \
                 {barrier} takes"
            ));
        }
        if a & HOST_ACCESS != 0 {
            return Error::invalid(format!(
                "info->access_mask {a:#x} has {}, which only the host stage performs, and a handoff \
                 (a queue family ownership transfer) has no host stage{}",
                access_names(a & HOST_ACCESS, sync2),
                match (sync2, dir) {
                    (true, Direction::Release) => {
                        " (VUID-VkBufferMemoryBarrier2-srcAccessMask-03916, -03917)"
                    }
                    (true, Direction::Acquire) => {
                        " (VUID-VkBufferMemoryBarrier2-dstAccessMask-03916, -03917)"
                    }
                    (false, Direction::Release) => " (VUID-vkCmdPipelineBarrier-srcAccessMask-02815)",
                    (false, Direction::Acquire) => " (VUID-vkCmdPipelineBarrier-dstAccessMask-02816)",
                }
            ));
        }
        if let Some(e) = not_enabled(&ACCESS_GATES, a, "access_mask", "AccessMask") {
            return e;
        }
        let specific = a & !MEMORY_ACCESS;
        let made: u32 = (0..32)
            .filter(|b| s & (1 << b) != 0)
            .fold(0, |m, b| m | rules.makes[b]);
        let bad = specific & !made;
        if bad != 0 {
            let first = ACCESS_TABLE
                .iter()
                .find(|(acc, _, _)| acc & bad != 0)
                .map(|(_, _, v)| *v)
                .unwrap_or_default();
            return Error::invalid(format!(
                "info->access_mask {a:#x} has {}, which no stage of info->stage_mask {s:#x} ({}) \
                 makes (the specification's table of supported access types{}): name the stages \
                 that make the accesses, or VK_PIPELINE_STAGE_ALL_COMMANDS_BIT",
                access_names(bad, sync2),
                stage_names(s, sync2),
                if sync2 {
                    vuid("", first, "AccessMask")
                } else {
                    let n = if dir == Direction::Release {
                        "02815"
                    } else {
                        "02816"
                    };
                    vuid(n, "", "AccessMask")
                }
            ));
        }
        Error::invalid(format!(
            "info->access_mask {a:#x} has {} with shader stages of info->stage_mask {s:#x} ({}), \
             which needs the rayQuery feature (VK_KHR_ray_query){}: the context does not know it \
             enabled",
            access_names(
                vk::AccessFlags::ACCELERATION_STRUCTURE_READ_KHR.as_raw(),
                sync2
            ),
            stage_names(s & rules.not_with_as_read, sync2),
            vuid("", "06257", "AccessMask"),
        ))
    }
}

/// A buffer range to hand over.
#[derive(Clone, Copy, Debug)]
pub struct BufferRange {
    pub buffer: vk::Buffer,
    pub offset: u64,
    pub size: u64,
}

/// An image to hand over, every subresource in `range`. `layout` is the layout
/// the engine leaves it in (release: the old layout, which becomes `GENERAL`) or
/// wants it in (acquire: the new layout, from `GENERAL`).
#[derive(Clone, Copy, Debug)]
pub struct ImageRange {
    pub image: vk::Image,
    pub range: vk::ImageSubresourceRange,
    pub layout: vk::ImageLayout,
}

fn families(dir: Direction, scope: &Scope) -> (u32, u32) {
    match dir {
        Direction::Release => (scope.queue_family, vk::QUEUE_FAMILY_EXTERNAL),
        Direction::Acquire => (vk::QUEUE_FAMILY_EXTERNAL, scope.queue_family),
    }
}

/// The stages and accesses of each side of a synchronization2 barrier: the other
/// side of a queue family transfer is `NONE`. The 32-bit stage and access bits
/// are the same bits in the 64-bit flags.
fn scopes2(
    dir: Direction,
    scope: &Scope,
) -> (
    (vk::PipelineStageFlags2, vk::AccessFlags2),
    (vk::PipelineStageFlags2, vk::AccessFlags2),
) {
    let engine = (
        vk::PipelineStageFlags2::from_raw(u64::from(scope.stages.as_raw())),
        vk::AccessFlags2::from_raw(u64::from(scope.access.as_raw())),
    );
    let none = (vk::PipelineStageFlags2::NONE, vk::AccessFlags2::NONE);
    match dir {
        Direction::Release => (engine, none),
        Direction::Acquire => (none, engine),
    }
}

/// The barrier of a buffer, as `vkCmdPipelineBarrier2` takes it; a context
/// without synchronization2 records [`buffer_barrier1`] of it.
pub fn buffer_barrier(
    dir: Direction,
    scope: &Scope,
    b: &BufferRange,
) -> vk::BufferMemoryBarrier2<'static> {
    let (src_family, dst_family) = families(dir, scope);
    let ((src_stage, src_access), (dst_stage, dst_access)) = scopes2(dir, scope);
    vk::BufferMemoryBarrier2::default()
        .src_stage_mask(src_stage)
        .dst_stage_mask(dst_stage)
        .src_access_mask(src_access)
        .dst_access_mask(dst_access)
        .src_queue_family_index(src_family)
        .dst_queue_family_index(dst_family)
        .buffer(b.buffer)
        .offset(b.offset)
        .size(b.size)
}

/// The barrier of an image, as `vkCmdPipelineBarrier2` takes it; a context
/// without synchronization2 records [`image_barrier1`] of it.
pub fn image_barrier(
    dir: Direction,
    scope: &Scope,
    i: &ImageRange,
) -> vk::ImageMemoryBarrier2<'static> {
    let (src_family, dst_family) = families(dir, scope);
    let ((src_stage, src_access), (dst_stage, dst_access)) = scopes2(dir, scope);
    let (old, new) = match dir {
        Direction::Release => (i.layout, vk::ImageLayout::GENERAL),
        Direction::Acquire => (vk::ImageLayout::GENERAL, i.layout),
    };
    vk::ImageMemoryBarrier2::default()
        .src_stage_mask(src_stage)
        .dst_stage_mask(dst_stage)
        .src_access_mask(src_access)
        .dst_access_mask(dst_access)
        .old_layout(old)
        .new_layout(new)
        .src_queue_family_index(src_family)
        .dst_queue_family_index(dst_family)
        .image(i.image)
        .subresource_range(i.range)
}

/// The access bits of a synchronization2 mask that the checks let through: the
/// 32-bit part, the same bits as `VkAccessFlags`.
#[inline]
fn access1(a: vk::AccessFlags2) -> vk::AccessFlags {
    vk::AccessFlags::from_raw(a.as_raw() as u32)
}

/// [`buffer_barrier`] for `vkCmdPipelineBarrier` (its stages go to the call:
/// [`stages`]).
#[inline]
pub fn buffer_barrier1(b: &vk::BufferMemoryBarrier2) -> vk::BufferMemoryBarrier<'static> {
    vk::BufferMemoryBarrier::default()
        .src_access_mask(access1(b.src_access_mask))
        .dst_access_mask(access1(b.dst_access_mask))
        .src_queue_family_index(b.src_queue_family_index)
        .dst_queue_family_index(b.dst_queue_family_index)
        .buffer(b.buffer)
        .offset(b.offset)
        .size(b.size)
}

/// [`image_barrier`] for `vkCmdPipelineBarrier`.
#[inline]
pub fn image_barrier1(i: &vk::ImageMemoryBarrier2) -> vk::ImageMemoryBarrier<'static> {
    vk::ImageMemoryBarrier::default()
        .src_access_mask(access1(i.src_access_mask))
        .dst_access_mask(access1(i.dst_access_mask))
        .old_layout(i.old_layout)
        .new_layout(i.new_layout)
        .src_queue_family_index(i.src_queue_family_index)
        .dst_queue_family_index(i.dst_queue_family_index)
        .image(i.image)
        .subresource_range(i.subresource_range)
}

/// The stages of one side of a synchronization2 barrier for `vkCmdPipelineBarrier`:
/// the same 32-bit bits, and `NONE` (the other side of a queue family transfer,
/// not this queue's) the start (`TOP_OF_PIPE`, source) or the end
/// (`BOTTOM_OF_PIPE`, destination) of the pipe.
#[inline]
fn stage1(s: vk::PipelineStageFlags2, none: vk::PipelineStageFlags) -> vk::PipelineStageFlags {
    let s = vk::PipelineStageFlags::from_raw(s.as_raw() as u32);
    if s.is_empty() {
        none
    } else {
        s
    }
}

/// The source and destination stages of the `vkCmdPipelineBarrier` that records
/// `buffers` and `images`: the union of each barrier's ([`stage1`]).
pub fn stages1(
    buffers: &[vk::BufferMemoryBarrier2],
    images: &[vk::ImageMemoryBarrier2],
) -> (vk::PipelineStageFlags, vk::PipelineStageFlags) {
    let top = vk::PipelineStageFlags::TOP_OF_PIPE;
    let bottom = vk::PipelineStageFlags::BOTTOM_OF_PIPE;
    let sides = buffers
        .iter()
        .map(|b| (b.src_stage_mask, b.dst_stage_mask))
        .chain(images.iter().map(|i| (i.src_stage_mask, i.dst_stage_mask)));
    sides.fold(
        (
            vk::PipelineStageFlags::empty(),
            vk::PipelineStageFlags::empty(),
        ),
        |(src, dst), (s, d)| (src | stage1(s, top), dst | stage1(d, bottom)),
    )
}

/// Records `buffers` and `images` as one pipeline barrier: `vkCmdPipelineBarrier2`
/// where the device has synchronization2 enabled, else `vkCmdPipelineBarrier`
/// with the barriers derived from them ([`buffer_barrier1`], [`image_barrier1`])
/// and their stages ([`stages1`]). Nothing is recorded for no barriers.
///
/// # Safety
/// `cmd` is a command buffer of `dev` in the recording state, externally
/// synchronised by the caller; every resource the barriers name belongs to `dev`.
pub unsafe fn record_barriers(
    dev: &VulkanDevice,
    cmd: vk::CommandBuffer,
    buffers: &[vk::BufferMemoryBarrier2],
    images: &[vk::ImageMemoryBarrier2],
) {
    if buffers.is_empty() && images.is_empty() {
        return;
    }
    if let Some(barrier2) = dev.sync2 {
        let dep = vk::DependencyInfo::default()
            .buffer_memory_barriers(buffers)
            .image_memory_barriers(images);
        barrier2(cmd, &dep);
        return;
    }
    SCRATCH1.with(|scratch1| {
        let mut scratch1 = scratch1.borrow_mut();
        let (b1, i1) = &mut *scratch1;
        b1.clear();
        i1.clear();
        b1.extend(buffers.iter().map(buffer_barrier1));
        i1.extend(images.iter().map(image_barrier1));
        let (src_stage, dst_stage) = stages1(buffers, images);
        dev.device.cmd_pipeline_barrier(
            cmd,
            src_stage,
            dst_stage,
            vk::DependencyFlags::empty(),
            &[],
            b1,
            i1,
        );
    })
}

thread_local! {
    /// Barrier arrays reused from call to call, so a batched handoff allocates
    /// nothing once warm: the synchronization2 barriers every call builds, and
    /// the `vkCmdPipelineBarrier` ones derived from them without it.
    static SCRATCH2: RefCell<(Vec<vk::BufferMemoryBarrier2<'static>>, Vec<vk::ImageMemoryBarrier2<'static>>)> =
        const { RefCell::new((Vec::new(), Vec::new())) };
    static SCRATCH1: RefCell<(Vec<vk::BufferMemoryBarrier<'static>>, Vec<vk::ImageMemoryBarrier<'static>>)> =
        const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Where [`record`] puts each resource's barrier, built once
/// ([`buffer_barrier`], [`image_barrier`]) whatever the barrier call.
pub struct Sink<'a> {
    buffers: &'a mut Vec<vk::BufferMemoryBarrier2<'static>>,
    images: &'a mut Vec<vk::ImageMemoryBarrier2<'static>>,
    dir: Direction,
    scope: &'a Scope,
}

impl Sink<'_> {
    /// Adds the barrier of a buffer.
    #[inline]
    pub fn buffer(&mut self, r: &BufferRange) {
        self.buffers.push(buffer_barrier(self.dir, self.scope, r));
    }

    /// Adds the barrier of an image.
    #[inline]
    pub fn image(&mut self, r: &ImageRange) {
        self.images.push(image_barrier(self.dir, self.scope, r));
    }
}

/// Records one pipeline barrier that hands every buffer and image over, in one
/// pass: `fill` adds each resource's barrier to the sink (and checks it); when it
/// returns `Ok`, the barrier is recorded ([`record_barriers`]), and when it
/// returns an error nothing is.
///
/// # Safety
/// `cmd` is a command buffer of `dev` in the recording state, externally
/// synchronised by the caller; every resource `fill` adds belongs to `dev`.
pub unsafe fn record<E>(
    dev: &VulkanDevice,
    cmd: vk::CommandBuffer,
    dir: Direction,
    scope: &Scope,
    fill: impl FnOnce(&mut Sink) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    SCRATCH2.with(|scratch| {
        let mut scratch = scratch.borrow_mut();
        let (b, i) = &mut *scratch;
        b.clear();
        i.clear();
        fill(&mut Sink {
            buffers: b,
            images: i,
            dir,
            scope,
        })?;
        record_barriers(dev, cmd, b, i);
        Ok(())
    })
}

fn layout_name(l: vk::ImageLayout) -> String {
    let debug = format!("{l:?}");
    let named = debug.starts_with(|c: char| c.is_ascii_uppercase())
        && debug
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    if named {
        format!("VK_IMAGE_LAYOUT_{debug}")
    } else {
        format!("VkImageLayout({})", l.as_raw())
    }
}

/// The image usage a layout needs in a queue family ownership transfer (one of
/// them: `VUID-VkImageMemoryBarrier-oldLayout-01208`, `-01211`, `-01212`,
/// `-01213`, `-srcQueueFamilyIndex-03938`, `-03939`, and the same of
/// `VkImageMemoryBarrier2`), and the VUID; empty for a layout any usage allows.
const fn usage_for(l: vk::ImageLayout) -> (vk::ImageUsageFlags, &'static str) {
    use vk::ImageLayout as L;
    use vk::ImageUsageFlags as U;
    match l {
        L::COLOR_ATTACHMENT_OPTIMAL => (U::COLOR_ATTACHMENT, "oldLayout-01208"),
        L::SHADER_READ_ONLY_OPTIMAL => (
            U::from_raw(U::SAMPLED.as_raw() | U::INPUT_ATTACHMENT.as_raw()),
            "oldLayout-01211",
        ),
        L::TRANSFER_SRC_OPTIMAL => (U::TRANSFER_SRC, "oldLayout-01212"),
        L::TRANSFER_DST_OPTIMAL => (U::TRANSFER_DST, "oldLayout-01213"),
        L::ATTACHMENT_OPTIMAL => (
            U::from_raw(U::COLOR_ATTACHMENT.as_raw() | U::DEPTH_STENCIL_ATTACHMENT.as_raw()),
            "srcQueueFamilyIndex-03938",
        ),
        L::READ_ONLY_OPTIMAL => (
            U::from_raw(
                U::DEPTH_STENCIL_ATTACHMENT.as_raw()
                    | U::SAMPLED.as_raw()
                    | U::INPUT_ATTACHMENT.as_raw(),
            ),
            "srcQueueFamilyIndex-03939",
        ),
        _ => (U::empty(), ""),
    }
}

/// `VK_IMAGE_USAGE_SAMPLED_BIT{sep}VK_IMAGE_USAGE_STORAGE_BIT`, for messages.
fn usage_names(usage: vk::ImageUsageFlags, sep: &str) -> String {
    if usage.is_empty() {
        return "0".into();
    }
    format!("{usage:?}")
        .split(" | ")
        .map(|n| format!("VK_IMAGE_USAGE_{n}_BIT"))
        .collect::<Vec<_>>()
        .join(sep)
}

/// Whether an image of `usage` may be handed over in layout `l` (which
/// [`check_layout`] accepted) by the barrier call of a context with (`sync2`) or
/// without synchronization2: the fast path of [`check_layout_usage`].
#[inline]
pub fn layout_fits(l: vk::ImageLayout, usage: vk::ImageUsageFlags, sync2: bool) -> bool {
    let (need, _) = usage_for(l);
    (need.is_empty() || usage.intersects(need))
        && (sync2
            || !matches!(
                l,
                vk::ImageLayout::ATTACHMENT_OPTIMAL | vk::ImageLayout::READ_ONLY_OPTIMAL
            ))
}

/// Checks that an image of `usage` may be in layout `l` (a layout
/// [`check_layout`] accepted) on either side of the transfer: the usage the
/// layout needs, and synchronization2 for `ATTACHMENT_OPTIMAL` and
/// `READ_ONLY_OPTIMAL` (`VUID-VkImageMemoryBarrier-synchronization2-07793`).
#[inline]
pub fn check_layout_usage(
    l: vk::ImageLayout,
    usage: vk::ImageUsageFlags,
    sync2: bool,
    what: impl FnOnce() -> String,
) -> Result<()> {
    if layout_fits(l, usage, sync2) {
        return Ok(());
    }
    let (need, vuid) = usage_for(l);
    let name = layout_name(l);
    if !need.is_empty() && !usage.intersects(need) {
        let need = usage_names(need, " or ");
        let usage = usage_names(usage, " | ");
        return Err(Error::invalid(format!(
            "{} is {name}, which needs an image created with usage {need} \
             (VUID-VkImageMemoryBarrier-{vuid}); this image's usage is {usage}: use \
             VK_IMAGE_LAYOUT_GENERAL or a layout its usage allows",
            what()
        )));
    }
    Err(Error::invalid(format!(
        "{} is {name}, which needs the synchronization2 feature \
         (VUID-VkImageMemoryBarrier-synchronization2-07793): create the context with \
         VKCUDA_CONTEXT_CREATE_SYNCHRONIZATION2_BIT on a device with the feature enabled, or use \
         another layout",
        what()
    )))
}

/// Whether `l` is a layout [`check_layout`] accepts (the fast path; the check
/// itself says what is wrong).
#[inline]
pub fn layout_ok(l: vk::ImageLayout, dir: Direction) -> bool {
    use vk::ImageLayout as L;
    matches!(
        l,
        L::GENERAL
            | L::COLOR_ATTACHMENT_OPTIMAL
            | L::SHADER_READ_ONLY_OPTIMAL
            | L::TRANSFER_SRC_OPTIMAL
            | L::TRANSFER_DST_OPTIMAL
            | L::READ_ONLY_OPTIMAL
            | L::ATTACHMENT_OPTIMAL
    ) || (l == L::UNDEFINED && dir == Direction::Release)
}

/// Checks the engine's layout of a colour image it hands over: one a colour image
/// with optimal tiling can be in, and UNDEFINED only as the layout it leaves
/// (release: the contents are then not kept).
pub fn check_layout(l: vk::ImageLayout, dir: Direction, what: &str) -> Result<vk::ImageLayout> {
    check_layout_named(l, dir, || what.to_string())
}

/// [`check_layout`], with the argument's name made only for the message.
pub fn check_layout_named(
    l: vk::ImageLayout,
    dir: Direction,
    what: impl FnOnce() -> String,
) -> Result<vk::ImageLayout> {
    use vk::ImageLayout as L;
    let old = dir == Direction::Release;
    match l {
        _ if layout_ok(l, dir) => Ok(l),
        L::UNDEFINED => Err(Error::invalid(format!(
            "{} must not be VK_IMAGE_LAYOUT_UNDEFINED (a transition cannot go to it)",
            what()
        ))),
        _ => {
            let what = what();
            let name = layout_name(l);
            if name.starts_with("VK_IMAGE_LAYOUT_") {
                Err(Error::invalid(format!(
                    "{what} is {name}, which is not a layout of a colour image with optimal tiling \
                     shared with CUDA (GENERAL, COLOR_ATTACHMENT_OPTIMAL, SHADER_READ_ONLY_OPTIMAL, \
                     TRANSFER_SRC/DST_OPTIMAL, READ_ONLY_OPTIMAL, ATTACHMENT_OPTIMAL{})",
                    if old { ", or UNDEFINED" } else { "" }
                )))
            } else {
                Err(Error::invalid(format!(
                    "{what} is {}, not a VkImageLayout",
                    l.as_raw()
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_checked() {
        use vk::ImageLayout as L;
        let rel = Direction::Release;
        let acq = Direction::Acquire;
        assert_eq!(
            check_layout(L::UNDEFINED, rel, "old_layout").unwrap(),
            L::UNDEFINED
        );
        assert!(check_layout(L::UNDEFINED, acq, "new_layout").is_err());
        assert_eq!(
            check_layout(L::TRANSFER_SRC_OPTIMAL, acq, "new_layout").unwrap(),
            L::TRANSFER_SRC_OPTIMAL
        );
        let e = check_layout(L::DEPTH_STENCIL_ATTACHMENT_OPTIMAL, rel, "old_layout").unwrap_err();
        assert!(
            e.message
                .contains("VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL"),
            "{}",
            e.message
        );
        let e = check_layout(L::from_raw(12345), rel, "old_layout").unwrap_err();
        assert!(
            e.message.contains("12345, not a VkImageLayout"),
            "{}",
            e.message
        );
    }

    #[test]
    fn masks_hold_the_bits_of_each_barrier_call() {
        use vk::PipelineStageFlags as S;
        assert_eq!(STAGES_SYNC1 & 0x1_FFFF, 0x1_FFFF, "every core stage");
        assert_eq!(STAGES_SYNC2 & STAGES_SYNC1, STAGES_SYNC1);
        let video = vk::PipelineStageFlags2::VIDEO_DECODE_KHR.as_raw() as u32;
        assert!(STAGES_SYNC2 & video != 0 && STAGES_SYNC1 & video == 0);
        assert!(STAGES_SYNC1 & S::MESH_SHADER_EXT.as_raw() != 0);
        assert_eq!(ACCESS_SYNC1 & 0x1_FFFF, 0x1_FFFF, "every core access");
        assert_eq!(ACCESS_SYNC2, ACCESS_SYNC1);
        for m in [STAGES_SYNC1, STAGES_SYNC2, ACCESS_SYNC1, ACCESS_SYNC2] {
            assert_eq!(m & 1 << 31, 0, "bit 31 is no stage or access");
        }
    }

    #[test]
    fn queues_run_the_stages_of_their_flags() {
        use vk::PipelineStageFlags as S;
        use vk::QueueFlags as Q;
        let video = vk::PipelineStageFlags2::VIDEO_DECODE_KHR.as_raw() as u32;
        let all = stages_of_queue(Q::GRAPHICS | Q::COMPUTE | Q::TRANSFER);
        assert_eq!(
            all & STAGES_SYNC1,
            STAGES_SYNC1,
            "a universal queue runs every stage"
        );
        assert_eq!(all & video, 0);
        let compute = stages_of_queue(Q::COMPUTE);
        assert!(
            compute & S::TRANSFER.as_raw() != 0,
            "compute implies transfer"
        );
        assert_eq!(compute & S::VERTEX_SHADER.as_raw(), 0);
        assert_eq!(compute & S::ALL_GRAPHICS.as_raw(), 0);
        let transfer = stages_of_queue(Q::TRANSFER);
        assert_eq!(
            transfer,
            (S::TOP_OF_PIPE | S::BOTTOM_OF_PIPE | S::HOST | S::ALL_COMMANDS | S::TRANSFER).as_raw()
        );
        assert!(stages_of_queue(Q::VIDEO_DECODE_KHR) & video != 0);
    }

    #[test]
    fn layouts_need_the_usage_they_are_for() {
        use vk::ImageLayout as L;
        use vk::ImageUsageFlags as U;
        let storage = U::STORAGE;
        for l in [
            L::TRANSFER_SRC_OPTIMAL,
            L::TRANSFER_DST_OPTIMAL,
            L::SHADER_READ_ONLY_OPTIMAL,
            L::COLOR_ATTACHMENT_OPTIMAL,
            L::ATTACHMENT_OPTIMAL,
            L::READ_ONLY_OPTIMAL,
        ] {
            assert!(!layout_fits(l, storage, true), "{l:?}");
        }
        assert!(layout_fits(L::GENERAL, storage, false));
        assert!(layout_fits(L::UNDEFINED, storage, false));
        assert!(layout_fits(
            L::SHADER_READ_ONLY_OPTIMAL,
            U::INPUT_ATTACHMENT,
            false
        ));
        assert!(layout_fits(L::READ_ONLY_OPTIMAL, U::SAMPLED, true));
        // synchronization2's layouts need it.
        assert!(!layout_fits(L::READ_ONLY_OPTIMAL, U::SAMPLED, false));
        assert!(!layout_fits(
            L::ATTACHMENT_OPTIMAL,
            U::COLOR_ATTACHMENT,
            false
        ));
        let e = check_layout_usage(L::TRANSFER_SRC_OPTIMAL, storage, true, || {
            "new_layout".into()
        })
        .unwrap_err();
        assert!(
            e.message.contains("VK_IMAGE_USAGE_TRANSFER_SRC_BIT")
                && e.message.contains("usage is VK_IMAGE_USAGE_STORAGE_BIT")
                && e.message.contains("01212"),
            "{}",
            e.message
        );
        let e =
            check_layout_usage(L::READ_ONLY_OPTIMAL, U::SAMPLED, false, || "x".into()).unwrap_err();
        assert!(e.message.contains("synchronization2"), "{}", e.message);
    }

    #[test]
    fn barriers_transfer_ownership_both_ways() {
        let scope = Scope::new(3);
        let memory = vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE;
        let memory2 = vk::AccessFlags2::MEMORY_READ | vk::AccessFlags2::MEMORY_WRITE;
        let b = BufferRange {
            buffer: vk::Buffer::null(),
            offset: 16,
            size: 64,
        };
        let r = buffer_barrier(Direction::Release, &scope, &b);
        assert_eq!(
            (r.src_queue_family_index, r.dst_queue_family_index),
            (3, vk::QUEUE_FAMILY_EXTERNAL)
        );
        assert_eq!(
            (r.src_stage_mask, r.src_access_mask),
            (vk::PipelineStageFlags2::ALL_COMMANDS, memory2)
        );
        assert_eq!(
            (r.dst_stage_mask, r.dst_access_mask),
            (vk::PipelineStageFlags2::NONE, vk::AccessFlags2::NONE)
        );
        assert_eq!((r.offset, r.size), (16, 64));
        // The vkCmdPipelineBarrier twin: the same transfer and accesses.
        let r1 = buffer_barrier1(&r);
        assert_eq!(
            (r1.src_queue_family_index, r1.dst_queue_family_index),
            (3, vk::QUEUE_FAMILY_EXTERNAL)
        );
        assert_eq!(
            (r1.src_access_mask, r1.dst_access_mask),
            (memory, vk::AccessFlags::empty())
        );
        assert_eq!((r1.offset, r1.size), (16, 64));
        let a = buffer_barrier1(&buffer_barrier(Direction::Acquire, &scope, &b));
        assert_eq!(
            (a.src_queue_family_index, a.dst_queue_family_index),
            (vk::QUEUE_FAMILY_EXTERNAL, 3)
        );
        assert_eq!(
            (a.src_access_mask, a.dst_access_mask),
            (vk::AccessFlags::empty(), memory)
        );
        let img = ImageRange {
            image: vk::Image::null(),
            range: vk::ImageSubresourceRange::default().level_count(2),
            layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
        };
        let r = image_barrier(Direction::Release, &scope, &img);
        assert_eq!(
            (r.old_layout, r.new_layout),
            (
                vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
                vk::ImageLayout::GENERAL
            )
        );
        let r1 = image_barrier1(&r);
        assert_eq!((r1.old_layout, r1.new_layout), (r.old_layout, r.new_layout));
        assert_eq!(r1.subresource_range.level_count, 2);
        assert_eq!(r1.src_access_mask, memory);
        let a = image_barrier(Direction::Acquire, &scope, &img);
        assert_eq!(
            (a.old_layout, a.new_layout),
            (
                vk::ImageLayout::GENERAL,
                vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL
            )
        );
        assert_eq!(
            (a.src_stage_mask, a.dst_stage_mask),
            (
                vk::PipelineStageFlags2::NONE,
                vk::PipelineStageFlags2::ALL_COMMANDS
            )
        );
        // The vkCmdPipelineBarrier stages derived from them: the other side of
        // the transfer is the end (release) or the start (acquire) of the pipe.
        let released = buffer_barrier(Direction::Release, &scope, &b);
        assert_eq!(
            stages1(&[released], &[]),
            (
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::PipelineStageFlags::BOTTOM_OF_PIPE
            )
        );
        assert_eq!(
            stages1(&[], &[a]),
            (
                vk::PipelineStageFlags::TOP_OF_PIPE,
                vk::PipelineStageFlags::ALL_COMMANDS
            )
        );
    }

    /// A universal queue family's rules with `f` enabled.
    fn universal(sync2: bool, f: EnabledFeatures) -> Rules {
        use vk::QueueFlags as Q;
        let runs = [
            stages_of_queue(Q::GRAPHICS | Q::COMPUTE | Q::TRANSFER),
            stages_of_queue(Q::COMPUTE),
        ];
        let mut f = f;
        f.synchronization2 = sync2;
        Rules::new(sync2, &runs, f)
    }

    fn check(rules: &Rules, family: u32, stages: u32, access: u32) -> Result<()> {
        let scope = Scope {
            queue_family: family,
            stages: vk::PipelineStageFlags::from_raw(stages),
            access: vk::AccessFlags::from_raw(access),
        };
        scope.check(rules, Direction::Release)
    }

    #[test]
    fn stages_need_their_feature() {
        use vk::PipelineStageFlags as S;
        for sync2 in [false, true] {
            let every = universal(sync2, EnabledFeatures::default());
            for (s, name, vuid) in [
                (
                    S::GEOMETRY_SHADER,
                    "GEOMETRY_SHADER_BIT",
                    if sync2 { "03929" } else { "04090" },
                ),
                (
                    S::TESSELLATION_EVALUATION_SHADER,
                    "TESSELLATION_EVALUATION_SHADER_BIT",
                    if sync2 { "03930" } else { "04091" },
                ),
                (
                    S::TRANSFORM_FEEDBACK_EXT,
                    "TRANSFORM_FEEDBACK_BIT_EXT",
                    if sync2 { "03933" } else { "04094" },
                ),
                (
                    S::MESH_SHADER_EXT,
                    "MESH_SHADER_BIT_EXT",
                    if sync2 { "03934" } else { "04095" },
                ),
                (
                    S::FRAGMENT_SHADING_RATE_ATTACHMENT_KHR,
                    "FRAGMENT_SHADING_RATE_ATTACHMENT_BIT_KHR",
                    if sync2 { "07316" } else { "07318" },
                ),
                (S::COMMAND_PREPROCESS_NV, "COMMAND_PREPROCESS_BIT_NV", ""),
            ] {
                let e = check(&every, 0, (S::TRANSFER | s).as_raw(), 0).unwrap_err();
                assert!(
                    e.message.contains(name)
                        && e.message.contains(vuid)
                        && !e.message.contains("TRANSFER_BIT"),
                    "{sync2}: {}",
                    e.message
                );
            }
            let f = EnabledFeatures {
                geometry_shader: true,
                tessellation_shader: true,
                transform_feedback: true,
                mesh_shader: true,
                attachment_fragment_shading_rate: true,
                device_generated_commands: true,
                ..Default::default()
            };
            let told = universal(sync2, f);
            let all = (S::GEOMETRY_SHADER
                | S::TESSELLATION_EVALUATION_SHADER
                | S::TRANSFORM_FEEDBACK_EXT
                | S::MESH_SHADER_EXT
                | S::FRAGMENT_SHADING_RATE_ATTACHMENT_KHR
                | S::COMMAND_PREPROCESS_NV)
                .as_raw();
            check(&told, 0, all, 0).unwrap();
            // Enabled, but not on a compute-only family.
            let e = check(&told, 1, S::GEOMETRY_SHADER.as_raw(), 0).unwrap_err();
            assert!(e.message.contains("cannot run"), "{}", e.message);
            // The core stages need nothing (the host stage is no part of a handoff).
            check(
                &every,
                0,
                STAGES_SYNC1
                    & 0x1_FFFF
                    & !all
                    & !(S::TESSELLATION_CONTROL_SHADER | S::HOST).as_raw(),
                0,
            )
            .unwrap();
        }
    }

    #[test]
    fn access_must_be_made_by_a_stage() {
        use vk::AccessFlags as A;
        use vk::PipelineStageFlags as S;
        for sync2 in [false, true] {
            let r = universal(sync2, EnabledFeatures::default());
            for (s, a, name, vuid) in [
                (
                    S::TRANSFER,
                    A::SHADER_WRITE,
                    "SHADER_WRITE_BIT",
                    if sync2 { "03909" } else { "02815" },
                ),
                (
                    S::COMPUTE_SHADER,
                    A::COLOR_ATTACHMENT_WRITE,
                    "COLOR_ATTACHMENT_WRITE_BIT",
                    if sync2 { "03911" } else { "02815" },
                ),
                (
                    S::FRAGMENT_SHADER,
                    A::TRANSFER_READ,
                    "TRANSFER_READ_BIT",
                    if sync2 { "03914" } else { "02815" },
                ),
                (
                    S::TOP_OF_PIPE,
                    A::HOST_WRITE,
                    "HOST_WRITE_BIT",
                    if sync2 { "03917" } else { "02815" },
                ),
                (
                    S::ALL_COMMANDS,
                    A::HOST_READ,
                    "HOST_READ_BIT, which only the host stage",
                    if sync2 { "03916" } else { "02815" },
                ),
            ] {
                let e = check(&r, 0, s.as_raw(), (a | A::MEMORY_READ).as_raw()).unwrap_err();
                assert!(
                    e.message.contains(name) && e.message.contains(vuid),
                    "{}",
                    e.message
                );
            }
            for (s, a) in [
                (S::TRANSFER, A::TRANSFER_WRITE | A::TRANSFER_READ),
                (
                    S::COMPUTE_SHADER | S::TRANSFER,
                    A::SHADER_WRITE | A::TRANSFER_WRITE,
                ),
                (S::COLOR_ATTACHMENT_OUTPUT, A::COLOR_ATTACHMENT_WRITE),
                (
                    S::ALL_GRAPHICS,
                    A::COLOR_ATTACHMENT_WRITE | A::SHADER_READ | A::INDEX_READ,
                ),
                (
                    S::ALL_COMMANDS,
                    A::SHADER_WRITE | A::DEPTH_STENCIL_ATTACHMENT_WRITE,
                ),
                (S::TOP_OF_PIPE, A::MEMORY_READ | A::MEMORY_WRITE),
                (S::DRAW_INDIRECT, A::INDIRECT_COMMAND_READ),
                (S::EARLY_FRAGMENT_TESTS, A::DEPTH_STENCIL_ATTACHMENT_READ),
            ] {
                check(&r, 0, s.as_raw(), a.as_raw()).unwrap();
            }
            // No host stage in a queue family ownership transfer.
            let e = check(&r, 0, S::HOST.as_raw(), 0).unwrap_err();
            assert!(
                e.message
                    .contains("HOST_BIT: a handoff is a queue family ownership transfer"),
                "{}",
                e.message
            );
            // An extension's access: not without it, even with ALL_COMMANDS.
            let e = check(
                &r,
                0,
                S::ALL_COMMANDS.as_raw(),
                A::TRANSFORM_FEEDBACK_WRITE_EXT.as_raw(),
            )
            .unwrap_err();
            assert!(
                e.message.contains("TRANSFORM_FEEDBACK_WRITE_BIT_EXT")
                    && e.message.contains("transformFeedback"),
                "{}",
                e.message
            );
            let f = EnabledFeatures {
                transform_feedback: true,
                ..Default::default()
            };
            let tf = universal(sync2, f);
            check(
                &tf,
                0,
                S::ALL_COMMANDS.as_raw(),
                A::TRANSFORM_FEEDBACK_WRITE_EXT.as_raw(),
            )
            .unwrap();
            check(
                &tf,
                0,
                S::TRANSFORM_FEEDBACK_EXT.as_raw(),
                A::TRANSFORM_FEEDBACK_COUNTER_WRITE_EXT.as_raw(),
            )
            .unwrap();
            check(
                &tf,
                0,
                S::DRAW_INDIRECT.as_raw(),
                A::TRANSFORM_FEEDBACK_COUNTER_READ_EXT.as_raw(),
            )
            .unwrap();
            assert!(check(
                &tf,
                0,
                S::DRAW_INDIRECT.as_raw(),
                A::TRANSFORM_FEEDBACK_WRITE_EXT.as_raw()
            )
            .is_err());
            // Acceleration structure reads by shaders need rayQuery.
            let mut f = EnabledFeatures {
                acceleration_structure: true,
                ..Default::default()
            };
            let acc = universal(sync2, f);
            let e = check(
                &acc,
                0,
                S::COMPUTE_SHADER.as_raw(),
                A::ACCELERATION_STRUCTURE_READ_KHR.as_raw(),
            )
            .unwrap_err();
            assert!(e.message.contains("rayQuery"), "{}", e.message);
            check(
                &acc,
                0,
                S::ACCELERATION_STRUCTURE_BUILD_KHR.as_raw(),
                A::ACCELERATION_STRUCTURE_READ_KHR.as_raw(),
            )
            .unwrap();
            f.ray_query = true;
            check(
                &universal(sync2, f),
                0,
                S::COMPUTE_SHADER.as_raw(),
                A::ACCELERATION_STRUCTURE_READ_KHR.as_raw(),
            )
            .unwrap();
        }
    }

    #[test]
    fn every_access_bit_has_a_row_and_every_gate_is_a_bit_of_the_masks() {
        let rows = ACCESS_TABLE.iter().fold(0, |m, (a, _, _)| m | a);
        assert_eq!(rows | MEMORY_ACCESS, ACCESS_SYNC1);
        for g in STAGE_GATES.iter() {
            assert_eq!(g.bits & !STAGES_SYNC2, 0, "{}", g.needs);
        }
        for g in ACCESS_GATES.iter() {
            assert_eq!(g.bits & !ACCESS_SYNC1, 0, "{}", g.needs);
        }
        assert_eq!(
            stage_names(0x40 | 0x100_0000, false),
            "VK_PIPELINE_STAGE_GEOMETRY_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFORM_FEEDBACK_BIT_EXT"
        );
        assert_eq!(
            stage_names(
                vk::PipelineStageFlags2::VIDEO_DECODE_KHR.as_raw() as u32,
                true
            ),
            "VK_PIPELINE_STAGE_2_VIDEO_DECODE_BIT_KHR"
        );
        assert_eq!(access_names(0x40, true), "VK_ACCESS_2_SHADER_WRITE_BIT");
    }
}
