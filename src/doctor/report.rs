//! The doctor's run: every check in order ([`run`]), and the process's own limit.

use super::container::{self, Working};
use super::types::{Options, Report, Status};
use super::{deep, devices, loader};
use crate::cuda;

/// Below this soft open-file limit the doctor fails (`process.fd_limit`): the
/// NVIDIA driver holds tens of descriptors per CUDA context and Vulkan device,
/// each export makes one more until it is imported or closed, and a process that
/// runs out fails its next export with an error that does not say why.
const FD_LIMIT_FAIL: u64 = 256;
/// Below this one it warns (1024 is the usual default soft limit).
const FD_LIMIT_WARN: u64 = 1024;

/// Runs every check: the Vulkan loader and its ICDs, the CUDA driver, each
/// device's interop support and CUDA twin, the process's limits, the container
/// (and with [`Options::with_engine`], the engine's device; with
/// [`Options::deep`], the deep self-test). Never fails: what goes wrong is a check.
pub fn run(opts: &Options) -> Report {
    let mut r = Report::default();
    let gap = container::graphics_gap(&opts.root);
    let gap = gap.as_deref();
    let loader_ok = loader::check_loader(&mut r, gap);
    let search = loader::search();
    let manifests = loader::find_manifests();
    loader::check_icds(&mut r, &search, &manifests, gap);
    loader::check_nvidia_icd(&mut r, &manifests, gap);
    let cuda_devices = devices::check_cuda(&mut r);
    let working = Working {
        nvidia_icd: manifests
            .iter()
            .find(|m| m.is_nvidia() && m.works())
            .cloned(),
        cuda: cuda::driver_status().ok(),
    };
    let blocking: Vec<String> = manifests
        .iter()
        .filter(|m| m.blocks_loader())
        .map(|m| m.path.display().to_string())
        .collect();
    if !blocking.is_empty() {
        // vkCreateInstance would read them and never return.
        r.add(
            "vulkan.devices",
            Status::Fail,
            format!(
                "not checked: the Vulkan loader would never get past {} (see {}), so no instance can be \
                 made in this environment",
                blocking.join(", "),
                blocking
                    .iter()
                    .map(|b| format!("vulkan.icd[{b}]"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "remove those entries (fix their vulkan.icd checks) and run the doctor again",
        );
    } else if loader_ok {
        devices::check_devices(&mut r, cuda_devices.as_deref(), &manifests, gap);
    } else {
        r.add(
            "vulkan.devices",
            Status::Fail,
            "not checked: the Vulkan loader did not load",
            "fix vulkan.loader first",
        );
    }
    if let Some(h) = &opts.engine {
        devices::check_engine(&mut r, h, cuda_devices.as_deref());
    }
    container::check_container(&mut r, &opts.root, &working);
    check_open_files(&mut r);
    if opts.deep {
        let not_run = if !blocking.is_empty() {
            Some("the Vulkan loader would never get past an ICD entry (see vulkan.devices)")
        } else if !loader_ok {
            Some("the Vulkan loader did not load (see vulkan.loader)")
        } else {
            None
        };
        r.checks.extend(deep::run(not_run));
    }
    r
}

// --- The process ---------------------------------------------------------------

fn check_open_files(r: &mut Report) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        r.add(
            "process.open_files",
            Status::Warn,
            "getrlimit(RLIMIT_NOFILE) failed",
            "check the open-file limit with ulimit -n",
        );
        return;
    }
    let open = std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count().to_string())
        .unwrap_or_else(|_| "?".into());
    let show = |v: u64| {
        if v == libc::RLIM_INFINITY {
            "unlimited".to_string()
        } else {
            v.to_string()
        }
    };
    let seen = format!(
        "open-file limit {} (hard {}), {open} open now",
        show(lim.rlim_cur),
        show(lim.rlim_max)
    );
    let fix = format!(
        "raise it to at least {FD_LIMIT_WARN}: ulimit -n {} in the shell that starts the program, LimitNOFILE= \
         in a systemd unit, or docker run --ulimit nofile={}:{}",
        FD_LIMIT_WARN.max(4096),
        FD_LIMIT_WARN.max(4096),
        FD_LIMIT_WARN.max(4096)
    );
    let status = if lim.rlim_cur < FD_LIMIT_FAIL {
        Status::Fail
    } else if lim.rlim_cur < FD_LIMIT_WARN {
        Status::Warn
    } else {
        Status::Pass
    };
    r.add("process.open_files", status, seen, &fix);
}
