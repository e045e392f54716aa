//! Conventions of the test files themselves (see the top of tests/support/mod.rs):
//! a test that needs a CUDA GPU from its first statement is `#[ignore]`d with the
//! one reason below, so that a machine without a GPU reports it as ignored rather
//! than passed; runs that require the GPU (VKCUDA_REQUIRE_GPU=1) must include the
//! ignored tests (`--include-ignored`). And two conventions of the library's
//! sources: every CUDA call is a required symbol, and no message string carries
//! a run of spaces (`message_strings_have_no_runs_of_spaces`). Last, the GPU runs'
//! watchdog (tests/support/watchdog.rs) says where a hung test process is.

use std::path::{Path, PathBuf};

#[path = "support/children.rs"]
#[allow(dead_code)]
mod children;
#[path = "support/watchdog.rs"]
mod watchdog;

/// The reason every GPU-only test gives, word for word.
const NEEDS_GPU: &str =
    r#"#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]"#;

struct TestFn {
    at: String,
    attrs: Vec<String>,
    /// The first line of the body after `let _g = serial();`, `use` lines and
    /// comments (with the next one where rustfmt broke a long `let x =`).
    first: String,
}

fn test_fns(path: &Path, src: &str) -> Vec<TestFn> {
    let lines: Vec<&str> = src.lines().map(str::trim).collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if *l != "#[test]" {
            continue;
        }
        let mut j = i + 1;
        let mut attrs = Vec::new();
        while lines[j].starts_with("#[") {
            attrs.push(lines[j].to_string());
            j += 1;
        }
        let name = lines[j]
            .strip_prefix("fn ")
            .and_then(|f| f.split('(').next())
            .unwrap_or_else(|| panic!("{}:{}: no fn after #[test]", path.display(), j + 1));
        j += 1;
        while lines[j].is_empty()
            || lines[j].starts_with("//")
            || lines[j].starts_with("use ")
            || lines[j].ends_with("= serial();")
        {
            j += 1;
        }
        out.push(TestFn {
            at: format!("{}:{} {name}", path.display(), i + 1),
            attrs,
            first: if lines[j].ends_with('=') {
                format!("{} {}", lines[j], lines[j + 1])
            } else {
                lines[j].to_string()
            },
        });
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn gpu_only_tests_are_ignored_with_one_reason() {
    // The Rust library's suites (tests/) and the C door's (capi/tests/).
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("tests"), &mut files);
    rust_files(&root.join("capi/tests"), &mut files);
    let (mut tests, mut gpu, mut wrong) = (0, 0, Vec::new());
    for f in &files {
        let src = std::fs::read_to_string(f).unwrap();
        for t in test_fns(f.strip_prefix(&root).unwrap(), &src) {
            tests += 1;
            let needs_gpu = t.first.contains("cuda_context_or_skip(");
            let marked = t.attrs.iter().any(|a| a == NEEDS_GPU);
            gpu += needs_gpu as usize;
            if needs_gpu && !marked {
                wrong.push(format!(
                    "{}: needs a GPU but is not marked {NEEDS_GPU}",
                    t.at
                ));
            }
            if marked && !needs_gpu {
                wrong.push(format!(
                    "{}: marked as GPU-only but does not start with cuda_context_or_skip",
                    t.at
                ));
            }
            let other = t
                .attrs
                .iter()
                .any(|a| a.starts_with("#[ignore") && a != NEEDS_GPU);
            if needs_gpu && other {
                wrong.push(format!("{}: two #[ignore] reasons", t.at));
            }
        }
    }
    println!("{tests} tests in {} files, {gpu} GPU-only", files.len());
    // The parser found the tests (it would pass vacuously otherwise).
    assert!(tests >= 80 && gpu >= 19, "{tests} tests, {gpu} GPU-only");
    assert!(wrong.is_empty(), "\n  {}", wrong.join("\n  "));
}

/// VKCUDA_REQUIRE_GPU=1 asks for the GPU tests to run; they are `#[ignore]`d, so a
/// run without `--include-ignored` would report them as ignored and pass. This
/// test fails such a run (the GPU scripts run every test executable, this one too).
#[test]
fn require_gpu_runs_include_the_ignored_tests() {
    let required = std::env::var("VKCUDA_REQUIRE_GPU").is_ok_and(|v| v == "1");
    let included = std::env::args().any(|a| a == "--include-ignored" || a == "--ignored");
    assert!(
        !required || included,
        "VKCUDA_REQUIRE_GPU=1 but the GPU tests are #[ignore]d: run the test executables \
         with --include-ignored (cargo test -- --include-ignored)"
    );
}

