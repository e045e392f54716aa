//! Handoff barriers: one buffer or image at a time, and batched (issue 20 item 2):
//! one call records the release (or acquire) of N buffers and images in one
//! pipeline barrier, with per-image layouts; with vkCmdPipelineBarrier2 where the
//! context has synchronization2 (standalone contexts on lavapipe, Vulkan 1.3),
//! vkCmdPipelineBarrier otherwise (an engine context not told of
//! synchronization2). Each case writes every resource with Vulkan, releases and
//! acquires the whole batch, copies everything out and compares every byte; what
//! is forwarded into the barrier is checked against the device, the image and
//! what the context knows is enabled. The validation layer runs these in the test
//! command's vvl step (scripts/test.sh). The C door's resource entries are
//! capi/tests/misuse/handoff.rs's.

mod support;
use support::*;

use std::sync::Arc;

use ash::vk;
use vkcuda::buffer::Allocator;
use vkcuda::context::{CudaChoice, EnabledFeatures, EngineHandles};
use vkcuda::handoff::{self, Direction, Resource, Scope};
use vkcuda::image::Description;
use vkcuda::{pairing, Buffer, Context, Error, ErrorKind, Image};

const SIZE: u64 = 4096;
const EXTENT: u32 = 16;

fn none() -> vk::BufferUsageFlags {
    vk::BufferUsageFlags::empty()
}

fn buffer(ctx: &Arc<Context>) -> Buffer {
    Buffer::create(ctx, SIZE, none(), Allocator::Vulkan).unwrap()
}

/// An RGBA8 image of EXTENT x EXTENT with `usage`.
fn image(ctx: &Arc<Context>, usage: vk::ImageUsageFlags) -> Image {
    let d = Description {
        usage,
        ..Description::new_2d(vk::Format::R8G8B8A8_UNORM, EXTENT, EXTENT)
    };
    Image::create(ctx, &d).unwrap()
}

/// The handles of an engine's device, for `Context::from_engine`.
fn handles(e: &EngineDevice) -> EngineHandles {
    support::device::engine_handles(e, None)
}

/// A Vulkan-only context over the engine's device, told `features` when given
/// (the engine outlives it: the caller drops the context first).
fn engine_context(e: &EngineDevice, features: Option<&EnabledFeatures>) -> Arc<Context> {
    let h = handles(e);
    // SAFETY: the engine's live handles, outliving the context; `features` is
    // what the engine enabled.
    unsafe {
        match features {
            None => Context::from_engine(&h, CudaChoice::None),
            Some(f) => Context::from_engine_with_features(&h, f, CudaChoice::None),
        }
    }
    .unwrap()
}

fn value_of(i: usize) -> u32 {
    0x0101_0101u32.wrapping_mul(i as u32 + 1)
}

enum Res {
    Buffer(Buffer),
    Image(Box<Image>),
}

