//! The doctor (`vkcuda::doctor::run`) on simulated machines: each failing check is
//! reproduced in a child process with the environment, the fake CUDA driver
//! (tests/fake_cuda) and the files that cause it, and must come out with the
//! expected status, what it saw and its fix. Where a check matches an error of the
//! library, the doctor's words must be the error's words. The report on this
//! machine, its JSON, and the deep self-test (with stand-in drivers that corrupt
//! data, and on the GPU). The C door's options struct, getters and JSON:
//! capi/tests/exports.rs; its argument checks: the misuse matrix.

mod support;
use support::device::{device_support, engine_context, engine_handles};
use support::*;

use std::path::{Path, PathBuf};

use ash::vk;
use vkcuda::buffer::Allocator;
use vkcuda::doctor::Status::{Fail as FAIL, Pass as PASS, Warn as WARN};
use vkcuda::doctor::{self, Check, Options, Report, Status};
use vkcuda::semaphore::Kind;
use vkcuda::{pairing, Buffer, Context, CudaChoice, ErrorKind, Semaphore};

/// The doctor's report on the files under `root` (None: `/`), also checking the
/// engine's device when given, with the deep self-test when `deep`; printed, and
/// its JSON checked against it.
fn doctor_with(root: Option<&Path>, engine: Option<&EngineDevice>, deep: bool) -> Report {
    let mut options = Options::default();
    if let Some(root) = root {
        options.root = root.to_path_buf();
    }
    options.deep = deep;
    if let Some(e) = engine {
        // SAFETY: the engine's live handles, which outlive the run.
        options = unsafe { options.with_engine(engine_handles(e, None)) };
    }
    let d = doctor::run(&options);
    // The JSON says the same as the checks.
    let json = d.json();
    assert_eq!(json["ready"], d.ready());
    // The Rust library's version (the C door writes the C library's).
    assert_eq!(json["vkcuda_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(json["checks"].as_array().unwrap().len(), d.checks.len());
    for (c, jc) in d.checks.iter().zip(json["checks"].as_array().unwrap()) {
        assert_eq!(jc["name"], c.name.as_str());
        assert_eq!(jc["seen"], c.seen.as_str());
        assert_eq!(jc["fix"], c.fix.as_str());
    }
    for c in &d.checks {
        println!("[{:?}] {}: {} | {}", c.status, c.name, c.seen, c.fix);
    }
    d
}

fn doctor(root: Option<&Path>) -> Report {
    doctor_with(root, None, false)
}

/// What the tests look up in a report.
trait Found {
    fn get(&self, name: &str) -> &Check;
    /// The check of the ICD manifest at `path`.
    fn icd(&self, path: &Path) -> &Check;
    fn json(&self) -> serde_json::Value;
}

impl Found for Report {
    #[track_caller]
    fn get(&self, name: &str) -> &Check {
        self.check(name)
            .unwrap_or_else(|| panic!("no check {name}"))
    }

    #[track_caller]
    fn icd(&self, path: &Path) -> &Check {
        self.get(&format!("vulkan.icd[{}]", path.display()))
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.to_json()).expect("valid JSON")
    }
}

/// What the tests assert of a check.
trait Says {
    /// Asserts the status, and that `seen` and `fix` contain every part given.
    fn says(&self, status: Status, seen: &[&str], fix: &[&str]) -> &Self;
    /// `seen` starts with `prefix`.
    fn seen_starts(&self, prefix: &str) -> &Self;
    /// `fix` starts with `prefix`.
    fn fix_starts(&self, prefix: &str) -> &Self;
    /// `err`, the message of a failed call, says the doctor's words.
    fn is_the_error(&self, err: &str);
}

impl Says for Check {
    #[track_caller]
    fn says(&self, status: Status, seen: &[&str], fix: &[&str]) -> &Self {
        assert_eq!(self.status, status, "{self:?}");
        for part in seen {
            assert!(self.seen.contains(part), "seen lacks {part:?}: {self:?}");
        }
        for part in fix {
            assert!(self.fix.contains(part), "fix lacks {part:?}: {self:?}");
        }
        self
    }

    #[track_caller]
    fn seen_starts(&self, prefix: &str) -> &Self {
        assert!(self.seen.starts_with(prefix), "{prefix:?}: {self:?}");
        self
    }

    #[track_caller]
    fn fix_starts(&self, prefix: &str) -> &Self {
        assert!(self.fix.starts_with(prefix), "{prefix:?}: {self:?}");
        self
    }

    #[track_caller]
    fn is_the_error(&self, err: &str) {
        let words = format!("{}: {}", self.seen, self.fix);
        assert_eq!(err, words, "the doctor and the failing call say the same");
    }
}

/// A scratch directory of this test.
fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("doctor")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes `text` to `root`/`rel`, making the directories on the way.
fn put(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn manifest(dir: &Path, name: &str, library: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        &p,
        format!(
            r#"{{"file_format_version": "1.0.0", "ICD": {{"library_path": "{library}", "api_version": "1.3.0"}}}}"#
        ),
    )
    .unwrap();
    p
}

/// The non-NVIDIA manifests of this machine whose library loads (lavapipe here),
/// joined for VK_DRIVER_FILES.
fn working_other_manifests() -> Vec<String> {
    doctor::find_manifests()
        .into_iter()
        .filter(|m| m.works() && !m.is_nvidia())
        .map(|m| m.path.display().to_string())
        .collect()
}

/// Runs the ignored test `case` in a child with the doctor's stand-in CUDA driver
/// and `env` set (None removes a variable).
fn doctor_child(case: &str, env: &[(&str, Option<&str>)]) {
    run_child(case, &fake_cuda_driver("doctor-fake-cuda", &[]), env);
}

/// [`doctor_child`] with `VK_DRIVER_FILES` = `files` and this machine's working
/// manifests, and `VKCUDA_TEST_DIR` = `dir` (where the child finds what the parent
/// made: [`test_root`]).
fn icd_child(case: &str, dir: &Path, mut files: Vec<String>) {
    files.extend(working_other_manifests());
    doctor_child(
        case,
        &[
            ("VK_DRIVER_FILES", Some(&join(&files))),
            ("VKCUDA_TEST_DIR", Some(dir.to_str().unwrap())),
        ],
    );
}

fn join(paths: &[String]) -> String {
    paths.join(":")
}

fn test_root() -> PathBuf {
    PathBuf::from(std::env::var("VKCUDA_TEST_DIR").unwrap())
}

// --- This machine ---------------------------------------------------------------------

/// The report on this machine, as a Rust program reads it: every check named, a
/// fix exactly where it did not pass, the counts and the verdict agreeing, the
/// JSON saying the same, and the context's device in the pairing table under its
/// name.
#[test]
fn the_doctor_reports_this_machine() {
    let root = empty_dir("rust-api-doctor");
    let report = doctor(Some(&root));
    assert!(report.checks.len() >= 5, "{report:?}");
    for c in &report.checks {
        assert!(!c.name.is_empty());
        assert_eq!(
            c.fix.is_empty(),
            c.status == PASS,
            "a check has a fix exactly when it did not pass: {c:?}"
        );
    }
    assert_eq!(
        report.count(PASS) + report.count(WARN) + report.count(FAIL),
        report.checks.len()
    );
    assert_eq!(
        report.ready(),
        report.count(FAIL) == 0,
        "ready means nothing failed"
    );
    // The lavapipe device this suite runs on is in the pairing table.
    let ctx = vulkan_only_context();
    let uuid = ctx_uuid(&ctx);
    let pair = report
        .pairs
        .iter()
        .find(|p| p.vulkan_uuid == Some(uuid))
        .expect("the context's device is in the pairing table");
    let name = pairing::enumerate()
        .unwrap()
        .into_iter()
        .flatten()
        .find(|r| r.support.props.uuid == uuid)
        .unwrap()
        .support
        .props
        .name;
    assert_eq!(pair.vulkan_name, name);
    let _ = std::fs::remove_dir_all(root);
}

// --- ICD manifests ----------------------------------------------------------------

#[test]
fn icd_manifest_names_a_missing_library() {
    let dir = scratch("icd-missing");
    let nvidia = manifest(&dir, "nvidia_icd.json", "/nonexistent/libGLX_nvidia.so.0");
    let other = manifest(&dir, "other_icd.json", "libvkcuda_no_such_driver.so");
    let absent = dir.join("absent_icd.json");
    let files = vec![
        nvidia.display().to_string(),
        other.display().to_string(),
        absent.display().to_string(),
    ];
    icd_child("child_icd_missing_library", &dir, files);
}

#[test]
#[ignore = "runs in a child process of icd_manifest_names_a_missing_library"]
fn child_icd_missing_library() {
    child_only!("child_icd_missing_library");
    let dir = test_root();
    let d = doctor(None);
    let nvidia = dir.join("nvidia_icd.json");
    // NVIDIA's ICD not loading stops interop; the VK_DRIVER_FILES part says where
    // it came from.
    let library_path = format!("correct library_path in {}", nvidia.display());
    d.icd(&nvidia).says(
        FAIL,
        &[
            "/nonexistent/libGLX_nvidia.so.0",
            "does not load",
            "VK_DRIVER_FILES",
        ],
        &[
            "install the driver library /nonexistent/libGLX_nvidia.so.0",
            &library_path,
        ],
    );
    // Another driver is only skipped by the loader.
    let other = dir.join("other_icd.json");
    d.icd(&other)
        .says(WARN, &["libvkcuda_no_such_driver.so"], &[]);
    let c = d.icd(&dir.join("absent_icd.json")).says(WARN, &[], &[]);
    assert!(
        c.seen.ends_with("(from VK_DRIVER_FILES) does not exist"),
        "{c:?}"
    );
    assert_eq!(c.fix, "correct the path in VK_DRIVER_FILES or remove it");
    let nvidia_icd = d.get("vulkan.nvidia_icd");
    nvidia_icd.says(FAIL, &["is there but its library does not load"], &[]);
    assert!(!d.ready());
    assert_eq!(d.json()["ready"], false);
}

#[test]
fn icd_none_from_nvidia() {
    let files = working_other_manifests();
    doctor_child(
        "child_no_nvidia_icd",
        &[
            // An empty VK_DRIVER_FILES would mean "unset": name a directory without manifests.
            (
                "VK_DRIVER_FILES",
                Some(&if files.is_empty() {
                    scratch("icd-empty").display().to_string()
                } else {
                    join(&files)
                }),
            ),
            (
                "VK_ICD_FILENAMES",
                Some("/nonexistent/ignored_when_VK_DRIVER_FILES_is_set.json"),
            ),
        ],
    );
}

#[test]
#[ignore = "runs in a child process of icd_none_from_nvidia"]
fn child_no_nvidia_icd() {
    child_only!("child_no_nvidia_icd");
    let d = doctor(None);
    let c = d.get("vulkan.nvidia_icd").says(
        FAIL,
        &[],
        &[
            "nvidia_icd.json and libGLX_nvidia.so.0",
            "graphics to NVIDIA_DRIVER_CAPABILITIES",
            "VK_DRIVER_FILES",
        ],
    );
    // Inside a container without graphics (this machine may be one) the seen goes on
    // to say so.
    let none = "no NVIDIA Vulkan driver manifest (nvidia_icd.json) among the ones the loader reads";
    c.seen_starts(none);
    // VK_ICD_FILENAMES is ignored while VK_DRIVER_FILES is set, as the loader does.
    assert!(
        !d.checks.iter().any(|c| c.name.contains("ignored_when")),
        "VK_ICD_FILENAMES must not be read"
    );
    assert!(!d.ready());
}

#[test]
fn icd_older_variable_is_read() {
    let dir = scratch("icd-old-variable");
    let nvidia = manifest(&dir, "nvidia_icd.json", "/nonexistent/libGLX_nvidia.so.0");
    doctor_child(
        "child_icd_old_variable",
        &[
            ("VK_DRIVER_FILES", None),
            ("VK_ICD_FILENAMES", Some(nvidia.to_str().unwrap())),
            ("VKCUDA_TEST_DIR", Some(dir.to_str().unwrap())),
        ],
    );
}

#[test]
#[ignore = "runs in a child process of icd_older_variable_is_read"]
fn child_icd_old_variable() {
    child_only!("child_icd_old_variable");
    let d = doctor(None);
    let nvidia = test_root().join("nvidia_icd.json");
    d.icd(&nvidia).says(FAIL, &["(from VK_ICD_FILENAMES)"], &[]);
    d.get("vulkan.icd_manifests").says(PASS, &[], &[]);
    assert_eq!(
        d.checks
            .iter()
            .filter(|c| c.name.starts_with("vulkan.icd["))
            .count(),
        1,
        "only the manifest VK_ICD_FILENAMES names"
    );
}

/// `doctor(root)` on another thread: fails the test unless it returns within
/// `limit` (a doctor that blocks on a FIFO or reads /dev/zero for ever never would).
fn doctor_within(root: Option<PathBuf>, limit: std::time::Duration) -> Report {
    let (tx, rx) = std::sync::mpsc::channel();
    let started = std::time::Instant::now();
    std::thread::spawn(move || {
        let _ = tx.send(doctor(root.as_deref()));
    });
    let d = rx
        .recv_timeout(limit)
        .unwrap_or_else(|_| panic!("the doctor did not return within {limit:?}"));
    println!("the doctor took {:?}", started.elapsed());
    d
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
        0,
        "mkfifo {p:?}"
    );
}

