//! The host-side cost of each per-frame call, against the raw calls it makes, in
//! one run (issue 20 item 3): next_stage, cuda_wait, cuda_signal, host_signal, the
//! graph value setter, the release/acquire recording of a buffer and an image, the
//! batched barrier for N = 1, 8, 64 (also against N single calls), the pitched
//! copy of a decoded frame (issue 39 item 14: an image and an NV12 frame; beside it,
//! where its cost over the raw copy goes: the two driver calls every CUDA-side call
//! makes, and the same copy through the Rust API), and a getter
//! through the C boundary (panic boundary, handle tag check). Each figure is the
//! median over batches of 64 calls (at least 100,000 calls in all, library and raw
//! batches alternating), in nanoseconds per call; the goal is library <= raw +
//! 200 ns. GPU time of the batched barriers comes from timestamp queries.
//!
//! Beside each per-frame C call, the same call through the Rust API (issue 31: a
//! Rust engine pays no more than a C one), on objects of a Rust context over the
//! same `VkDevice` (and CUDA context), alternating with the C call in the same
//! way: reported as the ratio Rust/C, goal <= 1.01.
//!
//! `cargo bench --bench calls` (the bundle's `bench-calls` on the GPU machine);
//! `--quick` runs the Vulkan-only part with few calls (CI smoke test on lavapipe);
//! `--csv FILE` writes the table as CSV.

#[path = "../capi/tests/support/mod.rs"]
mod support;

use std::cell::Cell;
use std::fmt::Write as _;
use std::ptr;
use std::sync::Arc;
use std::time::Instant;

use ash::vk;
use cudarc::driver::sys as cu;
use support::cuda::check;
use support::*;
use vkcuda::buffer::Allocator;
use vkcuda::context::{CudaChoice, EngineHandles};
use vkcuda::handoff::{Direction, Resource, Scope};
use vkcuda::image::Description;
use vkcuda::semaphore::{GraphOp, Kind};
use vkcuda::{Buffer, Context, Image, Semaphore};

const BATCH: usize = 64;

/// The Rust API's goal: each per-frame call costs at most 1 % more than the same
/// call through the C API.
const RUST_GOAL: f64 = 1.01;

/// A Rust context over the C context's own `VkDevice` (an engine context of the
/// Rust API: the same device, command buffers and, with CUDA, the same primary
/// context), recording with the same barrier call as the C context.
fn rust_context_over(ctx: *mut vkcuda_context, cuda: bool, sync2: bool) -> Arc<Context> {
    let mut h: vkcuda_vulkan_handles = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_context_get_vulkan_handles(ctx, &mut h) });
    let handles = EngineHandles {
        instance: h.instance,
        physical: h.physical_device,
        device: h.device,
        get_instance_proc_addr: h.get_instance_proc_addr.expect("gipa"),
        get_device_proc_addr: None,
        synchronization2: sync2,
    };
    let choice = if cuda {
        CudaChoice::Primary
    } else {
        CudaChoice::None
    };
    // SAFETY: the C context's live handles; the Rust context is dropped first.
    unsafe { Context::from_engine(&handles, choice) }.expect("a Rust context over the device")
}

#[derive(Default)]
struct Table {
    rows: Vec<(String, f64, f64, String)>,
}

impl Table {
    /// A library figure against its raw baseline (ns per call).
    fn pair(&mut self, name: &str, lib: f64, raw: f64, note: &str) {
        let d = lib - raw;
        let verdict = if d <= 200.0 { "ok" } else { "OVER" };
        println!(
            "  {name:<46} library {lib:>9.1} ns   raw {raw:>9.1} ns   +{d:>7.1} ns  {verdict}  {note}"
        );
        self.rows.push((name.into(), lib, raw, note.into()));
    }

    fn single(&mut self, name: &str, lib: f64, note: &str) {
        println!("  {name:<46} library {lib:>9.1} ns   {note}");
        self.rows.push((name.into(), lib, f64::NAN, note.into()));
    }

    /// The same call through the Rust API and through the C API (ns per call): the
    /// row "rust: NAME" with the Rust figure as library_ns and the C one as raw_ns.
    fn rust_vs_c(&mut self, name: &str, rust: f64, c: f64) {
        let ratio = rust / c;
        let verdict = if ratio <= RUST_GOAL { "ok" } else { "OVER" };
        println!(
            "  {:<76} Rust {rust:>9.1} ns   C {c:>9.1} ns   Rust/C {ratio:>6.3}  {verdict}",
            format!("rust: {name}")
        );
        self.rows.push((
            format!("rust: {name}"),
            rust,
            c,
            format!("Rust API vs C API; ratio Rust/C {ratio:.3} (goal <= {RUST_GOAL})"),
        ));
    }

    /// The worst Rust/C ratio of the run, and its call.
    fn worst_rust_ratio(&self) -> Option<(f64, &str)> {
        self.rows
            .iter()
            .filter(|r| r.0.starts_with("rust: "))
            .map(|r| (r.1 / r.2, r.0.as_str()))
            .max_by(|a, b| a.0.total_cmp(&b.0))
    }

    fn csv(&self) -> String {
        let mut s = String::from("call,library_ns,raw_ns,difference_ns,note\n");
        for (n, l, r, note) in &self.rows {
            let _ = writeln!(s, "{n},{l:.1},{r:.1},{:.1},\"{note}\"", l - r);
        }
        s
    }
}

/// Times `rounds` batches of `BATCH` calls of `lib` and of `raw`, alternating
/// (which goes first alternates too); `between` runs untimed after each batch, so
/// every batch starts from the same state (for the CUDA calls: an idle stream, not
/// one still running the other side's batch). Returns the median ns per call of each.
fn compare(
    rounds: usize,
    mut lib: impl FnMut(usize),
    mut raw: impl FnMut(usize),
    mut between: impl FnMut(),
) -> (f64, f64) {
    let mut l = Vec::with_capacity(rounds);
    let mut r = Vec::with_capacity(rounds);
    let mut i = 0usize;
    for round in 0..rounds {
        let time = |f: &mut dyn FnMut(usize), out: &mut Vec<f64>, i: &mut usize| {
            let t = Instant::now();
            for _ in 0..BATCH {
                f(*i);
                *i += 1;
            }
            out.push(t.elapsed().as_nanos() as f64 / BATCH as f64);
        };
        if round % 2 == 0 {
            time(&mut lib, &mut l, &mut i);
            between();
            time(&mut raw, &mut r, &mut i);
        } else {
            time(&mut raw, &mut r, &mut i);
            between();
            time(&mut lib, &mut l, &mut i);
        }
        between();
    }
    (median(&mut l), median(&mut r))
}

