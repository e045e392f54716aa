//! Shared libraries seen from inside the process: which file a loaded symbol came
//! from, and whether a library loads (for the doctor's ICD and driver checks).

use std::ffi::{c_void, CStr, CString};

/// The file of the loaded library that holds `addr` (`dladdr`), if the dynamic
/// loader knows it. `addr` is only looked up, never read.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn path_of(addr: *const c_void) -> Option<String> {
    if addr.is_null() {
        return None;
    }
    // SAFETY: dladdr only reads the loader's tables and fills the struct.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    if unsafe { libc::dladdr(addr, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the loader.
    Some(
        unsafe { CStr::from_ptr(info.dli_fname) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// What trying to load a library said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    /// The file the loader took (`dlinfo`'s path of the handle), when it loaded.
    pub path: Option<String>,
    /// `dlerror()` when it did not load.
    pub error: Option<String>,
    /// Which of the asked-for symbols it lacks.
    pub missing: Vec<String>,
}

impl Probe {
    pub fn loaded(&self) -> bool {
        self.error.is_none()
    }
}

/// Loads `name` (a path, or a bare name for the loader's search) with
/// `RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE` and looks up `symbols`. Loading runs the
/// library's initialisers, as the Vulkan loader would; the library stays loaded
/// (`RTLD_NODELETE`): a driver's destructors running while threads it started are
/// still alive would be worse than the memory it keeps.
pub fn probe(name: &str, symbols: &[&str]) -> Probe {
    let Ok(c) = CString::new(name) else {
        return Probe {
            path: None,
            error: Some(format!("{name:?} has a NUL byte")),
            missing: Vec::new(),
        };
    };
    // SAFETY: dlopen/dlsym/dlclose on a handle this function owns.
    unsafe {
        libc::dlerror();
        let h = libc::dlopen(
            c.as_ptr(),
            libc::RTLD_NOW | libc::RTLD_LOCAL | libc::RTLD_NODELETE,
        );
        if h.is_null() {
            let e = libc::dlerror();
            let error = if e.is_null() {
                "dlopen failed".to_string()
            } else {
                CStr::from_ptr(e).to_string_lossy().into_owned()
            };
            return Probe {
                path: None,
                error: Some(error),
                missing: Vec::new(),
            };
        }
        let mut missing = Vec::new();
        let mut path = None;
        for s in symbols {
            let cs = CString::new(*s).unwrap_or_default();
            let p = libc::dlsym(h, cs.as_ptr());
            if p.is_null() {
                missing.push(s.to_string());
            } else if path.is_none() {
                path = path_of(p);
            }
        }
        libc::dlclose(h);
        Probe {
            path,
            error: None,
            missing,
        }
    }
}