/// Every CUDA driver function the library calls is in `REQUIRED_SYMBOLS`
/// (src/cuda/mod.rs), which the driver is checked against when it is loaded: a
/// driver without one is then `VKCUDA_ERROR_CUDA_UNAVAILABLE` naming it, rather than
/// a panic at the first call (cudarc resolves each symbol lazily and panics on a
/// missing one).
#[test]
fn every_cuda_call_is_a_required_symbol() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut sources = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                sources.push(p);
            }
        }
    }
    let list = std::fs::read_to_string(root.join("cuda/mod.rs")).unwrap();
    let start = list
        .find("const REQUIRED_SYMBOLS")
        .expect("REQUIRED_SYMBOLS");
    let end = start + list[start..].find("];").unwrap();
    let required = &list[start..end];
    // The deep self-test's own copies: it checks its list (CUDA_SYMBOLS) before
    // the first call and skips its CUDA part, naming the symbol, when one is missing.
    let table = std::fs::read_to_string(root.join("doctor/deep/table.rs")).unwrap();
    let start = table
        .find("pub(crate) const CUDA_SYMBOLS")
        .expect("CUDA_SYMBOLS");
    let own = &table[start..start + table[start..].find("];").unwrap()];
    let deep = root.join("doctor/deep");
    let mut missing = Vec::new();
    for p in sources {
        let text = std::fs::read_to_string(&p).unwrap();
        let checked_here = if p.starts_with(&deep) { own } else { "" };
        for (i, _) in text.match_indices("sys::cu") {
            let name: String = text[i + 5..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            // Types and constants (CUresult, CUdeviceptr, ...) start with an upper-case letter after "cu".
            if name.chars().nth(2).is_some_and(|c| c.is_ascii_uppercase())
                && !required.contains(&format!("\"{name}\""))
                && !checked_here.contains(&format!("\"{name}\""))
                && !missing.contains(&name)
            {
                missing.push(name);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "CUDA driver functions called but not in REQUIRED_SYMBOLS (src/cuda/mod.rs): {missing:?}"
    );
}

/// A string literal of a Rust source: where it starts and its text as the
/// compiler reads it (`\` line continuations removed with the next line's leading
/// whitespace; other escapes kept as written; raw strings left out: they cannot
/// continue a line).
struct Literal {
    line: usize,
    text: String,
}

/// The (non-raw) string literals of `src`, skipping comments, char literals and
/// lifetimes.
fn string_literals(src: &str) -> Vec<Literal> {
    let b: Vec<char> = src.chars().collect();
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    let at = |i: usize| b.get(i).copied().unwrap_or('\0');
    while i < b.len() {
        let c = b[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            loop {
                if at(i) == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if at(i) == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += (at(i) == '\n') as usize;
                    i += 1;
                }
            }
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}', '"') or a lifetime ('a).
            if at(i + 1) == '\\' {
                i += 2;
                while at(i) != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
            }
        } else if (c == 'r' || (c == 'b' && at(i + 1) == 'r'))
            && !at(i.wrapping_sub(1)).is_alphanumeric()
            && at(i.wrapping_sub(1)) != '_'
            && {
                let mut j = i + if c == 'b' { 2 } else { 1 };
                while at(j) == '#' {
                    j += 1;
                }
                at(j) == '"'
            }
        {
            // A raw string: to the quote followed by as many #s.
            let mut j = i + if c == 'b' { 2 } else { 1 };
            let mut hashes = 0;
            while at(j) == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            loop {
                if at(j) == '"' && (1..=hashes).all(|k| at(j + k) == '#') {
                    j += 1 + hashes;
                    break;
                }
                line += (at(j) == '\n') as usize;
                j += 1;
            }
            i = j;
        } else if c == '"' {
            let start = line;
            let mut text = String::new();
            i += 1;
            while at(i) != '"' {
                match at(i) {
                    '\\' if at(i + 1) == '\n' => {
                        i += 1;
                        while at(i).is_whitespace() {
                            line += (at(i) == '\n') as usize;
                            i += 1;
                        }
                    }
                    '\\' => {
                        text.push('\\');
                        text.push(at(i + 1));
                        i += 2;
                    }
                    ch => {
                        line += (ch == '\n') as usize;
                        text.push(ch);
                        i += 1;
                    }
                }
            }
            i += 1;
            out.push(Literal { line: start, text });
        } else {
            i += 1;
        }
    }
    out
}

