//! The frame loop through wgpu + vkcuda-wgpu against the same loop in raw ash, on
//! one device, in one run: a compute pass fills a storage buffer, the buffer is
//! released to CUDA (the timeline signalled by the submission), a CUDA kernel
//! transforms it in place and signals, and the next frame's submission waits for
//! that signal and acquires the buffer back. Two frames in flight, bounded by a
//! host wait on the timeline (vkcuda's spinning wait). The raw loop records the
//! same shader (WGSL compiled to SPIR-V by naga, wgpu's compiler) into its own
//! command buffers and submits with `vkQueueSubmit` on wgpu's queue; both use
//! vkcuda's barriers and the same CUDA calls. Medians of per-frame times over
//! repeats (the loops alternate), and their ratio (issue 31: wgpu within 1.05x).
//!
//!   cargo bench -p vkcuda-wgpu --bench frame_loop -- [--frames N] [--repeats R]
//!       [--quick] [--csv FILE]
//!
//! After every run the buffer is read by CUDA and every word checked. Without CUDA
//! (lavapipe) the loops run with the host in CUDA's place (no shared semaphore
//! there either: each frame waits for the queue) and the timing is only a smoke
//! test; VKCUDA_REQUIRE_GPU=1 makes that a failure.

use std::ffi::CString;
use std::ptr::null_mut;
use std::time::{Duration, Instant};

use ash::vk;
use cudarc::driver::sys::{self, CUresult};
use vkcuda::handoff::Scope;
use vkcuda_wgpu::{CudaChoice, Handoff, Interop, Shared, SharedBuffer, SharedSemaphore};

const WORDS: u32 = 1 << 20;
const IN_FLIGHT: u64 = 2;
const MUL: u32 = 3;
const ADD: u32 = 7;
const TIMEOUT: Duration = Duration::from_secs(30);
const FILL: &str = "
@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < arrayLength(&data)) { data[id.x] = id.x * 2654435761u + 12345u; }
}";
const PTX: &str = include_str!("../../../ptx/kernels.ptx");

type Fallible<T> = Result<T, Box<dyn std::error::Error>>;

fn cu(r: CUresult) -> Fallible<()> {
    match r {
        CUresult::CUDA_SUCCESS => Ok(()),
        e => Err(format!("a CUDA call failed: {e:?}").into()),
    }
}

fn vkr<T>(r: Result<T, vk::Result>) -> Fallible<T> {
    r.map_err(|e| format!("a Vulkan call failed: {e:?}").into())
}

/// CUDA's side of a frame (or the host's, without CUDA).
struct Cuda {
    transform: sys::CUfunction,
    ptr: u64,
}

impl Cuda {
    fn load(interop: &Interop, buffer: &SharedBuffer) -> Fallible<Cuda> {
        let ptx = CString::new(PTX)?;
        let (mut module, mut transform) = (null_mut(), null_mut());
        // SAFETY: the bridge has CUDA, so the driver is loaded.
        unsafe {
            cu(sys::cuCtxSetCurrent(interop.cuda()?.context))?;
            cu(sys::cuModuleLoadData(&mut module, ptx.as_ptr().cast()))?;
            cu(sys::cuModuleGetFunction(
                &mut transform,
                module,
                c"transform".as_ptr(),
            ))?;
        }
        Ok(Cuda {
            transform,
            ptr: buffer.cuda_ptr()?,
        })
    }

    /// Waits for `ready` on the stream, transforms the buffer, signals `done`.
    fn frame(&self, sem: &SharedSemaphore, ready: u64, done: u64) -> Fallible<()> {
        let stream = null_mut();
        sem.cuda_wait(ready, stream)?;
        let (mut p, mut n, mut mul, mut add) = (self.ptr, WORDS as usize * 4, MUL, ADD);
        let mut args = [
            (&mut p as *mut u64).cast(),
            (&mut n as *mut usize).cast(),
            (&mut mul as *mut u32).cast(),
            (&mut add as *mut u32).cast(),
        ];
        let (f, g, a) = (self.transform, WORDS.div_ceil(256), args.as_mut_ptr());
        // SAFETY: the arguments match `transform` in c_examples/kernels.cu.
        cu(unsafe { sys::cuLaunchKernel(f, g, 1, 1, 256, 1, 1, 0, stream, a, null_mut()) })?;
        Ok(sem.cuda_signal(done, stream)?)
    }

