//! One check per resource: make it, push every pattern through it both ways
//! ([`round_trips`]), compare every byte, and say where the first wrong one is.

use std::os::fd::AsFd;
use std::ptr;

use ash::vk;
use cudarc::driver::sys;

use super::lab::{full_barrier, Lab};
use super::pattern::{fill, first_difference, Pattern, DATA, PATTERNS};
use super::subject::{packed_size, BufferSubject, Hand, ImageSubject, Region, Subject};
use super::table::{ImageCase, BUFFER_BYTES, FRAME_EXTENT, WAIT};
use crate::buffer::{Allocator, Buffer};
use crate::doctor::types::Status;
use crate::error::{Error, ErrorKind};
use crate::format;
use crate::image::{Description, Dimension, Image};
use crate::semaphore::{Kind, Semaphore};

/// How one check came out: its status, what was seen, the fix.
pub(crate) struct Outcome {
    pub(crate) status: Status,
    pub(crate) seen: String,
    pub(crate) fix: String,
}

impl Outcome {
    pub(crate) fn pass(seen: impl Into<String>) -> Outcome {
        Outcome {
            status: Status::Pass,
            seen: seen.into(),
            fix: String::new(),
        }
    }

    pub(crate) fn fail(seen: impl Into<String>, fix: impl Into<String>) -> Outcome {
        Outcome {
            status: Status::Fail,
            seen: seen.into(),
            fix: fix.into(),
        }
    }

    pub(crate) fn skip(seen: impl Into<String>, fix: impl Into<String>) -> Outcome {
        Outcome {
            status: Status::Warn,
            seen: format!("skipped: {}", seen.into()),
            fix: fix.into(),
        }
    }

    /// An error of a library call: unsupported things are skips, the rest fail.
    pub(crate) fn error(what: &str, e: &Error) -> Outcome {
        match e.kind {
            ErrorKind::Unsupported | ErrorKind::ExtensionNotPresent => Outcome::skip(
                format!("{what}: {}", e.message),
                "nothing to do unless you need this kind of resource: this device or driver does not \
                 offer it",
            ),
            _ => Outcome::fail(
                format!("{what} failed: {}", e.message),
                "run vkcuda_doctor without --deep and fix what it reports; if it reports nothing, \
                 report this line with the output of vkcuda_doctor --deep --json",
            ),
        }
    }
}

const WRONG_DATA_FIX: &str = "do not share this kind of resource on this machine until this is \
    fixed: CUDA's and Vulkan's views of the same memory disagree (a driver layout or compression \
    mismatch, or a broken handoff); update the NVIDIA driver, and report this line with the \
    output of vkcuda_doctor --deep --json";

/// Says where byte `offset` of the packed bytes is.
fn locate(regions: &[Region], offset: usize) -> String {
    for r in regions {
        if offset >= r.offset && offset < r.offset + r.len {
            let k = offset - r.offset;
            return match k.checked_div(r.row_bytes) {
                None => format!("offset {k}"),
                Some(row) => format!(
                    "{}, row {row}, byte {} of the row (packed offset {offset})",
                    r.name,
                    k % r.row_bytes
                ),
            };
        }
    }
    format!("packed offset {offset}")
}

/// Compares the regions of `got` with `want`; an outcome for the first difference.
fn compare(regions: &[Region], want: &[u8], got: &[u8], what: &str) -> Option<Outcome> {
    let mut wrong = 0usize;
    let mut first = None;
    for r in regions {
        let span = r.offset..r.offset + r.len;
        if let Some((i, w, g, n)) = first_difference(&want[span.clone()], &got[span]) {
            wrong += n;
            first.get_or_insert((r.offset + i, w, g));
        }
    }
    let (at, w, g) = first?;
    let total: usize = regions.iter().map(|r| r.len).sum();
    Some(Outcome::fail(
        format!(
            "{what}: first wrong byte at {}: expected {w:#04x}, got {g:#04x} ({wrong} of {total} bytes wrong)",
            locate(regions, at)
        ),
        WRONG_DATA_FIX,
    ))
}

