//! The committed include/vkcuda.h must be exactly what cbindgen generates from
//! src/ffi. `scripts/gen-header.sh` (VKCUDA_UPDATE_HEADER=1) rewrites it.

use std::path::PathBuf;

fn after_includes() -> String {
    let major = env!("CARGO_PKG_VERSION_MAJOR");
    let minor = env!("CARGO_PKG_VERSION_MINOR");
    let patch = env!("CARGO_PKG_VERSION_PATCH");
    format!(
        r#"
#if defined(_WIN32)
#define VKCUDA_API
#elif defined(__GNUC__) || defined(__clang__)
#define VKCUDA_API __attribute__((visibility("default")))
#else
#define VKCUDA_API
#endif

#if defined(__GNUC__) || defined(__clang__)
#define VKCUDA_NODISCARD __attribute__((warn_unused_result))
#elif defined(__cplusplus) && __cplusplus >= 201703L
#define VKCUDA_NODISCARD [[nodiscard]]
#else
#define VKCUDA_NODISCARD
#endif

/** Packs a version as vkcuda_version() returns it. */
#define VKCUDA_MAKE_VERSION(major, minor, patch) \
  ((((uint32_t)(major)) << 22U) | (((uint32_t)(minor)) << 12U) | ((uint32_t)(patch)))
#define VKCUDA_VERSION_MAJOR {major}
#define VKCUDA_VERSION_MINOR {minor}
#define VKCUDA_VERSION_PATCH {patch}
/** The version of this header; compare with vkcuda_version() at run time. */
#define VKCUDA_VERSION VKCUDA_MAKE_VERSION(VKCUDA_VERSION_MAJOR, VKCUDA_VERSION_MINOR, VKCUDA_VERSION_PATCH)
"#
    )
}

fn generate() -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut config =
        cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml");
    config.after_includes = Some(after_includes());
    let mut out = Vec::new();
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(root.join("src/ffi/mod.rs"))
        .generate()
        .expect("cbindgen failed")
        .write(&mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn header_is_up_to_date() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("include/vkcuda.h");
    let fresh = generate();
    if std::env::var_os("VKCUDA_UPDATE_HEADER").is_some() {
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "include/vkcuda.h is stale: run scripts/gen-header.sh and commit the result"
    );
}

#[test]
fn header_version_macros_match_cargo() {
    let header = generate();
    for (name, value) in [
        ("VKCUDA_VERSION_MAJOR", env!("CARGO_PKG_VERSION_MAJOR")),
        ("VKCUDA_VERSION_MINOR", env!("CARGO_PKG_VERSION_MINOR")),
        ("VKCUDA_VERSION_PATCH", env!("CARGO_PKG_VERSION_PATCH")),
    ] {
        assert!(
            header.contains(&format!("#define {name} {value}\n")),
            "{name} != {value}"
        );
    }
    let packed = (env!("CARGO_PKG_VERSION_MAJOR").parse::<u32>().unwrap() << 22)
        | (env!("CARGO_PKG_VERSION_MINOR").parse::<u32>().unwrap() << 12)
        | env!("CARGO_PKG_VERSION_PATCH").parse::<u32>().unwrap();
    assert_eq!(vkcuda::ffi::vkcuda_version(), packed);
    let s = unsafe { std::ffi::CStr::from_ptr(vkcuda::ffi::vkcuda_version_string()) };
    assert_eq!(s.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
}