#[test]
fn icd_entries_that_are_not_manifests_are_skipped() {
    // What the loader skips, or would never get past, must not stop the
    // doctor: FIFOs, devices that never end (named directly, or through a *.json
    // link), a directory without manifests, a file that is not *.json, a file far
    // too large for a manifest, and a FIFO among a directory's *.json files.
    let dir = scratch("icd-skipped");
    mkfifo(&dir.join("fifo_icd.json"));
    mkfifo(&dir.join("fifo"));
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero_icd.json")).unwrap();
    std::fs::create_dir_all(dir.join("empty.d")).unwrap();
    std::fs::write(dir.join("empty.d/readme.txt"), "not a manifest").unwrap();
    std::fs::create_dir_all(dir.join("withfifo.d")).unwrap();
    mkfifo(&dir.join("withfifo.d/pipe_icd.json"));
    std::fs::write(dir.join("notes.txt"), "not a manifest").unwrap();
    std::fs::write(dir.join("huge_icd.json"), vec![b' '; 2 << 20]).unwrap();
    // A manifest whose library is a FIFO: dlopen would wait on it.
    mkfifo(&dir.join("libfifo.so"));
    manifest(
        &dir,
        "fifolib_icd.json",
        dir.join("libfifo.so").to_str().unwrap(),
    );
    let mut files: Vec<String> = [
        "fifo_icd.json",
        "fifo",
        "zero_icd.json",
        "empty.d",
        "withfifo.d",
        "notes.txt",
        "huge_icd.json",
        "fifolib_icd.json",
    ]
    .iter()
    .map(|f| dir.join(f).display().to_string())
    .collect();
    files.push("/dev/zero".into());
    files.push("/dev/urandom".into());
    icd_child("child_icd_skipped", &dir, files);
}

