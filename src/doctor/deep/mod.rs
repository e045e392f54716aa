//! The doctor's deep self-test (`vkcuda_doctor --deep`, `VKCUDA_DOCTOR_RUN_DEEP_BIT`,
//! `vkcuda.doctor(deep=True)`): on the machine's own GPU it makes each kind of
//! shared resource the library offers, pushes compressible patterns (a ramp,
//! constant 4 KiB tiles, and what compression engines squeeze most: a 64 KiB
//! zero region, as cleared memory is, and constant tiles as large as a
//! compression page, 64 KiB, and 2 MiB) and random bytes through it in both
//! directions through the library's own paths, and compares every byte.
//!
//! - Vulkan side: a standalone context's queue, the library's host-visible staging
//!   buffer (`vulkan::staging::HostBuffer`),
//!   `vkCmdCopyBuffer` / `vkCmdCopyBufferToImage` / `vkCmdCopyImageToBuffer`, and
//!   the library's release and acquire barriers (`Buffer::cmd_release_to_cuda`, ...) around
//!   every handoff.
//! - CUDA side: the driver API the library already loads: `cuMemcpyHtoD`/`DtoH`
//!   for buffers, `cuMemcpy3D` for every level array of an image (layers and
//!   slices included), `cuMemcpy2D` for each plane of a video frame at
//!   [`Image::plane_pointer`](crate::Image::plane_pointer)'s address and row
//!   pitch.
//!
//! Each resource is one check (`deep.buffer.vulkan`, `deep.image.R8G8B8A8_UNORM.2D`,
//! `deep.frame.NV12`, `deep.semaphore.timeline`, ...) that passes, or fails with the
//! first wrong byte (where, expected, got) and what to do; `seen` ends with the
//! check's time, and `deep.total` states the whole run's. Without CUDA (no driver,
//! no CUDA twin of the Vulkan device, a driver without the copy calls) the
//! Vulkan-only part runs: create, write and read back through Vulkan across a
//! release/acquire pair, and export/import of fds where the device can; `deep.cuda`
//! says why the CUDA part was skipped (a warning).
//!
//! The cases are data ([`table`]): `BUFFERS`, `IMAGES`, every `verified` row of
//! `format::PLANAR`, `SEMAPHORES`.

// A tree: `run` (here) -> `cases` -> `subject`, `lab`, `pattern`, `table`.
mod cases;
mod lab;
mod pattern;
mod subject;
mod table;

use std::ffi::c_void;
use std::time::{Duration, Instant};

use cudarc::driver::sys;

use super::types::{Check, Status};
use crate::context::{Context, CudaChoice};
use crate::cuda;
use crate::format;
use cases::{buffer_case, frame_case, image_case, semaphore_case, Outcome};
use lab::Lab;
use table::{BUFFERS, CUDA_SYMBOLS, IMAGES, SEMAPHORES, TARGET};

// --- the run ----------------------------------------------------------------------

/// Why the CUDA part cannot run in this process, if it cannot.
fn cuda_missing() -> Option<String> {
    if let Err(e) = cuda::driver() {
        return Some(e.message);
    }
    // SAFETY: the driver loaded (above), so culib() does not panic; get() only
    // looks up names.
    let lib = unsafe { sys::culib() };
    for name in CUDA_SYMBOLS {
        if unsafe { lib.get::<*const c_void>(name.as_bytes()) }.is_err() {
            return Some(format!(
                "the CUDA driver has no {name}, which the self-test copies with"
            ));
        }
    }
    None
}

fn add(out: &mut Vec<Check>, name: String, o: Outcome, took: Duration) {
    out.push(Check {
        name,
        status: o.status,
        seen: format!("{} ({:.1} ms)", o.seen, took.as_secs_f64() * 1e3),
        fix: if o.status == Status::Pass {
            String::new()
        } else {
            o.fix
        },
    });
}

