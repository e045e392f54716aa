//! The handoff barriers: a buffer or an image released to CUDA and acquired back,
//! recorded into the environment's command buffer.

use std::ptr;

use ash::vk;

use crate::support::*;
use crate::matrix::*;

type BufferBarrier = unsafe extern "C" fn(
    *const vkcuda_buffer,
    VkCommandBuffer,
    *const vkcuda_handoff_info,
) -> vkcuda_result;

type ImageBarrier = unsafe extern "C" fn(
    *const vkcuda_image,
    VkCommandBuffer,
    *const vkcuda_handoff_info,
    VkImageLayout,
) -> vkcuda_result;

pub fn cases(m: &mut Matrix) {
    let buffers: [(&'static str, BufferBarrier); 2] = named![
        vkcuda_buffer_cmd_release_to_cuda;
        vkcuda_buffer_cmd_acquire_from_cuda;
    ];
    for (f, call) in buffers {
        m.nulls(nulls![
            f, "buffer" => |e, _| unsafe { call(ptr::null(), e.cmd, &handoff_info(0)) };
            f, "command_buffer" => |e, _| unsafe { call(e.buffer, vk::CommandBuffer::null(), &handoff_info(0)) };
            f, "info" => |e, _| unsafe { call(e.buffer, e.cmd, ptr::null()) };
        ]);
        handoff_cases(m, f, move |c, h| unsafe { call(c.env.buffer, c.env.cmd, h) });
    }

    let general = vk::ImageLayout::GENERAL.as_raw();
    let images: [(&'static str, ImageBarrier, &'static str, bool); 2] = named![
        vkcuda_image_cmd_release_to_cuda, "old_layout", true;
        vkcuda_image_cmd_acquire_from_cuda, "new_layout", false;
    ];
    for (f, call, layout, release) in images {
        m.nulls(nulls![
            f, "image" => |e, _| unsafe { call(ptr::null(), e.cmd, &handoff_info(0), general) };
            f, "command_buffer" => |e, _| unsafe {
                call(
                    e.image,
                    vk::CommandBuffer::null(),
                    &handoff_info(0),
                    general,
                )
            };
            f, "info" => |e, _| unsafe { call(e.image, e.cmd, ptr::null(), general) };
        ]);
        handoff_cases(m, f, move |c, h| unsafe {
            call(c.env.image, c.env.cmd, h, general)
        });
        let mut bad = vec![
            ("not-a-layout", 12345),
            ("negative", -1),
            ("max-enum", 0x7FFF_FFFF),
            (
                "depth",
                vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL.as_raw(),
            ),
            ("present", vk::ImageLayout::PRESENT_SRC_KHR.as_raw()),
            ("preinitialized", vk::ImageLayout::PREINITIALIZED.as_raw()),
        ];
        if !release {
            bad.push(("undefined", vk::ImageLayout::UNDEFINED.as_raw()));
        }
        let call_with: ImageCall = if release {
            |_, cmd, im, l| unsafe { vkcuda_image_cmd_release_to_cuda(im, cmd, &handoff_info(0), l) }
        } else {
            |_, cmd, im, l| unsafe {
                vkcuda_image_cmd_acquire_from_cuda(im, cmd, &handoff_info(0), l)
            }
        };
        usage_cases(m, f, layout, call_with);
        for (what, l) in bad {
            m.ran(f, &format!("{what}:{layout}"), move |c| c.refused(
                    unsafe { call(c.env.image, c.env.cmd, &handoff_info(0), l) },
                    &[I],
                ));
        }
    }
    batch_cases(m);
}

/// The `vkcuda_handoff_info` cases of one barrier function: `call` records its
/// barrier with the info into the environment's command buffer.
pub fn handoff_cases(
    m: &mut Matrix,
    f: &'static str,
    call: impl Fn(&Call, &vkcuda_handoff_info) -> vkcuda_result + 'static,
) {
    type H = vkcuda_handoff_info;
    let call = std::rc::Rc::new(call);
    let mut muts: Vec<Mutation<H>> = vec![
        mutation("unknown-bits:info->flags", &[I], |_, h: &mut H| h.flags = 1),
        mutation("all-bits:info->flags", &[I], |_, h: &mut H| {
            h.flags = u32::MAX
        }),
        // The engine's family: one the device has (the count is read at context
        // creation), never a special value: the other side is CUDA's EXTERNAL.
        mutation(
            "past-count:info->queue_family_index",
            &[I],
            |e, h: &mut H| h.queue_family_index = queue_family_count(e),
        ),
        mutation("ignored:info->queue_family_index", &[I], |_, h: &mut H| {
            h.queue_family_index = vk::QUEUE_FAMILY_IGNORED
        }),
        mutation("external:info->queue_family_index", &[I], |_, h: &mut H| {
            h.queue_family_index = vk::QUEUE_FAMILY_EXTERNAL
        }),
        mutation("foreign:info->queue_family_index", &[I], |_, h: &mut H| {
            h.queue_family_index = vk::QUEUE_FAMILY_FOREIGN_EXT
        }),
        // Bits that are no stage or access of either barrier call (bit 31 is
        // neither in the flags of vkCmdPipelineBarrier nor in the 32-bit part of
        // those of vkCmdPipelineBarrier2).
        mutation("unknown-bits:info->stage_mask", &[I], |_, h: &mut H| {
            h.stage_mask = vk::PipelineStageFlags::TRANSFER.as_raw() | 1 << 31
        }),
        mutation("all-bits:info->stage_mask", &[I], |_, h: &mut H| {
            h.stage_mask = u32::MAX
        }),
        mutation("unknown-bits:info->access_mask", &[I], |_, h: &mut H| {
            h.access_mask = vk::AccessFlags::TRANSFER_WRITE.as_raw() | 1 << 31
        }),
        mutation("all-bits:info->access_mask", &[I], |_, h: &mut H| {
            h.access_mask = u32::MAX
        }),
    ];
    muts.extend(feature_cases());
    let refused = call.clone();
    mutations(
        m,
        f,
        muts,
        |_| handoff_info(0),
        move |c, h, want| {
            c.refused(refused(c, h), want);
            Ran
        },
    );
    // What the environment's device has: every valid pair recorded, each into a
    // fresh command buffer (a batch's copy path leaves its images in
    // TRANSFER_SRC_OPTIMAL, so a second release recorded after it is judged
    // against that layout by the validation layer).
    m.ran(f, "valid-pairs:info->access_mask", move |c| {
        for (stages, access) in valid_pairs() {
            c.env.fresh_commands();
            let h = vkcuda_handoff_info {
                stage_mask: stages.as_raw(),
                access_mask: access.as_raw(),
                ..handoff_info(0)
            };
            c.succeeded(call(c, &h));
        }
    });
}

/// Stage bits the environment's context does not know are enabled (a standalone
/// context enables none of these features and extensions; lavapipe has some of
/// them, which only the engine's create info could enable), and accesses its stages
/// cannot make (the table of supported access types): each refused, naming the
/// bit.
fn feature_cases() -> Vec<Mutation<vkcuda_handoff_info>> {
    use vk::AccessFlags as A;
    use vk::PipelineStageFlags as S;
    use vk::PipelineStageFlags2 as S2;
    type H = vkcuda_handoff_info;
    let stage = |label: &str, s: u32, words: &'static str| {
        says(
            words,
            mutation(&format!("{label}:info->stage_mask"), &[I], move |_, h: &mut H| {
                h.stage_mask = S::TRANSFER.as_raw() | s
            }),
        )
    };
    let access = |label: &str, s: S, a: A, words: &'static str| {
        says(
            words,
            mutation(&format!("{label}:info->access_mask"), &[I], move |_, h: &mut H| {
                h.stage_mask = s.as_raw();
                h.access_mask = a.as_raw();
            }),
        )
    };
    vec![
        stage("geometry", S::GEOMETRY_SHADER.as_raw(), "GEOMETRY_SHADER_BIT, which needs the geometryShader feature"),
        stage("tessellation-control", S::TESSELLATION_CONTROL_SHADER.as_raw(), "TESSELLATION_CONTROL_SHADER_BIT, which needs the tessellationShader feature"),
        stage("tessellation-evaluation", S::TESSELLATION_EVALUATION_SHADER.as_raw(), "TESSELLATION_EVALUATION_SHADER_BIT, which needs the tessellationShader feature"),
        stage("conditional-rendering", S::CONDITIONAL_RENDERING_EXT.as_raw(), "CONDITIONAL_RENDERING_BIT_EXT, which needs the conditionalRendering feature"),
        stage("fragment-density", S::FRAGMENT_DENSITY_PROCESS_EXT.as_raw(), "FRAGMENT_DENSITY_PROCESS_BIT_EXT, which needs the fragmentDensityMap feature"),
        stage("transform-feedback", S::TRANSFORM_FEEDBACK_EXT.as_raw(), "TRANSFORM_FEEDBACK_BIT_EXT, which needs the transformFeedback feature"),
        stage("mesh", S::MESH_SHADER_EXT.as_raw(), "MESH_SHADER_BIT_EXT, which needs the meshShader feature"),
        stage("task", S::TASK_SHADER_EXT.as_raw(), "TASK_SHADER_BIT_EXT, which needs the taskShader feature"),
        stage("shading-rate", S::FRAGMENT_SHADING_RATE_ATTACHMENT_KHR.as_raw(), "FRAGMENT_SHADING_RATE_ATTACHMENT_BIT_KHR, which needs the attachmentFragmentShadingRate feature"),
        stage("ray-tracing", S::RAY_TRACING_SHADER_KHR.as_raw(), "RAY_TRACING_SHADER_BIT_KHR, which needs the rayTracingPipeline feature"),
        stage("acceleration-structure", S::ACCELERATION_STRUCTURE_BUILD_KHR.as_raw(), "ACCELERATION_STRUCTURE_BUILD_BIT_KHR, which needs the accelerationStructure feature"),
        stage("command-preprocess", S::COMMAND_PREPROCESS_NV.as_raw(), "COMMAND_PREPROCESS_BIT_NV, which needs VK_NV_device_generated_commands"),
        // synchronization2's own: not a stage of vkCmdPipelineBarrier, an extension's
        // stage for vkCmdPipelineBarrier2.
        stage("micromap", S2::MICROMAP_BUILD_EXT.as_raw() as u32, "MICROMAP_BUILD"),
        stage("acceleration-structure-copy", S2::ACCELERATION_STRUCTURE_COPY_KHR.as_raw() as u32, "ACCELERATION_STRUCTURE_COPY"),
        access("transfer-shader-write", S::TRANSFER, A::SHADER_WRITE, "SHADER_WRITE_BIT, which no stage of info->stage_mask 0x1000"),
        access("compute-colour-write", S::COMPUTE_SHADER, A::COLOR_ATTACHMENT_WRITE, "COLOR_ATTACHMENT_WRITE_BIT, which no stage"),
        access("fragment-transfer-read", S::FRAGMENT_SHADER, A::TRANSFER_READ | A::SHADER_READ, "TRANSFER_READ_BIT, which no stage"),
        // The host stage and its accesses are no part of a queue family ownership
        // transfer (VUID-VkBufferMemoryBarrier2-srcStageMask-03851, -srcAccessMask-03917).
        stage("host", S::HOST.as_raw(), "HOST_BIT: a handoff is a queue family ownership transfer"),
        access("compute-host-write", S::COMPUTE_SHADER, A::HOST_WRITE | A::SHADER_WRITE, "HOST_WRITE_BIT, which only the host stage performs"),
        access("all-commands-host-read", S::ALL_COMMANDS, A::HOST_READ, "HOST_READ_BIT, which only the host stage performs"),
        access("top-shader-read", S::TOP_OF_PIPE, A::SHADER_READ, "SHADER_READ_BIT, which no stage"),
        access("vertex-depth-write", S::VERTEX_SHADER, A::DEPTH_STENCIL_ATTACHMENT_WRITE, "DEPTH_STENCIL_ATTACHMENT_WRITE_BIT, which no stage"),
        access("extension-access", S::ALL_COMMANDS, A::TRANSFORM_FEEDBACK_WRITE_EXT, "TRANSFORM_FEEDBACK_WRITE_BIT_EXT, which needs the transformFeedback feature"),
        access("extension-access-graphics", S::ALL_GRAPHICS, A::CONDITIONAL_RENDERING_READ_EXT, "CONDITIONAL_RENDERING_READ_BIT_EXT, which needs the conditionalRendering feature"),
    ]
}

