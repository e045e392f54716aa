//! A wgpu compute pass fills a storage buffer, a CUDA kernel reads it where it lies
//! (no copy) and transforms every word in place, and wgpu reads the result:
//! `cargo run -p vkcuda-wgpu --example compute_to_cuda`.
//!
//! vkcuda allocates the buffer once (Vulkan memory imported into CUDA) and wraps it
//! into a `wgpu::Buffer`; vkcuda's barriers and a timeline semaphore on wgpu's queue
//! hand it over. Both directions are checked word by word. Without CUDA the wgpu
//! half still runs and is checked, then `SKIPPED: ...` and exit 77 (a failure with
//! VKCUDA_REQUIRE_GPU=1).

use std::ffi::CString;
use std::process::ExitCode;
use std::ptr::null_mut;
use std::time::Duration;

use cudarc::driver::sys::{self, CUresult};
use vkcuda_wgpu::{CudaChoice, Handoff, Interop, Shared, SharedSemaphore};

const WORDS: u32 = 1 << 20; // 4 MiB
const MUL: u32 = 3; // the kernel's p[i] = p[i] * MUL + ADD
const ADD: u32 = 7;
const NAME: &str = "compute_to_cuda";

// The compute pass's values; `pattern` is the same on the host.
const FILL: &str = "
@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < arrayLength(&data)) { data[id.x] = id.x * 2654435761u + 12345u; }
}";

const WAIT_ALL: wgpu::PollType = wgpu::PollType::Wait {
    submission_index: None,
    timeout: Some(Duration::from_secs(30)),
};

fn pattern(i: u32) -> u32 {
    i.wrapping_mul(2_654_435_761).wrapping_add(12_345)
}

fn transformed(x: u32) -> u32 {
    x.wrapping_mul(MUL).wrapping_add(ADD)
}

// The C examples' kernels (c_examples/kernels.cu), compiled to PTX once and committed.
const PTX: &str = include_str!("../../../ptx/kernels.ptx");

type Fallible<T> = Result<T, Box<dyn std::error::Error>>;

fn cu(r: CUresult) -> Fallible<()> {
    match r {
        CUresult::CUDA_SUCCESS => Ok(()),
        e => Err(format!("a CUDA call failed: {e:?}").into()),
    }
}

/// Names the first word that differs from `want(i)`, and how many do.
fn check(got: &[u32], want: impl Fn(u32) -> u32, what: &str) -> Fallible<()> {
    let wrong: Vec<u32> = (0..got.len() as u32)
        .filter(|&i| got[i as usize] != want(i))
        .collect();
    if let Some(&i) = wrong.first() {
        let (n, g, w) = (wrong.len(), got[i as usize], want(i));
        return Err(
            format!("{what}: {n} words wrong, the first at {i}: {g:#x}, not {w:#x}").into(),
        );
    }
    println!("{what}: all {} words right", got.len());
    Ok(())
}

/// CUDA's half: wait for wgpu's signal, read the buffer where it lies (a copy to
/// the host, to check what CUDA sees), transform it in place, signal.
fn cuda_half(interop: &Interop, ptr: u64, sem: &SharedSemaphore) -> Fallible<()> {
    let bytes = WORDS as usize * 4;
    let mut seen = vec![0u32; WORDS as usize];
    let ptx = CString::new(PTX)?;
    // SAFETY: the driver is loaded (the bridge has a CUDA side); `ptr` covers
    // `bytes`; the kernel's arguments match its signature in kernels.cu.
    unsafe {
        cu(sys::cuCtxPushCurrent_v2(interop.cuda()?.context))?;
        let mut module = null_mut();
        cu(sys::cuModuleLoadData(&mut module, ptx.as_ptr().cast()))?;
        let mut transform = null_mut();
        let name = c"transform".as_ptr();
        cu(sys::cuModuleGetFunction(&mut transform, module, name))?;
        let stream = null_mut(); // the default stream
        sem.cuda_wait(1, stream)?; // wgpu's compute pass is done
        let host = seen.as_mut_ptr().cast();
        cu(sys::cuMemcpyDtoHAsync_v2(host, ptr, bytes, stream))?;
        let (mut p, mut n, mut mul, mut add) = (ptr, bytes, MUL, ADD);
        let mut args = [
            (&mut p as *mut u64).cast(),
            (&mut n as *mut usize).cast(),
            (&mut mul as *mut u32).cast(),
            (&mut add as *mut u32).cast(),
        ];
        let (f, g, args) = (transform, WORDS.div_ceil(256), args.as_mut_ptr());
        cu(sys::cuLaunchKernel(
            f,
            g,
            1,
            1,
            256,
            1,
            1,
            0,
            stream,
            args,
            null_mut(),
        ))?;
        sem.cuda_signal(2, stream)?; // wgpu may take the buffer back
        cu(sys::cuStreamSynchronize(stream))?;
        cu(sys::cuModuleUnload(module))?;
        cu(sys::cuCtxPopCurrent_v2(&mut null_mut()))?;
    }
    check(&seen, pattern, "CUDA reads what wgpu wrote")
}

