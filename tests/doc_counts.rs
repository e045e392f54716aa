//! The docs' counts and citations against the code: fails when a documented count
//! drifts (the functions of include/vkcuda.h, the single-plane formats) or when a
//! doc cites a test file, a test function or a `cargo test -p vkcuda-c --test` target that does
//! not exist. The misuse case count is checked by the misuse binary itself
//! (`documented_counts_are_the_matrix`), the one place that builds the matrix.
//! CPU only, no device.

#[path = "doc_claims/mod.rs"]
mod doc_claims;
#[allow(dead_code)]
#[path = "../capi/tests/misuse/header.rs"]
mod header;

use doc_claims::{check_count, docs, root, test_source};

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
