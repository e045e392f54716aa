//! The driver manifests the loader reads, read as it reads them (regular files of
//! at most [`MANIFEST_SIZE_LIMIT`] bytes, never a FIFO or a device), and whether
//! the library each names loads.

use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::search::icd_search_paths;
use crate::dynlib;

/// The most of one manifest the doctor reads. An ICD manifest is a few hundred
/// bytes; a larger file is not one, and a device such as `/dev/zero` never ends.
pub const MANIFEST_SIZE_LIMIT: u64 = 1 << 20;

/// Why an entry of the loader's search gave no usable manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The path does not exist.
    Missing,
    /// It exists but could not be opened or read (the system's words).
    Unreadable(String),
    /// Not read, and why: the loader skips it too (an entry of a variable that is
    /// neither a `*.json` name nor a directory, such as `/dev/zero`), a directory
    /// holds no manifest, or a `*.json` entry is a directory or a socket.
    Skipped(String),
    /// Not read because the Vulkan loader itself would never get past it: a
    /// FIFO or a device whose name ends in `.json`, which the loader opens as a
    /// manifest (it waits for a FIFO's writer, and reads a device such as
    /// `/dev/zero` without end). Every Vulkan program of this environment hangs.
    Blocks(String),
    /// A regular file larger than [`MANIFEST_SIZE_LIMIT`] (its size).
    TooLarge(u64),
    /// Not JSON: what the parser said, and where (from 1).
    NotJson {
        /// What the parser said.
        what: String,
        /// The line, from 1.
        line: usize,
        /// The column, from 1.
        column: usize,
    },
    /// JSON without `ICD.library_path`.
    NoLibraryPath,
}

impl Problem {
    /// What was seen, to follow the path: "does not exist", "is not valid JSON: ...".
    pub fn describe(&self) -> String {
        match self {
            Problem::Missing => "does not exist".into(),
            Problem::Unreadable(e) => format!("cannot be read ({e})"),
            Problem::Skipped(why) => format!("was skipped: {why}"),
            Problem::Blocks(why) => format!("was not read: {why}"),
            Problem::TooLarge(n) => format!(
                "was skipped: it is {n} bytes, and an ICD manifest is a few hundred (the doctor reads at \
                 most {MANIFEST_SIZE_LIMIT})"
            ),
            Problem::NotJson { what, line, column } => {
                format!("is not valid JSON: {what} at line {line}, column {column}")
            }
            Problem::NoLibraryPath => "has no ICD.library_path".into(),
        }
    }
}

/// An entry of the loader's search: an ICD manifest and what its library did, or
/// an entry that gave none and why ([`Manifest::problem`]).
#[derive(Clone, Debug)]
pub struct Manifest {
    /// Where the manifest is (or the entry that gave none).
    pub path: PathBuf,
    /// `ICD.library_path` as written.
    pub library: Option<String>,
    /// What the loader will dlopen (relative paths resolved against the manifest).
    pub resolved: Option<String>,
    pub(crate) probe: Option<dynlib::Probe>,
    /// Why it gave no manifest, or None when it is one.
    pub problem: Option<Problem>,
    /// Where it came from: "VK_DRIVER_FILES", a directory, ...
    pub source: String,
    /// The environment variable that names this path itself (not a directory
    /// holding it), if any.
    pub variable: Option<String>,
}

