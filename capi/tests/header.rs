//! The committed include/vkcuda.h must be exactly what cbindgen generates from
//! capi/src. `VKCUDA_UPDATE_HEADER=1 cargo test -p vkcuda-c --test header` rewrites it.

use std::path::PathBuf;

fn after_includes() -> String {
    let major = env!("CARGO_PKG_VERSION_MAJOR");
    let minor = env!("CARGO_PKG_VERSION_MINOR");
    let patch = env!("CARGO_PKG_VERSION_PATCH");
    format!(
        r#"
/*
 * VKCUDA_NODISCARD marks the fallible functions: dropping their vkcuda_result
 * warns, and a (void) cast says it is dropped on purpose. It is [[nodiscard]] in
 * C++17 and C23, Clang's warn_unused_result before those, and nothing in older C
 * under GCC (whose warn_unused_result no cast can silence). VKCUDA_API gives the
 * functions default visibility; it uses the [[...]] syntax wherever
 * VKCUDA_NODISCARD does, since the two syntaxes cannot be mixed in that order.
 */
#if defined(__cplusplus) && __cplusplus >= 201703L
#define VKCUDA_NODISCARD [[nodiscard]]
#elif !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ > 201710L && defined(__has_c_attribute)
#if __has_c_attribute(nodiscard)
#define VKCUDA_NODISCARD [[nodiscard]]
#endif
#endif
#if defined(VKCUDA_NODISCARD) && !defined(_WIN32) && (defined(__GNUC__) || defined(__clang__))
#define VKCUDA_API [[gnu::visibility("default")]]
#endif
/*
 * VKCUDA_DEPRECATED("use vkcuda_x") marks a function kept under an old name for
 * one minor release (the ABI policy in README.md): calling it warns with the
 * message. [[deprecated]] where the [[...]] syntax is in use (C++14, C23), GCC's
 * and Clang's deprecated attribute otherwise, nothing elsewhere.
 */
#if defined(VKCUDA_NODISCARD) || (defined(__cplusplus) && __cplusplus >= 201402L && !defined(__GNUC__) && !defined(__clang__))
#define VKCUDA_DEPRECATED(msg) [[deprecated(msg)]]
#elif defined(__GNUC__) || defined(__clang__)
#define VKCUDA_DEPRECATED(msg) __attribute__((deprecated(msg)))
#elif defined(_MSC_VER)
#define VKCUDA_DEPRECATED(msg) __declspec(deprecated(msg))
#else
#define VKCUDA_DEPRECATED(msg)
#endif
#ifndef VKCUDA_NODISCARD
#if defined(__clang__)
#define VKCUDA_NODISCARD __attribute__((warn_unused_result))
#else
#define VKCUDA_NODISCARD
#endif
#endif
#ifndef VKCUDA_API
#if !defined(_WIN32) && (defined(__GNUC__) || defined(__clang__))
#define VKCUDA_API __attribute__((visibility("default")))
#else
#define VKCUDA_API
#endif
#endif

/** Packs a version as vkcuda_version() returns it. @ingroup library */
#define VKCUDA_MAKE_VERSION(major, minor, patch) \
  ((((uint32_t)(major)) << 22U) | (((uint32_t)(minor)) << 12U) | ((uint32_t)(patch)))
/** The major version of this header. @ingroup library */
#define VKCUDA_VERSION_MAJOR {major}
/** The minor version of this header. @ingroup library */
#define VKCUDA_VERSION_MINOR {minor}
/** The patch version of this header. @ingroup library */
#define VKCUDA_VERSION_PATCH {patch}
/** The version of this header; compare with vkcuda_version() at run time. @ingroup library */
#define VKCUDA_VERSION VKCUDA_MAKE_VERSION(VKCUDA_VERSION_MAJOR, VKCUDA_VERSION_MINOR, VKCUDA_VERSION_PATCH)
/** The major version of a packed version (VKCUDA_VERSION, vkcuda_version()). @ingroup library */
#define VKCUDA_VERSION_GET_MAJOR(version) (((uint32_t)(version)) >> 22U)
/** The minor version of a packed version. @ingroup library */
#define VKCUDA_VERSION_GET_MINOR(version) ((((uint32_t)(version)) >> 12U) & 0x3FFU)
/** The patch version of a packed version. @ingroup library */
#define VKCUDA_VERSION_GET_PATCH(version) (((uint32_t)(version)) & 0xFFFU)
"#
    )
}