#[test]
#[ignore = "runs in a child process of icd_entries_that_are_not_manifests_are_skipped"]
fn child_icd_skipped() {
    child_only!("child_icd_skipped");
    let dir = test_root();
    let d = doctor_within(None, std::time::Duration::from_secs(20));
    // The loader skips these: a warning each.
    let skipped: [(PathBuf, &str, &str); 6] = [
        (
            dir.join("fifo"),
            "a FIFO (named pipe) whose name does not end in .json: the loader reads only *.json files",
            "remove it from VK_DRIVER_FILES",
        ),
        (
            dir.join("empty.d"),
            "a directory without *.json files",
            "remove it from VK_DRIVER_FILES",
        ),
        (
            dir.join("notes.txt"),
            "a regular file whose name does not end in .json",
            "remove it from VK_DRIVER_FILES",
        ),
        (
            dir.join("huge_icd.json"),
            "it is 2097152 bytes, and an ICD manifest is a few hundred",
            "is not an ICD manifest: remove it from VK_DRIVER_FILES",
        ),
        (
            PathBuf::from("/dev/zero"),
            "a character device whose name does not end in .json",
            "remove it from VK_DRIVER_FILES",
        ),
        (
            PathBuf::from("/dev/urandom"),
            "a character device whose name does not end in .json",
            "remove it from VK_DRIVER_FILES",
        ),
    ];
    for (path, why, fix) in skipped {
        let c = d
            .icd(&path)
            .says(WARN, &[&format!("was skipped: {why}")], &[fix]);
        c.seen_starts(&path.display().to_string());
    }
    // The loader opens these as manifests and never finishes: each fails, and no
    // instance is made (the doctor's own would hang too).
    let blocking: [(PathBuf, &str, &str); 3] = [
        (
            dir.join("fifo_icd.json"),
            "a FIFO (named pipe) named *.json, not a regular file: the Vulkan loader opens it as a manifest \
             and waits for a writer for ever",
            "remove it from VK_DRIVER_FILES",
        ),
        (
            dir.join("zero_icd.json"),
            "a character device named *.json, not a regular file: the Vulkan loader reads it as a manifest",
            "remove it from VK_DRIVER_FILES",
        ),
        (
            dir.join("withfifo.d/pipe_icd.json"),
            "a FIFO (named pipe) named *.json",
            "remove ",
        ),
    ];
    for (path, why, fix) in &blocking {
        let c = d
            .icd(path)
            .says(FAIL, &[&format!("was not read: {why}")], &[]);
        assert!(c.fix.starts_with(fix), "{fix:?}: {c:?}");
    }
    let fifolib = dir.join("fifolib_icd.json");
    let fifo = "libfifo.so is not a regular file (not loaded: dlopen would wait on a FIFO)";
    d.icd(&fifolib).says(FAIL, &[fifo], &[]);
    let mut never_past: Vec<String> = blocking
        .iter()
        .map(|(p, _, _)| p.display().to_string())
        .collect();
    never_past.push(fifolib.display().to_string());
    let never_past: Vec<&str> = never_past.iter().map(String::as_str).collect();
    let c = d.get("vulkan.devices").says(FAIL, &never_past, &[]);
    let not_checked = "not checked: the Vulkan loader would never get past";
    c.seen_starts(not_checked);
    // fifolib_icd.json is a manifest the loader takes (its library is the
    // problem), so manifests are found; the entries that gave none have their own
    // checks above. (On the H200, with no other manifest named, 2 were counted.)
    let manifests = "manifest(s) where the loader searches";
    d.get("vulkan.icd_manifests").says(PASS, &[manifests], &[]);
}

#[test]
fn icd_variable_that_is_not_utf8() {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    // The loader takes the bytes as they are: a manifest whose file name is not
    // UTF-8 is still read, and the report names the variable.
    let dir = scratch("icd-not-utf8");
    let mut name = dir.as_os_str().as_bytes().to_vec();
    name.extend_from_slice(b"/nvidia\xff_icd.json");
    let path = PathBuf::from(std::ffi::OsString::from_vec(name));
    std::fs::write(
        &path,
        r#"{"file_format_version": "1.0.0", "ICD": {"library_path": "/nonexistent/libGLX_nvidia.so.0"}}"#,
    )
    .unwrap();
    let mut cmd = support::this_test("child_icd_not_utf8", true);
    cmd.env("LD_LIBRARY_PATH", fake_cuda_driver("doctor-fake-cuda", &[]))
        .env(support::CHILD_ENV, "1")
        .env_remove(vkcuda::pairing::CUDA_DISABLE_ENV)
        .env("VK_DRIVER_FILES", &path)
        .env("VKCUDA_TEST_DIR", &dir);
    support::child_passed("child_icd_not_utf8", &cmd.output().unwrap());
}

#[test]
#[ignore = "runs in a child process of icd_variable_that_is_not_utf8"]
fn child_icd_not_utf8() {
    child_only!("child_icd_not_utf8");
    assert!(std::env::var("VK_DRIVER_FILES").is_err(), "not UTF-8");
    let d = doctor(None);
    // No manifest it names works.
    let undecodable = ["\\xFF_icd.json", "cannot be decoded as UTF-8"];
    let c = d.get("vulkan.icd_variables").says(FAIL, &undecodable, &[]);
    c.seen_starts("VK_DRIVER_FILES=\"");
    c.fix_starts("set VK_DRIVER_FILES to UTF-8 paths");
    // What the loader reads is what the bytes name, not the standard directories.
    let icds: Vec<&Check> = d
        .checks
        .iter()
        .filter(|c| c.name.starts_with("vulkan.icd["))
        .collect();
    assert_eq!(icds.len(), 1, "{icds:?}");
    // The manifest was read.
    icds[0].says(
        FAIL,
        &["/nonexistent/libGLX_nvidia.so.0", "does not load"],
        &[],
    );
    assert!(
        !d.get("vulkan.icd_manifests")
            .seen
            .contains("/usr/share/vulkan/icd.d"),
        "the standard directories are not searched"
    );
}

#[test]
fn icd_nvidia_manifest_missing() {
    let dir = scratch("icd-nvidia-missing");
    let files = vec![dir.join("nvidia_icd.json").display().to_string()];
    icd_child("child_nvidia_manifest_missing", &dir, files);
}

#[test]
#[ignore = "runs in a child process of icd_nvidia_manifest_missing"]
fn child_nvidia_manifest_missing() {
    child_only!("child_nvidia_manifest_missing");
    let nvidia = test_root().join("nvidia_icd.json");
    let d = doctor(None);
    let correct = "correct the path in VK_DRIVER_FILES or remove it";
    let c = d.get("vulkan.nvidia_icd").says(FAIL, &[], &[correct]);
    let missing = format!(
        "NVIDIA's manifest {} (from VK_DRIVER_FILES) does not exist",
        nvidia.display()
    );
    c.seen_starts(&missing);
    assert!(!c.seen.contains("is there"), "{c:?}");
    let c = d.icd(&nvidia).says(FAIL, &[], &[]);
    assert!(c.seen.ends_with("does not exist"), "{c:?}");
}