fn only(rounds: usize, mut lib: impl FnMut(usize), mut between: impl FnMut()) -> f64 {
    let mut l = Vec::with_capacity(rounds);
    let mut i = 0usize;
    for _ in 0..rounds {
        let t = Instant::now();
        for _ in 0..BATCH {
            lib(i);
            i += 1;
        }
        l.push(t.elapsed().as_nanos() as f64 / BATCH as f64);
        between();
    }
    median(&mut l)
}

/// A command buffer in the recording state, re-begun now and then (recording
/// tens of thousands of barriers into one would grow it without end).
struct Recorder<'a> {
    v: &'a Vk,
    cmd: vk::CommandBuffer,
    recorded: usize,
}

impl<'a> Recorder<'a> {
    fn new(v: &'a Vk) -> Recorder<'a> {
        let cmd = v.command_buffer();
        Recorder {
            v,
            cmd,
            recorded: 0,
        }
    }

    fn maybe_restart(&mut self) {
        self.recorded += 1;
        if self.recorded % 32 == 0 {
            unsafe {
                self.v.device.end_command_buffer(self.cmd).unwrap();
                self.v
                    .device
                    .reset_command_buffer(self.cmd, vk::CommandBufferResetFlags::empty())
                    .unwrap();
                self.v
                    .device
                    .begin_command_buffer(self.cmd, &vk::CommandBufferBeginInfo::default())
                    .unwrap();
            }
        }
    }
}

impl Drop for Recorder<'_> {
    fn drop(&mut self) {
        unsafe {
            self.v.device.end_command_buffer(self.cmd).unwrap();
            self.v.device.free_command_buffers(self.v.pool, &[self.cmd]);
        }
    }
}

/// The raw barrier the library records for a buffer/image release, built by hand.
fn raw_release_buffer(
    family: u32,
    buffer: vk::Buffer,
    size: u64,
) -> vk::BufferMemoryBarrier<'static> {
    vk::BufferMemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE)
        .src_queue_family_index(family)
        .dst_queue_family_index(vk::QUEUE_FAMILY_EXTERNAL)
        .buffer(buffer)
        .size(size)
}

fn raw_release_buffer2(
    family: u32,
    buffer: vk::Buffer,
    size: u64,
) -> vk::BufferMemoryBarrier2<'static> {
    vk::BufferMemoryBarrier2::default()
        .src_stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)
        .src_access_mask(vk::AccessFlags2::MEMORY_READ | vk::AccessFlags2::MEMORY_WRITE)
        .src_queue_family_index(family)
        .dst_queue_family_index(vk::QUEUE_FAMILY_EXTERNAL)
        .buffer(buffer)
        .size(size)
}

/// The acquire the library records: nothing to wait for on CUDA's side (NONE), the
/// engine's stages and accesses after.
fn raw_acquire_buffer2(
    family: u32,
    buffer: vk::Buffer,
    size: u64,
) -> vk::BufferMemoryBarrier2<'static> {
    vk::BufferMemoryBarrier2::default()
        .dst_stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)
        .dst_access_mask(vk::AccessFlags2::MEMORY_READ | vk::AccessFlags2::MEMORY_WRITE)
        .src_queue_family_index(vk::QUEUE_FAMILY_EXTERNAL)
        .dst_queue_family_index(family)
        .buffer(buffer)
        .size(size)
}

fn raw_acquire_image2(family: u32, image: vk::Image) -> vk::ImageMemoryBarrier2<'static> {
    raw_release_image2(family, image)
        .src_stage_mask(vk::PipelineStageFlags2::NONE)
        .src_access_mask(vk::AccessFlags2::NONE)
        .dst_stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)
        .dst_access_mask(vk::AccessFlags2::MEMORY_READ | vk::AccessFlags2::MEMORY_WRITE)
        .src_queue_family_index(vk::QUEUE_FAMILY_EXTERNAL)
        .dst_queue_family_index(family)
}

fn raw_release_image2(family: u32, image: vk::Image) -> vk::ImageMemoryBarrier2<'static> {
    vk::ImageMemoryBarrier2::default()
        .src_stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)
        .src_access_mask(vk::AccessFlags2::MEMORY_READ | vk::AccessFlags2::MEMORY_WRITE)
        .old_layout(vk::ImageLayout::GENERAL)
        .new_layout(vk::ImageLayout::GENERAL)
        .src_queue_family_index(family)
        .dst_queue_family_index(vk::QUEUE_FAMILY_EXTERNAL)
        .image(image)
        .subresource_range(color_range())
}

