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