fn generate() -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut config =
        cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml");
    config.after_includes = Some(after_includes());
    let mut out = Vec::new();
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(root.join("capi/src/lib.rs"))
        .generate()
        .expect("cbindgen failed")
        .write(&mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn header_is_up_to_date() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("include/vkcuda.h");
    let fresh = generate();
    if std::env::var_os("VKCUDA_UPDATE_HEADER").is_some() {
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "include/vkcuda.h is stale: run `VKCUDA_UPDATE_HEADER=1 cargo test -p vkcuda-c --test header` and commit the result"
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
    assert_eq!(vkcuda_c::vkcuda_version(), packed);
    let s = unsafe { std::ffi::CStr::from_ptr(vkcuda_c::vkcuda_version_string()) };
    assert_eq!(s.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
}

/// Every declaration of the header is documented and belongs to one of the
/// Doxygen groups the header defines (context, buffer, batch, image, sync, present,
/// share, library), so the generated pages list each object's types with its functions.
#[test]
fn every_declaration_is_in_a_group() {
    let header = generate();
    let groups: Vec<&str> = header
        .lines()
        .filter_map(|l| l.strip_prefix("/** @defgroup "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        groups,
        ["context", "buffer", "batch", "image", "sync", "present", "share", "library"]
    );
    let lines: Vec<&str> = header.lines().collect();
    let mut missing = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let declares = l.starts_with("typedef ")
            || l.starts_with("VKCUDA_API")
            || (l.starts_with("#define VKCUDA_")
                && !l.starts_with("#define VKCUDA_API")
                && !l.starts_with("#define VKCUDA_NODISCARD")
                && !l.starts_with("#define VKCUDA_DEPRECATED")
                && !l.starts_with("#define VKCUDA_H"));
        if !declares {
            continue;
        }
        // The doc comment right above: " */" then back to "/**".
        let mut doc = String::new();
        if i > 0 && lines[i - 1].trim_end() == " */" {
            let mut j = i - 1;
            while j > 0 && !lines[j].starts_with("/**") {
                j -= 1;
            }
            doc = lines[j..i].join("\n");
        } else if i > 0 && lines[i - 1].starts_with("/**") && lines[i - 1].ends_with("*/") {
            doc = lines[i - 1].to_string();
        }
        let group = doc
            .split("@ingroup ")
            .nth(1)
            .and_then(|g| g.split_whitespace().next());
        match group {
            Some(g) if groups.contains(&g) => {}
            _ => missing.push(l.to_string()),
        }
    }
    assert!(
        missing.is_empty(),
        "declarations without a doc comment naming a group (@ingroup context|buffer|image|sync|share|library):\n{}",
        missing.join("\n")
    );
}

/// The Rust library's error codes are the header's `vkcuda_result` values.
#[test]
fn errors_carry_the_c_codes() {
    use vkcuda::{Error, ErrorKind};
    use vkcuda_c::vkcuda_result::*;
    for (kind, code) in [
        (ErrorKind::InvalidArgument, VKCUDA_ERROR_INVALID_ARGUMENT),
        (ErrorKind::NullPointer, VKCUDA_ERROR_NULL_POINTER),
        (ErrorKind::CudaUnavailable, VKCUDA_ERROR_CUDA_UNAVAILABLE),
        (ErrorKind::Unsupported, VKCUDA_ERROR_UNSUPPORTED),
        (ErrorKind::Timeout, VKCUDA_ERROR_TIMEOUT),
        (ErrorKind::PermissionDenied, VKCUDA_ERROR_PERMISSION_DENIED),
        (ErrorKind::DeviceLost, VKCUDA_ERROR_DEVICE_LOST),
    ] {
        assert_eq!(kind.code(), code as i32, "{kind:?}");
    }
    let e = Error::new(ErrorKind::Timeout, "late");
    assert_eq!((e.to_string(), e.code()), ("late".to_string(), -11));
    let dyn_error: Box<dyn std::error::Error + Send + Sync> = Box::new(e);
    assert_eq!(dyn_error.to_string(), "late");
}