/// Recording: single and batched barriers, and a getter through the boundary.
fn vulkan_calls(ctx: *mut vkcuda_context, cuda: bool, rounds: usize, t: &mut Table) {
    let v = Vk::new(ctx);
    let family = v.family;
    let info = handoff_info(family);
    let n_max = 64;
    let bufs: Vec<_> = (0..n_max).map(|_| create_buffer(ctx, 65536, 0)).collect();
    let vk_bufs: Vec<_> = bufs.iter().map(|&b| buffer_info(b).buffer).collect();
    let mut img = ptr::null_mut();
    ok(unsafe {
        vkcuda_image_create(
            ctx,
            &image_desc(0, vk::Format::R8G8B8A8_UNORM, 256, 256, 1),
            &mut img,
        )
    });
    let vk_img = image_info(img).image;
    let barrier2 = unsafe {
        v.instance
            .get_device_proc_addr(v.device.handle(), c"vkCmdPipelineBarrier2".as_ptr())
    };
    // Standalone contexts record with vkCmdPipelineBarrier2 where the device has
    // synchronization2 (both lavapipe and NVIDIA do): the raw baseline does too.
    let barrier2: Option<vk::PFN_vkCmdPipelineBarrier2> =
        barrier2.map(|f| unsafe { std::mem::transmute(f) });
    let sync2 = barrier2.is_some();
    println!(
        "recording with {}",
        if sync2 {
            "vkCmdPipelineBarrier2"
        } else {
            "vkCmdPipelineBarrier"
        }
    );
    // The Rust API's objects of the same kinds, on the same device.
    let rctx = rust_context_over(ctx, cuda, sync2);
    let rbufs: Vec<Buffer> = (0..n_max)
        .map(|_| {
            Buffer::create(
                &rctx,
                65536,
                vk::BufferUsageFlags::empty(),
                Allocator::Vulkan,
            )
        })
        .collect::<vkcuda::Result<_>>()
        .unwrap();
    let rimg = Image::create(
        &rctx,
        &Description {
            mip_levels: 1,
            ..Description::new_2d(vk::Format::R8G8B8A8_UNORM, 256, 256)
        },
    )
    .unwrap();
    let scope = Scope::new(family);

    // A getter: the C boundary (catch_unwind, tag check, message) around one read.
    let sem_less = bufs[0];
    let mut out = vk::Buffer::null();
    let mut raw_out = vk::Buffer::null();
    let raw_value = std::hint::black_box(vk_bufs[0]);
    let (l, r) = compare(
        rounds,
        |_| {
            ok(unsafe { vkcuda_buffer_get_vk_buffer(std::hint::black_box(sem_less), &mut out) });
        },
        |_| {
            raw_out = std::hint::black_box(raw_value);
        },
        || {},
    );
    assert_eq!(out, raw_out);
    t.pair(
        "vkcuda_buffer_get_vk_buffer (the boundary)",
        l,
        r,
        "raw: reading the handle from memory; the difference is the panic boundary and the kind-tag check",
    );
    let mut rust_out = vk::Buffer::null();
    let (rust, c) = compare(
        rounds,
        |_| rust_out = std::hint::black_box(&rbufs[0]).vk_buffer(),
        |_| {
            ok(unsafe { vkcuda_buffer_get_vk_buffer(std::hint::black_box(sem_less), &mut out) });
        },
        || {},
    );
    assert_eq!(rust_out, rbufs[0].vk_buffer());
    t.rust_vs_c("vkcuda_buffer_get_vk_buffer / Buffer::vk_buffer", rust, c);

    let mut rec = Recorder::new(&v);
    let cmd = rec.cmd;
    let (l, r) = compare(
        rounds,
        |_| ok(unsafe { vkcuda_buffer_cmd_release_to_cuda(bufs[0], cmd, &info) }),
        |_| unsafe {
            match barrier2 {
                Some(f) => {
                    let b = [raw_release_buffer2(family, vk_bufs[0], 65536)];
                    f(
                        cmd,
                        &vk::DependencyInfo::default().buffer_memory_barriers(&b),
                    );
                }
                None => v.device.cmd_pipeline_barrier(
                    cmd,
                    vk::PipelineStageFlags::ALL_COMMANDS,
                    vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                    vk::DependencyFlags::empty(),
                    &[],
                    &[raw_release_buffer(family, vk_bufs[0], 65536)],
                    &[],
                ),
            }
        },
        || rec.maybe_restart(),
    );
    t.pair(
        "vkcuda_buffer_cmd_release_to_cuda",
        l,
        r,
        "raw: the same barrier, recorded directly",
    );
    // Named stages and accesses (not the defaults): the check looks up what each
    // stage makes (issue 39 item 5).
    let named = vkcuda_handoff_info {
        stage_mask: (vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER)
            .as_raw(),
        access_mask: (vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE).as_raw(),
        ..info
    };
    let (l, r) = compare(
        rounds,
        |_| ok(unsafe { vkcuda_buffer_cmd_release_to_cuda(bufs[0], cmd, &named) }),
        |_| unsafe {
            let stages = vk::PipelineStageFlags::from_raw(named.stage_mask);
            let access = vk::AccessFlags::from_raw(named.access_mask);
            match barrier2 {
                Some(f) => {
                    let b = [raw_release_buffer2(family, vk_bufs[0], 65536)
                        .src_stage_mask(vk::PipelineStageFlags2::from_raw(stages.as_raw().into()))
                        .src_access_mask(vk::AccessFlags2::from_raw(access.as_raw().into()))];
                    f(
                        cmd,
                        &vk::DependencyInfo::default().buffer_memory_barriers(&b),
                    );
                }
                None => v.device.cmd_pipeline_barrier(
                    cmd,
                    stages,
                    vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                    vk::DependencyFlags::empty(),
                    &[],
                    &[raw_release_buffer(family, vk_bufs[0], 65536).src_access_mask(access)],
                    &[],
                ),
            }
        },
        || rec.maybe_restart(),
    );
    t.pair(
        "vkcuda_buffer_cmd_release_to_cuda (COMPUTE_SHADER|TRANSFER, SHADER_WRITE|TRANSFER_WRITE)",
        l,
        r,
        "raw: the same barrier, recorded directly; the access-against-stage check",
    );
    let (rust, c) = compare(
        rounds,
        |_| unsafe { rbufs[0].cmd_release_to_cuda(cmd, &scope) }.unwrap(),
        |_| ok(unsafe { vkcuda_buffer_cmd_release_to_cuda(bufs[0], cmd, &info) }),
        || rec.maybe_restart(),
    );
    t.rust_vs_c(
        "vkcuda_buffer_cmd_release_to_cuda / Buffer::cmd_release_to_cuda",
        rust,
        c,
    );
    let (l, r) = compare(
        rounds,
        |_| ok(unsafe { vkcuda_buffer_cmd_acquire_from_cuda(bufs[0], cmd, &info) }),
        |_| unsafe {
            if let Some(f) = barrier2 {
                let b = [raw_acquire_buffer2(family, vk_bufs[0], 65536)];
                f(
                    cmd,
                    &vk::DependencyInfo::default().buffer_memory_barriers(&b),
                );
            }
        },
        || rec.maybe_restart(),
    );
    t.pair(
        "vkcuda_buffer_cmd_acquire_from_cuda",
        l,
        r,
        "raw: the same barrier, recorded directly",
    );
    let (rust, c) = compare(
        rounds,
        |_| unsafe { rbufs[0].cmd_acquire_from_cuda(cmd, &scope) }.unwrap(),
        |_| ok(unsafe { vkcuda_buffer_cmd_acquire_from_cuda(bufs[0], cmd, &info) }),
        || rec.maybe_restart(),
    );
    t.rust_vs_c(
        "vkcuda_buffer_cmd_acquire_from_cuda / Buffer::cmd_acquire_from_cuda",
        rust,
        c,
    );
    let general = vk::ImageLayout::GENERAL.as_raw();
    let (l, r) = compare(
        rounds,
        |_| ok(unsafe { vkcuda_image_cmd_release_to_cuda(img, cmd, &info, general) }),
        |_| unsafe {
            if let Some(f) = barrier2 {
                let b = [raw_release_image2(family, vk_img)];
                f(
                    cmd,
                    &vk::DependencyInfo::default().image_memory_barriers(&b),
                );
            }
        },
        || rec.maybe_restart(),
    );
    t.pair(
        "vkcuda_image_cmd_release_to_cuda",
        l,
        r,
        "raw: the same barrier, recorded directly",
    );
    let (rust, c) = compare(
        rounds,
        |_| unsafe { rimg.cmd_release_to_cuda(cmd, &scope, vk::ImageLayout::GENERAL) }.unwrap(),
        |_| ok(unsafe { vkcuda_image_cmd_release_to_cuda(img, cmd, &info, general) }),
        || rec.maybe_restart(),
    );
    t.rust_vs_c(
        "vkcuda_image_cmd_release_to_cuda / Image::cmd_release_to_cuda",
        rust,
        c,
    );
    let (rust, c) = compare(
        rounds,
        |_| unsafe { rimg.cmd_acquire_from_cuda(cmd, &scope, vk::ImageLayout::GENERAL) }.unwrap(),
        |_| ok(unsafe { vkcuda_image_cmd_acquire_from_cuda(img, cmd, &info, general) }),
        || rec.maybe_restart(),
    );
    t.rust_vs_c(
        "vkcuda_image_cmd_acquire_from_cuda / Image::cmd_acquire_from_cuda",
        rust,
        c,
    );

    // Batched barriers: N resources (every 8th an image) in one barrier, against
    // one raw batched barrier and against N single library calls.
    for n in [1usize, 8, 64] {
        let res: Vec<vkcuda_handoff_resource> = (0..n)
            .map(|i| {
                if i % 8 == 7 {
                    vkcuda_handoff_resource {
                        buffer: ptr::null(),
                        image: img,
                        layout: general,
                    }
                } else {
                    vkcuda_handoff_resource {
                        buffer: bufs[i],
                        image: ptr::null(),
                        layout: 0,
                    }
                }
            })
            .collect();
        let (l, r) = compare(
            (rounds / n.max(8)).max(50),
            |_| {
                ok(unsafe {
                    vkcuda_handoff_cmd_release_to_cuda(n as u32, res.as_ptr(), cmd, &info)
                })
            },
            |_| unsafe {
                if let Some(f) = barrier2 {
                    let mut bb = Vec::with_capacity(n);
                    let mut ib = Vec::with_capacity(n);
                    for (i, rsc) in res.iter().enumerate() {
                        if rsc.image.is_null() {
                            bb.push(raw_release_buffer2(family, vk_bufs[i], 65536));
                        } else {
                            ib.push(raw_release_image2(family, vk_img));
                        }
                    }
                    f(
                        cmd,
                        &vk::DependencyInfo::default()
                            .buffer_memory_barriers(&bb)
                            .image_memory_barriers(&ib),
                    );
                }
            },
            || rec.maybe_restart(),
        );
        t.pair(
            &format!("vkcuda_handoff_cmd_release_to_cuda N={n}"),
            l,
            r,
            &format!(
                "raw: one barrier of {n} built and recorded by hand; ratio {:.3}",
                l / r
            ),
        );
        let singles = only(
            (rounds / n.max(8)).max(50),
            |_| {
                for rsc in &res {
                    if rsc.image.is_null() {
                        ok(unsafe { vkcuda_buffer_cmd_release_to_cuda(rsc.buffer, cmd, &info) });
                    } else {
                        ok(unsafe { vkcuda_image_cmd_release_to_cuda(img, cmd, &info, general) });
                    }
                }
            },
            || rec.maybe_restart(),
        );
        t.single(
            &format!("{n} single release calls"),
            singles,
            &format!("batched/single {:.3}", l / singles),
        );
        let rres: Vec<Resource> = (0..n)
            .map(|i| {
                if i % 8 == 7 {
                    Resource::Image(&rimg, vk::ImageLayout::GENERAL)
                } else {
                    Resource::Buffer(&rbufs[i])
                }
            })
            .collect();
        let (rust, c) = compare(
            (rounds / n.max(8)).max(50),
            |_| {
                unsafe {
                    vkcuda::handoff::batch(
                        cmd,
                        Direction::Release,
                        &scope,
                        rres.iter().map(|&r| Ok(r)),
                    )
                }
                .unwrap()
            },
            |_| {
                ok(unsafe {
                    vkcuda_handoff_cmd_release_to_cuda(n as u32, res.as_ptr(), cmd, &info)
                })
            },
            || rec.maybe_restart(),
        );
        t.rust_vs_c(
            &format!("vkcuda_handoff_cmd_release_to_cuda / handoff::batch N={n}"),
            rust,
            c,
        );
    }
    drop(rec);
    drop(rimg);
    drop(rbufs);
    drop(rctx);
    gpu_time_of_batches(&v, &bufs, img, vk_img, barrier2, t);

    unsafe {
        vkcuda_image_destroy(img);
        for b in bufs {
            vkcuda_buffer_destroy(b);
        }
    }
}

