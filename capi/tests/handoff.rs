//! Batched handoff barriers (issue 20 item 2): one call records the release (or
//! acquire) of N buffers and images in one pipeline barrier, with per-image
//! layouts; with vkCmdPipelineBarrier2 where the context has synchronization2
//! (standalone contexts on lavapipe, Vulkan 1.3), vkCmdPipelineBarrier otherwise (an
//! engine context without VKCUDA_CONTEXT_CREATE_SYNCHRONIZATION2_BIT). Each case
//! writes every resource with Vulkan, releases and acquires the whole batch, copies
//! everything out and compares every byte. The validation layer runs these in the
//! test command's vvl step (scripts/test.sh).

mod support;

use std::ptr;

use ash::vk;
use support::*;

const SIZE: u64 = 4096;
const EXTENT: u32 = 16;

enum Res {
    Buffer(*mut vkcuda_buffer),
    Image(*mut vkcuda_image),
}

fn value_of(i: usize) -> u32 {
    0x0101_0101u32.wrapping_mul(i as u32 + 1)
}

/// N resources (every third an image), written with Vulkan, released and acquired
/// in one barrier each, copied out and compared.
fn round_trip(ctx: *const vkcuda_context, v: &Vk, n: usize) {
    let mut res = Vec::new();
    for i in 0..n {
        if i % 3 == 2 {
            let mut d = image_desc(0, vk::Format::R8G8B8A8_UNORM, EXTENT, EXTENT, 1);
            d.usage =
                (vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST).as_raw();
            let mut im = ptr::null_mut();
            ok(unsafe { vkcuda_image_create(ctx, &d, &mut im) });
            res.push(Res::Image(im));
        } else {
            res.push(Res::Buffer(create_buffer(ctx, SIZE, 0)));
        }
    }
    let release: Vec<vkcuda_handoff_resource> = res
        .iter()
        .map(|r| match r {
            Res::Buffer(b) => vkcuda_handoff_resource {
                buffer: *b,
                image: ptr::null(),
                layout: 0,
            },
            Res::Image(im) => vkcuda_handoff_resource {
                buffer: ptr::null(),
                image: *im,
                layout: vk::ImageLayout::TRANSFER_DST_OPTIMAL.as_raw(),
            },
        })
        .collect();
    let acquire: Vec<vkcuda_handoff_resource> = release
        .iter()
        .map(|r| vkcuda_handoff_resource {
            layout: if r.image.is_null() {
                0
            } else {
                vk::ImageLayout::TRANSFER_SRC_OPTIMAL.as_raw()
            },
            ..*r
        })
        .collect();
    let out = v.host_buffer(SIZE * n as u64);
    let info = handoff_info(v.family);
    // Write every resource, then release the whole batch to CUDA.
    v.run(|cmd| unsafe {
        for (i, r) in res.iter().enumerate() {
            match r {
                Res::Buffer(b) => {
                    v.device
                        .cmd_fill_buffer(cmd, buffer_info(*b).buffer, 0, SIZE, value_of(i))
                }
                Res::Image(im) => {
                    let image = image_info(*im).image;
                    let range = vk::ImageSubresourceRange {
                        aspect_mask: vk::ImageAspectFlags::COLOR,
                        level_count: 1,
                        layer_count: 1,
                        ..Default::default()
                    };
                    v.image_barrier(
                        cmd,
                        layout_barrier(
                            image,
                            range,
                            vk::ImageLayout::UNDEFINED,
                            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                        ),
                    );
                    let c = value_of(i).to_le_bytes().map(|b| b as f32 / 255.0);
                    v.device.cmd_clear_color_image(
                        cmd,
                        image,
                        vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                        &vk::ClearColorValue { float32: c },
                        &[range],
                    );
                }
            }
        }
        ok(vkcuda_handoff_cmd_release_to_cuda(
            n as u32,
            release.as_ptr(),
            cmd,
            &info,
        ));
    });
    // Acquire the batch back and copy everything out.
    v.run(|cmd| unsafe {
        ok(vkcuda_handoff_cmd_acquire_from_cuda(
            n as u32,
            acquire.as_ptr(),
            cmd,
            &info,
        ));
        for (i, r) in res.iter().enumerate() {
            let at = SIZE * i as u64;
            match r {
                Res::Buffer(b) => v.device.cmd_copy_buffer(
                    cmd,
                    buffer_info(*b).buffer,
                    out.buffer,
                    &[vk::BufferCopy::default().dst_offset(at).size(SIZE)],
                ),
                Res::Image(im) => v.device.cmd_copy_image_to_buffer(
                    cmd,
                    image_info(*im).image,
                    vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                    out.buffer,
                    &[vk::BufferImageCopy::default()
                        .buffer_offset(at)
                        .image_subresource(vk::ImageSubresourceLayers {
                            aspect_mask: vk::ImageAspectFlags::COLOR,
                            layer_count: 1,
                            ..Default::default()
                        })
                        .image_extent(vk::Extent3D {
                            width: EXTENT,
                            height: EXTENT,
                            depth: 1,
                        })],
                ),
            }
        }
    });
    let bytes = out.bytes();
    for (i, r) in res.iter().enumerate() {
        let want = value_of(i).to_le_bytes();
        let len = match r {
            Res::Buffer(_) => SIZE as usize,
            Res::Image(_) => (EXTENT * EXTENT * 4) as usize,
        };
        let got = &bytes[SIZE as usize * i..SIZE as usize * i + len];
        let bad = got.chunks(4).filter(|w| *w != want.as_slice()).count();
        assert_eq!(bad, 0, "resource {i} of {n}: {bad} words wrong");
    }
    v.destroy_host_buffer(out);
    for r in res {
        match r {
            Res::Buffer(b) => unsafe { vkcuda_buffer_destroy(b) },
            Res::Image(im) => unsafe { vkcuda_image_destroy(im) },
        }
    }
}