/// One round per pattern ([`PATTERNS`]): Vulkan writes and CUDA reads, CUDA writes
/// and Vulkan reads; without CUDA, Vulkan writes, hands over and back, and reads.
/// Ok: the bytes moved each way.
fn round_trips(lab: &mut Lab, s: &mut dyn Subject) -> std::result::Result<usize, Outcome> {
    let regions = s.regions().to_vec();
    let n = packed_size(&regions);
    let mut want = vec![0u8; n];
    let mut got = vec![0u8; n];
    let cuda = lab.cuda();
    let hand = Hand { scope: lab.scope() };
    for (i, p) in PATTERNS.into_iter().enumerate() {
        fill(p, 0x11 + i as u64, &mut want);
        let staging = {
            let (b, bytes) = lab
                .staging(n)
                .map_err(|e| Outcome::error("the staging buffer", &e))?;
            bytes.copy_from_slice(&want);
            b
        };
        lab.run(&[], &[], |d, cmd| s.upload(&hand, d, cmd, staging))
            .map_err(|e| Outcome::error("the Vulkan write", &e))?;
        if cuda {
            s.cuda_read(&mut got)
                .map_err(|e| Outcome::error("the CUDA read", &e))?;
            if let Some(o) = compare(
                &regions,
                &want,
                &got,
                &format!("Vulkan wrote {}, CUDA read", p.name()),
            ) {
                return Err(o);
            }
            fill(p, 0x5a + i as u64, &mut want);
            s.cuda_write(&want)
                .map_err(|e| Outcome::error("the CUDA write", &e))?;
        }
        lab.run(&[], &[], |d, cmd| s.download(&hand, d, cmd, staging))
            .map_err(|e| Outcome::error("the Vulkan read", &e))?;
        let (_, bytes) = lab
            .staging(n)
            .map_err(|e| Outcome::error("the staging buffer", &e))?;
        let what = if cuda {
            format!("CUDA wrote {}, Vulkan read", p.name())
        } else {
            format!(
                "Vulkan wrote {}, handed it over and back, and read",
                p.name()
            )
        };
        if let Some(o) = compare(&regions, &want, bytes, &what) {
            return Err(o);
        }
    }
    let moved: usize = regions.iter().map(|r| r.len).sum();
    Ok(moved * PATTERNS.len() * if cuda { 2 } else { 1 })
}

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

fn both_ways(lab: &Lab) -> String {
    match &lab.no_cuda {
        None => "Vulkan -> CUDA and CUDA -> Vulkan".to_string(),
        Some(_) => "Vulkan only (CUDA part skipped: see deep.cuda)".to_string(),
    }
}

pub(crate) fn buffer_case(lab: &mut Lab, allocator: Allocator) -> Outcome {
    if allocator == Allocator::Cuda {
        if let Some(why) = &lab.no_cuda {
            return Outcome::skip(
                format!("a CUDA-allocated buffer needs CUDA ({why})"),
                "see deep.cuda",
            );
        }
    }
    let buffer = match Buffer::create(
        &lab.ctx,
        BUFFER_BYTES,
        vk::BufferUsageFlags::empty(),
        allocator,
    ) {
        Ok(b) => b,
        Err(e) => return Outcome::error("vkcuda_buffer_create", &e),
    };
    let mut s = BufferSubject {
        buffer,
        regions: vec![Region {
            offset: 0,
            len: BUFFER_BYTES as usize,
            row_bytes: 0,
            name: "buffer".into(),
        }],
    };
    let moved = match round_trips(lab, &mut s) {
        Ok(m) => m,
        Err(o) => return o,
    };
    let mut seen = format!(
        "{} buffer, {DATA}, {}: every byte right ({} moved)",
        mib(BUFFER_BYTES as usize),
        both_ways(lab),
        mib(moved)
    );
    if lab.no_cuda.is_some() && allocator == Allocator::Vulkan {
        // The fd path: the memory exported and imported again in this context.
        match fd_round_trip(lab, &s.buffer) {
            Ok(()) => seen.push_str("; exported as an fd and imported again: same bytes"),
            Err(o) => return o,
        }
    }
    Outcome::pass(seen)
}

/// Exports `b`, imports the fd as a second buffer, writes random bytes through
/// the first and reads them through the second.
fn fd_round_trip(lab: &mut Lab, b: &Buffer) -> std::result::Result<(), Outcome> {
    let fd = b
        .export_fd()
        .map_err(|e| Outcome::error("vkcuda_buffer_export_fd", &e))?;
    let twin = Buffer::import_fd(
        &lab.ctx,
        fd.as_fd(),
        b.layout(),
        vk::BufferUsageFlags::empty(),
    )
    .map_err(|e| Outcome::error("vkcuda_buffer_import_fd", &e))?;
    let n = BUFFER_BYTES as usize;
    let mut want = vec![0u8; n];
    fill(Pattern::Random, 0x77, &mut want);
    let (staging, bytes) = lab
        .staging(n)
        .map_err(|e| Outcome::error("the staging buffer", &e))?;
    bytes.copy_from_slice(&want);
    let (src, dst) = (b.vk_buffer(), twin.vk_buffer());
    lab.run(&[], &[], |d, cmd| unsafe {
        d.cmd_copy_buffer(
            cmd,
            staging,
            src,
            &[vk::BufferCopy::default().size(n as u64)],
        );
        full_barrier(d, cmd);
        d.cmd_fill_buffer(cmd, staging, 0, n as u64, 0);
        full_barrier(d, cmd);
        d.cmd_copy_buffer(
            cmd,
            dst,
            staging,
            &[vk::BufferCopy::default().size(n as u64)],
        );
    })
    .map_err(|e| Outcome::error("the copy through the imported fd", &e))?;
    drop(fd);
    let (_, bytes) = lab
        .staging(n)
        .map_err(|e| Outcome::error("the staging buffer", &e))?;
    let region = [Region {
        offset: 0,
        len: n,
        row_bytes: 0,
        name: "buffer".into(),
    }];
    match compare(
        &region,
        &want,
        bytes,
        "written through the buffer, read through its exported and imported fd",
    ) {
        Some(o) => Err(o),
        None => Ok(()),
    }
}

