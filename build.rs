//! Gives the cdylib the soname `libvkcuda.so.<major>` on Linux, so programs linked
//! against it record `libvkcuda.so.0` (CMake installs the `.so.0.1.0` file with the
//! `.so.0` and `.so` links). Nothing else: this script never writes the header
//! (`scripts/gen-header.sh` does, and `tests/header.rs` checks it).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" {
        let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_else(|_| "0".into());
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libvkcuda.so.{major}");
    }
}