/// N resources (every third an image), written with Vulkan, released and acquired
/// in one barrier each, copied out and compared.
fn round_trip(ctx: &Arc<Context>, v: &Vk, n: usize) {
    let transfer = vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST;
    let res: Vec<Res> = (0..n)
        .map(|i| match i % 3 {
            2 => Res::Image(Box::new(image(ctx, transfer))),
            _ => Res::Buffer(buffer(ctx)),
        })
        .collect();
    let entries = |layout: vk::ImageLayout| {
        res.iter()
            .map(|r| match r {
                Res::Buffer(b) => Ok(Resource::Buffer(b)),
                Res::Image(im) => Ok(Resource::Image(im, layout)),
            })
            .collect::<Vec<_>>()
    };
    let out = v.host_buffer(SIZE * n as u64);
    let scope = Scope::new(v.family);
    // Write every resource, then release the whole batch to CUDA.
    v.run(|cmd| unsafe {
        for (i, r) in res.iter().enumerate() {
            match r {
                Res::Buffer(b) => {
                    v.device
                        .cmd_fill_buffer(cmd, b.vk_buffer(), 0, SIZE, value_of(i))
                }
                Res::Image(im) => {
                    let (from, to) = (
                        vk::ImageLayout::UNDEFINED,
                        vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                    );
                    v.image_barrier(cmd, layout_barrier(im.vk_image(), color_range(), from, to));
                    let c = value_of(i).to_le_bytes().map(|b| b as f32 / 255.0);
                    let color = vk::ClearColorValue { float32: c };
                    v.device.cmd_clear_color_image(
                        cmd,
                        im.vk_image(),
                        to,
                        &color,
                        &[color_range()],
                    );
                }
            }
        }
        let release = entries(vk::ImageLayout::TRANSFER_DST_OPTIMAL);
        handoff::batch(cmd, Direction::Release, &scope, release).unwrap();
    });
    // Acquire the batch back and copy everything out.
    v.run(|cmd| unsafe {
        let acquire = entries(vk::ImageLayout::TRANSFER_SRC_OPTIMAL);
        handoff::batch(cmd, Direction::Acquire, &scope, acquire).unwrap();
        for (i, r) in res.iter().enumerate() {
            let at = SIZE * i as u64;
            match r {
                Res::Buffer(b) => {
                    let region = [vk::BufferCopy::default().dst_offset(at).size(SIZE)];
                    v.device
                        .cmd_copy_buffer(cmd, b.vk_buffer(), out.buffer, &region)
                }
                Res::Image(im) => {
                    let region = [color_region(EXTENT, EXTENT).buffer_offset(at)];
                    let layout = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
                    v.device.cmd_copy_image_to_buffer(
                        cmd,
                        im.vk_image(),
                        layout,
                        out.buffer,
                        &region,
                    )
                }
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
}

#[test]
fn batches_of_1_8_64_resources_round_trip_with_synchronization2() {
    let ctx = vulkan_only_context();
    assert!(
        ctx.enabled_features().synchronization2,
        "lavapipe has Vulkan 1.3"
    );
    let v = Vk::of(&ctx);
    for n in [1, 8, 64] {
        round_trip(&ctx, &v, n);
    }
}

#[test]
fn batches_round_trip_with_the_vulkan_1_0_barrier() {
    // An engine device of Vulkan 1.2 without synchronization2: vkCmdPipelineBarrier.
    let engine = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    let ctx = engine_context(&engine, None);
    let v = Vk::for_engine(&engine.instance, &engine.device, engine.physical);
    for n in [1, 8] {
        round_trip(&ctx, &v, n);
    }
}

/// Issue 39 item 5 through the Rust API: a context over the engine's device knows
/// only what every device has, unless told (`from_engine_with_features`); a
/// standalone context knows what it enabled. The stage's feature is named.
#[test]
fn barriers_take_the_stages_the_context_knows_are_enabled() {
    use vk::PipelineStageFlags as S;
    let engine = EngineDevice::new(&[pairing::DEVICE_EXTENSIONS[0]], |_, _| true);
    let handles = handles(&engine);
    let mut told = vkcuda::context::EnabledFeatures::default();
    told.geometry_shader = true;
    // SAFETY: the engine's live handles, which outlive the contexts (dropped first).
    // (EngineDevice enables no optional feature: the `told` context is only used to
    // see the rules, its barrier is never submitted.)
    let plain = unsafe { Context::from_engine(&handles, CudaChoice::None) }.unwrap();
    assert_eq!(plain.enabled_features(), Default::default());
    let standalone = vulkan_only_context();
    assert!(!standalone.enabled_features().geometry_shader);
    let v = Vk::for_engine(&engine.instance, &engine.device, engine.physical);
    let buf = Buffer::create(&plain, 4096, none(), Allocator::Vulkan).unwrap();
    let geometry = Scope::with_defaults(
        0,
        S::GEOMETRY_SHADER | S::TRANSFER,
        vk::AccessFlags::empty(),
    );
    let cmd = v.command_buffer();
    // SAFETY: `cmd` is recording, on this device, used by this thread only.
    let e = unsafe { buf.cmd_release_to_cuda(cmd, &geometry) }.unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert!(
        e.message.contains(
            "VK_PIPELINE_STAGE_GEOMETRY_SHADER_BIT, which needs the geometryShader feature"
        ),
        "{}",
        e.message
    );
    let scope = Scope::with_defaults(0, S::TRANSFER, vk::AccessFlags::COLOR_ATTACHMENT_WRITE);
    let e = unsafe {
        handoff::batch(
            cmd,
            Direction::Acquire,
            &scope,
            [Ok(Resource::Buffer(&buf))],
        )
    }
    .unwrap_err();
    assert!(
        e.message.contains("VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT"),
        "{}",
        e.message
    );
    unsafe {
        v.device.end_command_buffer(cmd).unwrap();
        v.device.free_command_buffers(v.pool, &[cmd]);
    }
    drop(buf);
    let ctx =
        unsafe { Context::from_engine_with_features(&handles, &told, CudaChoice::None) }.unwrap();
    assert!(ctx.enabled_features().geometry_shader && !ctx.enabled_features().synchronization2);
    drop((v, ctx, plain, standalone));
}

#[test]
fn handoffs_keep_the_data() {
    let ctx = vulkan_only_context();
    let v = Vk::of(&ctx);
    let scope = Scope::new(v.family);
    // A buffer: written, released to CUDA and acquired back, read.
    let data = bytes(65536, 11);
    let buf = Buffer::create(&ctx, 65536, none(), Allocator::Vulkan).unwrap();
    v.write(buf.vk_buffer(), &data);
    v.run(|cmd| unsafe {
        buf.cmd_release_to_cuda(cmd, &scope).unwrap();
        buf.cmd_acquire_from_cuda(cmd, &scope).unwrap();
    });
    assert_same(&v.read(buf.vk_buffer(), 65536), &data, "buffer");

    // An image and a buffer in one batch each way.
    let (w, h) = (40, 24);
    let texels = bytes(w * h * 4, 12);
    let im = Image::create(
        &ctx,
        &Description::new_2d(vk::Format::R8G8B8A8_UNORM, w as u32, h as u32),
    )
    .unwrap();
    v.upload(im.vk_image(), w as u32, h as u32, &texels);
    // The image read back in TRANSFER_SRC_OPTIMAL is the texels written.
    let image_is = |what: &str| {
        let layout = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
        let back = v.download(im.vk_image(), w as u32, h as u32, layout, texels.len());
        assert_same(&back, &texels, what);
    };
    v.run(|cmd| unsafe {
        let release = [
            Resource::Image(&im, vk::ImageLayout::TRANSFER_DST_OPTIMAL),
            Resource::Buffer(&buf),
        ];
        handoff::batch(cmd, Direction::Release, &scope, release.map(Ok)).unwrap();
        let acquire = [
            Resource::Buffer(&buf),
            Resource::Image(&im, vk::ImageLayout::TRANSFER_SRC_OPTIMAL),
        ];
        handoff::batch(cmd, Direction::Acquire, &scope, acquire.map(Ok)).unwrap();
    });
    image_is("image after a batched handoff");
    assert_same(
        &v.read(buf.vk_buffer(), 65536),
        &data,
        "buffer after a batched handoff",
    );
    // The single-image calls: from the layout the engine left, to GENERAL and back.
    v.run(|cmd| unsafe {
        im.cmd_release_to_cuda(cmd, &scope, vk::ImageLayout::TRANSFER_SRC_OPTIMAL)
            .unwrap();
        im.cmd_acquire_from_cuda(cmd, &scope, vk::ImageLayout::TRANSFER_SRC_OPTIMAL)
            .unwrap();
    });
    image_is("image after its own handoff");
}

#[test]
fn handoff_refusals_name_the_entry() {
    let a = vulkan_only_context();
    let b = vulkan_only_context();
    let v = Vk::of(&a);
    let buf_a = Buffer::create(&a, 1024, none(), Allocator::Vulkan).unwrap();
    let buf_b = Buffer::create(&b, 1024, none(), Allocator::Vulkan).unwrap();
    let im = Image::create(&a, &Description::new_2d(vk::Format::R8G8B8A8_UNORM, 8, 8)).unwrap();
    let scope = Scope::new(v.family);
    let cmd = v.command_buffer();
    unsafe {
        refused(
            buf_a.cmd_release_to_cuda(cmd, &Scope::new(99)),
            ErrorKind::InvalidArgument,
            "queue_family_index is 99",
        );
        refused(
            buf_a.cmd_release_to_cuda(cmd, &Scope::new(vk::QUEUE_FAMILY_EXTERNAL)),
            ErrorKind::InvalidArgument,
            "CUDA's side of the transfer",
        );
        let two_devices = [Resource::Buffer(&buf_a), Resource::Buffer(&buf_b)];
        refused(
            handoff::batch(cmd, Direction::Release, &scope, two_devices.map(Ok)),
            ErrorKind::InvalidArgument,
            "resources[1] belongs to another VkDevice",
        );
        refused(
            im.cmd_acquire_from_cuda(cmd, &scope, vk::ImageLayout::UNDEFINED),
            ErrorKind::InvalidArgument,
            "new_layout",
        );
        let depth = [Ok(Resource::Image(
            &im,
            vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
        ))];
        refused(
            handoff::batch(cmd, Direction::Release, &scope, depth),
            ErrorKind::InvalidArgument,
            "resources[0].layout",
        );
        // An entry the caller could not read comes back as it is.
        let theirs = [
            Ok(Resource::Buffer(&buf_a)),
            Err(Error::new(ErrorKind::NullPointer, "my entry 1")),
        ];
        let e = handoff::batch(cmd, Direction::Release, &scope, theirs).unwrap_err();
        assert_eq!(e, Error::new(ErrorKind::NullPointer, "my entry 1"));
        // Nothing at all: nothing recorded, no error.
        handoff::batch(cmd, Direction::Acquire, &scope, []).unwrap();
        v.device.end_command_buffer(cmd).unwrap();
        v.device.free_command_buffers(v.pool, &[cmd]);
    }
}

/// What the library forwards into the engine's barrier is checked against the
/// device and the image (issue 29 item 8), for the barrier call of each kind of
/// context: vkCmdPipelineBarrier2 (a standalone context on lavapipe) and
/// vkCmdPipelineBarrier (an engine context without synchronization2). Nothing is
/// recorded on failure; the same calls with valid values succeed.
#[test]
fn forwarded_values_are_checked_for_both_barrier_calls() {
    use vk::ImageLayout as L;
    let engine = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    let sync1 = engine_context(&engine, None);
    let sync2 = vulkan_only_context();
    let v1 = Vk::for_engine(&engine.instance, &engine.device, engine.physical);
    let v2 = Vk::of(&sync2);
    let video_decode =
        vk::PipelineStageFlags::from_raw(vk::PipelineStageFlags2::VIDEO_DECODE_KHR.as_raw() as u32);
    for (ctx, v, has_sync2) in [(&sync1, &v1, false), (&sync2, &v2, true)] {
        let families = unsafe {
            v.instance
                .get_physical_device_queue_family_properties(v.physical)
        }
        .len() as u32;
        let b = buffer(ctx);
        let storage = image(ctx, vk::ImageUsageFlags::STORAGE);
        let sampled = image(ctx, vk::ImageUsageFlags::SAMPLED);
        let cmd = v.command_buffer();
        let good = Scope::new(v.family);
        let no = |r: vkcuda::Result<()>, says: &str| {
            let e = refused(r, ErrorKind::InvalidArgument, "");
            assert!(
                e.message().contains(says),
                "sync2 {has_sync2}: wants {says:?}: {e}"
            );
        };
        unsafe {
            for (q, says) in [
                (families, "the device has"),
                (vk::QUEUE_FAMILY_IGNORED, "VK_QUEUE_FAMILY_IGNORED"),
                (vk::QUEUE_FAMILY_EXTERNAL, "VK_QUEUE_FAMILY_EXTERNAL"),
            ] {
                let h = Scope::new(q);
                no(b.cmd_release_to_cuda(cmd, &h), says);
                let list = [Ok(Resource::Buffer(&b))];
                no(handoff::batch(cmd, Direction::Acquire, &h, list), says);
            }
            // A stage of synchronization2 only: not a stage of vkCmdPipelineBarrier; of
            // vkCmdPipelineBarrier2, but not one lavapipe's universal queue runs.
            let h = Scope::with_defaults(v.family, video_decode, vk::AccessFlags::empty());
            no(
                b.cmd_acquire_from_cuda(cmd, &h),
                if has_sync2 {
                    "that the queues of family"
                } else {
                    "not VkPipelineStageFlagBits, which vkCmdPipelineBarrier takes"
                },
            );
            let h = Scope::with_defaults(
                v.family,
                vk::PipelineStageFlags::empty(),
                vk::AccessFlags::from_raw(1 << 31),
            );
            no(
                b.cmd_acquire_from_cuda(cmd, &h),
                "access_mask 0x80000000 has bits 0x80000000",
            );
            // Layouts against the image's usage, single and batched (the second entry
            // is named).
            for l in [
                L::TRANSFER_SRC_OPTIMAL,
                L::SHADER_READ_ONLY_OPTIMAL,
                L::COLOR_ATTACHMENT_OPTIMAL,
            ] {
                no(
                    storage.cmd_acquire_from_cuda(cmd, &good, l),
                    "this image's usage is VK_IMAGE_USAGE_STORAGE_BIT",
                );
                no(storage.cmd_release_to_cuda(cmd, &good, l), "old_layout");
                let list = [
                    Ok(Resource::Image(&sampled, L::GENERAL)),
                    Ok(Resource::Image(&storage, l)),
                ];
                no(
                    handoff::batch(cmd, Direction::Acquire, &good, list),
                    "resources[1].layout (new layout)",
                );
            }
            storage
                .cmd_acquire_from_cuda(cmd, &good, L::GENERAL)
                .unwrap();
            sampled
                .cmd_acquire_from_cuda(cmd, &good, L::SHADER_READ_ONLY_OPTIMAL)
                .unwrap();
            // READ_ONLY_OPTIMAL: sampled images may be in it, with synchronization2.
            let r = sampled.cmd_acquire_from_cuda(cmd, &good, L::READ_ONLY_OPTIMAL);
            if has_sync2 {
                r.unwrap();
            } else {
                no(r, "synchronization2");
            }
            v.device.end_command_buffer(cmd).unwrap();
            v.device.free_command_buffers(v.pool, &[cmd]);
        }
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
/// the engine enabled (`EnabledFeatures::from_device_create_info`), the context
/// records the same stages, and the valid pairs pass everywhere.
#[test]
fn stages_and_accesses_follow_what_the_device_enabled() {
    use vk::AccessFlags as A;
    use vk::PipelineStageFlags as S;
    for sync2 in [false, true] {
        engine_with_features(sync2, |engine, device_info| {
            // SAFETY: the create info the engine's device was made with.
            let features = unsafe { EnabledFeatures::from_device_create_info(device_info) };
            let plain = engine_context(engine, None);
            let told = engine_context(engine, Some(&features));
            let v = Vk::for_engine(&engine.instance, &engine.device, engine.physical);
            // (The plain context records with vkCmdPipelineBarrier: it was told nothing.)
            // Each set of calls in a command buffer of its own, freed before the
            // objects it names are dropped.
            let calls = |ctx: &Arc<Context>, h: &Scope| {
                let cmd = v.command_buffer();
                let b = buffer(ctx);
                let im = image(ctx, vk::ImageUsageFlags::STORAGE);
                let general = vk::ImageLayout::GENERAL;
                let list = || [Ok(Resource::Buffer(&b)), Ok(Resource::Image(&im, general))];
                let seen = unsafe {
                    let seen = [
                        b.cmd_release_to_cuda(cmd, h),
                        b.cmd_acquire_from_cuda(cmd, h),
                        im.cmd_release_to_cuda(cmd, h, general),
                        im.cmd_acquire_from_cuda(cmd, h, general),
                        handoff::batch(cmd, Direction::Release, h, list()),
                        handoff::batch(cmd, Direction::Acquire, h, list()),
                    ];
                    v.device.end_command_buffer(cmd).unwrap();
                    v.device.free_command_buffers(v.pool, &[cmd]);
                    seen
                };
                seen.map(|r| r.map_err(|e| (e.kind(), e.to_string())))
            };
            let info = |stages: S, access: A| Scope {
                stages,
                access,
                queue_family: 0,
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
            let invalid = ErrorKind::InvalidArgument;
            for (ctx, knows) in [(&plain, false), (&told, true)] {
                // The names of the barrier call the context records with.
                let name2 = if knows && sync2 { "_2_" } else { "_" };
                for &(s, name, feature) in enabled.iter().chain(&never) {
                    let valid = knows && enabled.iter().any(|e| e.0 == s);
                    for r in calls(ctx, &info(S::TRANSFER | s, A::empty())) {
                        if valid {
                            assert_eq!(r, Ok(()), "{sync2} {name}");
                        } else {
                            let (kind, msg) = r.unwrap_err();
                            assert_eq!(kind, invalid, "{sync2} {name}: {msg}");
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
                let tf = info(S::TRANSFORM_FEEDBACK_EXT, A::TRANSFORM_FEEDBACK_WRITE_EXT);
                for r in calls(ctx, &tf) {
                    match knows {
                        true => assert_eq!(r, Ok(())),
                        false => assert_eq!(r.unwrap_err().0, invalid),
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
                    for r in calls(ctx, &info(s, a)) {
                        let (kind, msg) = r.unwrap_err();
                        assert_eq!(kind, invalid, "{msg}");
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
                    for r in calls(ctx, &info(s, a)) {
                        assert_eq!(r, Ok(()), "{s:?} {a:?}");
                    }
                }
            }
            // The told context records with synchronization2 when the device has it:
            // READ_ONLY_OPTIMAL needs it.
            let sampled = image(&told, vk::ImageUsageFlags::SAMPLED);
            let cmd = v.command_buffer();
            let layout = vk::ImageLayout::READ_ONLY_OPTIMAL;
            let r = unsafe { sampled.cmd_acquire_from_cuda(cmd, &Scope::new(0), layout) };
            assert_eq!(r.is_ok(), sync2, "{r:?}");
            unsafe {
                v.device.end_command_buffer(cmd).unwrap();
                v.device.free_command_buffers(v.pool, &[cmd]);
            }
        });
    }
}