/// Message strings read as one line of words: a line break inside a string
/// literal without a `\` continuation carries the next line's indentation into
/// the message, and so does a continuation whose first line already ends in
/// spaces, or text pasted over one ("runs 960              bytes past the end").
/// Every string literal of the library's sources is read as the compiler reads it
/// and refused with a run of two or more spaces or a line break followed by
/// indentation.
#[test]
fn message_strings_have_no_runs_of_spaces() {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // The workspace root, also when this file runs from a member crate's tests.
    let root = if manifest.join("src/lib.rs").exists() && manifest.join("crates").exists() {
        manifest
    } else {
        manifest.parent().unwrap().to_path_buf()
    };
    let mut files = Vec::new();
    // The library's sources (and the C door's after the split), and the bridge
    // crates' (not their benchmarks and examples, whose WGSL text and tables
    // are indented on purpose).
    let mut dirs = vec![root.join("src"), root.join("capi/src")];
    for e in std::fs::read_dir(root.join("crates")).unwrap() {
        dirs.push(e.unwrap().path().join("src"));
    }
    for dir in dirs.iter().filter(|d| d.is_dir()) {
        rust_files(dir, &mut files);
    }
    // The scanner itself: a known bad literal is found, a good one is not.
    let probe = "let a = \"runs 960   bytes\"; let b = \"one \\\n        two\"; let c = '\"';\n\
                 let d = r#\"raw   text\"#; // \"in   a comment\"\n let e = \"line\n    break\";\
                 let f = \"{\\n  \\\"json\\\": 1}\";";
    let found: Vec<_> = string_literals(probe)
        .into_iter()
        .filter(|l| bad_spacing(&l.text))
        .map(|l| l.text)
        .collect();
    assert_eq!(
        found,
        ["runs 960   bytes", "line\n    break"],
        "the scanner"
    );

    let (mut literals, mut wrong) = (0, Vec::new());
    for f in &files {
        let src = std::fs::read_to_string(f).unwrap();
        for l in string_literals(&src) {
            literals += 1;
            if bad_spacing(&l.text) {
                wrong.push(format!(
                    "{}:{}: {:?}",
                    f.strip_prefix(&root).unwrap().display(),
                    l.line,
                    l.text
                ));
            }
        }
    }
    println!("{literals} string literals in {} files", files.len());
    assert!(literals > 1000 && files.len() > 30, "{literals} literals");
    assert!(
        wrong.is_empty(),
        "string literals with runs of spaces (a line break inside the literal, or text \
         pasted over a `\\` continuation):\n  {}",
        wrong.join("\n  ")
    );
}

/// Two spaces in a row, or a line break followed by a space or tab. Spaces after
/// an escaped `\n` are written on purpose (indented text such as JSON) and pass.
fn bad_spacing(text: &str) -> bool {
    let mut rest = text.to_string();
    while let Some(at) = rest.find("\\n ") {
        let end = at + 2 + rest[at + 2..].len() - rest[at + 2..].trim_start_matches(' ').len();
        rest.replace_range(at..end, "\\n");
    }
    rest.contains("  ") || rest.contains("\n ") || rest.contains("\n\t")
}

/// A test process still running when `VKCUDA_TEST_WATCHDOG_S` has passed prints
/// each of its threads, by name, with the system call it is blocked in and the
/// library its PC is in, then aborts: the child below sleeps in a thread of its
/// own, and the watchdog (at 1 s) finds it in libc's sleep.
#[test]
fn a_hung_test_process_says_where_its_threads_are() {
    let out = children::this_test("child_hangs", true)
        .env("VKCUDA_TEST_WATCHDOG_S", "1")
        .env(children::CHILD_ENV, "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    println!("{text}");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{:?}", out.status);
    assert!(
        text.contains("(VKCUDA_TEST_WATCHDOG_S); its last note: sleeping; its threads:"),
        "{text}"
    );
    assert!(text.contains("WATCHDOG: aborting"), "{text}");
    let sleeper = text
        .lines()
        .find(|l| l.contains("'hung-sleeper'"))
        .unwrap_or_else(|| panic!("the sleeping thread is listed: {text}"));
    assert!(sleeper.contains("nanosleep"), "{sleeper}");
    assert!(sleeper.contains("libc"), "the mapping of its PC: {sleeper}");
    // Its frames: from the handler down through libc's sleep into this executable.
    let exe = std::env::current_exe().unwrap();
    let frames: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("'hung-sleeper'"))
        .skip(1)
        .take_while(|l| l.trim_start().starts_with('#'))
        .collect();
    assert!(frames.len() >= 4, "{text}");
    assert!(frames.iter().any(|f| f.contains("libc")), "{frames:?}");
    // The first frame is the watchdog's signal handler, in this executable: its
    // address is the one addr2line (binutils, beside the C compiler) reads back.
    let ours = format!("{}+", exe.to_str().unwrap());
    let first = frames[0].split_whitespace().nth(1).unwrap_or_default();
    let address = first
        .strip_prefix(&ours)
        .unwrap_or_else(|| panic!("frame #0 is not in {exe:?}: {frames:?}"));
    let named = std::process::Command::new("addr2line")
        .args(["-f", "-e"])
        .arg(&exe)
        .arg(address)
        .output()
        .expect("addr2line (binutils)");
    let named = String::from_utf8_lossy(&named.stdout);
    assert!(
        named.contains("on_frames_signal"),
        "addr2line {address}: {named}"
    );
    assert!(text.contains("'test-watchdog' state R"), "{text}");
}

#[test]
#[ignore = "runs in a child process of a_hung_test_process_says_where_its_threads_are"]
fn child_hangs() {
    if !children::in_child("child_hangs") {
        return;
    }
    watchdog::arm();
    watchdog::note("sleeping".into());
    std::thread::Builder::new()
        .name("hung-sleeper".into())
        .spawn(|| std::thread::sleep(std::time::Duration::from_secs(60)))
        .unwrap()
        .join()
        .unwrap();
}
