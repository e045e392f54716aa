//! Stand-in drivers for the tests that need a CUDA driver on a machine without
//! one: tests/fake_cuda/libcuda.c, built by the C compiler.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

/// Builds tests/fake_cuda/libcuda.c (with `extra` compiler arguments) as
/// libcuda.so.1 with a libcuda.so link to it, and returns its directory (put it
/// first in LD_LIBRARY_PATH).
///
/// Tests run on threads and their child processes load the library while other
/// tests ask for it, and test executables may run side by side (nextest), so a
/// library is never written where a child may be loading it:
/// - the directory is `$CARGO_TARGET_TMPDIR/stand-in/<name>-<hash>`, the hash over
///   the source, `extra` and `name`: one directory per build content, and a
///   library already there is the same build, used as it is;
/// - the compiler writes a temporary file of this process in that directory,
///   renamed into place when complete (a rename replaces a name atomically: a
///   loader sees no file or a whole one, never a half-written one);
/// - the link is made the same way, once;
/// - within a process each build is done once, under a lock (later calls return
///   the directory at once).
pub fn fake_cuda_driver(name: &str, extra: &[&str]) -> PathBuf {
    use std::collections::BTreeMap;
    use std::hash::{Hash, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};

    static BUILT: Mutex<BTreeMap<(String, Vec<String>), PathBuf>> = Mutex::new(BTreeMap::new());
    static TEMP: AtomicU64 = AtomicU64::new(0);

    let key = (
        name.to_string(),
        extra.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
    );
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(dir) = built.get(&key) {
        return dir.clone();
    }

    // The repository's tests/ from either crate (the root's or capi/).
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|d| d.join("tests/fake_cuda/libcuda.c"))
        .find(|p| p.exists())
        .expect("tests/fake_cuda/libcuda.c");
    let source = std::fs::read(&src).expect("tests/fake_cuda/libcuda.c");
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (&source, &key).hash(&mut h);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("stand-in")
        .join(format!("{name}-{:016x}", h.finish()));
    std::fs::create_dir_all(&dir).unwrap();
    // A name of this process and call only: no other writer, no reader.
    let temp = |what: &str| {
        dir.join(format!(
            ".{what}.{}.{}",
            std::process::id(),
            TEMP.fetch_add(1, Ordering::Relaxed)
        ))
    };

    let lib = dir.join("libcuda.so.1");
    if !lib.exists() {
        let out = temp("libcuda.so.1");
        let status = Command::new("cc")
            .args([
                "-shared", "-fPIC", "-O1", "-Wall", "-Wextra", "-Werror", "-o",
            ])
            .arg(&out)
            .arg(&src)
            .args(extra)
            .status()
            .expect("a C compiler (cc) to build the fake libcuda");
        if !status.success() {
            let _ = std::fs::remove_file(&out);
            panic!("building the fake libcuda ({name}, {extra:?}) failed: {status}");
        }
        std::fs::rename(&out, &lib).unwrap();
    }
    // cudarc tries libcuda.so before libcuda.so.1: without this name a machine with
    // the NVIDIA driver (its libcuda.so in the system path) loads the real driver.
    let link = dir.join("libcuda.so");
    if std::fs::read_link(&link).ok() != Some(PathBuf::from("libcuda.so.1")) {
        let tmp = temp("libcuda.so");
        std::os::unix::fs::symlink("libcuda.so.1", &tmp).unwrap();
        std::fs::rename(&tmp, &link).unwrap();
    }
    built.insert(key, dir.clone());
    dir
}

/// What the stand-in driver still holds (allocations, mappings, imports,
/// retains); it must be loaded as `libcuda.so.1` (built with that soname).
pub fn fake_live() -> i32 {
    // SAFETY: dlopen with RTLD_NOLOAD of a loaded library, and its exported
    // `int fake_cuda_live(void)`.
    unsafe {
        let h = libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
        assert!(!h.is_null(), "the fake driver is loaded");
        let f = libc::dlsym(h, c"fake_cuda_live".as_ptr());
        assert!(!f.is_null());
        let f: extern "C" fn() -> i32 = std::mem::transmute(f);
        let n = f();
        libc::dlclose(h);
        n
    }
}