#[test]
fn icd_nvidia_manifest_not_json() {
    let dir = scratch("icd-nvidia-not-json");
    std::fs::write(
        dir.join("nvidia_icd.json"),
        "{\n  \"file_format_version\": \"1.0.0\",\n  \"ICD\": {\"library_path\": \"libGLX_nvidia.so.0\",\n}\n",
    )
    .unwrap();
    let files = vec![dir.join("nvidia_icd.json").display().to_string()];
    icd_child("child_nvidia_manifest_not_json", &dir, files);
}

#[test]
#[ignore = "runs in a child process of icd_nvidia_manifest_not_json"]
fn child_nvidia_manifest_not_json() {
    child_only!("child_nvidia_manifest_not_json");
    let nvidia = test_root().join("nvidia_icd.json");
    let path = nvidia.display().to_string();
    let d = doctor(None);
    // About the content, not the path.
    let c = d
        .icd(&nvidia)
        .says(FAIL, &[], &["VK_ERROR_OUT_OF_HOST_MEMORY"]);
    assert!(
        c.seen
            .ends_with("is not valid JSON: trailing comma at line 4, column 1"),
        "{c:?}"
    );
    c.fix_starts(&format!("correct the JSON at line 4, column 1 of {path}"));
    assert!(!c.fix.contains("correct the path"), "{c:?}");
    let c = d
        .get("vulkan.nvidia_icd")
        .says(FAIL, &["is not valid JSON"], &[]);
    assert!(!c.seen.contains("is there"), "{c:?}");
    // The loader of this machine may fail every instance while it reads a manifest
    // that is not JSON (1.3.239 does): then the check says what that error means.
    let c = d.get("vulkan.devices");
    if c.seen.contains("VK_ERROR_OUT_OF_HOST_MEMORY") {
        c.says(FAIL, &["not for lack of memory", &path], &[]);
        c.fix_starts(&format!("correct or remove {path}"));
    } else {
        println!("this loader skips a manifest that is not JSON: {c:?}");
    }
}

// --- The CUDA driver ----------------------------------------------------------------

#[test]
fn cuda_driver_absent() {
    run_child("child_cuda_absent", &empty_dir("doctor-no-cuda"), &[]);
}

#[test]
#[ignore = "runs in a child process of cuda_driver_absent"]
fn child_cuda_absent() {
    child_only!("child_cuda_absent");
    let r = pairing::cuda_driver_version();
    if let Ok(v) = r {
        // This machine has a libcuda.so.1 of its own: absence cannot be simulated.
        eprintln!("SKIPPED: child_cuda_absent: the machine has a CUDA driver (version {v})");
        return;
    }
    let err = fails(r, ErrorKind::CudaUnavailable);
    let d = doctor(None);
    let c = d.get("cuda.driver").says(FAIL, &[], &[]);
    assert_eq!(c.seen, "the CUDA driver library libcuda.so.1 was not found");
    c.fix_starts("install the NVIDIA driver");
    c.is_the_error(&err);
    let c = d.get("pairing").says(FAIL, &[], &[]);
    c.fix_starts("fix cuda.driver first");
    assert!(!d.ready());
}

#[test]
fn cuda_driver_too_old() {
    doctor_child(
        "child_cuda_too_old",
        &[("FAKE_CUDA_VERSION", Some("11010"))],
    );
}

#[test]
#[ignore = "runs in a child process of cuda_driver_too_old"]
fn child_cuda_too_old() {
    child_only!("child_cuda_too_old");
    let err = driver_version_error();
    let d = doctor(None);
    let too_old = [
        "too old",
        "CUDA 11.1 (11010)",
        "CUDA 11.2",
        "TIMELINE_SEMAPHORE_FD",
    ];
    let c = d.get("cuda.driver").says(FAIL, &too_old, &[]);
    c.fix_starts("install NVIDIA driver 525 or newer");
    c.is_the_error(&err);
    // A context is refused for the same reason.
    let again = fails(
        Context::standalone(None, CudaChoice::Primary),
        ErrorKind::CudaUnavailable,
    );
    assert!(again.contains("CUDA 11.1 (11010)"), "{again}");
}

/// The message of `pairing::cuda_driver_version`, which must fail as CudaUnavailable.
fn driver_version_error() -> String {
    fails(pairing::cuda_driver_version(), ErrorKind::CudaUnavailable)
}

#[test]
fn cuda_visible_devices_empty() {
    doctor_child(
        "child_cuda_visible_devices",
        &[
            ("CUDA_VISIBLE_DEVICES", Some("")),
            ("FAKE_CUDA_UUIDS", None),
        ],
    );
}

#[test]
fn cuda_visible_devices_names_no_gpu() {
    doctor_child(
        "child_cuda_visible_devices",
        &[
            ("CUDA_VISIBLE_DEVICES", Some("7")),
            ("FAKE_CUDA_UUIDS", None),
        ],
    );
}

#[test]
#[ignore = "runs in a child process of cuda_visible_devices_empty and _names_no_gpu"]
fn child_cuda_visible_devices() {
    child_only!("child_cuda_visible_devices");
    // The stand-in driver, as the real one: no visible device is CUDA_ERROR_NO_DEVICE.
    let visible = std::env::var("CUDA_VISIBLE_DEVICES").unwrap();
    let err = driver_version_error();
    let d = doctor(None);
    let ignored = "nvidia-smi itself ignores CUDA_VISIBLE_DEVICES";
    let c = d.get("cuda.driver").says(FAIL, &[], &[ignored]);
    // Names the variable and its value.
    let no_device =
        format!("cuInit failed with CUDA_ERROR_NO_DEVICE and CUDA_VISIBLE_DEVICES=\"{visible}\": ");
    c.seen_starts(&no_device);
    if visible.is_empty() {
        assert!(
            c.seen.ends_with("empty, which hides every GPU from CUDA"),
            "{c:?}"
        );
    } else {
        assert!(c.seen.contains("it names no GPU this driver has"), "{c:?}");
    }
    let unset = "unset CUDA_VISIBLE_DEVICES or set it to GPUs this machine has";
    c.fix_starts(unset);
    assert!(!c.fix.contains("kernel module"), "{c:?}");
    c.is_the_error(&err);
}

#[test]
fn cuda_driver_without_a_matching_uuid() {
    doctor_child(
        "child_no_matching_uuid",
        &[("FAKE_CUDA_UUIDS", None), ("CUDA_VISIBLE_DEVICES", None)],
    );
}

#[test]
#[ignore = "runs in a child process of cuda_driver_without_a_matching_uuid"]
fn child_no_matching_uuid() {
    child_only!("child_no_matching_uuid");
    let err = fails(
        Context::standalone(None, CudaChoice::Primary),
        ErrorKind::DeviceMismatch,
    );
    let d = doctor(None);
    // Says which driver it loaded: the path of the fake driver.
    let loaded = ["libcuda.so", "CUDA 12.8 (12080)", "doctor-fake-cuda"];
    d.get("cuda.driver").says(PASS, &loaded, &[]);
    let uuid = "abababab-abab-abab-abab-abababababab";
    let c = d.get("vulkan_device[0].pairing").says(WARN, &[uuid], &[]);
    // The error is "seen: fix"; the doctor's seen adds what kind of device it is.
    let err_seen = err
        .strip_suffix(&format!(": {}", c.fix))
        .unwrap_or_else(|| panic!("the error ends with the doctor's fix: {err} / {c:?}"));
    assert!(
        c.seen.starts_with(err_seen),
        "the doctor and the failing call say the same: {err} / {c:?}"
    );
    assert!(
        c.seen.contains("software (CPU) device") || !c.seen.contains("llvmpipe"),
        "{c:?}"
    );
    let no_twin = "has no Vulkan device with its UUID";
    d.get("cuda_device[0].pairing").says(WARN, &[no_twin], &[]);
    assert_eq!(d.get("pairing").status, FAIL);
    let pairs: Vec<_> = d
        .pairs
        .iter()
        .map(|p| (p.vulkan_index, p.cuda_ordinal))
        .collect();
    assert_eq!(pairs, [(Some(0), None), (None, Some(0))]);
    assert_eq!(d.json()["devices"][1]["cuda_name"], "vkcuda fake GPU");
}