/// Stage and access masks every device takes (each access made by one of the
/// stages), for the environment's universal queue family.
fn valid_pairs() -> Vec<(vk::PipelineStageFlags, vk::AccessFlags)> {
    use vk::AccessFlags as A;
    use vk::PipelineStageFlags as S;
    vec![
        (S::TRANSFER, A::TRANSFER_WRITE | A::TRANSFER_READ),
        (S::COMPUTE_SHADER, A::SHADER_WRITE | A::SHADER_READ | A::UNIFORM_READ),
        (S::COMPUTE_SHADER | S::TRANSFER, A::SHADER_WRITE | A::TRANSFER_WRITE),
        (S::FRAGMENT_SHADER, A::SHADER_READ | A::INPUT_ATTACHMENT_READ),
        (S::COLOR_ATTACHMENT_OUTPUT, A::COLOR_ATTACHMENT_WRITE | A::COLOR_ATTACHMENT_READ),
        (S::EARLY_FRAGMENT_TESTS | S::LATE_FRAGMENT_TESTS, A::DEPTH_STENCIL_ATTACHMENT_WRITE),
        (S::VERTEX_INPUT, A::VERTEX_ATTRIBUTE_READ | A::INDEX_READ),
        (S::DRAW_INDIRECT, A::INDIRECT_COMMAND_READ),
        (S::ALL_GRAPHICS, A::COLOR_ATTACHMENT_WRITE | A::SHADER_WRITE),
        (S::ALL_COMMANDS, A::SHADER_WRITE | A::TRANSFER_WRITE | A::DEPTH_STENCIL_ATTACHMENT_WRITE),
        (S::TOP_OF_PIPE | S::BOTTOM_OF_PIPE, A::MEMORY_READ | A::MEMORY_WRITE),
    ]
}

