//! Where the Vulkan loader looks for driver manifests, as it looks.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::doctor::types::env_bytes;

pub(crate) fn split_paths(v: &OsStr) -> Vec<PathBuf> {
    v.as_bytes()
        .split(|b| *b == b':')
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(OsStr::from_bytes(p)))
        .collect()
}

/// The loader's driver search: where it looks, and the variables it takes that
/// are not UTF-8.
pub(crate) struct Search {
    pub(crate) paths: Vec<(PathBuf, String)>,
    /// (name, value with its undecodable bytes escaped), in the order read.
    pub(crate) undecodable: Vec<(&'static str, String)>,
    /// The variable that replaces the search (`VK_DRIVER_FILES` or
    /// `VK_ICD_FILENAMES`), if one is set.
    pub(crate) replaced_by: Option<&'static str>,
}

pub(crate) fn search() -> Search {
    let mut s = Search {
        paths: Vec::new(),
        undecodable: Vec::new(),
        replaced_by: None,
    };
    let read = |s: &mut Search, name: &'static str| -> Option<OsString> {
        let v = env_bytes(name)?;
        if v.to_str().is_none() {
            s.undecodable.push((name, format!("{v:?}")));
        }
        Some(v)
    };
    for name in ["VK_DRIVER_FILES", "VK_ICD_FILENAMES"] {
        if let Some(v) = read(&mut s, name) {
            s.paths = split_paths(&v)
                .into_iter()
                .map(|p| (p, name.to_string()))
                .collect();
            s.replaced_by = Some(name);
            return s;
        }
    }
    if let Some(v) = read(&mut s, "VK_ADD_DRIVER_FILES") {
        let add = split_paths(&v)
            .into_iter()
            .map(|p| (p, "VK_ADD_DRIVER_FILES".to_string()));
        s.paths.extend(add);
    }
    let home = read(&mut s, "HOME").map(PathBuf::from);
    let icd = |base: &Path, src: &str| (base.join("vulkan/icd.d"), src.to_string());
    match read(&mut s, "XDG_CONFIG_HOME") {
        Some(h) => s.paths.push(icd(Path::new(&h), "$XDG_CONFIG_HOME")),
        None => {
            if let Some(h) = &home {
                s.paths.push(icd(&h.join(".config"), "$HOME/.config"))
            }
        }
    }
    let dirs = read(&mut s, "XDG_CONFIG_DIRS").unwrap_or_else(|| "/etc/xdg".into());
    for d in split_paths(&dirs) {
        s.paths.push(icd(&d, "$XDG_CONFIG_DIRS"));
    }
    s.paths.push(icd(Path::new("/etc"), "/etc"));
    match read(&mut s, "XDG_DATA_HOME") {
        Some(h) => s.paths.push(icd(Path::new(&h), "$XDG_DATA_HOME")),
        None => {
            if let Some(h) = &home {
                s.paths
                    .push(icd(&h.join(".local/share"), "$HOME/.local/share"))
            }
        }
    }
    let dirs =
        read(&mut s, "XDG_DATA_DIRS").unwrap_or_else(|| "/usr/local/share:/usr/share".into());
    for d in split_paths(&dirs) {
        s.paths.push(icd(&d, "$XDG_DATA_DIRS"));
    }
    s
}

/// The directories and files the Vulkan loader searches for ICD manifests, in its
/// order, with where each came from (LoaderDriverInterface.md, "Driver Discovery
/// on Linux"): `VK_DRIVER_FILES` (or the older `VK_ICD_FILENAMES`) replaces the
/// search; otherwise `VK_ADD_DRIVER_FILES`, then `$XDG_CONFIG_HOME`,
/// `$XDG_CONFIG_DIRS`, `/etc`, `$XDG_DATA_HOME` and `$XDG_DATA_DIRS`, each with
/// `vulkan/icd.d` appended. The variables are taken as bytes, as the loader takes
/// them, so a value that is not UTF-8 still names the paths it names.
pub(crate) fn icd_search_paths() -> Vec<(PathBuf, String)> {
    search().paths
}