// --- The engine's own device ---------------------------------------------------------

#[test]
fn engine_device_without_an_extension() {
    doctor_child(
        "child_engine_device",
        &[("FAKE_CUDA_UUIDS", None), ("CUDA_VISIBLE_DEVICES", None)],
    );
}

#[test]
#[ignore = "runs in a child process of engine_device_without_an_extension"]
fn child_engine_device() {
    // An engine that enabled neither fd extension (lavapipe has the memory one and
    // not the semaphore one; an NVIDIA GPU has both).
    let e = EngineDevice::new(&[], |_, _| true);
    let d = doctor_with(None, Some(&e), false);
    assert_eq!(d.get("engine.device").status, PASS);
    let mem = d.get("engine.external_memory_fd").says(FAIL, &[], &[]);
    let disabled =
        "VK_KHR_external_memory_fd is not enabled on the VkDevice (its functions resolve to NULL)";
    assert_eq!(mem.seen, disabled);
    let sem = d.get("engine.external_semaphore_fd");
    sem.says(FAIL, &["VK_KHR_external_semaphore_fd"], &[]);
    // The same words as the first calls of a context on that device that need them.
    let ctx = engine_context(&e, CudaChoice::None).unwrap();
    let usage = vk::BufferUsageFlags::empty();
    let err = fails(
        Buffer::create(&ctx, 4096, usage, Allocator::Vulkan),
        ErrorKind::ExtensionNotPresent,
    );
    mem.is_the_error(&err);
    let err = fails(
        Semaphore::create(&ctx, Kind::Timeline, 0, None),
        ErrorKind::ExtensionNotPresent,
    );
    sem.is_the_error(&err);
    drop(ctx);
    // Pairing: the fake driver's device is not this one; on a machine whose real
    // driver has this device's twin (an NVIDIA GPU), the pairing passes and the
    // missing extensions alone make the device unready.
    let c = d.get("engine.pairing");
    let fake = d.get("cuda.devices").seen.contains("vkcuda fake GPU");
    if c.status == PASS {
        assert!(!fake, "the fake driver paired with a real device: {c:?}");
        assert!(c.seen.contains("= CUDA device"), "{c:?}");
    } else {
        assert_eq!(c.status, FAIL);
        let err = fails(
            engine_context(&e, CudaChoice::Primary),
            ErrorKind::DeviceMismatch,
        );
        c.is_the_error(&err);
    }
    assert!(!d.ready());
    drop(e);

    // An engine instance of apiVersion 1.0, with the extensions a 1.0 engine enables
    // for external memory: engine.device fails with the words of a context on it.
    let old = EngineDevice::with_version(
        ash::vk::API_VERSION_1_0,
        &[
            ash::khr::get_physical_device_properties2::NAME,
            ash::khr::external_memory_capabilities::NAME,
            ash::khr::external_semaphore_capabilities::NAME,
        ],
        &[
            ash::khr::external_memory::NAME,
            ash::khr::external_memory_fd::NAME,
        ],
        |i, p| unsafe { i.get_physical_device_properties(p) }.api_version >= ash::vk::API_VERSION_1_2,
    );
    let d = doctor_with(None, Some(&old), false);
    let c = d.get("engine.device");
    if !old.hides_1_1_commands() {
        // NVIDIA's driver resolves the 1.1 commands for a 1.0 instance: nothing lacks.
        assert_eq!(c.status, PASS, "{c:?}");
        return;
    }
    assert_eq!(c.status, FAIL);
    let err = fails(
        engine_context(&old, CudaChoice::Primary),
        ErrorKind::InvalidArgument,
    );
    assert!(c.seen.contains("apiVersion 1.0"), "{c:?}");
    assert_eq!(err, c.seen);
    assert!(!d.ready());
}

// --- Containers ---------------------------------------------------------------------

/// What the container checks see: the root, and neither a working NVIDIA Vulkan
/// driver nor a working CUDA driver (the fake one's cuInit fails), so that the
/// toolkit's variables decide, on any machine.
fn container_child(case: &str, root: &Path, env: &[(&str, Option<&str>)]) {
    let others = working_other_manifests();
    let icds = if others.is_empty() {
        scratch("container-no-icd").display().to_string()
    } else {
        join(&others)
    };
    let mut all: Vec<(&str, Option<&str>)> = vec![
        ("VKCUDA_TEST_DIR", Some(root.to_str().unwrap())),
        ("VK_DRIVER_FILES", Some(&icds)),
        ("FAKE_CUDA_INIT_FAILS", Some("1")),
        ("container", None),
        ("NVIDIA_DRIVER_CAPABILITIES", None),
        ("NVIDIA_VISIBLE_DEVICES", None),
    ];
    for (k, v) in env {
        all.retain(|(a, _)| a != k);
        all.push((k, *v));
    }
    doctor_child(case, &all);
}

#[test]
fn container_without_graphics() {
    let root = scratch("container-compute-only");
    put(&root, ".dockerenv", "");
    container_child(
        "child_container_without_graphics",
        &root,
        &[
            ("NVIDIA_DRIVER_CAPABILITIES", Some("compute,utility")),
            ("NVIDIA_VISIBLE_DEVICES", Some("all")),
        ],
    );
}

#[test]
#[ignore = "runs in a child process of container_without_graphics"]
fn child_container_without_graphics() {
    child_only!("child_container_without_graphics");
    let d = doctor(Some(&test_root()));
    let c = d.get("container").says(PASS, &[], &[]);
    assert_eq!(c.seen, "in a container: /.dockerenv exists (Docker)");
    assert_eq!(d.get("container.visible_devices").status, PASS);
    let c = d.get("container.driver_capabilities");
    c.says(FAIL, &["libnvidia-glvkspirv"], &[]);
    let missing = "NVIDIA_DRIVER_CAPABILITIES=compute,utility: graphics missing";
    c.seen_starts(missing);
    assert_eq!(
        c.fix,
        "set NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics (or all) in the image (ENV) or on docker run -e, \
         and restart the container"
    );
    for (lib, cap) in [
        ("libGLX_nvidia.so.0", "graphics"),
        ("libnvidia-glcore.so", "graphics"),
        ("libnvidia-glvkspirv.so", "graphics"),
        ("libcuda.so.1", "compute"),
    ] {
        let c = d
            .get(&format!("container.library[{lib}]"))
            .says(FAIL, &[], &[]);
        let add = format!("add {cap} to NVIDIA_DRIVER_CAPABILITIES so the toolkit mounts it");
        c.fix_starts(&add);
    }
    let add = "add graphics to NVIDIA_DRIVER_CAPABILITIES";
    d.get("container.nvidia_icd_json").says(FAIL, &[], &[add]);
    let gpus = "docker run --gpus all";
    d.get("container.device_nodes")
        .says(FAIL, &["no /dev/nvidiactl"], &[gpus]);
}