/// Runs every case and returns one check per resource, then `deep.total`.
/// `not_run`: why the self-test cannot run here at all (the loader would hang,
/// no Vulkan device); then one failing `deep.total` says so.
pub(crate) fn run(not_run: Option<&str>) -> Vec<Check> {
    let start = Instant::now();
    let mut out = Vec::new();
    if let Some(why) = not_run {
        add(
            &mut out,
            "deep.total".into(),
            Outcome::fail(format!("not run: {why}"), "fix the checks above first"),
            start.elapsed(),
        );
        return out;
    }
    let t = Instant::now();
    let mut no_cuda = cuda_missing();
    let ctx = match &no_cuda {
        None => match Context::standalone(None, CudaChoice::Primary) {
            Ok(c) => Ok(c),
            Err(e) => {
                no_cuda = Some(format!("no context with CUDA: {}", e.message));
                Context::standalone(None, CudaChoice::None)
            }
        },
        Some(_) => Context::standalone(None, CudaChoice::None),
    };
    let ctx = match ctx {
        Ok(c) => c,
        Err(e) => {
            add(
                &mut out,
                "deep.context".into(),
                Outcome::fail(
                    format!("no standalone context: {}", e.message),
                    "fix the vulkan.* checks above first",
                ),
                t.elapsed(),
            );
            add(
                &mut out,
                "deep.total".into(),
                Outcome::fail("not run: no context", "fix deep.context first"),
                start.elapsed(),
            );
            return out;
        }
    };
    let device = format!(
        "{} ({})",
        ctx.vk.props.name,
        ctx.cuda
            .as_ref()
            .map(|c| format!("CUDA device {}", c.device().ordinal))
            .unwrap_or_else(|| "Vulkan only".into())
    );
    match &no_cuda {
        None => add(
            &mut out,
            "deep.cuda".into(),
            Outcome::pass(format!("the CUDA part runs on {device}")),
            t.elapsed(),
        ),
        Some(why) => add(
            &mut out,
            "deep.cuda".into(),
            Outcome::skip(
                format!("the CUDA part ({why}); the Vulkan-only part runs on {device}"),
                "run the deep doctor on a machine with an NVIDIA GPU and driver to test CUDA's side",
            ),
            t.elapsed(),
        ),
    }
    let mut lab = match Lab::new(ctx, no_cuda) {
        Ok(l) => l,
        Err(e) => {
            add(
                &mut out,
                "deep.total".into(),
                Outcome::error("the self-test's command buffer", &e),
                start.elapsed(),
            );
            return out;
        }
    };

    type Case<'a> = (String, Box<dyn FnOnce(&mut Lab) -> Outcome + 'a>);
    let mut cases: Vec<Case> = Vec::new();
    for &(name, allocator) in BUFFERS {
        cases.push((
            format!("deep.buffer.{name}"),
            Box::new(move |l: &mut Lab| buffer_case(l, allocator)),
        ));
    }
    for c in IMAGES {
        let name = format::display(c.format)
            .trim_start_matches("VK_FORMAT_")
            .to_string();
        cases.push((
            format!("deep.image.{name}.{}", c.shape),
            Box::new(move |l: &mut Lab| image_case(l, c)),
        ));
    }
    for p in format::PLANAR.iter().filter(|p| p.verified) {
        cases.push((
            format!("deep.frame.{}", p.name),
            Box::new(move |l: &mut Lab| frame_case(l, p)),
        ));
    }
    for &(name, kind) in SEMAPHORES {
        cases.push((
            format!("deep.semaphore.{name}"),
            Box::new(move |l: &mut Lab| semaphore_case(l, kind)),
        ));
    }
    let count = cases.len();
    for (name, case) in cases {
        let t = Instant::now();
        let o = if lab.stuck {
            Outcome::fail(
                "not run: an earlier check's GPU work never completed",
                "fix the first failing deep check",
            )
        } else {
            case(&mut lab)
        };
        add(&mut out, name, o, t.elapsed());
    }
    drop(lab);
    let took = start.elapsed();
    let failed = out.iter().filter(|c| c.status == Status::Fail).count();
    let skipped = out
        .iter()
        .filter(|c| c.status == Status::Warn && c.name != "deep.cuda")
        .count();
    let seen = format!(
        "{count} resources in {:.2} s: {} passed, {failed} failed, {skipped} skipped (target <= {} s)",
        took.as_secs_f64(),
        out.iter().filter(|c| c.status == Status::Pass && c.name != "deep.cuda").count(),
        TARGET.as_secs()
    );
    let o = if failed > 0 {
        Outcome::fail(seen, "fix the failing deep checks above")
    } else if took > TARGET {
        Outcome {
            status: Status::Warn,
            seen: format!("{seen}: slower than the target"),
            fix: "a busy or slow GPU; nothing is wrong with the data".into(),
        }
    } else {
        Outcome::pass(seen)
    };
    add(&mut out, "deep.total".into(), o, took);
    out
}