    /// Every word is the transformed pattern (the last frame's kernel ran on the
    /// last frame's fill).
    fn check(&self) -> Fallible<()> {
        let mut got = vec![0u32; WORDS as usize];
        // SAFETY: `got` and the buffer hold WORDS words.
        cu(unsafe { sys::cuCtxSynchronize() })?;
        cu(unsafe { sys::cuMemcpyDtoH_v2(got.as_mut_ptr().cast(), self.ptr, got.len() * 4) })?;
        let want = |i: u32| {
            i.wrapping_mul(2_654_435_761)
                .wrapping_add(12_345)
                .wrapping_mul(MUL)
                .wrapping_add(ADD)
        };
        match (0..WORDS).find(|&i| got[i as usize] != want(i)) {
            None => Ok(()),
            Some(i) => {
                Err(format!("word {i} is {:#x}, not {:#x}", got[i as usize], want(i)).into())
            }
        }
    }
}

/// Where a frame's two sides meet: the timeline and CUDA, or the host alone.
struct Sync<'a> {
    sem: Option<&'a SharedSemaphore>,
    cuda: Option<&'a Cuda>,
}

impl Sync<'_> {
    /// The values of frame `k` (from 1): Vulkan signals 2k-1, CUDA 2k, over `base`.
    fn cuda_side(&self, base: u64, k: u64, wait_queue: impl Fn() -> Fallible<()>) -> Fallible<()> {
        match (self.sem, self.cuda) {
            (Some(s), Some(c)) => c.frame(s, base + 2 * k - 1, base + 2 * k),
            (Some(s), None) => {
                s.host_wait(base + 2 * k - 1, TIMEOUT)?;
                Ok(s.host_signal(base + 2 * k)?)
            }
            _ => wait_queue(),
        }
    }

    fn bound(&self, base: u64, k: u64) -> Fallible<()> {
        match self.sem {
            Some(s) if k > IN_FLIGHT => Ok(s.host_wait(base + 2 * (k - IN_FLIGHT), TIMEOUT)?),
            _ => Ok(()),
        }
    }
}

/// The wgpu loop: `frames` frames from timeline value `base`; returns the time.
fn wgpu_loop(
    i: &Interop,
    buf: &SharedBuffer,
    fill: &Fill,
    s: &Sync,
    base: u64,
    frames: u64,
) -> Fallible<Duration> {
    let shared: [Shared; 1] = [buf.into()];
    let start = Instant::now();
    for k in 1..=frames {
        s.bound(base, k)?;
        let mut enc = i.device().create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            pass.set_pipeline(&fill.pipeline);
            pass.set_bind_group(0, &fill.group, &[]);
            pass.dispatch_workgroups(WORDS.div_ceil(64), 1, 1);
        }
        let h = Handoff {
            acquire: if k > 1 { &shared } else { &[] },
            release: &shared,
            wait: s.sem.filter(|_| k > 1).map(|t| (t, base + 2 * (k - 1))),
            signal: s.sem.map(|t| (t, base + 2 * k - 1)),
        };
        i.submit([enc.finish()], &h)?;
        s.cuda_side(base, k, || {
            Ok(i.device()
                .poll(wgpu::PollType::wait_indefinitely())
                .map(drop)?)
        })?;
        i.device().poll(wgpu::PollType::Poll)?; // reclaims finished command buffers
    }
    // The buffer comes back to the Vulkan side for the next run.
    let h = Handoff {
        acquire: &shared,
        wait: s.sem.map(|t| (t, base + 2 * frames)),
        ..Default::default()
    };
    i.submit([], &h)?;
    let took = start.elapsed();
    i.device().poll(wgpu::PollType::wait_indefinitely())?;
    Ok(took)
}

/// wgpu's pipeline and bind group for the wgpu loop.
struct Fill {
    pipeline: wgpu::ComputePipeline,
    group: wgpu::BindGroup,
}