#[test]
fn container_without_graphics_and_no_manifest() {
    // The usual case: a container with compute only, no Vulkan driver at all. The
    // first check that fails must say that graphics is missing.
    let root = scratch("container-no-manifest");
    put(&root, ".dockerenv", "");
    let icds = scratch("container-no-manifest-icds");
    container_child(
        "child_container_without_graphics_first_failure",
        &root,
        &[
            ("NVIDIA_DRIVER_CAPABILITIES", Some("compute,utility")),
            ("NVIDIA_VISIBLE_DEVICES", Some("all")),
            ("VK_DRIVER_FILES", Some(icds.to_str().unwrap())),
        ],
    );
}

#[test]
#[ignore = "runs in a child process of container_without_graphics_and_no_manifest"]
fn child_container_without_graphics_first_failure() {
    child_only!("child_container_without_graphics_first_failure");
    let d = doctor(Some(&test_root()));
    let first = d
        .checks
        .iter()
        .find(|c| c.status == FAIL)
        .expect("a check fails");
    assert!(
        first.name.starts_with("vulkan."),
        "the Vulkan checks come first: {first:?}"
    );
    let lacks =
        "this container lacks the graphics capability (NVIDIA_DRIVER_CAPABILITIES=compute,utility)";
    first.says(FAIL, &[lacks], &[]);
    // Not "install a Vulkan driver" first.
    let add = "add graphics to NVIDIA_DRIVER_CAPABILITIES: set NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics";
    assert!(first.fix.starts_with(add), "{first:?}");
    for name in ["vulkan.icd_manifests", "vulkan.nvidia_icd"] {
        let c = d.get(name).says(FAIL, &[], &[]);
        c.fix_starts("add graphics to NVIDIA_DRIVER_CAPABILITIES");
    }
}

#[test]
fn container_defaults_lack_graphics() {
    // The toolkit's default capabilities (the variable unset) are utility,compute;
    // the container is recognised by /proc/1/cgroup.
    let root = scratch("container-default-caps");
    put(
        &root,
        "proc/1/cgroup",
        "12:devices:/docker/0123456789abcdef\n",
    );
    container_child("child_container_default_caps", &root, &[]);
}

#[test]
#[ignore = "runs in a child process of container_defaults_lack_graphics"]
fn child_container_default_caps() {
    child_only!("child_container_default_caps");
    let d = doctor(Some(&test_root()));
    assert_eq!(
        d.get("container").seen,
        "in a container: /proc/1/cgroup mentions docker"
    );
    d.get("container.visible_devices")
        .says(WARN, &[], &["docker run --gpus all"]);
    let c = d.get("container.driver_capabilities").says(FAIL, &[], &[]);
    let unset = "NVIDIA_DRIVER_CAPABILITIES is not set (the toolkit's default: utility,compute): graphics missing";
    c.seen_starts(unset);
}

#[test]
fn container_with_no_gpu() {
    let root = scratch("container-void");
    put(&root, "run/.containerenv", "");
    container_child(
        "child_container_void",
        &root,
        &[
            ("NVIDIA_VISIBLE_DEVICES", Some("void")),
            ("NVIDIA_DRIVER_CAPABILITIES", Some("all")),
        ],
    );
}

#[test]
#[ignore = "runs in a child process of container_with_no_gpu"]
fn child_container_void() {
    child_only!("child_container_void");
    let d = doctor(Some(&test_root()));
    assert_eq!(
        d.get("container").seen,
        "in a container: /run/.containerenv exists (Podman)"
    );
    let c = d.get("container.visible_devices").says(FAIL, &[], &[]);
    assert_eq!(
        c.seen,
        "NVIDIA_VISIBLE_DEVICES=void: the toolkit exposes no GPU"
    );
    assert_eq!(d.get("container.driver_capabilities").status, PASS);
}

#[test]
fn container_set_up_right() {
    let root = scratch("container-complete");
    put(&root, ".dockerenv", "");
    let lib = format!("usr/lib/{}-linux-gnu", std::env::consts::ARCH);
    for f in [
        "libcuda.so.1",
        "libGLX_nvidia.so.0",
        "libnvidia-glcore.so.580.159.04",
        "libnvidia-glvkspirv.so.580.159.04",
    ] {
        put(&root, &format!("{lib}/{f}"), "");
    }
    manifest(
        &root.join("etc/vulkan/icd.d"),
        "nvidia_icd.json",
        "libGLX_nvidia.so.0",
    );
    for f in ["nvidiactl", "nvidia0", "nvidia-uvm"] {
        put(&root, &format!("dev/{f}"), "");
    }
    container_child(
        "child_container_complete",
        &root,
        &[
            (
                "NVIDIA_DRIVER_CAPABILITIES",
                Some("compute,utility,graphics"),
            ),
            ("NVIDIA_VISIBLE_DEVICES", Some("0")),
        ],
    );
}

#[test]
#[ignore = "runs in a child process of container_set_up_right"]
fn child_container_complete() {
    child_only!("child_container_complete");
    let root = test_root();
    let d = doctor(Some(&root));
    let container: Vec<&Check> = d
        .checks
        .iter()
        .filter(|c| c.name.starts_with("container"))
        .collect();
    assert_eq!(container.len(), 9, "{container:?}");
    for c in container {
        assert_eq!(c.status, PASS, "{c:?}");
        assert_eq!(c.fix, "");
    }
    assert!(d
        .get("container.library[libnvidia-glvkspirv.so]")
        .seen
        .contains("libnvidia-glvkspirv.so.580.159.04"));
    assert_eq!(
        d.get("container.device_nodes").seen,
        "/dev/nvidiactl and /dev/nvidia0"
    );
}

#[test]
fn not_in_a_container() {
    let root = scratch("no-container");
    container_child("child_not_in_a_container", &root, &[]);
}

#[test]
#[ignore = "runs in a child process of not_in_a_container"]
fn child_not_in_a_container() {
    child_only!("child_not_in_a_container");
    let d = doctor(Some(&test_root()));
    let c = d.get("container").says(PASS, &[], &[]);
    c.seen_starts("not in a container");
    assert!(
        !d.checks.iter().any(|c| c.name.starts_with("container.")),
        "no toolkit checks outside a container"
    );
}

/// The doctor reads the files under `Options::root` as it reads the
/// manifests: regular files only, at most 1 MiB. A FIFO at proc/1/cgroup (no
/// writer: opening it would wait for ever) and /dev/zero linked there (it never
/// ends) are not read, and the run returns.
#[test]
fn files_under_the_root_that_are_not_regular_are_not_read() {
    let root = scratch("root-fifo-cgroup");
    std::fs::create_dir_all(root.join("proc/1")).unwrap();
    mkfifo(&root.join("proc/1/cgroup"));
    container_child("child_root_not_regular", &root, &[]);
    let root = scratch("root-zero-cgroup");
    std::fs::create_dir_all(root.join("proc/1")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", root.join("proc/1/cgroup")).unwrap();
    container_child("child_root_not_regular", &root, &[]);
}

#[test]
#[ignore = "runs in a child process of files_under_the_root_that_are_not_regular_are_not_read"]
fn child_root_not_regular() {
    child_only!("child_root_not_regular");
    let d = doctor_within(Some(test_root()), std::time::Duration::from_secs(60));
    let c = d.get("container").says(PASS, &[], &[]);
    c.seen_starts("not in a container");
}

// --- The open-file limit -------------------------------------------------------------

#[test]
fn open_file_limit() {
    doctor_child("child_open_file_limit", &[]);
}

fn set_soft_limit(n: u64) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
    lim.rlim_cur = n;
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }, 0);
}