/// GPU time of a release+acquire of N resources: one batched barrier each way vs
/// N single ones, from timestamps around them (median of 50 submits).
fn gpu_time_of_batches(
    v: &Vk,
    bufs: &[*mut vkcuda_buffer],
    img: *mut vkcuda_image,
    vk_img: vk::Image,
    barrier2: Option<vk::PFN_vkCmdPipelineBarrier2>,
    t: &mut Table,
) {
    let props = unsafe { v.instance.get_physical_device_properties(v.physical) };
    let period = props.limits.timestamp_period as f64;
    let pool = unsafe {
        v.device.create_query_pool(
            &vk::QueryPoolCreateInfo::default()
                .query_type(vk::QueryType::TIMESTAMP)
                .query_count(2),
            None,
        )
    }
    .unwrap();
    let info = handoff_info(v.family);
    let general = vk::ImageLayout::GENERAL.as_raw();
    for n in [1usize, 8, 64] {
        let res: Vec<vkcuda_handoff_resource> = (0..n)
            .map(|i| {
                if i % 8 == 7 {
                    vkcuda_handoff_resource {
                        buffer: ptr::null(),
                        image: img,
                        layout: general,
                    }
                } else {
                    vkcuda_handoff_resource {
                        buffer: bufs[i],
                        image: ptr::null(),
                        layout: 0,
                    }
                }
            })
            .collect();
        let measure = |record: &dyn Fn(vk::CommandBuffer)| -> f64 {
            let mut s = Vec::new();
            for _ in 0..50 {
                v.run(|cmd| unsafe {
                    v.device.cmd_reset_query_pool(cmd, pool, 0, 2);
                    v.device
                        .cmd_write_timestamp(cmd, vk::PipelineStageFlags::TOP_OF_PIPE, pool, 0);
                    record(cmd);
                    v.device.cmd_write_timestamp(
                        cmd,
                        vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                        pool,
                        1,
                    );
                });
                let mut ts = [0u64; 2];
                unsafe {
                    v.device
                        .get_query_pool_results(
                            pool,
                            0,
                            &mut ts,
                            vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
                        )
                        .unwrap();
                }
                s.push(ts[1].wrapping_sub(ts[0]) as f64 * period);
            }
            median(&mut s)
        };
        let batched = measure(&|cmd| unsafe {
            ok(vkcuda_handoff_cmd_release_to_cuda(
                n as u32,
                res.as_ptr(),
                cmd,
                &info,
            ));
            ok(vkcuda_handoff_cmd_acquire_from_cuda(
                n as u32,
                res.as_ptr(),
                cmd,
                &info,
            ));
        });
        let singles = measure(&|cmd| unsafe {
            for r in &res {
                if r.image.is_null() {
                    ok(vkcuda_buffer_cmd_release_to_cuda(r.buffer, cmd, &info));
                } else {
                    ok(vkcuda_image_cmd_release_to_cuda(img, cmd, &info, general));
                }
            }
            for r in &res {
                if r.image.is_null() {
                    ok(vkcuda_buffer_cmd_acquire_from_cuda(r.buffer, cmd, &info));
                } else {
                    ok(vkcuda_image_cmd_acquire_from_cuda(img, cmd, &info, general));
                }
            }
        });
        let raw = measure(&|cmd| unsafe {
            if let Some(f) = barrier2 {
                for release in [true, false] {
                    let mut bb = Vec::new();
                    let mut ib = Vec::new();
                    for (i, r) in res.iter().enumerate() {
                        let vb = buffer_info(bufs[i]).buffer;
                        match (r.image.is_null(), release) {
                            (true, true) => bb.push(raw_release_buffer2(v.family, vb, 65536)),
                            (true, false) => bb.push(raw_acquire_buffer2(v.family, vb, 65536)),
                            (false, true) => ib.push(raw_release_image2(v.family, vk_img)),
                            (false, false) => ib.push(raw_acquire_image2(v.family, vk_img)),
                        }
                    }
                    f(
                        cmd,
                        &vk::DependencyInfo::default()
                            .buffer_memory_barriers(&bb)
                            .image_memory_barriers(&ib),
                    );
                }
            }
        });
        println!(
            "  GPU time, release+acquire of {n:>2}: batched {batched:>8.0} ns, {n} single calls {singles:>8.0} ns, raw batched {raw:>8.0} ns (batched/raw {:.3})",
            batched / raw
        );
        t.rows.push((
            format!("GPU time release+acquire N={n} (batched vs raw batched)"),
            batched,
            raw,
            format!("{n} single calls: {singles:.0} ns"),
        ));
    }
    unsafe { v.device.destroy_query_pool(pool, None) };
}

