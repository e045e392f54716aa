//! include/vkcuda.hpp wraps every function of include/vkcuda.h: each `vkcuda_*`
//! function the C header declares (read with the misuse suite's header parser, so a
//! new export is covered without a list here) must be called in the C++ header's
//! code (comments do not count), or be in `EXEMPT` below with the reason.

#[allow(dead_code)] // the misuse suite's parser; only the prototypes are used here
#[path = "misuse/header.rs"]
mod header;

use std::path::PathBuf;

/// C functions vkcuda.hpp deliberately does not wrap, each with why.
const EXEMPT: &[(&str, &str)] = &[
    // The 0.1 names kept for one minor (capi/src/deprecated.rs) are for C programs
    // written against 0.1; C++ code gets the new names only.
    (
        "vkcuda_query_physical_device",
        "deprecated 0.1 alias of vkcuda_physical_device_query",
    ),
    (
        "vkcuda_enumerate_physical_devices",
        "deprecated 0.1 alias of vkcuda_physical_devices_enumerate",
    ),
    (
        "vkcuda_enumerate_device_extensions",
        "deprecated 0.1 alias of vkcuda_device_extensions_enumerate",
    ),
    (
        "vkcuda_context_get_vulkan",
        "deprecated 0.1 alias of vkcuda_context_get_vulkan_handles",
    ),
    (
        "vkcuda_context_get_cuda",
        "deprecated 0.1 alias of vkcuda_context_get_cuda_info",
    ),
    (
        "vkcuda_cuda_driver_version",
        "deprecated 0.1 alias of vkcuda_cuda_driver_get_version",
    ),
    (
        "vkcuda_get_live_objects",
        "deprecated 0.1 alias of vkcuda_live_objects_get",
    ),
];

/// Whether `code` contains `name` as a whole identifier.
fn mentions(code: &str, name: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    code.match_indices(name).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        let after = code[i + name.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// The uncovered functions of `c_header`, given the text of a C++ header.
fn uncovered(c_header: &header::Header, cpp: &str) -> Vec<String> {
    let code = header::strip_comments(cpp);
    c_header
        .protos
        .iter()
        .map(|p| p.name.as_str())
        .filter(|name| !EXEMPT.iter().any(|(e, _)| e == name) && !mentions(&code, name))
        .map(str::to_string)
        .collect()
}

#[test]
fn cpp_header_wraps_every_c_function() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let h = header::header();
    assert!(h.protos.len() >= 90, "parsed {} prototypes", h.protos.len());
    let cpp = std::fs::read_to_string(root.join("include/vkcuda.hpp")).expect("include/vkcuda.hpp");
    let missing = uncovered(&h, &cpp);
    assert!(
        missing.is_empty(),
        "include/vkcuda.hpp does not call these functions of include/vkcuda.h (wrap each, as a \
         method of its object or a free function, or add it to EXEMPT in capi/tests/cpp_coverage.rs \
         with the reason):\n  {}",
        missing.join("\n  ")
    );
    // An exemption for a function the header no longer has is stale.
    for (name, why) in EXEMPT {
        assert!(
            h.protos.iter().any(|p| p.name == *name),
            "EXEMPT lists {name} ({why}), which include/vkcuda.h no longer declares: remove it"
        );
    }
    println!(
        "vkcuda.hpp covers {} of the {} functions of vkcuda.h ({} exempt)",
        h.protos.len() - EXEMPT.len(),
        h.protos.len(),
        EXEMPT.len()
    );
}

/// The check itself: a function named only in a comment, or as part of a longer
/// name, is not covered.
#[test]
fn coverage_check_reads_code_not_comments() {
    let h = header::parse_header(
        "VKCUDA_API void vkcuda_a(void);\nVKCUDA_API void vkcuda_b(void);\n\
         VKCUDA_API void vkcuda_c(void);\nVKCUDA_API void vkcuda_query_physical_device(void);",
    );
    let cpp = "// vkcuda_a\n/* vkcuda_b */ inline void f() { vkcuda_c(); vkcuda_a_longer(); }";
    assert_eq!(uncovered(&h, cpp), ["vkcuda_a", "vkcuda_b"]);
}