#[test]
fn batches_of_1_8_64_resources_round_trip_with_synchronization2() {
    let v = OneDevice::open();
    let ctx = v.ctx;
    for n in [1, 8, 64] {
        round_trip(ctx, &v, n);
    }
}

#[test]
fn batches_round_trip_with_the_vulkan_1_0_barrier() {
    // An engine device of Vulkan 1.2 without synchronization2: vkCmdPipelineBarrier.
    let engine = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    let mut ctx = ptr::null_mut();
    ok(unsafe {
        vkcuda_context_create(
            &engine.create_info(VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT),
            &mut ctx,
        )
    });
    let v = Vk::for_engine(&engine.instance, &engine.device, engine.physical);
    for n in [1, 8] {
        round_trip(ctx, &v, n);
    }
    drop(v);
    unsafe { vkcuda_context_destroy(ctx) };
}

#[test]
fn a_bad_batch_is_refused_with_the_resource_named() {
    let ctx = vulkan_only_context();
    let other = vulkan_only_context();
    let v = Vk::new(ctx);
    let b = create_buffer(ctx, SIZE, 0);
    let far = create_buffer(other, SIZE, 0);
    let mut im = ptr::null_mut();
    ok(unsafe {
        vkcuda_image_create(
            ctx,
            &image_desc(0, vk::Format::R8G8B8A8_UNORM, EXTENT, EXTENT, 1),
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

/// What the library forwards into the engine's barrier is checked against the
/// device and the image (issue 29 item 8), for the barrier call of each kind of
/// context: vkCmdPipelineBarrier2 (a standalone context on lavapipe) and
/// vkCmdPipelineBarrier (an engine context without synchronization2). Nothing is
/// recorded on failure; the same calls with valid values succeed.
#[test]
fn forwarded_values_are_checked_for_both_barrier_calls() {
    let engine = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    let mut sync1 = ptr::null_mut();
    ok(unsafe {
        vkcuda_context_create(
            &engine.create_info(VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT),
            &mut sync1,
        )
    });
    let sync2 = vulkan_only_context();
    let v1 = Vk::for_engine(&engine.instance, &engine.device, engine.physical);
    let v2 = Vk::new(sync2);
    let video_decode = vk::PipelineStageFlags2::VIDEO_DECODE_KHR.as_raw() as u32;
    for (ctx, v, has_sync2) in [(sync1, &v1, false), (sync2, &v2, true)] {
        let families = unsafe {
            v.instance
                .get_physical_device_queue_family_properties(v.physical)
        }
        .len() as u32;
        let b = create_buffer(ctx, SIZE, 0);
        let mut d = image_desc(0, vk::Format::R8G8B8A8_UNORM, EXTENT, EXTENT, 1);
        d.usage = vk::ImageUsageFlags::STORAGE.as_raw();
        let mut storage = ptr::null_mut();
        ok(unsafe { vkcuda_image_create(ctx, &d, &mut storage) });
        d.usage = vk::ImageUsageFlags::SAMPLED.as_raw();
        let mut sampled = ptr::null_mut();
        ok(unsafe { vkcuda_image_create(ctx, &d, &mut sampled) });
        let cmd = v.command_buffer();
        let good = handoff_info(v.family);
        let refused = |r: vkcuda_result, says: &str| {
            let msg = fails(r, VKCUDA_ERROR_INVALID_ARGUMENT);
            assert!(
                msg.contains(says),
                "sync2 {has_sync2}: wants {says:?}: {msg}"
            );
        };
        for (q, says) in [
            (families, "the device has"),
            (vk::QUEUE_FAMILY_IGNORED, "VK_QUEUE_FAMILY_IGNORED"),
            (vk::QUEUE_FAMILY_EXTERNAL, "VK_QUEUE_FAMILY_EXTERNAL"),
        ] {
            let h = handoff_info(q);
            refused(
                unsafe { vkcuda_buffer_cmd_release_to_cuda(b, cmd, &h) },
                says,
            );
            let list = [vkcuda_handoff_resource {
                buffer: b,
                image: ptr::null(),
                layout: 0,
            }];
            refused(
                unsafe { vkcuda_handoff_cmd_acquire_from_cuda(1, list.as_ptr(), cmd, &h) },
                says,
            );
        }
        // A stage of synchronization2 only: not a stage of vkCmdPipelineBarrier; of
        // vkCmdPipelineBarrier2, but not one lavapipe's universal queue runs.
        let h = vkcuda_handoff_info {
            stage_mask: video_decode,
            ..good
        };
        refused(
            unsafe { vkcuda_buffer_cmd_acquire_from_cuda(b, cmd, &h) },
            if has_sync2 {
                "that the queues of family"
            } else {
                "not VkPipelineStageFlagBits, which vkCmdPipelineBarrier takes"
            },
        );
        let h = vkcuda_handoff_info {
            access_mask: 1 << 31,
            ..good
        };
        refused(
            unsafe { vkcuda_buffer_cmd_acquire_from_cuda(b, cmd, &h) },
            "info->access_mask 0x80000000 has bits 0x80000000",
        );
        // Layouts against the image's usage, single and batched (the second entry
        // is named).
        use vk::ImageLayout as L;
        for l in [
            L::TRANSFER_SRC_OPTIMAL,
            L::SHADER_READ_ONLY_OPTIMAL,
            L::COLOR_ATTACHMENT_OPTIMAL,
        ] {
            refused(
                unsafe { vkcuda_image_cmd_acquire_from_cuda(storage, cmd, &good, l.as_raw()) },
                "this image's usage is VK_IMAGE_USAGE_STORAGE_BIT",
            );
            refused(
                unsafe { vkcuda_image_cmd_release_to_cuda(storage, cmd, &good, l.as_raw()) },
                "old_layout",
            );
            let list = [
                vkcuda_handoff_resource {
                    buffer: ptr::null(),
                    image: sampled,
                    layout: L::GENERAL.as_raw(),
                },
                vkcuda_handoff_resource {
                    buffer: ptr::null(),
                    image: storage,
                    layout: l.as_raw(),
                },
            ];
            refused(
                unsafe { vkcuda_handoff_cmd_acquire_from_cuda(2, list.as_ptr(), cmd, &good) },
                "resources[1].layout (new layout)",
            );
        }
        ok(unsafe { vkcuda_image_cmd_acquire_from_cuda(storage, cmd, &good, L::GENERAL.as_raw()) });
        ok(unsafe {
            vkcuda_image_cmd_acquire_from_cuda(
                sampled,
                cmd,
                &good,
                L::SHADER_READ_ONLY_OPTIMAL.as_raw(),
            )
        });
        // READ_ONLY_OPTIMAL: sampled images may be in it, with synchronization2.
        let r = unsafe {
            vkcuda_image_cmd_acquire_from_cuda(sampled, cmd, &good, L::READ_ONLY_OPTIMAL.as_raw())
        };
        if has_sync2 {
            ok(r);
        } else {
            refused(r, "synchronization2");
        }
        unsafe {
            v.device.end_command_buffer(cmd).unwrap();
            v.device.free_command_buffers(v.pool, &[cmd]);
            vkcuda_image_destroy(sampled);
            vkcuda_image_destroy(storage);
            vkcuda_buffer_destroy(b);
        }
    }
    drop((v1, v2));
    unsafe {
        vkcuda_context_destroy(sync1);
        vkcuda_context_destroy(sync2);
    }
}

/// An engine device on lavapipe (which has geometry and tessellation shaders,
/// transform feedback and conditional rendering) with those features enabled, with
/// or without synchronization2, and the `VkDeviceCreateInfo` it was made with
/// (handed to `call` while its chain is alive).
fn engine_with_features(
    sync2: bool,
    call: impl FnOnce(&EngineDevice, &vk::DeviceCreateInfo<'static>),
) {
    let entry = unsafe { ash::Entry::load() }.expect("libvulkan");
    let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
    let instance = unsafe {
        entry.create_instance(
            &vk::InstanceCreateInfo::default().application_info(&app),
            None,
        )
    }
    .unwrap();
    // The first device with the features (lavapipe and NVIDIA's have them).
    let has = |p: vk::PhysicalDevice| unsafe {
        let f = instance.get_physical_device_features(p);
        let names: Vec<_> = instance
            .enumerate_device_extension_properties(p)
            .unwrap()
            .iter()
            .map(|e| e.extension_name_as_c_str().unwrap().to_owned())
            .collect();
        f.geometry_shader == vk::TRUE
            && f.tessellation_shader == vk::TRUE
            && [
                ash::khr::external_memory_fd::NAME,
                ash::ext::transform_feedback::NAME,
                ash::ext::conditional_rendering::NAME,
            ]
            .iter()
            .all(|n| names.iter().any(|m| m.as_c_str() == *n))
            && (!sync2
                || instance.get_physical_device_properties(p).api_version >= vk::API_VERSION_1_3)
    };
    let Some(physical) = unsafe { instance.enumerate_physical_devices() }
        .unwrap()
        .into_iter()
        .find(|&p| has(p))
    else {
        eprintln!(
            "stages_and_accesses_follow_what_the_device_enabled: no device with geometry and \
             tessellation shaders, transform feedback and conditional rendering: sync2 {sync2} left out"
        );
        unsafe { instance.destroy_instance(None) };
        return;
    };
    let exts = [
        ash::khr::external_memory_fd::NAME.as_ptr(),
        ash::ext::transform_feedback::NAME.as_ptr(),
        ash::ext::conditional_rendering::NAME.as_ptr(),
    ];
    let prio = [1.0f32];
    let queues = [vk::DeviceQueueCreateInfo::default()
        .queue_family_index(0)
        .queue_priorities(&prio)];
    let core = vk::PhysicalDeviceFeatures::default()
        .geometry_shader(true)
        .tessellation_shader(true);
    let mut v12 = vk::PhysicalDeviceVulkan12Features::default().timeline_semaphore(true);
    let mut v13 = vk::PhysicalDeviceVulkan13Features::default().synchronization2(true);
    let mut tf = vk::PhysicalDeviceTransformFeedbackFeaturesEXT::default().transform_feedback(true);
    let mut cr =
        vk::PhysicalDeviceConditionalRenderingFeaturesEXT::default().conditional_rendering(true);
    let mut info = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queues)
        .enabled_extension_names(&exts)
        .enabled_features(&core)
        .push_next(&mut v12)
        .push_next(&mut tf)
        .push_next(&mut cr);
    if sync2 {
        info = info.push_next(&mut v13);
    }
    let device = unsafe { instance.create_device(physical, &info, None) }.unwrap();
    let engine = EngineDevice {
        entry,
        instance,
        physical,
        device,
    };
    // SAFETY: the chain's structs live until this function returns; the callee
    // reads them during the call only.
    let info: &vk::DeviceCreateInfo<'static> = unsafe { std::mem::transmute(&info) };
    call(&engine, info);
}

/// Issue 39 item 5: stage bits whose feature or extension the context does not
/// know is enabled, and accesses the stages cannot make, are refused for both
/// barrier calls, single and batched, buffer and image, naming the bit; told what
/// the engine enabled (`vkcuda_context_create_with_device_info`), the context
/// records the same stages, and the valid pairs pass everywhere.
#[test]
fn stages_and_accesses_follow_what_the_device_enabled() {
    use vk::AccessFlags as A;
    use vk::PipelineStageFlags as S;
    for sync2 in [false, true] {
        engine_with_features(sync2, |engine, device_info| {
            let flags = VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT;
            let mut plain = ptr::null_mut();
            let mut told = ptr::null_mut();
            ok(unsafe { vkcuda_context_create(&engine.create_info(flags), &mut plain) });
            ok(unsafe {
                vkcuda_context_create_with_device_info(
                    &engine.create_info(flags),
                    device_info,
                    &mut told,
                )
            });
            let v = Vk::for_engine(&engine.instance, &engine.device, engine.physical);
            // (The plain context records with vkCmdPipelineBarrier: the flag is not set.)
            // Each set of calls in a command buffer of its own, freed before the
            // objects it names are destroyed.
            let calls =
                |ctx: *mut vkcuda_context, _: vk::CommandBuffer, h: &vkcuda_handoff_info| {
                    let cmd = v.command_buffer();
                    let b = create_buffer(ctx, SIZE, 0);
                    let mut d = image_desc(0, vk::Format::R8G8B8A8_UNORM, EXTENT, EXTENT, 1);
                    d.usage = vk::ImageUsageFlags::STORAGE.as_raw();
                    let mut im = ptr::null_mut();
                    ok(unsafe { vkcuda_image_create(ctx, &d, &mut im) });
                    let general = vk::ImageLayout::GENERAL.as_raw();
                    let list = [
                        vkcuda_handoff_resource {
                            buffer: b,
                            image: ptr::null(),
                            layout: 0,
                        },
                        vkcuda_handoff_resource {
                            buffer: ptr::null(),
                            image: im,
                            layout: general,
                        },
                    ];
                    let mut seen = Vec::new();
                    unsafe {
                        seen.push((vkcuda_buffer_cmd_release_to_cuda(b, cmd, h), last_error()));
                        seen.push((vkcuda_buffer_cmd_acquire_from_cuda(b, cmd, h), last_error()));
                        seen.push((
                            vkcuda_image_cmd_release_to_cuda(im, cmd, h, general),
                            last_error(),
                        ));
                        seen.push((
                            vkcuda_image_cmd_acquire_from_cuda(im, cmd, h, general),
                            last_error(),
                        ));
                        seen.push((
                            vkcuda_handoff_cmd_release_to_cuda(2, list.as_ptr(), cmd, h),
                            last_error(),
                        ));
                        seen.push((
                            vkcuda_handoff_cmd_acquire_from_cuda(2, list.as_ptr(), cmd, h),
                            last_error(),
                        ));
                        v.device.end_command_buffer(cmd).unwrap();
                        v.device.free_command_buffers(v.pool, &[cmd]);
                        vkcuda_image_destroy(im);
                        vkcuda_buffer_destroy(b);
                    }
                    seen
                };
            let info = |stages: S, access: A| vkcuda_handoff_info {
                stage_mask: stages.as_raw(),
                access_mask: access.as_raw(),
                ..handoff_info(0)
            };
            let enabled = [
                (S::GEOMETRY_SHADER, "GEOMETRY_SHADER_BIT", "geometryShader"),
                (
                    S::TESSELLATION_CONTROL_SHADER,
                    "TESSELLATION_CONTROL_SHADER_BIT",
                    "tessellationShader",
                ),
                (
                    S::TESSELLATION_EVALUATION_SHADER,
                    "TESSELLATION_EVALUATION_SHADER_BIT",
                    "tessellationShader",
                ),
                (
                    S::TRANSFORM_FEEDBACK_EXT,
                    "TRANSFORM_FEEDBACK_BIT_EXT",
                    "transformFeedback",
                ),
                (
                    S::CONDITIONAL_RENDERING_EXT,
                    "CONDITIONAL_RENDERING_BIT_EXT",
                    "conditionalRendering",
                ),
            ];
            // Refused by both contexts: features the device has not enabled.
            let never = [
                (S::MESH_SHADER_EXT, "MESH_SHADER_BIT_EXT", "meshShader"),
                (S::TASK_SHADER_EXT, "TASK_SHADER_BIT_EXT", "taskShader"),
                (
                    S::FRAGMENT_DENSITY_PROCESS_EXT,
                    "FRAGMENT_DENSITY_PROCESS_BIT_EXT",
                    "fragmentDensityMap",
                ),
                (
                    S::FRAGMENT_SHADING_RATE_ATTACHMENT_KHR,
                    "FRAGMENT_SHADING_RATE_ATTACHMENT_BIT_KHR",
                    "attachmentFragmentShadingRate",
                ),
                (
                    S::RAY_TRACING_SHADER_KHR,
                    "RAY_TRACING_SHADER_BIT_KHR",
                    "rayTracingPipeline",
                ),
            ];
            let cmd = v.command_buffer();
            for (ctx, knows) in [(plain, false), (told, true)] {
                // The names of the barrier call the context records with.
                let name2 = if knows && sync2 { "_2_" } else { "_" };
                for &(s, name, feature) in enabled.iter().chain(&never) {
                    let valid = knows && enabled.iter().any(|e| e.0 == s);
                    for (r, msg) in calls(ctx, cmd, &info(S::TRANSFER | s, A::empty())) {
                        if valid {
                            assert_eq!(r, VKCUDA_SUCCESS, "{sync2} {name}: {msg}");
                        } else {
                            assert_eq!(r, VKCUDA_ERROR_INVALID_ARGUMENT, "{sync2} {name}: {msg}");
                            let bit = format!("VK_PIPELINE_STAGE{name2}{name}");
                            assert!(
                                msg.contains(&bit)
                                    && msg.contains(feature)
                                    && !msg.contains("TRANSFER_BIT"),
                                "{sync2} {knows}: wants {bit} and {feature}: {msg}"
                            );
                        }
                    }
                }
                // An extension's access: with its stage once the context knows it.
                for (r, msg) in calls(
                    ctx,
                    cmd,
                    &info(S::TRANSFORM_FEEDBACK_EXT, A::TRANSFORM_FEEDBACK_WRITE_EXT),
                ) {
                    if knows {
                        assert_eq!(r, VKCUDA_SUCCESS, "{msg}");
                    } else {
                        assert_eq!(r, VKCUDA_ERROR_INVALID_ARGUMENT, "{msg}");
                    }
                }
                // Accesses the stages cannot make: refused whatever the context knows.
                for (s, a, name) in [
                    (S::TRANSFER, A::SHADER_WRITE, "SHADER_WRITE_BIT"),
                    (
                        S::COMPUTE_SHADER,
                        A::COLOR_ATTACHMENT_WRITE,
                        "COLOR_ATTACHMENT_WRITE_BIT",
                    ),
                    (S::GEOMETRY_SHADER, A::TRANSFER_WRITE, "TRANSFER_WRITE_BIT"),
                    (S::ALL_COMMANDS, A::HOST_WRITE, "HOST_WRITE_BIT"),
                    (S::TRANSFORM_FEEDBACK_EXT, A::SHADER_READ, "SHADER_READ_BIT"),
                ] {
                    for (r, msg) in calls(ctx, cmd, &info(s, a)) {
                        assert_eq!(r, VKCUDA_ERROR_INVALID_ARGUMENT, "{msg}");
                        let bit = format!("VK_ACCESS{name2}{name}");
                        // The stage may be refused first (the plain context).
                        assert!(
                            msg.contains(&bit) || msg.contains("the context does not know"),
                            "{bit}: {msg}"
                        );
                    }
                }
                // Valid pairs pass on both contexts.
                for (s, a) in [
                    (S::TRANSFER, A::TRANSFER_WRITE | A::TRANSFER_READ),
                    (S::COMPUTE_SHADER, A::SHADER_WRITE),
                    (
                        S::FRAGMENT_SHADER | S::COLOR_ATTACHMENT_OUTPUT,
                        A::SHADER_READ | A::COLOR_ATTACHMENT_WRITE,
                    ),
                    (S::ALL_GRAPHICS, A::SHADER_WRITE | A::INDEX_READ),
                    (S::ALL_COMMANDS, A::SHADER_WRITE | A::TRANSFER_WRITE),
                    (S::TOP_OF_PIPE, A::MEMORY_READ),
                ] {
                    for (r, msg) in calls(ctx, cmd, &info(s, a)) {
                        assert_eq!(r, VKCUDA_SUCCESS, "{s:?} {a:?}: {msg}");
                    }
                }
            }
            // The told context records with synchronization2 when the device has it:
            // READ_ONLY_OPTIMAL needs it.
            let mut d = image_desc(0, vk::Format::R8G8B8A8_UNORM, EXTENT, EXTENT, 1);
            d.usage = vk::ImageUsageFlags::SAMPLED.as_raw();
            let mut sampled = ptr::null_mut();
            ok(unsafe { vkcuda_image_create(told, &d, &mut sampled) });
            let r = unsafe {
                vkcuda_image_cmd_acquire_from_cuda(
                    sampled,
                    cmd,
                    &handoff_info(0),
                    vk::ImageLayout::READ_ONLY_OPTIMAL.as_raw(),
                )
            };
            assert_eq!(r == VKCUDA_SUCCESS, sync2, "{}", last_error());
            unsafe {
                v.device.end_command_buffer(cmd).unwrap();
                v.device.free_command_buffers(v.pool, &[cmd]);
                vkcuda_image_destroy(sampled);
                vkcuda_context_destroy(plain);
                vkcuda_context_destroy(told);
            }
            drop(v);
        });
    }
}