impl Manifest {
    /// NVIDIA's: its file or its library says so.
    pub fn is_nvidia(&self) -> bool {
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().to_lowercase())
            .unwrap_or_default();
        name.contains("nvidia")
            || self
                .library
                .as_deref()
                .is_some_and(|l| l.to_lowercase().contains("nvidia"))
    }

    /// A file the loader takes for a manifest (whether or not it is a good one):
    /// not a missing path or a skipped entry.
    pub fn found(&self) -> bool {
        !matches!(
            self.problem,
            Some(Problem::Missing | Problem::Skipped(_) | Problem::Blocks(_))
        )
    }

    /// Whether the manifest was read and its library loaded.
    pub fn works(&self) -> bool {
        self.problem.is_none()
            && self
                .probe
                .as_ref()
                .is_some_and(|p| p.loaded() && p.missing.is_empty())
    }

    /// The Vulkan loader would never get past this entry: it is a FIFO or a device
    /// named `*.json`, or the library it names is a path to something that is not
    /// a regular file (dlopen waits on a FIFO).
    pub fn blocks_loader(&self) -> bool {
        matches!(self.problem, Some(Problem::Blocks(_)))
            || self.resolved.as_deref().is_some_and(|r| {
                r.contains('/') && std::fs::metadata(r).is_ok_and(|md| !md.is_file())
            })
    }

    /// The fix for its problem (empty without one).
    pub(crate) fn problem_fix(&self) -> String {
        let path = self.path.display();
        let or_remove = match &self.variable {
            Some(v) => format!("remove it from {v}"),
            None => "remove the file".to_string(),
        };
        match &self.problem {
            None => String::new(),
            Some(Problem::Missing) => match &self.variable {
                Some(v) => format!("correct the path in {v} or remove it"),
                None => "reinstall the driver that owns this manifest".into(),
            },
            Some(Problem::Unreadable(_)) => format!(
                "make {path} readable by this user (chmod a+r), or {or_remove}"
            ),
            Some(Problem::Skipped(_)) => match &self.variable {
                Some(v) => format!(
                    "remove it from {v}, or name the driver's manifest there (a regular *.json file) or the \
                     directory that holds it"
                ),
                None => format!("replace {path} with the driver's manifest (a regular file), or remove it"),
            },
            Some(Problem::Blocks(_)) => match &self.variable {
                Some(v) => format!(
                    "remove it from {v}: the Vulkan loader opens every entry whose name ends in .json as a \
                     manifest file"
                ),
                None => format!(
                    "remove {path}: the Vulkan loader opens every *.json entry of the directory as a manifest file"
                ),
            },
            Some(Problem::TooLarge(_)) => format!("{path} is not an ICD manifest: {or_remove}"),
            Some(Problem::NotJson { line, column, .. }) => format!(
                "correct the JSON at line {line}, column {column} of {path} (or reinstall the driver that owns \
                 it), or {or_remove}: while a manifest it reads is not JSON, the Vulkan loader may fail every \
                 vkCreateInstance with VK_ERROR_OUT_OF_HOST_MEMORY"
            ),
            Some(Problem::NoLibraryPath) => format!(
                "add ICD.library_path (the driver's library) to {path} or reinstall the driver that owns it, \
                 or {or_remove}"
            ),
        }
    }
}

/// What a file is, for "skipped" messages.
fn file_kind(t: &std::fs::FileType) -> &'static str {
    if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_file() {
        "a regular file"
    } else {
        "a special file"
    }
}

/// Why a path whose name ends in `.json` but that is not a regular file is not
/// read as a manifest. The loader opens such a name as a manifest file: on a FIFO
/// it waits for a writer, on a device it reads without end.
fn not_regular(t: &std::fs::FileType) -> Problem {
    let kind = file_kind(t);
    if t.is_fifo() {
        Problem::Blocks(format!(
            "{kind} named *.json, not a regular file: the Vulkan loader opens it as a manifest and waits for a \
             writer for ever, so every Vulkan program started with this environment hangs"
        ))
    } else if t.is_char_device() || t.is_block_device() {
        Problem::Blocks(format!(
            "{kind} named *.json, not a regular file: the Vulkan loader reads it as a manifest and, for a \
             device such as /dev/zero, never reaches its end (every Vulkan program started with this \
             environment hangs or runs out of memory)"
        ))
    } else if t.is_dir() {
        Problem::Skipped(format!(
            "{kind} whose name ends in .json: the loader takes such a name for a manifest file, and a \
             directory cannot be read as one"
        ))
    } else {
        Problem::Skipped(format!("{kind}, not a regular file: not read"))
    }
}

/// The loader's test of a name: it reads an entry as a manifest file when its
/// name ends in `.json`, and lists it as a directory otherwise.
fn is_json_name(p: &Path) -> bool {
    p.as_os_str().as_bytes().ends_with(b".json")
}

