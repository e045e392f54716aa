//! The docs' counts and citations against the code: fails when a documented count
//! drifts (the functions of include/vkcuda.h, the single-plane formats) or when a
//! doc cites a test file, a test function or a `cargo test -p vkcuda-c --test` target that does
//! not exist; and the header's own comments and the docs against the header: every
//! `vkcuda_*`/`VKCUDA_*` name they cite exists, no version string is stale, and no
//! function's doc lists checks followed by a bare list of codes that does not say
//! which check gives which. The misuse case count is checked by the misuse binary
//! itself (`documented_counts_are_the_matrix`), the one place that builds the
//! matrix; the codes of the pitched copies' listed checks by `capi/tests/planes.rs`
//! (`pitched_copy_checks_give_the_documented_codes`). CPU only, no device.

#[path = "doc_claims/mod.rs"]
mod doc_claims;
#[allow(dead_code)]
#[path = "../capi/tests/misuse/header.rs"]
mod header;

use doc_claims::{
    check_count, docs, header_code, header_comments, header_text, root, test_source, vkcuda_words,
};

#[test]
fn documented_export_count_is_the_header() {
    let h = header::header();
    let n = h.protos.len() as u64;
    let bad = check_count(
        " functions of `include/vkcuda.h`",
        n,
        "the header's function count",
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn documented_format_count_is_the_table() {
    let n = vkcuda::format::TABLE.len() as u64;
    let bad = check_count(" single-plane formats", n, "the format table's length");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// A path into a test folder: the Rust library's (tests/) or the C door's (capi/tests/).
fn is_test_path(s: &str) -> bool {
    s.starts_with("tests/") || s.starts_with("capi/tests/")
}

/// Backticked spans of a line: "`a` and `b`" -> ["a", "b"].
fn backticked(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

/// A cited name that reads as a Rust test function: snake_case with an underscore.
fn looks_like_test_fn(s: &str) -> bool {
    s.contains('_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !s.starts_with("vkcuda_")
}

/// Where a cited path points, from the doc's directory (links) or the root.
fn cited_path(doc: &str, cited: &str) -> std::path::PathBuf {
    let cited = cited.trim_end_matches([':', ',', '.', ')']);
    if let Some(rel) = cited.strip_prefix("../") {
        let _ = doc;
        root().join(rel)
    } else {
        root().join(cited)
    }
}

/// The paragraphs of a Markdown text (a citation may wrap), each joined into one
/// line, with the line number it starts at; a table row is a paragraph of its own.
fn paragraphs(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open = false;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('|') || t.starts_with('#') || t.starts_with("```") {
            if !t.is_empty() {
                out.push((i + 1, t.to_string()));
            }
            open = false;
        } else if open {
            let last = out.last_mut().unwrap();
            last.1.push(' ');
            last.1.push_str(t);
        } else {
            out.push((i + 1, t.to_string()));
            open = true;
        }
    }
    out
}

/// Every `tests/...` path a doc cites exists, every test function named after a
/// `tests/X.rs` on the same line is a `fn` of that file, and every
/// `cargo test -p vkcuda-c --test NAME [FILTER]` names a target that exists and a filter that
/// matches one of its functions.
#[test]
fn cited_tests_exist() {
    let mut bad = Vec::new();
    let mut cited = 0;
    for (doc, text) in docs() {
        for (i, paragraph) in paragraphs(&text) {
            let line = paragraph.as_str();
            let at = format!("{doc}:{i}");
            // Markdown links and backticked paths.
            let mut paths: Vec<String> = backticked(line)
                .into_iter()
                .filter(|s| is_test_path(s) && !s.contains(' '))
                .map(str::to_string)
                .collect();
            for part in line.split("](").skip(1) {
                let target = part.split(')').next().unwrap_or("");
                let target = target.split('#').next().unwrap_or("");
                let t = target.trim_start_matches("../");
                if is_test_path(t) {
                    paths.push(t.to_string());
                }
            }
            for p in &paths {
                cited += 1;
                let path = cited_path(&doc, p);
                if !path.exists() {
                    bad.push(format!("{at}: cites {p}, which does not exist"));
                }
            }
            // Test functions right after a tests/X.rs: "`tests/x.rs` `a`, `b`" or
            // "`tests/x.rs`: `a` and `b`" (only punctuation and "and" between).
            let parts: Vec<&str> = line.split('`').collect();
            let mut file: Option<String> = None;
            for k in (1..parts.len()).step_by(2) {
                let span = parts[k];
                let between = parts[k - 1]
                    .replace("and", "")
                    .replace([':', ',', ';', '(', ')'], "");
                if !between.trim().is_empty() {
                    file = None;
                }
                if is_test_path(span) && span.ends_with(".rs") {
                    file = test_source(&cited_path(&doc, span));
                } else if let Some(src) = &file {
                    if looks_like_test_fn(span) {
                        cited += 1;
                        if !src.contains(&format!("fn {span}(")) {
                            bad.push(format!("{at}: cites test `{span}`, which is not a fn of the file named before it"));
                        }
                    }
                }
            }
            // cargo test -p vkcuda-c --test NAME [FILTER]
            for span in backticked(line) {
                let Some(rest) = span.split("cargo test").nth(1) else {
                    continue;
                };
                let words: Vec<&str> = rest.split_whitespace().collect();
                let mut k = 0;
                while k < words.len() {
                    if words[k] == "--" {
                        break;
                    }
                    if words[k] == "--test" && k + 1 < words.len() {
                        let name = words[k + 1];
                        cited += 1;
                        // The Rust library's suites are in tests/, the C door's in capi/tests/.
                        let src = ["tests", "capi/tests"].iter().find_map(|dir| {
                            test_source(&root().join(format!("{dir}/{name}.rs")))
                                .or_else(|| test_source(&root().join(format!("{dir}/{name}"))))
                        });
                        match src {
                            None => bad.push(format!(
                                "{at}: `cargo test -p vkcuda-c --test {name}`: no such test target"
                            )),
                            Some(src) => {
                                if let Some(filter) =
                                    words.get(k + 2).filter(|f| !f.starts_with('-'))
                                {
                                    if !src.contains(&format!("fn {filter}"))
                                        && !src
                                            .lines()
                                            .any(|l| l.contains("fn ") && l.contains(*filter))
                                    {
                                        bad.push(format!("{at}: `cargo test -p vkcuda-c --test {name} {filter}`: no test fn matches {filter}"));
                                    }
                                }
                            }
                        }
                        k += 2;
                        continue;
                    }
                    k += 1;
                }
            }
        }
    }
    assert!(
        cited > 20,
        "only {cited} citations found: is the parser still reading the docs?"
    );
    assert!(
        bad.is_empty(),
        "the docs cite tests that do not exist:\n{}",
        bad.join("\n")
    );
}

/// Names the docs may cite that the header does not declare: programs of this
/// repository (each must exist as the file given) and the prelude's placeholder.
const NOT_IN_HEADER: &[(&str, &str)] = &[
    ("vkcuda_info", "c_examples/vkcuda_info.c"),
    ("vkcuda_doctor", "tools/vkcuda_doctor.c"),
    ("vkcuda_x", "capi/tests/header.rs"), // VKCUDA_DEPRECATED("use vkcuda_x"): a placeholder
];

/// Files (outside the docs) where an upper-case `VKCUDA_*` name the header does not
/// declare may live: environment variables, CMake options, C++ header macros.
fn code_files() -> Vec<std::path::PathBuf> {
    let root = root();
    let mut out = vec![root.join("CMakeLists.txt"), root.join("include/vkcuda.hpp")];
    let mut dirs: Vec<_> = [
        "src",
        "capi",
        "bridges",
        "tests",
        "scripts",
        "cmake",
        "c_examples",
        "tools",
        "python",
        "examples",
        "bench",
        "crates",
    ]
    .iter()
    .map(|d| root.join(d))
    .collect();
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if p.is_dir() {
                if !matches!(name.as_str(), "target" | "spirv" | "__pycache__" | "corpus") {
                    dirs.push(p);
                }
            } else if [
                ".rs", ".c", ".h", ".cpp", ".hpp", ".sh", ".cmake", ".txt", ".py", ".toml",
            ]
            .iter()
            .any(|x| name.ends_with(x))
            {
                out.push(p);
            }
        }
    }
    out
}

/// Every `vkcuda_*` and `VKCUDA_*` name in the header's comments, README.md and
/// docs/*.md exists: declared by the header (a function, type, enum value or
/// macro; `VKCUDA_IMAGE_CREATE_` as a prefix of one), a program of this repository,
/// or (upper case) an environment variable, option or macro the code uses.
#[test]
fn cited_vkcuda_names_exist() {
    let h = header_text();
    let declared: std::collections::BTreeSet<String> = vkcuda_words(&header_code(&h))
        .into_iter()
        .map(|(_, w)| w.to_string())
        .collect();
    assert!(
        declared.contains("vkcuda_image_cuda_copy_from_pitched") && declared.len() > 200,
        "the header parser found {} names",
        declared.len()
    );
    let mut code = String::new();
    for p in code_files() {
        if p.ends_with("tests/doc_counts.rs") {
            continue;
        }
        code.push_str(&std::fs::read_to_string(&p).unwrap_or_default());
        code.push('\n');
    }
    let used: std::collections::BTreeSet<&str> =
        vkcuda_words(&code).into_iter().map(|(_, w)| w).collect();
    let mut sources: Vec<(String, usize, String)> = header_comments(&h)
        .into_iter()
        .map(|(line, c)| ("include/vkcuda.h".to_string(), line, c))
        .collect();
    for (doc, text) in docs() {
        sources.push((doc, 1, text));
    }
    let mut bad = Vec::new();
    let mut seen = 0;
    for (file, first_line, text) in &sources {
        for (at, w) in vkcuda_words(text) {
            seen += 1;
            if declared.contains(w) {
                continue;
            }
            let line = first_line + text[..at].matches('\n').count();
            if w.ends_with('_') {
                if !declared.iter().any(|d| d.starts_with(w)) {
                    bad.push(format!(
                        "{file}:{line}: `{w}*` is the prefix of no name of the header"
                    ));
                }
            } else if let Some((_, path)) = NOT_IN_HEADER.iter().find(|(n, _)| *n == w) {
                if !root().join(path).exists() {
                    bad.push(format!("{file}:{line}: `{w}`: {path} does not exist"));
                }
            } else if w.starts_with("vkcuda_ffmpeg") {
                // The FFmpeg bridge's own header (bridges/ffmpeg), and its name.
                let bridge =
                    std::fs::read_to_string(root().join("bridges/ffmpeg/include/vkcuda_ffmpeg.h"))
                        .expect("bridges/ffmpeg/include/vkcuda_ffmpeg.h");
                if !bridge.contains(w) && w != "vkcuda_ffmpeg" {
                    bad.push(format!(
                        "{file}:{line}: `{w}` is not declared in bridges/ffmpeg/include/vkcuda_ffmpeg.h"
                    ));
                }
            } else if w.starts_with("vkcuda_") {
                bad.push(format!(
                    "{file}:{line}: `{w}` is not declared in include/vkcuda.h"
                ));
            } else if !used.contains(w) {
                bad.push(format!(
                    "{file}:{line}: `{w}` is neither declared in include/vkcuda.h nor used by the code"
                ));
            }
        }
    }
    assert!(
        seen > 500,
        "only {seen} names found: is the scan still reading the docs?"
    );
    assert!(
        bad.is_empty(),
        "names that do not exist:\n{}",
        bad.join("\n")
    );
}

/// No comment of the C or C++ header quotes a version string ("x.y.z") other than
/// the C library's (`vkcuda_version_string`'s example once read "0.1.0" at 0.3.0).
/// The C library's version is the `vkcuda-c` crate's (capi/Cargo.toml), not this
/// Rust crate's.
#[test]
fn headers_quote_no_stale_version() {
    let manifest = std::fs::read_to_string(root().join("capi/Cargo.toml")).unwrap();
    let version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .expect("capi/Cargo.toml has a `version = \"x.y.z\"` line");
    let mut bad = Vec::new();
    for file in ["include/vkcuda.h", "include/vkcuda.hpp"] {
        let h = std::fs::read_to_string(root().join(file)).unwrap();
        for (line, c) in header_comments(&h) {
            for q in c.split('"').skip(1).step_by(2) {
                let parts: Vec<&str> = q.split('.').collect();
                if parts.len() == 3
                    && parts
                        .iter()
                        .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
                    && q != version
                {
                    bad.push(format!(
                        "{file}:{line}: quotes \"{q}\"; the version is {version}"
                    ));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Functions whose doc may hold a parenthesis of several result codes and nothing
/// else, with why.
const CODE_LISTS: &[(&str, &str)] = &[(
    "vkcuda_doctor_run",
    "names the codes whose words the doctor's checks reuse; it returns none of them",
)];

/// A function's doc that lists checks and then "(`VKCUDA_ERROR_A`,
/// `VKCUDA_ERROR_B`)" does not say which check gives which code: each check names
/// its own. Finds every parenthesis of the header's comments holding two or more
/// result codes and nothing but separators.
#[test]
fn no_check_list_ends_in_a_bare_list_of_codes() {
    let h = header_text();
    let mut bad = Vec::new();
    let mut lists = 0;
    for (line, c) in header_comments(&h) {
        let body: String = c
            .lines()
            .map(|l| l.trim_start().trim_start_matches('*').trim())
            .collect::<Vec<_>>()
            .join(" ");
        let mut from = 0;
        while let Some(open) = body[from..].find('(') {
            let open = from + open;
            let Some(close) = body[open..].find(')').map(|c| open + c) else {
                break;
            };
            let inner = &body[open + 1..close];
            from = close;
            let spans: Vec<&str> = inner.split('`').skip(1).step_by(2).collect();
            let codes = spans
                .iter()
                .filter(|s| s.starts_with("VKCUDA_ERROR_") || (s.starts_with('_') && s.len() > 2))
                .count();
            let rest: String = inner
                .split('`')
                .step_by(2)
                .collect::<String>()
                .replace(" or ", " ")
                .replace(" and ", " ");
            if codes >= 2 && codes == spans.len() && rest.chars().all(|c| " ,".contains(c)) {
                lists += 1;
                // The declaration the comment documents: the first line after it
                // with a parenthesis.
                let after = line - 1 + c.lines().count();
                let decl = h
                    .lines()
                    .skip(after)
                    .find(|l| l.contains('('))
                    .unwrap_or("");
                let exempt = CODE_LISTS
                    .iter()
                    .any(|(f, _)| decl.contains(&format!(" {f}(")));
                if !exempt {
                    bad.push(format!(
                        "include/vkcuda.h:{line}: ({inner}) after a list of checks: say which \
                         check gives which code ({decl})"
                    ));
                }
            }
        }
    }
    assert!(
        lists >= 1,
        "the scan found no code list at all (not even vkcuda_doctor_run's)"
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
