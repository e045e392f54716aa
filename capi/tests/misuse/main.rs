//! The misuse matrix: every function of `include/vkcuda.h`, called the wrong way.
//!
//! The list of functions and their parameters comes from the header itself, so a
//! new export without misuse cases here fails `every_export_has_misuse_cases`. For
//! each function the table (the group modules below) must have a case for
//!   - every pointer and handle parameter: NULL, alone (`null:NAME`, or `null-ok:NAME`
//!     where NULL is documented as valid),
//!   - every other parameter (sizes, levels, values, enums, fds, flags), and
//!   - every field of every input struct, nested structs included
//!     (`info->extent.width`, `description->image.description.format`),
//!
//! or an explicit "any value is valid" entry saying why (`Matrix::any`).
//!
//! Every case that expects a failure checks that the call returns its error code,
//! that the thread's message names the function and says something (NULL rows also
//! that it names the argument: `nulls.rs`), that outputs were not written (handle
//! outputs set to NULL, other outputs byte for byte as they were), and, after each
//! case, that the open fd count and the live objects (`vkcuda::live_objects`, the
//! counters `vkcuda_live_objects_get` reads) are back where they
//! were. A panic inside the library
//! would show as `VKCUDA_ERROR_PANIC` and fail the case; a crash fails the run.
//!
//! The matrix runs on a Vulkan-only context (lavapipe here; every CUDA function
//! then returns `VKCUDA_ERROR_CUDA_UNAVAILABLE`), in a child process with the fake
//! libcuda of tests/fake_cuda (a driver whose device matches no Vulkan device), and
//! on a GPU also on a CUDA-paired context. Cases that need an object the device
//! cannot make (semaphores without `VK_KHR_external_semaphore_fd` on lavapipe) are
//! counted as skipped. `VKCUDA_MISUSE_VERBOSE=1` prints every case with its message.
//!
//! # Layout
//! One module per group of functions (the header's Doxygen groups), each with a
//! `pub fn cases(m: &mut Matrix)` that registers its cases:
//!   - `library`, `context`, `buffer`, `host_buffer` (staging buffers), `image`,
//!     `semaphore`, `handoff` (the barrier functions), `share` (descriptions and sockets), `planar` (multi-planar images:
//!     the plane getters, the pitched copies, the multi-fd sharing calls);
//!   - `outputs`: every export with a handle output, made to fail, must leave NULL
//!     there (`every_handle_output_is_null_after_a_failure`);
//!   - the framework: `header` (the header's prototypes and what must be covered),
//!     `env` (the context and objects the cases use), `matrix` (`Matrix::case`,
//!     `Call::refused`, `Poison`, `mutations`), `nulls` (the NULL table and its
//!     runner), `runner` (runs the table, checks fds and live objects per case).
//!
//! # Adding a group (new functions, a new object)
//! 1. Write `capi/tests/misuse/NAME.rs` with `pub fn cases(m: &mut Matrix)`: first its NULL
//!    rows, `m.nulls(vec![null("vkcuda_x_get", "x", |e, o| unsafe { ... }), ...])`
//!    (see `nulls.rs`; a getter's two rows: `m.getter(fn, [object, output], |e| e.x, fn)`),
//!    then `m.case(fn, "kind:param", |c| ...)` for every other
//!    parameter and input-struct field, or `m.any(fn, path, why)`.
//! 2. Add one line `NAME,` to the `groups!` list below.
//!
//! `every_export_has_misuse_cases` then tells what is still missing.

#[path = "../support/mod.rs"]
mod support;

#[path = "../../../tests/doc_claims/mod.rs"]
mod doc_claims;

mod env;
mod header;
mod matrix;
mod nulls;
mod outputs;
mod runner;

use env::{Driver, Env};
use header::{header, parse_header, requirements};
use matrix::Matrix;
use runner::run_and_report;
use support::*;

/// Declares the group modules and `matrix()`, which registers the cases of each.
macro_rules! groups {
    ($($group:ident,)*) => {
        $(mod $group;)*

        /// The whole table: every group's cases.
        fn matrix() -> Matrix {
            let mut m = Matrix::default();
            $($group::cases(&mut m);)*
            m
        }
    };
}

// One line per group: `NAME,` for capi/tests/misuse/NAME.rs.
groups! {
    library,
    context,
    buffer,
    host_buffer,
    batch,
    image,
    semaphore,
    graph,
    handoff,
    present,
    share,
    planar,
    dlpack,
    doctor,
    deprecated,
}