/// How many queue families the environment's device has.
fn queue_family_count(e: &crate::env::Env) -> u32 {
    unsafe {
        e.vk.instance
            .get_physical_device_queue_family_properties(e.vk.physical)
    }
    .len() as u32
}

/// A barrier call on an image with a layout, into a command buffer.
type ImageCall = fn(&Call, vk::CommandBuffer, *const vkcuda_image, i32) -> vkcuda_result;

/// Layouts to hand an image over in, each with whether its usage allows it.
type Layouts = Vec<(vk::ImageLayout, bool)>;

/// Layouts a STORAGE-only image cannot be handed over in (the usage each needs is
/// missing: VUID-VkImageMemoryBarrier-oldLayout-01208/01211/01212/01213,
/// -srcQueueFamilyIndex-03938/03939), and GENERAL, which it can; TRANSFER_SRC/DST
/// for a transfer-only image, and SHADER_READ_ONLY_OPTIMAL, which it cannot. The
/// images are the case's own; each call gets a command buffer of its own, freed
/// before the image is destroyed (the layer tracks layouts per command buffer and
/// flags one that names a destroyed image).
fn usage_cases(m: &mut Matrix, f: &'static str, path: &str, call: ImageCall) {
    use vk::ImageLayout as L;
    use vk::ImageUsageFlags as U;
    let cases: [(&str, U, Layouts); 2] = [
        (
            "usage",
            U::STORAGE,
            vec![
                (L::TRANSFER_SRC_OPTIMAL, false),
                (L::TRANSFER_DST_OPTIMAL, false),
                (L::SHADER_READ_ONLY_OPTIMAL, false),
                (L::COLOR_ATTACHMENT_OPTIMAL, false),
                (L::ATTACHMENT_OPTIMAL, false),
                (L::READ_ONLY_OPTIMAL, false),
                (L::GENERAL, true),
            ],
        ),
        (
            "usage-transfer",
            U::TRANSFER_SRC | U::TRANSFER_DST,
            vec![
                (L::TRANSFER_SRC_OPTIMAL, true),
                (L::TRANSFER_DST_OPTIMAL, true),
                (L::SHADER_READ_ONLY_OPTIMAL, false),
            ],
        ),
    ];
    for (kind, usage, layouts) in cases {
        m.ran(f, &format!("{kind}:{path}"), move |c| {
            let mut im = ptr::null_mut();
            ok(unsafe {
                vkcuda_image_create(
                    c.env.ctx,
                    &crate::env::image_create_info(usage.as_raw(), 1),
                    &mut im,
                )
            });
            for &(l, fits) in &layouts {
                let cmd = c.env.vk.command_buffer();
                let r = call(c, cmd, im, l.as_raw());
                unsafe {
                    c.env.vk.device.end_command_buffer(cmd).unwrap();
                    c.env.vk.device.free_command_buffers(c.env.vk.pool, &[cmd]);
                }
                if fits {
                    c.succeeded(r);
                } else {
                    c.refused(r, &[I]);
                }
            }
            unsafe { vkcuda_image_destroy(im) };
        });
    }
}