fn run() -> Fallible<Option<String>> {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::VULKAN; // only Vulkan shares memory with CUDA
    desc.flags = wgpu::InstanceFlags::empty().with_env();
    let instance = wgpu::Instance::new(desc);
    let adapter = pollster::block_on(instance.request_adapter(&Default::default()))?;
    println!("adapter: {}", adapter.get_info().name);

    // The device, paired with the CUDA device of the same UUID, or Vulkan-only.
    let mut skipped = None;
    let interop = match Interop::request_device(&adapter, &Default::default(), CudaChoice::Primary)
    {
        Ok(i) => i,
        Err(e) if e.cuda_unavailable() => {
            skipped = Some(format!("the CUDA half: no CUDA driver ({e})"));
            Interop::request_device(&adapter, &Default::default(), CudaChoice::None)?
        }
        Err(e) => return Err(e.into()),
    };
    let device = interop.device();

    // One allocation: a wgpu storage buffer and a CUDA pointer.
    let buffer = interop.create_buffer(&wgpu::BufferDescriptor {
        label: Some("shared"),
        size: WORDS as u64 * 4,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })?;
    // Without CUDA there may be no semaphore extension either (lavapipe): the host
    // then orders the two submissions.
    let sem = match (&skipped, interop.create_semaphore(0)) {
        (_, Ok(s)) => Some(s),
        (Some(_), Err(_)) => None,
        (None, Err(e)) => return Err(e.into()),
    };

    // 1. wgpu fills the buffer, releases it to CUDA and signals 1.
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("fill"),
        source: wgpu::ShaderSource::Wgsl(FILL.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("fill"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: buffer.wgpu().as_entire_binding(),
        }],
    });
    let mut enc = device.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(WORDS.div_ceil(64), 1, 1);
    }
    let shared: [Shared; 1] = [(&buffer).into()];
    let release = Handoff {
        release: &shared,
        signal: sem.as_ref().map(|s| (s, 1)),
        ..Default::default()
    };
    interop.submit([enc.finish()], &release)?;

    // 2. CUDA reads and transforms it in place, then signals 2.
    match (&skipped, &sem) {
        (None, Some(sem)) => cuda_half(&interop, buffer.cuda_ptr()?, sem)?,
        _ => device.poll(WAIT_ALL).map(drop)?, // the Vulkan half alone: let the pass end
    }

    // 3. wgpu waits for 2, takes the buffer back and copies it out to read it.
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("staging"),
        size: buffer.size(),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut enc = device.create_command_encoder(&Default::default());
    enc.copy_buffer_to_buffer(buffer.wgpu(), 0, &staging, 0, buffer.size());
    let acquire = Handoff {
        acquire: &shared,
        wait: sem.as_ref().map(|s| (s, 2)),
        ..Default::default()
    };
    interop.submit([enc.finish()], &acquire)?;
    staging
        .slice(..)
        .map_async(wgpu::MapMode::Read, |r| r.expect("map"));
    device.poll(WAIT_ALL)?;
    let bytes = staging.slice(..).get_mapped_range()?;
    let got: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    match skipped {
        None => check(
            &got,
            |i| transformed(pattern(i)),
            "wgpu reads what CUDA wrote",
        )?,
        Some(_) => check(&got, pattern, "wgpu reads back what its compute pass wrote")?,
    }
    if skipped.is_none() {
        println!("{NAME}: PASSED");
    }
    Ok(skipped)
}

fn main() -> ExitCode {
    let require_gpu = std::env::var("VKCUDA_REQUIRE_GPU").as_deref() == Ok("1");
    let failure = match run() {
        Ok(None) => return ExitCode::SUCCESS,
        Ok(Some(why)) if !require_gpu => {
            println!("SKIPPED: {NAME}: {why}");
            return ExitCode::from(77);
        }
        Ok(Some(why)) => format!("VKCUDA_REQUIRE_GPU=1 but {why}"),
        Err(e) => e.to_string(),
    };
    eprintln!("{NAME}: FAILED: {failure}");
    ExitCode::FAILURE
}