#[test]
#[ignore = "runs in a child process of open_file_limit"]
fn child_open_file_limit() {
    child_only!("child_open_file_limit");
    set_soft_limit(64);
    let d = doctor(None);
    let raise = ["LimitNOFILE=", "--ulimit nofile=4096:4096"];
    let c = d.get("process.open_files").says(FAIL, &[], &raise);
    c.seen_starts("open-file limit 64 (hard ");
    c.fix_starts("raise it to at least 1024: ulimit -n 4096");
    assert!(!d.ready());
    set_soft_limit(512);
    let d = doctor(None);
    assert_eq!(d.get("process.open_files").status, WARN);
    set_soft_limit(4096);
    let d = doctor(None);
    assert_eq!(d.get("process.open_files").says(PASS, &[], &[]).fix, "");
}

// --- The deep self-test ---------------------------------------------------------------

/// The deep checks of a report, with the time each one's `seen` ends with.
fn deep_checks(d: &Report) -> Vec<(&Check, f64)> {
    d.checks
        .iter()
        .filter(|c| c.name.starts_with("deep."))
        .map(|c| {
            let ms = c
                .seen
                .rsplit_once(" (")
                .and_then(|(_, t)| t.strip_suffix(" ms)"))
                .and_then(|t| t.parse::<f64>().ok())
                .unwrap_or_else(|| panic!("{} states its time: {}", c.name, c.seen));
            (c, ms)
        })
        .collect()
}