type Batch = unsafe extern "C" fn(
    u32,
    *const vkcuda_handoff_resource,
    VkCommandBuffer,
    *const vkcuda_handoff_info,
) -> vkcuda_result;

/// The batched barriers: one resource list, one barrier.
pub fn batch_cases(m: &mut Matrix) {
    let batches: [(&'static str, Batch, bool); 2] = named![
        vkcuda_handoff_cmd_release_to_cuda, true;
        vkcuda_handoff_cmd_acquire_from_cuda, false;
    ];
    let general = vk::ImageLayout::GENERAL.as_raw();
    for (f, call, release) in batches {
        let one = |e: &crate::env::Env| vkcuda_handoff_resource {
            buffer: e.buffer,
            image: ptr::null(),
            layout: 0,
        };
        m.nulls(nulls![
            f, "resources" => |e, _| unsafe { call(1, ptr::null(), e.cmd, &handoff_info(0)) };
            f, "command_buffer" => |e, _| unsafe { call(1, &one(e), vk::CommandBuffer::null(), &handoff_info(0)) };
            f, "info" => |e, _| unsafe { call(1, &one(e), e.cmd, ptr::null()) };
        ]);
        handoff_cases(m, f, move |c, h| unsafe { call(1, &one(c.env), c.env.cmd, h) });
        m.ran(f, "zero:resource_count", move |c| c.succeeded(unsafe { call(0, ptr::null(), c.env.cmd, &handoff_info(0)) }));
        type R = vkcuda_handoff_resource;
        type Make = fn(&crate::env::Env) -> R;
        let bad: Vec<(&str, vkcuda_result, Make)> = vec![
            ("neither:resources->buffer", N, |_| R {
                buffer: ptr::null(),
                image: ptr::null(),
                layout: 0,
            }),
            ("both:resources->image", I, |e| R {
                buffer: e.buffer,
                image: e.image,
                layout: vk::ImageLayout::GENERAL.as_raw(),
            }),
            ("wrong-kind:resources->buffer", I, |e| R {
                buffer: e.image.cast(),
                image: ptr::null(),
                layout: 0,
            }),
            ("nonzero:resources->layout", I, |e| R {
                buffer: e.buffer,
                image: ptr::null(),
                layout: vk::ImageLayout::GENERAL.as_raw(),
            }),
            ("not-a-layout:resources->layout", I, |e| R {
                buffer: ptr::null(),
                image: e.image,
                layout: 12345,
            }),
        ];
        for (label, want, make) in bad {
            m.ran(f, label, move |c| {
                let r = make(c.env);
                c.refused(unsafe { call(1, &r, c.env.cmd, &handoff_info(0)) }, &[want]);
            });
        }
        if !release {
            m.ran(f, "undefined:resources->layout", move |c| {
                let r = R {
                    buffer: ptr::null(),
                    image: c.env.image,
                    layout: vk::ImageLayout::UNDEFINED.as_raw(),
                };
                c.refused(unsafe { call(1, &r, c.env.cmd, &handoff_info(0)) }, &[I]);
            });
        }
        let call_with: ImageCall = if release {
            |_, cmd, im, l| {
                let r = R {
                    buffer: ptr::null(),
                    image: im,
                    layout: l,
                };
                unsafe { vkcuda_handoff_cmd_release_to_cuda(1, &r, cmd, &handoff_info(0)) }
            }
        } else {
            |c, cmd, im, l| {
                // Second in the list: the check runs for every entry.
                let list = [
                    R {
                        buffer: c.env.buffer,
                        image: ptr::null(),
                        layout: 0,
                    },
                    R {
                        buffer: ptr::null(),
                        image: im,
                        layout: l,
                    },
                ];
                unsafe { vkcuda_handoff_cmd_acquire_from_cuda(2, list.as_ptr(), cmd, &handoff_info(0)) }
            }
        };
        usage_cases(m, f, "resources->layout", call_with);
        // NULL is valid for one of the two when the other is set.
        m.ran(f, "null-ok:resources->buffer", move |c| {
            let r = R {
                buffer: ptr::null(),
                image: c.env.image,
                layout: general,
            };
            c.succeeded(unsafe { call(1, &r, c.env.cmd, &handoff_info(0)) });
        });
        m.ran(f, "null-ok:resources->image", move |c| {
            let list = [one(c.env), one(c.env)];
            c.succeeded(unsafe { call(2, list.as_ptr(), c.env.cmd, &handoff_info(0)) });
        });
    }
}

/// The C door's resource entries (`vkcuda_handoff_resource`: a buffer or an
/// image, a layout for images only), refused with the entry named.
#[test]
fn a_bad_batch_is_refused_with_the_resource_named() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let other = vulkan_only_context();
    let v = Vk::new(ctx);
    let b = create_buffer(ctx, 4096, 0);
    let far = create_buffer(other, 4096, 0);
    let mut im = ptr::null_mut();
    ok(unsafe {
        vkcuda_image_create(
            ctx,
            &image_desc(0, vk::Format::R8G8B8A8_UNORM, 16, 16, 1),
            &mut im,
        )
    });
    let info = handoff_info(v.family);
    let buf = |b: *mut vkcuda_buffer| vkcuda_handoff_resource {
        buffer: b,
        image: ptr::null(),
        layout: 0,
    };
    let img = |layout: vk::ImageLayout| vkcuda_handoff_resource {
        buffer: ptr::null(),
        image: im,
        layout: layout.as_raw(),
    };
    let cmd = v.command_buffer();
    let release = |list: &[vkcuda_handoff_resource]| unsafe {
        vkcuda_handoff_cmd_release_to_cuda(list.len() as u32, list.as_ptr(), cmd, &info)
    };
    let acquire = |list: &[vkcuda_handoff_resource]| unsafe {
        vkcuda_handoff_cmd_acquire_from_cuda(list.len() as u32, list.as_ptr(), cmd, &info)
    };
    // Each message is read right after its call.
    let check = |what: &str, got: vkcuda_result, want: vkcuda_result, says: &str| {
        let msg = last_error();
        assert_eq!(got, want, "{what}: {msg}");
        assert!(msg.contains(says), "{what}: {msg}");
    };
    check(
        "neither",
        release(&[buf(b), buf(ptr::null_mut())]),
        VKCUDA_ERROR_NULL_POINTER,
        "resources[1].buffer and resources[1].image",
    );
    check(
        "both",
        release(&[vkcuda_handoff_resource {
            buffer: b,
            ..img(vk::ImageLayout::GENERAL)
        }]),
        VKCUDA_ERROR_INVALID_ARGUMENT,
        "resources[0] sets both",
    );
    check(
        "buffer layout",
        release(&[vkcuda_handoff_resource {
            layout: 1,
            ..buf(b)
        }]),
        VKCUDA_ERROR_INVALID_ARGUMENT,
        "buffers have no layout",
    );
    check(
        "undefined acquire",
        acquire(&[buf(b), img(vk::ImageLayout::UNDEFINED)]),
        VKCUDA_ERROR_INVALID_ARGUMENT,
        "resources[1].layout (new layout) must not be VK_IMAGE_LAYOUT_UNDEFINED",
    );
    check(
        "depth layout",
        release(&[img(vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL)]),
        VKCUDA_ERROR_INVALID_ARGUMENT,
        "VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL",
    );
    check(
        "two devices",
        release(&[buf(b), buf(far)]),
        VKCUDA_ERROR_INVALID_ARGUMENT,
        "resources[1] belongs to another VkDevice",
    );
    check(
        "wrong kind",
        release(&[vkcuda_handoff_resource {
            buffer: im.cast(),
            image: ptr::null(),
            layout: 0,
        }]),
        VKCUDA_ERROR_INVALID_ARGUMENT,
        "resources[0].buffer is a vkcuda_image",
    );
    // An empty batch records nothing and succeeds.
    ok(unsafe { vkcuda_handoff_cmd_release_to_cuda(0, ptr::null(), cmd, &info) });
    unsafe {
        v.device.end_command_buffer(cmd).unwrap();
        v.device.free_command_buffers(v.pool, &[cmd]);
        vkcuda_image_destroy(im);
        vkcuda_buffer_destroy(b);
        vkcuda_buffer_destroy(far);
        vkcuda_context_destroy(other);
    }
    drop(v);
    unsafe { vkcuda_context_destroy(ctx) };
}
