//! The doctor: every check that decides whether Vulkan-CUDA interop will work on
//! this machine, as data (name, status, what was seen, the fix in one sentence),
//! plus the table pairing each Vulkan device with the CUDA device of the same
//! UUID. `vkcuda_doctor_run` hands it to C, `tools/vkcuda_doctor.c` prints it.
//!
//! The checks that match one of the library's errors take their text from the
//! function that makes that error (`cuda::driver_status`, `pairing::
//! mismatch_diagnosis`, `standalone::loader_missing`), so the doctor and a failing
//! call never disagree.
//!
//! What the doctor reads: the process's environment (`VK_DRIVER_FILES`,
//! `VK_ICD_FILENAMES`, `VK_ADD_DRIVER_FILES`, `XDG_*`, `NVIDIA_*`, `container`), the
//! Vulkan loader and the CUDA driver as this process loads them, the open-file
//! limit, and files under [`Options::root`] (`/` unless a test says otherwise) for
//! the container checks: `/.dockerenv`, `/run/.containerenv`, `/proc/1/cgroup`,
//! `/dev/nvidia*` and the driver's libraries.
//!
//! ```
//! use vkcuda::doctor::{self, Options, Status};
//!
//! let report = doctor::run(&Options::default());
//! for c in &report.checks {
//!     if c.status != Status::Pass {
//!         println!("{:<28} {}: {} ({})", c.name, c.status.name(), c.seen, c.fix);
//!     }
//! }
//! // Interop works when nothing failed (never on a machine without a CUDA GPU).
//! println!("ready: {}", report.ready());
//! assert!(report.to_json().contains("\"checks\""));

// The modules form a tree: `report` runs the others in order; `loader`,
// `devices`, `container` and `deep` make the checks; `json` writes the report;
// every one of them takes its shared types from `types`, which imports none.
mod container;
mod deep;
mod devices;
mod json;
mod loader;
mod report;
mod types;

pub use loader::manifest::{find_manifests, Manifest, Problem, MANIFEST_SIZE_LIMIT};
pub use report::run;
pub use types::{Check, Options, Pair, Report, Status};