/// Prints the deep checks one line each, and the total.
fn print_deep(d: &Report, started: std::time::Instant) {
    for (c, ms) in deep_checks(d) {
        println!(
            "DEEP {:?} {:<40} {ms:>9.1} ms  {}",
            c.status, c.name, c.seen
        );
        if !c.fix.is_empty() {
            println!("     fix: {}", c.fix);
        }
    }
    println!(
        "DEEP total {:.2} s (the run, as the test measured it)",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn deep_vulkan_only() {
    run_child(
        "child_deep_vulkan_only",
        &empty_dir("doctor-deep"),
        &[("VKCUDA_DISABLE_CUDA", Some("1"))],
    );
}

#[test]
#[ignore = "runs in a child process of deep_vulkan_only"]
fn child_deep_vulkan_only() {
    child_only!("child_deep_vulkan_only");
    let d = deep_run();
    // Says why the CUDA part is skipped.
    let c = d.get("deep.cuda").says(WARN, &["VKCUDA_DISABLE_CUDA"], &[]);
    c.seen_starts("skipped: the CUDA part (");
    // A CUDA-allocated buffer needs CUDA.
    d.get("deep.buffer.cuda").says(WARN, &[], &[]);
    for name in [
        "deep.buffer.vulkan",
        "deep.image.R8G8B8A8_UNORM.2D",
        "deep.image.R32_SFLOAT.3D",
        "deep.image.R8G8B8A8_UNORM.CUBE",
        "deep.image.R16_UNORM.1D_ARRAY",
        "deep.image.R16G16B16A16_SFLOAT.2D_ARRAY",
    ] {
        d.get(name).says(PASS, &["Vulkan only"], &[]);
    }
    // Semaphores need VK_KHR_external_semaphore_fd, which lavapipe lacks: a skip
    // that says so; where the device has it, the exported fd is imported again.
    for name in ["deep.semaphore.timeline", "deep.semaphore.binary"] {
        let c = d.get(name);
        match c.status {
            PASS => c.says(PASS, &["exported as an fd and imported again"], &[]),
            _ => c.says(WARN, &["VK_KHR_external_semaphore_fd"], &[]),
        };
    }
    // Frames are LINEAR images: skipped where the device cannot copy them.
    for c in d
        .checks
        .iter()
        .filter(|c| c.name.starts_with("deep.frame."))
    {
        assert!(
            c.status == PASS
                || c.seen
                    .starts_with("skipped: this device cannot copy LINEAR"),
            "{c:?}"
        );
    }
    assert!(d
        .get("deep.buffer.vulkan")
        .seen
        .contains("exported as an fd and imported again"));
    // Every case is reported: no deep check fails on a working Vulkan device.
    let deep = deep_checks(&d);
    for (c, _) in &deep {
        assert_ne!(c.status, FAIL, "{c:?}");
    }
    assert!(deep.iter().any(|(c, _)| c.name.starts_with("deep.frame.")));
    let total = d.get("deep.total");
    total.says(total.status, &[" resources in ", " failed"], &[]);
    // The JSON carries the same checks.
    let names: Vec<_> = d.json()["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.contains(&"deep.total".to_string()));
}

#[test]
fn deep_with_the_stand_in_driver() {
    let (uuid, name) = first_device();
    let paired: [(&str, Option<&str>); 3] = [
        ("FAKE_CUDA_UUID", Some(&uuid)),
        ("FAKE_CUDA_UUIDS", None),
        ("CUDA_VISIBLE_DEVICES", None),
    ];
    // Without the self-test's copies: a clear skip of the CUDA part.
    let plain = fake_cuda_driver("doctor-fake-cuda", &[]);
    run_child("child_deep_stand_in_skips", &plain, &paired);
    // A stand-in whose device is no Vulkan device's twin: a skip that says so.
    let copies = fake_cuda_driver("doctor-fake-cuda-copies", &["-DWITH_COPIES"]);
    run_child(
        "child_deep_stand_in_skips",
        &copies,
        &[
            ("FAKE_CUDA_UUIDS", None),
            ("FAKE_CUDA_UUID", None),
            ("CUDA_VISIBLE_DEVICES", None),
        ],
    );
    // Paired with this machine's Vulkan device (its UUID), with the copies: the
    // CUDA part runs for real through lavapipe's memory where the stand-in can
    // (Vulkan-allocated buffers), and fails clearly where it cannot. The stand-in
    // maps lavapipe's memfds; another driver's fds are not files it can map.
    if !name.contains("llvmpipe") {
        eprintln!("SKIPPED the stand-in's CUDA part: it maps lavapipe's memory, and this device is '{name}'");
        return;
    }
    run_child("child_deep_stand_in_runs", &copies, &paired);
    // A driver that reads one byte wrong: the first wrong byte is reported.
    let mut flipped = paired.to_vec();
    flipped.push(("FAKE_CUDA_FLIP_BYTE", Some("123457")));
    run_child("child_deep_stand_in_wrong_byte", &copies, &flipped);
}

/// The UUID of this machine's first Vulkan device (as the stand-in driver takes
/// it) and its name.
fn first_device() -> (String, String) {
    let props = device_support(&vulkan_only_context()).props;
    (uuid_hex(&props.uuid), props.name)
}

fn deep_run() -> Report {
    let started = std::time::Instant::now();
    let d = doctor_with(None, None, true);
    print_deep(&d, started);
    d
}

#[test]
#[ignore = "runs in a child process of deep_with_the_stand_in_driver"]
fn child_deep_stand_in_skips() {
    child_only!("child_deep_stand_in_skips");
    let d = deep_run();
    let c = d.get("deep.cuda").says(WARN, &[], &[]);
    c.seen_starts("skipped: the CUDA part (");
    assert!(
        c.seen.contains("the CUDA driver has no cuMemcpyHtoD_v2")
            || c.seen.contains("no context with CUDA: "),
        "says why: {c:?}"
    );
    for (c, _) in deep_checks(&d) {
        assert_ne!(c.status, FAIL, "the Vulkan-only part still runs: {c:?}");
    }
    assert_eq!(d.get("deep.buffer.vulkan").status, PASS);
}

#[test]
#[ignore = "runs in a child process of deep_with_the_stand_in_driver"]
fn child_deep_stand_in_runs() {
    child_only!("child_deep_stand_in_runs");
    let d = deep_run();
    d.get("deep.cuda").says(PASS, &[], &[]);
    let both_ways = "Vulkan -> CUDA and CUDA -> Vulkan";
    d.get("deep.buffer.vulkan").says(PASS, &[both_ways], &[]);
    // The stand-in has no cuMemCreate and no arrays: clear failures, not a crash.
    let c = d.get("deep.buffer.cuda");
    c.says(FAIL, &[], &["vkcuda_doctor --deep --json"]);
    assert!(
        c.seen.contains("cuMemGetAllocationGranularity") || c.seen.contains("cuMemCreate"),
        "{c:?}"
    );
    let c = d.get("deep.image.R8G8B8A8_UNORM.2D").says(FAIL, &[], &[]);
    c.seen_starts("vkcuda_image_create failed: ");
    assert_eq!(d.get("deep.total").status, FAIL);
    assert!(!d.ready());
}

#[test]
#[ignore = "runs in a child process of deep_with_the_stand_in_driver"]
fn child_deep_stand_in_wrong_byte() {
    child_only!("child_deep_stand_in_wrong_byte");
    let d = deep_run();
    let c = d.get("deep.buffer.vulkan").says(FAIL, &[], &[]);
    // The ramp first: byte 123457 of a ramp seeded 0x11 is (123457 + 0x11) mod 256.
    let want = ((123457u64 + 0x11) % 256) as u8;
    c.seen_starts(&format!(
            "Vulkan wrote a ramp, CUDA read: first wrong byte at offset 123457: expected {want:#04x}, got {:#04x} (1 of 4194304 bytes wrong)",
            want ^ 0xff
        ));
    c.fix_starts("do not share this kind of resource");
}

/// The self-test is itself tested: stand-in drivers that corrupt one kind of data
/// in one direction (tests/fake_cuda, `FAKE_CUDA_CORRUPT`): a byte in every
/// uniform run longer than 4 KiB (a driver that only gets what compression
/// squeezes wrong), zeros, a large tile, a ramp, random bytes; as CUDA reads
/// (`dtoh`) and as CUDA writes (`htod`). Each must make `deep.buffer.vulkan` fail,
/// naming the first wrong byte the stand-in logged (offset, expected, got, how many).
#[test]
fn deep_catches_every_corrupting_driver() {
    let (uuid, name) = first_device();
    if !name.contains("llvmpipe") {
        eprintln!("SKIPPED the corrupting stand-ins: they map lavapipe's memory, and this device is '{name}'");
        return;
    }
    let copies = fake_cuda_driver("doctor-fake-cuda-copies", &["-DWITH_COPIES"]);
    for kind in ["uniform", "zeros", "tile", "ramp", "random"] {
        for dir in ["dtoh", "htod"] {
            let log = scratch(&format!("corrupt-{kind}-{dir}")).join("log");
            run_child(
                "child_deep_stand_in_corrupts",
                &copies,
                &[
                    ("FAKE_CUDA_UUID", Some(&uuid)),
                    ("FAKE_CUDA_UUIDS", None),
                    ("CUDA_VISIBLE_DEVICES", None),
                    ("FAKE_CUDA_CORRUPT", Some(kind)),
                    ("FAKE_CUDA_CORRUPT_DIR", Some(dir)),
                    ("FAKE_CUDA_CORRUPT_LOG", Some(log.to_str().unwrap())),
                ],
            );
        }
    }
}

#[test]
#[ignore = "runs in a child process of deep_catches_every_corrupting_driver"]
fn child_deep_stand_in_corrupts() {
    child_only!("child_deep_stand_in_corrupts");
    let kind = std::env::var("FAKE_CUDA_CORRUPT").unwrap();
    let dir = std::env::var("FAKE_CUDA_CORRUPT_DIR").unwrap();
    let d = deep_run();
    // What the stand-in corrupted: one copy (the self-test stops at the first).
    let log = std::fs::read_to_string(std::env::var("FAKE_CUDA_CORRUPT_LOG").unwrap())
        .unwrap_or_else(|e| panic!("{kind} {dir}: the stand-in corrupted nothing ({e})"));
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 1, "{kind} {dir}: one corrupted copy: {log}");
    let f: Vec<&str> = lines[0].split(' ').collect();
    assert_eq!(f[0], dir);
    let (at, want, got, count): (usize, u8, u8, usize) = (
        f[1].parse().unwrap(),
        f[2].parse().unwrap(),
        f[3].parse().unwrap(),
        f[4].parse().unwrap(),
    );
    let pattern = match kind.as_str() {
        "ramp" => "a ramp",
        "random" => "random bytes",
        // Only the 64 KiB zero region and the 64 KiB and 2 MiB tiles have runs of
        // one value longer than 4 KiB.
        _ => "a 64 KiB zero region and 64 KiB and 2 MiB tiles",
    };
    match kind.as_str() {
        "zeros" => assert_eq!(want, 0),
        "tile" => assert_ne!(want, 0),
        _ => {}
    }
    let way = if dir == "dtoh" {
        format!("Vulkan wrote {pattern}, CUDA read")
    } else {
        format!("CUDA wrote {pattern}, Vulkan read")
    };
    let c = d.get("deep.buffer.vulkan").says(FAIL, &[], &[]);
    assert_eq!(
        c.seen.rsplit_once(" (").unwrap().0,
        format!(
            "{way}: first wrong byte at offset {at}: expected {want:#04x}, got {got:#04x} \
             ({count} of 4194304 bytes wrong)"
        ),
        "{kind} {dir}"
    );
    c.fix_starts("do not share this kind of resource");
    assert_eq!(d.get("deep.total").status, FAIL);
    println!("CAUGHT {kind} {dir}: {}", c.seen);
}

mod gpu {
    use super::*;

    #[test]
    #[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
    fn gpu_deep_doctor_every_check_passes() {
        let Some(ctx) = cuda_context_or_skip("gpu_deep_doctor_every_check_passes") else {
            return;
        };
        // Only to know there is a GPU: the deep doctor makes its own context.
        drop(ctx);
        let started = std::time::Instant::now();
        let d = deep_run();
        let deep = deep_checks(&d);
        d.get("deep.cuda").says(PASS, &[], &[]); // the CUDA part runs
        let not_passed: Vec<_> = deep
            .iter()
            .filter(|(c, _)| c.status != PASS)
            .map(|(c, _)| format!("{} [{:?}]: {} | fix: {}", c.name, c.status, c.seen, c.fix))
            .collect();
        assert!(
            not_passed.is_empty(),
            "{} deep checks did not pass:\n  {}",
            not_passed.len(),
            not_passed.join("\n  ")
        );
        for name in [
            "deep.buffer.vulkan",
            "deep.buffer.cuda",
            "deep.image.R8G8B8A8_UNORM.2D",
            "deep.frame.NV12",
            "deep.semaphore.timeline",
            "deep.semaphore.binary",
        ] {
            assert!(d.get(name).seen.contains("CUDA"), "{:?}", d.get(name));
        }
        let total = d.get("deep.total");
        println!("DEEP deep.total: {}", total.seen);
        let secs = started.elapsed().as_secs_f64();
        assert!(
            secs <= 10.0,
            "the deep doctor took {secs:.2} s (target <= 10 s)"
        );
    }
}