/// The bytes of a manifest, or of any file the doctor reads under
/// [`Options::root`](crate::doctor::Options::root): a regular file, at most
/// [`MANIFEST_SIZE_LIMIT`] bytes, opened without blocking (a FIFO put in its place
/// after the check would otherwise wait for a writer). `/proc` files report size 0
/// and are read up to the limit.
pub(crate) fn read_capped(path: &Path) -> std::result::Result<Vec<u8>, Problem> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Problem::Missing,
        _ => Problem::Unreadable(e.to_string()),
    })?;
    if !meta.is_file() {
        return Err(not_regular(&meta.file_type()));
    }
    if meta.len() > MANIFEST_SIZE_LIMIT {
        return Err(Problem::TooLarge(meta.len()));
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| Problem::Unreadable(e.to_string()))?;
    let meta = f
        .metadata()
        .map_err(|e| Problem::Unreadable(e.to_string()))?;
    if !meta.is_file() {
        return Err(not_regular(&meta.file_type()));
    }
    let mut bytes = Vec::new();
    f.take(MANIFEST_SIZE_LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Problem::Unreadable(e.to_string()))?;
    if bytes.len() as u64 > MANIFEST_SIZE_LIMIT {
        return Err(Problem::TooLarge(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Reads one manifest (a regular file of at most [`MANIFEST_SIZE_LIMIT`] bytes)
/// and tries its library.
pub(crate) fn read_manifest(path: &Path, source: &str) -> Manifest {
    let mut m = Manifest {
        path: path.to_path_buf(),
        library: None,
        resolved: None,
        probe: None,
        problem: None,
        source: source.to_string(),
        variable: None,
    };
    let bytes = match read_capped(path) {
        Ok(b) => b,
        Err(p) => {
            m.problem = Some(p);
            return m;
        }
    };
    let v: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            let (line, column) = (e.line(), e.column());
            let text = e.to_string();
            let what = text
                .strip_suffix(&format!(" at line {line} column {column}"))
                .unwrap_or(&text)
                .to_string();
            m.problem = Some(Problem::NotJson { what, line, column });
            return m;
        }
    };
    let Some(lib) = v
        .get("ICD")
        .and_then(|i| i.get("library_path"))
        .and_then(|l| l.as_str())
    else {
        m.problem = Some(Problem::NoLibraryPath);
        return m;
    };
    m.library = Some(lib.to_string());
    let resolved = if lib.contains('/') && !lib.starts_with('/') {
        path.parent()
            .unwrap_or(Path::new("."))
            .join(lib)
            .to_string_lossy()
            .into_owned()
    } else {
        lib.to_string()
    };
    // dlopen would wait on a FIFO as read does: a path that is there but is not a
    // regular file is not loaded (a bare name is the dynamic loader's to find).
    let special =
        resolved.contains('/') && std::fs::metadata(&resolved).is_ok_and(|md| !md.is_file());
    m.probe = Some(if special {
        dynlib::Probe {
            path: None,
            error: Some(format!(
                "{resolved} is not a regular file (not loaded: dlopen would wait on a FIFO)"
            )),
            missing: Vec::new(),
        }
    } else {
        dynlib::probe(&resolved, &["vk_icdGetInstanceProcAddr"])
    });
    m.resolved = Some(resolved);
    m
}

fn skipped(path: &Path, source: &str, variable: Option<&str>, problem: Problem) -> Manifest {
    Manifest {
        path: path.to_path_buf(),
        library: None,
        resolved: None,
        probe: None,
        problem: Some(problem),
        source: source.to_string(),
        variable: variable.map(str::to_string),
    }
}

/// What the loader reads, entry by entry, as it reads it: an entry of a variable
/// whose name ends in `.json` is a manifest file; any other entry, and each
/// standard directory, is listed for `*.json` files. Only regular files are read,
/// at most [`MANIFEST_SIZE_LIMIT`] bytes each. Entries of a variable that give no
/// manifest (missing, not a `*.json` file or a directory, a directory without
/// manifests, not a regular file) are listed with their [`Problem`].
pub fn find_manifests() -> Vec<Manifest> {
    let mut out: Vec<Manifest> = Vec::new();
    let mut push = |m: Manifest| {
        if !out.iter().any(|o| o.path == m.path) {
            out.push(m);
        }
    };
    for (p, src) in icd_search_paths() {
        // An entry of a variable (not a standard directory).
        let named = src.starts_with("VK_");
        if named && is_json_name(&p) {
            let mut m = read_manifest(&p, &src);
            m.variable = Some(src.clone());
            push(m);
            continue;
        }
        let meta = match std::fs::metadata(&p) {
            Ok(m) => m,
            Err(e) => {
                if named {
                    let problem = match e.kind() {
                        std::io::ErrorKind::NotFound => Problem::Missing,
                        _ => Problem::Unreadable(e.to_string()),
                    };
                    push(skipped(&p, &src, Some(&src), problem));
                }
                continue;
            }
        };
        if !meta.is_dir() {
            if named {
                push(skipped(
                    &p,
                    &src,
                    Some(&src),
                    Problem::Skipped(format!(
                        "{} whose name does not end in .json: the loader reads only *.json files and the \
                         *.json files of directories, and skips it",
                        file_kind(&meta.file_type())
                    )),
                ));
            }
            continue;
        }
        let mut files: Vec<PathBuf> = std::fs::read_dir(&p)
            .map(|rd| {
                rd.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|f| is_json_name(f))
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        if files.is_empty() && named {
            push(skipped(
                &p,
                &src,
                Some(&src),
                Problem::Skipped(
                    "a directory without *.json files: the loader finds no manifest in it".into(),
                ),
            ));
        }
        for f in files {
            push(read_manifest(&f, &format!("{src} ({})", p.display())));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::super::search::split_paths;
    use super::*;

    #[test]
    fn loader_variables_are_bytes() {
        let v = OsStr::from_bytes(b"/a/\xffnvidia_icd.json::/b/icd.d");
        assert_eq!(
            split_paths(v),
            [
                PathBuf::from(OsStr::from_bytes(b"/a/\xffnvidia_icd.json")),
                PathBuf::from("/b/icd.d")
            ]
        );
        assert!(is_json_name(Path::new("/x/nvidia_icd.json")));
        assert!(!is_json_name(Path::new("/x/icd.d")));
        assert!(!is_json_name(Path::new("/dev/zero")));
    }

    #[test]
    fn manifests_are_read_with_a_limit() {
        let dir = std::env::temp_dir().join(format!("vkcuda-doctor-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("big.json");
        std::fs::write(&big, vec![b' '; MANIFEST_SIZE_LIMIT as usize + 1]).unwrap();
        assert_eq!(
            read_capped(&big),
            Err(Problem::TooLarge(MANIFEST_SIZE_LIMIT + 1))
        );
        assert_eq!(read_capped(&dir.join("none.json")), Err(Problem::Missing));
        assert!(matches!(
            read_capped(Path::new("/dev/zero")),
            Err(Problem::Blocks(_))
        ));
        assert!(matches!(read_capped(&dir), Err(Problem::Skipped(_))));
        // A manifest whose library is a FIFO: not loaded (dlopen would block).
        let fifo = dir.join("lib.so");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let man = dir.join("fifo_lib.json");
        std::fs::write(
            &man,
            format!(r#"{{"ICD": {{"library_path": "{}"}}}}"#, fifo.display()),
        )
        .unwrap();
        let m = read_manifest(&man, "test");
        assert!(m.blocks_loader());
        assert!(
            m.probe
                .unwrap()
                .error
                .unwrap()
                .contains("is not a regular file"),
            "not loaded"
        );
        let bad = dir.join("bad.json");
        std::fs::write(&bad, "{\n  \"ICD\": [1,\n").unwrap();
        let m = read_manifest(&bad, "test");
        assert_eq!(
            m.problem.unwrap().describe(),
            "is not valid JSON: EOF while parsing a value at line 3, column 0"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