fn transfer_features(lab: &Lab, format: vk::Format, linear: bool) -> bool {
    let vkd = &lab.ctx.vk;
    // SAFETY: a query on the context's physical device.
    let p = unsafe {
        vkd.instance
            .get_physical_device_format_properties(vkd.physical, format)
    };
    let f = if linear {
        p.linear_tiling_features
    } else {
        p.optimal_tiling_features
    };
    f.contains(vk::FormatFeatureFlags::TRANSFER_SRC | vk::FormatFeatureFlags::TRANSFER_DST)
}

pub(crate) fn image_case(lab: &mut Lab, c: &ImageCase) -> Outcome {
    if !transfer_features(lab, c.format, false) {
        return Outcome::skip(
            format!(
                "this device cannot copy {} images",
                format::display(c.format)
            ),
            "nothing to do unless you need this format",
        );
    }
    let desc = Description {
        dimension: c.dimension,
        format: c.format,
        width: c.width,
        height: c.height,
        depth: c.depth,
        mip_levels: crate::image::max_mip_levels(c.width, c.height, c.depth),
        array_layers: c.layers,
        cube: c.cube,
        usage: vk::ImageUsageFlags::empty(),
        linear: false,
    };
    let image = match Image::create(&lab.ctx, &desc) {
        Ok(i) => i,
        Err(e) => return Outcome::error("vkcuda_image_create", &e),
    };
    let mut s = ImageSubject::of_image(image, c);
    match round_trips(lab, &mut s) {
        Ok(moved) => Outcome::pass(format!(
            "{}x{}x{}, {} layer(s){}, {} mip levels, {DATA}, {}: every byte right ({} moved)",
            c.width,
            c.height,
            c.depth,
            c.layers,
            if c.cube { " (cube)" } else { "" },
            desc.mip_levels,
            both_ways(lab),
            mib(moved)
        )),
        Err(o) => o,
    }
}

pub(crate) fn frame_case(lab: &mut Lab, p: &format::PlanarFormat) -> Outcome {
    if !transfer_features(lab, p.format, true) {
        return Outcome::skip(
            format!("this device cannot copy LINEAR {} images", p.name),
            "nothing to do unless you need this format",
        );
    }
    let (width, height) = FRAME_EXTENT;
    let desc = Description {
        dimension: Dimension::D2,
        format: p.format,
        width,
        height,
        depth: 1,
        mip_levels: 1,
        array_layers: 1,
        cube: false,
        // The default usage (transfers, sampled where the format allows): what a
        // decoder's frame that the engine samples has.
        usage: vk::ImageUsageFlags::empty(),
        linear: true,
    };
    let image = match Image::create(&lab.ctx, &desc) {
        Ok(i) => i,
        Err(e) => return Outcome::error("vkcuda_image_create (LINEAR frame)", &e),
    };
    let mut s = match ImageSubject::of_frame(image) {
        Ok(s) => s,
        Err(e) => return Outcome::error("vkcuda_image_get_plane_pointer", &e),
    };
    match round_trips(lab, &mut s) {
        Ok(moved) => Outcome::pass(format!(
            "{width}x{height} LINEAR {} frame, {} planes as pitched memory, {DATA}, {}: every byte \
             right ({} moved)",
            p.name,
            s.regions.len(),
            both_ways(lab),
            mib(moved)
        )),
        Err(o) => o,
    }
}

pub(crate) fn semaphore_case(lab: &mut Lab, kind: Kind) -> Outcome {
    let sem = match Semaphore::create(&lab.ctx, kind, 0, None) {
        Ok(s) => s,
        Err(e) => return Outcome::error("vkcuda_semaphore_create", &e),
    };
    let r = if lab.cuda() {
        semaphore_with_cuda(lab, &sem)
    } else {
        semaphore_vulkan_only(lab, &sem)
    };
    if lab.stuck {
        // A wait may still be pending on it.
        std::mem::forget(sem);
    }
    match r {
        Ok(seen) => Outcome::pass(seen),
        Err(o) => o,
    }
}

fn sem_err(what: &'static str) -> impl Fn(Error) -> Outcome {
    move |e| Outcome::error(what, &e)
}