/// Every function of the header has a table entry, and every entry covers every
/// parameter and input-struct field of its function; no entry names a function
/// the header does not have.
#[test]
fn every_export_has_misuse_cases() {
    let _g = serial();
    let h = header();
    assert!(h.protos.len() >= 60, "parsed {} prototypes", h.protos.len());
    assert!(h.enums.contains("vkcuda_result"));
    let m = matrix();
    let mut missing = Vec::new();
    let mut any = 0;
    for p in &h.protos {
        let Some(entry) = m.entries.get(p.name.as_str()) else {
            missing.push(format!("{}: no entry in the misuse table", p.name));
            continue;
        };
        assert!(!entry.cases.is_empty(), "{}", p.name);
        for (path, null) in requirements(p, &h) {
            if entry.any.contains_key(&path) {
                any += 1;
                continue;
            }
            let covered = entry.cases.iter().any(|c| {
                let (kind, at) = c.label.split_once(':').unwrap_or(("", ""));
                at == path && (!null || kind == "null" || kind == "null-ok")
            });
            if !covered {
                missing.push(format!(
                    "{}: no {}case for `{path}`",
                    p.name,
                    if null { "null:/null-ok: " } else { "" }
                ));
            }
        }
    }
    for name in m.entries.keys() {
        if !h.protos.iter().any(|p| p.name == *name) {
            missing.push(format!("{name}: in the table but not in the header"));
        }
    }
    println!(
        "{} functions in include/vkcuda.h, {} misuse cases, {} parameters or fields declared valid for any value",
        h.protos.len(),
        m.count(),
        any
    );
    assert!(
        missing.is_empty(),
        "the misuse table is incomplete:\n  {}",
        missing.join("\n  ")
    );
}

/// The case count and the "any value is valid" count the docs state (README,
/// docs/RELIABILITY.md) are the matrix's: a new case makes this fail until the docs
/// say the new number.
#[test]
fn documented_counts_are_the_matrix() {
    let m = matrix();
    let any: usize = m.entries.values().map(|e| e.any.len()).sum();
    let mut bad =
        doc_claims::check_count(" misuse cases", m.count() as u64, "the matrix's case count");
    bad.extend(doc_claims::check_count(
        " parameters or fields declared",
        any as u64,
        "the matrix's count of values declared valid",
    ));
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn misuse_matrix_vulkan_only() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let driver = if std::env::var_os("VKCUDA_MISUSE_FAKE_DRIVER").is_some() {
        Driver::Fake
    } else {
        let mut v = 0;
        match unsafe { vkcuda_cuda_driver_get_version(&mut v) } {
            VKCUDA_SUCCESS => Driver::Real,
            _ => Driver::None,
        }
    };
    let env = Env::new(ctx, false, driver);
    run_and_report(&env, &matrix());
    drop(env);
    unsafe { vkcuda_context_destroy(ctx) };
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn misuse_matrix_cuda() {
    let _g = serial();
    let Some(ctx) = cuda_context_or_skip("misuse_matrix_cuda") else {
        return;
    };
    let env = Env::new(ctx, true, Driver::Real);
    run_and_report(&env, &matrix());
    drop(env);
    unsafe { vkcuda_context_destroy(ctx) };
}

/// The matrix once more with the fake libcuda loaded (a driver is there, but its
/// device matches no Vulkan device), in a child process.
#[test]
fn misuse_matrix_with_fake_driver() {
    let _g = serial();
    let dir = fake_cuda_driver("fake-cuda-misuse", &[]);
    let out = this_test("misuse_matrix_vulkan_only", false)
        .env("LD_LIBRARY_PATH", library_path_with(&dir))
        .env("VKCUDA_MISUSE_FAKE_DRIVER", "1")
        .env_remove(vkcuda::pairing::CUDA_DISABLE_ENV)
        .output()
        .unwrap();
    let text = child_passed("misuse_matrix_vulkan_only", &out);
    assert!(text.contains("CUDA driver: Fake"), "{text}");
}

#[test]
fn header_parser_reads_what_it_should() {
    let h = parse_header(
        "/* c */ VKCUDA_API VKCUDA_NODISCARD enum vkcuda_result vkcuda_x(const struct s *info, // x\n uint32_t level, int32_t *fd);\n\
         typedef struct s { uint32_t flags; VkExtent3D extent; uint8_t uuid[16]; } s;\n\
         VKCUDA_API void vkcuda_y(void);\n\
         VKCUDA_API VKCUDA_NODISCARD VKCUDA_DEPRECATED(\"use vkcuda_y\") enum vkcuda_result vkcuda_z(uint32_t *count);",
    );
    assert_eq!(h.protos.len(), 3);
    assert_eq!(h.protos[2].name, "vkcuda_z");
    assert_eq!(h.protos[2].params[0].name, "count");
    assert_eq!(h.protos[0].name, "vkcuda_x");
    assert_eq!(h.protos[0].params[0].ty, "const struct s *");
    assert_eq!(h.protos[0].params[2].name, "fd");
    assert!(h.protos[1].params.is_empty());
    let req = requirements(&h.protos[0], &h);
    let paths: Vec<_> = req
        .iter()
        .map(|(p, n)| format!("{p}{}", if *n { "*" } else { "" }))
        .collect();
    assert_eq!(
        paths,
        [
            "info*",
            "info->flags",
            "info->extent.width",
            "info->extent.height",
            "info->extent.depth",
            "info->uuid",
            "level",
            "fd*"
        ]
    );
}