/// The per-frame semaphore calls against the driver calls they make.
fn semaphore_calls(ctx: *mut vkcuda_context, rounds: usize, t: &mut Table) {
    let v = Vk::new(ctx);
    // The Rust API's semaphore, on the same device and CUDA context.
    let sync2 = unsafe {
        v.instance
            .get_device_proc_addr(v.device.handle(), c"vkCmdPipelineBarrier2".as_ptr())
    }
    .is_some();
    let rctx = rust_context_over(ctx, true, sync2);
    let rsem = Semaphore::create(&rctx, Kind::Timeline, 0, None).unwrap();
    let mut cinfo: vkcuda_cuda_info = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_context_get_cuda_info(ctx, &mut cinfo) });
    check(unsafe { cu::cuCtxPushCurrent_v2(cinfo.cuda_context.cast()) });
    let mut stream = ptr::null_mut();
    check(unsafe { cu::cuStreamCreate(&mut stream, 1) });
    let sem = create_semaphore(ctx, 0, 0);
    let mut vk_sem = vk::Semaphore::null();
    ok(unsafe { vkcuda_semaphore_get_vk_semaphore(sem, &mut vk_sem) });
    // The same semaphore imported into CUDA by hand, for the raw calls.
    let mut fd = -1;
    ok(unsafe { vkcuda_semaphore_export_fd(sem, &mut fd) });
    // Field by field: the handle-type enum has no zero value.
    let desc = cu::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC {
        type_: cu::CUexternalSemaphoreHandleType::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD,
        handle: cu::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC_st__bindgen_ty_1 { fd },
        flags: 0,
        reserved: [0; 16],
    };
    let mut raw_sem = ptr::null_mut();
    check(unsafe { cu::cuImportExternalSemaphore(&mut raw_sem, &desc) });
    let sync = || check(unsafe { cu::cuStreamSynchronize(stream) });

    let next = || {
        let mut v = 0u64;
        ok(unsafe { vkcuda_semaphore_get_value(sem, &mut v) });
        v
    };
    // next_stage: the value contract's book-keeping (raw: a counter).
    let last = Cell::new(0u64);
    let mut counter = 0u64;
    let (l, r) = compare(
        rounds / 4,
        |_| {
            let mut st = vkcuda_timeline_stage {
                wait_value: 0,
                signal_value: 0,
            };
            ok(unsafe { vkcuda_semaphore_next_stage(sem, &mut st) });
            last.set(st.signal_value);
        },
        |_| counter = std::hint::black_box(counter + 1),
        // The chain is signalled after each batch (untimed), as frames complete
        // (after a batch of the raw counter there is nothing new to signal).
        || {
            if next() < last.get() {
                ok(unsafe { vkcuda_semaphore_host_signal(sem, last.get()) })
            }
        },
    );
    t.pair(
        "vkcuda_semaphore_next_stage",
        l,
        r,
        "raw: incrementing a counter (what an engine computes itself); the library reads the counter and checks the chain",
    );
    let rlast = Cell::new(0u64);
    let (rust, c) = compare(
        rounds / 4,
        |_| rlast.set(rsem.next_stage().unwrap().signal),
        |_| {
            let mut st = vkcuda_timeline_stage {
                wait_value: 0,
                signal_value: 0,
            };
            ok(unsafe { vkcuda_semaphore_next_stage(sem, &mut st) });
            last.set(st.signal_value);
        },
        || {
            if rsem.value().unwrap() < rlast.get() {
                rsem.host_signal(rlast.get()).unwrap();
            }
            if next() < last.get() {
                ok(unsafe { vkcuda_semaphore_host_signal(sem, last.get()) });
            }
        },
    );
    t.rust_vs_c(
        "vkcuda_semaphore_next_stage / Semaphore::next_stage",
        rust,
        c,
    );

    // host_signal vs vkSignalSemaphore.
    let value = Cell::new(next());
    let bump = || {
        value.set(value.get() + 1);
        value.get()
    };
    let (l, r) = compare(
        rounds,
        |_| ok(unsafe { vkcuda_semaphore_host_signal(sem, bump()) }),
        |_| unsafe {
            v.device
                .signal_semaphore(
                    &vk::SemaphoreSignalInfo::default()
                        .semaphore(vk_sem)
                        .value(bump()),
                )
                .unwrap()
        },
        || {},
    );
    t.pair(
        "vkcuda_semaphore_host_signal",
        l,
        r,
        "raw: vkSignalSemaphore",
    );
    let rvalue = Cell::new(rsem.value().unwrap());
    let rbump = || {
        rvalue.set(rvalue.get() + 1);
        rvalue.get()
    };
    let (rust, c) = compare(
        rounds,
        |_| rsem.host_signal(rbump()).unwrap(),
        |_| ok(unsafe { vkcuda_semaphore_host_signal(sem, bump()) }),
        || {},
    );
    t.rust_vs_c(
        "vkcuda_semaphore_host_signal / Semaphore::host_signal",
        rust,
        c,
    );

    // cuda_signal vs cuSignalExternalSemaphoresAsync (strictly increasing values).
    value.set(next());
    let (l, r) = compare(
        rounds,
        |_| ok(unsafe { vkcuda_semaphore_cuda_signal(sem, bump(), stream.cast()) }),
        |_| {
            let mut p: cu::CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS = unsafe { std::mem::zeroed() };
            p.params.fence.value = bump();
            check(unsafe { cu::cuSignalExternalSemaphoresAsync(&raw_sem, &p, 1, stream) });
        },
        sync,
    );
    t.pair(
        "vkcuda_semaphore_cuda_signal",
        l,
        r,
        "raw: cuSignalExternalSemaphoresAsync",
    );
    sync();
    value.set(next());
    rvalue.set(rsem.value().unwrap());
    let (rust, c) = compare(
        rounds,
        |_| rsem.cuda_signal(rbump(), stream).unwrap(),
        |_| ok(unsafe { vkcuda_semaphore_cuda_signal(sem, bump(), stream.cast()) }),
        sync,
    );
    t.rust_vs_c(
        "vkcuda_semaphore_cuda_signal / Semaphore::cuda_signal",
        rust,
        c,
    );

    // cuda_wait vs cuWaitExternalSemaphoresAsync (values already reached).
    sync();
    let reached = next();
    let (l, r) = compare(
        rounds,
        |_| ok(unsafe { vkcuda_semaphore_cuda_wait(sem, reached, stream.cast()) }),
        |_| {
            let mut p: cu::CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS = unsafe { std::mem::zeroed() };
            p.params.fence.value = reached;
            check(unsafe { cu::cuWaitExternalSemaphoresAsync(&raw_sem, &p, 1, stream) });
        },
        sync,
    );
    t.pair(
        "vkcuda_semaphore_cuda_wait",
        l,
        r,
        "raw: cuWaitExternalSemaphoresAsync",
    );
    sync();
    let (reached, rreached) = (next(), rsem.value().unwrap());
    let (rust, c) = compare(
        rounds,
        |_| rsem.cuda_wait(rreached, stream).unwrap(),
        |_| ok(unsafe { vkcuda_semaphore_cuda_wait(sem, reached, stream.cast()) }),
        sync,
    );
    t.rust_vs_c("vkcuda_semaphore_cuda_wait / Semaphore::cuda_wait", rust, c);

    // The graph value setter vs cuGraphExecExternalSemaphoresSignalNodeSetParams.
    let mut graph = ptr::null_mut();
    check(unsafe { cu::cuGraphCreate(&mut graph, 0) });
    let mut node = ptr::null_mut();
    value.set(next());
    ok(unsafe {
        vkcuda_semaphore_cuda_graph_add_signal(sem, graph.cast(), ptr::null(), 0, bump(), &mut node)
    });
    let mut exec = ptr::null_mut();
    check(unsafe { cu::cuGraphInstantiateWithFlags(&mut exec, graph, 0) });
    let (l, r) = compare(
        rounds,
        |_| {
            ok(unsafe {
                vkcuda_semaphore_cuda_graph_exec_set_signal(sem, exec.cast(), node, bump())
            })
        },
        |_| {
            let mut s = raw_sem;
            let mut p: cu::CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS = unsafe { std::mem::zeroed() };
            p.params.fence.value = bump();
            let params = cu::CUDA_EXT_SEM_SIGNAL_NODE_PARAMS {
                extSemArray: &mut s,
                paramsArray: &p,
                numExtSems: 1,
            };
            check(unsafe {
                cu::cuGraphExecExternalSemaphoresSignalNodeSetParams(exec, node.cast(), &params)
            });
        },
        || {},
    );
    t.pair(
        "vkcuda_semaphore_cuda_graph_exec_set_signal",
        l,
        r,
        "raw: cuGraphExecExternalSemaphoresSignalNodeSetParams",
    );
    // The Rust semaphore's node in a graph of its own, instantiated the same way.
    let mut rgraph = ptr::null_mut();
    check(unsafe { cu::cuGraphCreate(&mut rgraph, 0) });
    rvalue.set(rsem.value().unwrap());
    let rnode = unsafe { rsem.cuda_graph_add(GraphOp::Signal, rgraph, &[], rbump()) }.unwrap();
    let mut rexec = ptr::null_mut();
    check(unsafe { cu::cuGraphInstantiateWithFlags(&mut rexec, rgraph, 0) });
    let (rust, c) = compare(
        rounds,
        |_| unsafe { rsem.cuda_graph_exec_set(GraphOp::Signal, rexec, rnode, rbump()) }.unwrap(),
        |_| {
            ok(unsafe {
                vkcuda_semaphore_cuda_graph_exec_set_signal(sem, exec.cast(), node, bump())
            })
        },
        || {},
    );
    t.rust_vs_c(
        "vkcuda_semaphore_cuda_graph_exec_set_signal / Semaphore::cuda_graph_exec_set",
        rust,
        c,
    );
    unsafe {
        check(cu::cuGraphExecDestroy(rexec));
        check(cu::cuGraphDestroy(rgraph));
    }
    // What the library's checks cost, one driver call each (the overhead above is
    // made of these): the liveness lookup, the current context, the stream's
    // context, its capture status, the counter read of the value contract.
    let mut probe: cu::CUdeviceptr = 0;
    check(unsafe { cu::cuMemAlloc_v2(&mut probe, 256) });
    let calls: [(&str, &dyn Fn()); 5] = [
        ("cuPointerGetAttribute(BUFFER_ID) (liveness)", &|| {
            let mut id = 0u64;
            unsafe {
                cu::cuPointerGetAttribute(
                    (&mut id as *mut u64).cast(),
                    cu::CUpointer_attribute::CU_POINTER_ATTRIBUTE_BUFFER_ID,
                    probe,
                )
            };
        }),
        ("cuCtxGetCurrent", &|| {
            let mut c = ptr::null_mut();
            unsafe { cu::cuCtxGetCurrent(&mut c) };
        }),
        ("cuStreamGetCtx (stream check, once per stream)", &|| {
            let mut c = ptr::null_mut();
            unsafe { cu::cuStreamGetCtx(stream, &mut c) };
        }),
        ("cuStreamIsCapturing (capture refusal)", &|| {
            let mut st = cu::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
            unsafe { cu::cuStreamIsCapturing(stream, &mut st) };
        }),
        ("vkGetSemaphoreCounterValue (value contract)", &|| {
            let _ = unsafe { v.device.get_semaphore_counter_value(vk_sem) };
        }),
    ];
    for (name, call) in calls {
        let ns = only(rounds / 4, |_| call(), || {});
        t.single(
            &format!("check: {name}"),
            ns,
            "one call, as the library makes it",
        );
    }
    unsafe { cu::cuMemFree_v2(probe) };
    sync();
    unsafe {
        check(cu::cuGraphExecDestroy(exec));
        check(cu::cuGraphDestroy(graph));
        check(cu::cuDestroyExternalSemaphore(raw_sem));
        vkcuda_semaphore_destroy(sem);
    }
    drop(rsem);
    drop(rctx);
    unsafe {
        check(cu::cuStreamDestroy_v2(stream));
        let mut p = ptr::null_mut();
        check(cu::cuCtxPopCurrent_v2(&mut p));
    }
    drop(v);
}