/// Vulkan signals, CUDA waits and signals, Vulkan waits for CUDA's signal.
fn semaphore_with_cuda(lab: &mut Lab, s: &Semaphore) -> std::result::Result<String, Outcome> {
    let vs = s.vk_semaphore();
    let stream: sys::CUstream = ptr::null_mut();
    match s.kind() {
        Kind::Timeline => {
            lab.run(&[], &[(vs, 1)], |_, _| {})
                .map_err(sem_err("the Vulkan signal of 1"))?;
            s.cuda_wait(1, stream)
                .map_err(sem_err("the CUDA wait for 1"))?;
            s.cuda_signal(2, stream)
                .map_err(sem_err("the CUDA signal of 2"))?;
            lab.run(&[(vs, 2)], &[(vs, 3)], |_, _| {})
                .map_err(|e| stuck_or(e, "Vulkan waited for CUDA's signal of 2"))?;
            s.host_wait(3, WAIT)
                .map_err(sem_err("the host wait for 3"))?;
            let v = s.value().map_err(sem_err("vkGetSemaphoreCounterValue"))?;
            if v != 3 {
                return Err(Outcome::fail(
                    format!("the value is {v} after Vulkan signalled 1, CUDA 2 and Vulkan 3"),
                    WRONG_DATA_FIX,
                ));
            }
            Ok("Vulkan signalled 1, CUDA waited for it and signalled 2, a Vulkan submit waited for 2 \
                and signalled 3, the host saw 3"
                .into())
        }
        Kind::Binary => {
            lab.run(&[], &[(vs, 0)], |_, _| {})
                .map_err(sem_err("the Vulkan signal"))?;
            s.note_vulkan_signal()
                .map_err(sem_err("vkcuda_semaphore_note_vulkan_signal"))?;
            s.cuda_wait(0, stream).map_err(sem_err("the CUDA wait"))?;
            s.cuda_signal(0, stream)
                .map_err(sem_err("the CUDA signal"))?;
            lab.run(&[(vs, 0)], &[], |_, _| {})
                .map_err(|e| stuck_or(e, "Vulkan waited for CUDA's signal"))?;
            s.note_vulkan_wait()
                .map_err(sem_err("vkcuda_semaphore_note_vulkan_wait"))?;
            Ok("Vulkan signalled, CUDA waited and signalled, a Vulkan submit waited for CUDA's signal".into())
        }
    }
}

fn stuck_or(e: Error, what: &str) -> Outcome {
    if e.kind == ErrorKind::Timeout {
        Outcome::fail(
            format!("{what}: it never came ({})", e.message),
            "CUDA's signal does not reach Vulkan on this machine: update the NVIDIA driver, and \
             report this line with the output of vkcuda_doctor --deep --json",
        )
    } else {
        Outcome::error(what, &e)
    }
}

/// The semaphore exported as an fd and imported again; a Vulkan signal of one is
/// seen through the other.
fn semaphore_vulkan_only(lab: &mut Lab, s: &Semaphore) -> std::result::Result<String, Outcome> {
    let fd = s
        .export_fd()
        .map_err(sem_err("vkcuda_semaphore_export_fd"))?;
    let twin = Semaphore::import_fd(&lab.ctx, fd.as_fd(), s.kind(), None)
        .map_err(sem_err("vkcuda_semaphore_import_fd"))?;
    let r = match s.kind() {
        Kind::Timeline => {
            lab.run(&[], &[(s.vk_semaphore(), 1)], |_, _| {})
                .map_err(sem_err("the Vulkan signal of 1"))?;
            twin.host_wait(1, WAIT)
                .map_err(|e| stuck_or(e, "the imported semaphore waited for 1"))?;
            twin.host_signal(2)
                .map_err(sem_err("the host signal of 2"))?;
            s.host_wait(2, WAIT)
                .map_err(|e| stuck_or(e, "the exported semaphore waited for 2"))?;
            Ok("Vulkan only (CUDA part skipped: see deep.cuda): exported as an fd and imported again; \
                a Vulkan signal of 1 seen through the import, a host signal of 2 through the export"
                .into())
        }
        Kind::Binary => {
            lab.run(&[], &[(s.vk_semaphore(), 0)], |_, _| {})
                .map_err(sem_err("the Vulkan signal"))?;
            lab.run(&[(twin.vk_semaphore(), 0)], &[], |_, _| {})
                .map_err(|e| stuck_or(e, "a Vulkan wait on the imported semaphore"))?;
            Ok("Vulkan only (CUDA part skipped: see deep.cuda): exported as an fd and imported again; \
                a Vulkan signal of the export waited for through the import"
                .into())
        }
    };
    if lab.stuck {
        std::mem::forget(twin);
    }
    r
}
