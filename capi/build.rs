//! Gives the cdylib its soname on Linux, so programs linked against it record the
//! ABI they were built for. While the version is 0.x a minor release may change the
//! ABI, so the soname carries the minor version (`libvkcuda.so.0.3`); from 1.0 on
//! it is `libvkcuda.so.<major>` (docs/GUIDE.md, "Names and ABI"). CMake installs the
//! real file `libvkcuda.so.<version>` with the soname and `.so` links. Nothing else:
//! this script never writes the header (`VKCUDA_UPDATE_HEADER=1 cargo test -p vkcuda-c --test header` does, and
//! `capi/tests/header.rs` checks it).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" {
        let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_else(|_| "0".into());
        let minor = std::env::var("CARGO_PKG_VERSION_MINOR").unwrap_or_else(|_| "0".into());
        let abi = if major == "0" {
            format!("0.{minor}")
        } else {
            major
        };
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libvkcuda.so.{abi}");
    }
}