/// The pitched copy (issue 39, item 14: a decoder's per-frame call) against the
/// raw `cuMemcpy2DAsync` calls it makes: into a single-plane image's level array,
/// and into a shared NV12 video frame (one call, both planes, against two raw
/// device-to-device copies), from a `cuMemAllocPitch` allocation standing in for
/// a decoder's surface. Small planes (256 x 64), so the GPU keeps up with the
/// host; the stream is drained (untimed) after each batch.
fn pitched_calls(ctx: *mut vkcuda_context, rounds: usize, t: &mut Table) {
    let (w, h) = (256u32, 64u32);
    let mut cinfo: vkcuda_cuda_info = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_context_get_cuda_info(ctx, &mut cinfo) });
    check(unsafe { cu::cuCtxPushCurrent_v2(cinfo.cuda_context.cast()) });
    let mut stream = ptr::null_mut();
    check(unsafe { cu::cuStreamCreate(&mut stream, 1) });
    let sync = || check(unsafe { cu::cuStreamSynchronize(stream) });
    let (mut src, mut pitch) = (0, 0);
    check(unsafe {
        cu::cuMemAllocPitch_v2(&mut src, &mut pitch, w as usize, (h + h / 2) as usize, 16)
    });
    check(unsafe { cu::cuMemsetD8_v2(src, 0x80, pitch * (h + h / 2) as usize) });
    let plane = |pointer: u64| vkcuda_pitched_plane {
        device_pointer: pointer,
        pitch: pitch as u64,
    };
    let none = vkcuda_pitched_plane {
        device_pointer: 0,
        pitch: 0,
    };
    let chroma = src + (pitch * h as usize) as u64;
    let raw2d = |src: u64, dst: (u64, usize, *mut CUarray_st), width: usize, rows: usize| {
        let copy = cu::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: cu::CUmemorytype::CU_MEMORYTYPE_DEVICE,
            srcHost: ptr::null(),
            srcDevice: src,
            srcArray: ptr::null_mut(),
            srcPitch: pitch,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: if dst.2.is_null() {
                cu::CUmemorytype::CU_MEMORYTYPE_DEVICE
            } else {
                cu::CUmemorytype::CU_MEMORYTYPE_ARRAY
            },
            dstHost: ptr::null_mut(),
            dstDevice: dst.0,
            dstArray: dst.2.cast(),
            dstPitch: dst.1,
            WidthInBytes: width,
            Height: rows,
        };
        check(unsafe { cu::cuMemcpy2DAsync_v2(&copy, stream) });
    };

    // A single-plane image (the luma of the two-image recipe): one copy.
    let image = support::images::create(ctx, &image_desc(0, vk::Format::R8_UNORM, w, h, 1));
    let mut array = ptr::null_mut();
    ok(unsafe { vkcuda_image_get_plane_cuda_array(image, 0, 0, &mut array) });
    let one = vkcuda_pitched_planes {
        flags: 0,
        plane_count: 1,
        planes: [plane(src), none, none],
    };
    let (l, r) = compare(
        rounds / 4,
        |_| ok(unsafe { vkcuda_image_cuda_copy_from_pitched(image, &one, stream.cast()) }),
        |_| raw2d(src, (0, 0, array), w as usize, h as usize),
        sync,
    );
    t.pair(
        "vkcuda_image_cuda_copy_from_pitched (R8 image)",
        l,
        r,
        &format!(
            "raw: cuMemcpy2DAsync into the level array; library/raw {:.3}",
            l / r
        ),
    );
    // The same, against the raw copy preceded by the two driver calls the library
    // makes on every CUDA-side call (the liveness lookup on another allocation, as
    // the library's is on its sentinel, and the current-context check): what is
    // left is the library's own code.
    let mut other: cu::CUdeviceptr = 0;
    check(unsafe { cu::cuMemAlloc_v2(&mut other, 256) });
    let (l, r) = compare(
        rounds / 4,
        |_| ok(unsafe { vkcuda_image_cuda_copy_from_pitched(image, &one, stream.cast()) }),
        |_| {
            let (mut id, mut c) = (0u64, ptr::null_mut());
            unsafe {
                cu::cuPointerGetAttribute(
                    (&mut id as *mut u64).cast(),
                    cu::CUpointer_attribute::CU_POINTER_ATTRIBUTE_BUFFER_ID,
                    other,
                );
                cu::cuCtxGetCurrent(&mut c);
            }
            raw2d(src, (0, 0, array), w as usize, h as usize)
        },
        sync,
    );
    t.pair(
        "copy_from_pitched (R8) vs raw + 2 driver checks",
        l,
        r,
        "raw: cuPointerGetAttribute(BUFFER_ID) + cuCtxGetCurrent + cuMemcpy2DAsync: the rest is the library's own code",
    );
    unsafe { cu::cuMemFree_v2(other) };

    // Where the rest goes: the same copy through the Rust API (an R8 image of a
    // Rust context over the same device and primary context) against the C door,
    // and against the raw copy.
    let rctx = rust_context_over(ctx, true, false);
    let rimg = Image::create(&rctx, &Description::new_2d(vk::Format::R8_UNORM, w, h)).unwrap();
    let rplane = [vkcuda::image::PitchedPlane {
        pointer: src,
        pitch: pitch as u64,
    }];
    // SAFETY: `src` is a cuMemAllocPitch block with room for every row.
    let rust_copy = || unsafe { rimg.copy_pitched(&rplane, true, stream.cast()) }.unwrap();
    let (rust, c) = compare(
        rounds / 4,
        |_| rust_copy(),
        |_| ok(unsafe { vkcuda_image_cuda_copy_from_pitched(image, &one, stream.cast()) }),
        sync,
    );
    t.rust_vs_c(
        "vkcuda_image_cuda_copy_from_pitched / Image::copy_pitched (R8)",
        rust,
        c,
    );
    let (l, r) = compare(
        rounds / 4,
        |_| rust_copy(),
        |_| raw2d(src, (0, 0, array), w as usize, h as usize),
        sync,
    );
    t.pair(
        "Image::copy_pitched (R8, Rust API)",
        l,
        r,
        &format!(
            "raw: cuMemcpy2DAsync into the level array; Rust/raw {:.3}",
            l / r
        ),
    );
    sync();
    drop(rimg);
    drop(rctx);

    // A shared NV12 video frame: one call for both planes.
    let info = vkcuda_image_create_info {
        flags: VKCUDA_IMAGE_CREATE_LINEAR_BIT,
        ..image_desc(0, vk::Format::G8_B8R8_2PLANE_420_UNORM, w, h, 1)
    };
    let mut frame = ptr::null_mut();
    if unsafe { vkcuda_image_create(ctx, &info, &mut frame) } == VKCUDA_SUCCESS {
        let planes: Vec<vkcuda_image_plane_pointer> = (0..2)
            .map(|p| {
                let mut out: vkcuda_image_plane_pointer = unsafe { std::mem::zeroed() };
                ok(unsafe { vkcuda_image_get_plane_pointer(frame, p, &mut out) });
                out
            })
            .collect();
        let two = vkcuda_pitched_planes {
            flags: 0,
            plane_count: 2,
            planes: [plane(src), plane(chroma), none],
        };
        let (l, r) = compare(
            rounds / 4,
            |_| ok(unsafe { vkcuda_image_cuda_copy_from_pitched(frame, &two, stream.cast()) }),
            |_| {
                for (p, from, rows) in [(0, src, h), (1, chroma, h / 2)] {
                    let to = (
                        planes[p].cuda_pointer,
                        planes[p].row_pitch as usize,
                        ptr::null_mut(),
                    );
                    raw2d(from, to, w as usize, rows as usize);
                }
            },
            sync,
        );
        t.pair(
            "vkcuda_image_cuda_copy_from_pitched (NV12 frame, 2 planes)",
            l,
            r,
            &format!(
                "raw: 2 x cuMemcpy2DAsync device to device; library/raw {:.3}",
                l / r
            ),
        );
        unsafe { vkcuda_image_destroy(frame) };
    } else {
        println!("SKIPPED: the NV12 frame's pitched copy: {}", last_error());
    }
    sync();
    unsafe {
        vkcuda_image_destroy(image);
        cu::cuMemFree_v2(src);
        check(cu::cuStreamDestroy_v2(stream));
        let mut p = ptr::null_mut();
        check(cu::cuCtxPopCurrent_v2(&mut p));
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let csv = args
        .iter()
        .position(|a| a == "--csv")
        .and_then(|i| args.get(i + 1).cloned());
    // At least 100,000 calls per figure: 1,600 batches of 64.
    let rounds = if quick { 20 } else { 1600 };
    let mut t = Table::default();
    println!(
        "vkcuda per-call CPU cost ({}), ns per call, median over batches of {BATCH} (library and raw alternating)",
        if quick { "quick" } else { "full" }
    );
    let mut ctx = ptr::null_mut();
    let cuda = unsafe { vkcuda_context_create_standalone(ptr::null(), &mut ctx) } == VKCUDA_SUCCESS;
    if !cuda {
        println!(
            "no CUDA-paired device ({}): Vulkan-only calls",
            last_error()
        );
        ctx = vulkan_only_context();
    }
    println!("recording and the boundary:");
    vulkan_calls(ctx, cuda, rounds, &mut t);
    if cuda {
        println!("semaphores (CUDA context):");
        semaphore_calls(ctx, rounds, &mut t);
        println!("pitched copies (CUDA context):");
        pitched_calls(ctx, rounds, &mut t);
    } else if gpu_required() {
        panic!("VKCUDA_REQUIRE_GPU=1 but no CUDA-paired device");
    } else {
        println!("SKIPPED: the semaphore calls need a CUDA GPU");
    }
    unsafe { vkcuda_context_destroy(ctx) };
    if let Some((worst, call)) = t.worst_rust_ratio() {
        println!(
            "Rust API vs C API: worst ratio Rust/C {worst:.3} ({call}); goal <= {RUST_GOAL}: {}",
            if worst <= RUST_GOAL { "met" } else { "NOT met" }
        );
    }
    if let Some(path) = csv {
        std::fs::write(&path, t.csv()).expect("write the CSV");
        println!("wrote {path}");
    }
}