/// The raw loop's objects on wgpu's device: the same shader, its own pool.
struct Raw {
    device: ash::Device,
    queue: vk::Queue,
    family: u32,
    pools: Vec<(vk::CommandPool, vk::CommandBuffer)>,
    layouts: (vk::DescriptorSetLayout, vk::PipelineLayout),
    pipeline: vk::Pipeline,
    set: (vk::DescriptorPool, vk::DescriptorSet),
    module: vk::ShaderModule,
}

impl Raw {
    fn new(i: &Interop, buf: &SharedBuffer) -> Fallible<Raw> {
        let module = naga::front::wgsl::parse_str(FILL)?;
        let info =
            naga::valid::Validator::new(Default::default(), naga::valid::Capabilities::all())
                .validate(&module)?;
        let stage = naga::back::spv::PipelineOptions {
            shader_stage: naga::ShaderStage::Compute,
            entry_point: "main".into(),
        };
        let spirv = naga::back::spv::write_vec(&module, &info, &Default::default(), Some(&stage))?;
        // SAFETY: the device outlives this object (dropped before the bridge); only
        // the raw loop's own objects are made and destroyed here.
        let device = unsafe { i.device().as_hal::<wgpu_hal::api::Vulkan>() }
            .ok_or("not Vulkan")?
            .raw_device()
            .clone();
        let queue = unsafe { i.device().as_hal::<wgpu_hal::api::Vulkan>() }
            .ok_or("not Vulkan")?
            .raw_queue();
        let family = i.queue_family();
        unsafe {
            let module = vkr(device
                .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&spirv), None))?;
            let binding = [vk::DescriptorSetLayoutBinding::default()
                .binding(0)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE)];
            let dsl = vkr(device.create_descriptor_set_layout(
                &vk::DescriptorSetLayoutCreateInfo::default().bindings(&binding),
                None,
            ))?;
            let pl = vkr(device.create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default().set_layouts(&[dsl]),
                None,
            ))?;
            let stage = vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::COMPUTE)
                .module(module)
                .name(c"main");
            let info = [vk::ComputePipelineCreateInfo::default()
                .stage(stage)
                .layout(pl)];
            let pipeline = device
                .create_compute_pipelines(vk::PipelineCache::null(), &info, None)
                .map_err(|(_, e)| format!("{e:?}"))?[0];
            let sizes = [vk::DescriptorPoolSize {
                ty: vk::DescriptorType::STORAGE_BUFFER,
                descriptor_count: 1,
            }];
            let dp = vkr(device.create_descriptor_pool(
                &vk::DescriptorPoolCreateInfo::default()
                    .max_sets(1)
                    .pool_sizes(&sizes),
                None,
            ))?;
            let set = vkr(device.allocate_descriptor_sets(
                &vk::DescriptorSetAllocateInfo::default()
                    .descriptor_pool(dp)
                    .set_layouts(&[dsl]),
            ))?[0];
            let bi = [vk::DescriptorBufferInfo {
                buffer: buf.vk_buffer(),
                offset: 0,
                range: vk::WHOLE_SIZE,
            }];
            let write = vk::WriteDescriptorSet::default()
                .dst_set(set)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .buffer_info(&bi);
            device.update_descriptor_sets(&[write], &[]);
            let mut pools = Vec::new();
            for _ in 0..=IN_FLIGHT {
                let pool = vkr(device.create_command_pool(
                    &vk::CommandPoolCreateInfo::default().queue_family_index(family),
                    None,
                ))?;
                let ai = vk::CommandBufferAllocateInfo::default()
                    .command_pool(pool)
                    .command_buffer_count(1);
                pools.push((pool, vkr(device.allocate_command_buffers(&ai))?[0]));
            }
            Ok(Raw {
                device,
                queue,
                family,
                pools,
                layouts: (dsl, pl),
                pipeline,
                set: (dp, set),
                module,
            })
        }
    }

    /// Records and submits one command buffer: acquire?, dispatch?, release?.
    fn submit(
        &self,
        slot: usize,
        buf: &SharedBuffer,
        work: (bool, bool, bool),
        wait: Option<(&SharedSemaphore, u64)>,
        signal: Option<(&SharedSemaphore, u64)>,
    ) -> Fallible<()> {
        let (pool, cmd) = self.pools[slot];
        let scope = Scope::new(self.family);
        let d = &self.device;
        // SAFETY: the slot's previous frame is done (bounded by the caller), so its
        // pool may be reset; everything recorded is this device's.
        unsafe {
            vkr(d.reset_command_pool(pool, vk::CommandPoolResetFlags::empty()))?;
            vkr(d.begin_command_buffer(
                cmd,
                &vk::CommandBufferBeginInfo::default()
                    .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
            ))?;
            if work.0 {
                buf.vkcuda().cmd_acquire_from_cuda(cmd, &scope)?;
            }
            if work.1 {
                d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, self.pipeline);
                d.cmd_bind_descriptor_sets(
                    cmd,
                    vk::PipelineBindPoint::COMPUTE,
                    self.layouts.1,
                    0,
                    &[self.set.1],
                    &[],
                );
                d.cmd_dispatch(cmd, WORDS.div_ceil(64), 1, 1);
            }
            if work.2 {
                buf.vkcuda().cmd_release_to_cuda(cmd, &scope)?;
            }
            vkr(d.end_command_buffer(cmd))?;
            let (mut ws, mut wv, mut ss, mut sv) = (vec![], vec![], vec![], vec![]);
            if let Some((s, v)) = wait {
                ws.push(s.vk_semaphore());
                wv.push(v);
            }
            if let Some((s, v)) = signal {
                ss.push(s.vk_semaphore());
                sv.push(v);
            }
            let stages = vec![vk::PipelineStageFlags::ALL_COMMANDS; ws.len()];
            let mut tl = vk::TimelineSemaphoreSubmitInfo::default()
                .wait_semaphore_values(&wv)
                .signal_semaphore_values(&sv);
            let cmds = [cmd];
            let mut si = vk::SubmitInfo::default()
                .command_buffers(&cmds)
                .wait_semaphores(&ws)
                .wait_dst_stage_mask(&stages)
                .signal_semaphores(&ss);
            if !ws.is_empty() || !ss.is_empty() {
                si = si.push_next(&mut tl);
            }
            vkr(d.queue_submit(self.queue, &[si], vk::Fence::null()))
        }
    }

    fn frames(&self, buf: &SharedBuffer, s: &Sync, base: u64, frames: u64) -> Fallible<Duration> {
        let start = Instant::now();
        let slots = self.pools.len() as u64;
        let wait_queue = || vkr(unsafe { self.device.queue_wait_idle(self.queue) });
        for k in 1..=frames {
            s.bound(base, k)?;
            let wait = s.sem.filter(|_| k > 1).map(|t| (t, base + 2 * (k - 1)));
            self.submit(
                (k % slots) as usize,
                buf,
                (k > 1, true, true),
                wait,
                s.sem.map(|t| (t, base + 2 * k - 1)),
            )?;
            s.cuda_side(base, k, wait_queue)?;
        }
        let slot = ((frames + 1) % slots) as usize;
        self.submit(
            slot,
            buf,
            (true, false, false),
            s.sem.map(|t| (t, base + 2 * frames)),
            None,
        )?;
        let took = start.elapsed();
        wait_queue()?;
        Ok(took)
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        // SAFETY: the queue is idle (every run ends with a wait); these are ours.
        unsafe {
            let d = &self.device;
            let _ = d.queue_wait_idle(self.queue);
            for &(pool, _) in &self.pools {
                d.destroy_command_pool(pool, None);
            }
            d.destroy_descriptor_pool(self.set.0, None);
            d.destroy_pipeline(self.pipeline, None);
            d.destroy_pipeline_layout(self.layouts.1, None);
            d.destroy_descriptor_set_layout(self.layouts.0, None);
            d.destroy_shader_module(self.module, None);
        }
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn run() -> Fallible<bool> {
    let args: Vec<String> = std::env::args().collect();
    let opt = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|p| args.get(p + 1))
            .cloned()
    };
    let quick = args.iter().any(|a| a == "--quick");
    let frames: u64 = opt("--frames")
        .map(|f| f.parse())
        .transpose()?
        .unwrap_or(if quick { 20 } else { 2000 });
    let repeats: usize = opt("--repeats")
        .map(|f| f.parse())
        .transpose()?
        .unwrap_or(if quick { 3 } else { 9 });

    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::VULKAN;
    desc.flags = wgpu::InstanceFlags::empty().with_env();
    let adapter =
        pollster::block_on(wgpu::Instance::new(desc).request_adapter(&Default::default()))?;
    let (interop, has_cuda) =
        match Interop::request_device(&adapter, &Default::default(), CudaChoice::Primary) {
            Ok(i) => (i, true),
            Err(e)
                if e.cuda_unavailable()
                    && std::env::var("VKCUDA_REQUIRE_GPU").as_deref() != Ok("1") =>
            {
                println!("no CUDA ({e}): the host stands in for CUDA; the timing is a smoke test");
                (
                    Interop::request_device(&adapter, &Default::default(), CudaChoice::None)?,
                    false,
                )
            }
            Err(e) => return Err(e.into()),
        };
    let buf = interop.create_buffer(&wgpu::BufferDescriptor {
        label: Some("frame"),
        size: WORDS as u64 * 4,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    })?;
    let sem = match interop.create_semaphore(0) {
        Ok(s) => Some(s),
        Err(_) if !has_cuda => None,
        Err(e) => return Err(e.into()),
    };
    let cuda = if has_cuda {
        Some(Cuda::load(&interop, &buf)?)
    } else {
        None
    };
    let sync = Sync {
        sem: sem.as_ref(),
        cuda: cuda.as_ref(),
    };
    let d = interop.device();
    let module = d.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: None,
        source: wgpu::ShaderSource::Wgsl(FILL.into()),
    });
    let pipeline = d.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: None,
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let entries = [wgpu::BindGroupEntry {
        binding: 0,
        resource: buf.wgpu().as_entire_binding(),
    }];
    let group = d.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    });
    let fill = Fill { pipeline, group };
    let raw = Raw::new(&interop, &buf)?;

    println!(
        "frame loop: compute pass -> release to CUDA -> kernel -> acquire back; {} MiB, {IN_FLIGHT} frames in flight, {frames} frames x {repeats} repeats, {}",
        WORDS / (1 << 18),
        adapter.get_info().name
    );
    let (mut base, mut t_wgpu, mut t_raw) = (0u64, vec![], vec![]);
    for r in 0..=repeats {
        let mut one = |wgpu_first: bool| -> Fallible<(f64, f64)> {
            let mut out = (0.0, 0.0);
            for w in [wgpu_first, !wgpu_first] {
                let took = if w {
                    wgpu_loop(&interop, &buf, &fill, &sync, base, frames)?
                } else {
                    raw.frames(&buf, &sync, base, frames)?
                };
                base += 2 * frames;
                if let Some(c) = &cuda {
                    c.check()
                        .map_err(|e| format!("{} loop: {e}", if w { "wgpu" } else { "raw" }))?;
                }
                let us = took.as_secs_f64() * 1e6 / frames as f64;
                if w {
                    out.0 = us
                } else {
                    out.1 = us
                }
            }
            Ok(out)
        };
        let (w, a) = one(r % 2 == 0)?;
        if r > 0 {
            // repeat 0 warms both paths up
            t_wgpu.push(w);
            t_raw.push(a);
        }
    }
    let (mw, ma) = (median(&mut t_wgpu), median(&mut t_raw));
    let ratio = mw / ma;
    println!("raw ash + vkcuda:    median {ma:8.1} us/frame");
    println!("wgpu + vkcuda-wgpu:  median {mw:8.1} us/frame");
    let verdict = if !has_cuda {
        "not judged without CUDA"
    } else if ratio <= 1.05 {
        "met"
    } else {
        "NOT met"
    };
    println!(
        "ratio wgpu/raw: {ratio:.3} (goal <= 1.05: {verdict}); every run's buffer {}",
        if has_cuda {
            "checked word by word by CUDA"
        } else {
            "not checked (no CUDA)"
        }
    );
    if let Some(path) = opt("--csv") {
        let rows: String = t_wgpu
            .iter()
            .zip(&t_raw)
            .enumerate()
            .map(|(i, (w, a))| format!("{i},{w:.2},{a:.2}\n"))
            .collect();
        std::fs::write(
            path,
            format!("repeat,wgpu_us_per_frame,raw_us_per_frame\n{rows}"),
        )?;
    }
    drop(raw);
    Ok(has_cuda)
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(_) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("frame_loop: FAILED: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
