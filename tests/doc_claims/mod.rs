//! What the docs state, read back for the drift tests (`tests/doc_counts.rs`, and
//! the misuse binary for its case count, which only that binary can compute).
//! Shared with `#[path]`; not a test target of its own.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The repository root (this file serves the root crate's tests and the C crate's).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|p| p.join("cbindgen.toml").is_file())
        .expect("the repository root (cbindgen.toml) above CARGO_MANIFEST_DIR")
        .to_path_buf()
}

/// The docs whose statements are checked: README.md and docs/*.md (the CHANGELOG
/// is history and keeps the numbers of its time).
pub fn docs() -> Vec<(String, String)> {
    let root = root();
    let mut files = vec![root.join("README.md")];
    let mut md: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    md.sort();
    files.extend(md);
    files
        .into_iter()
        .map(|p| {
            let name = p.strip_prefix(&root).unwrap().display().to_string();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// Every number written right before `phrase` in `text` ("1,129 cases" for the
/// phrase " cases"; `**` around the number is skipped), with its line number.
pub fn numbers_before(text: &str, phrase: &str) -> Vec<(usize, u64)> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut from = 0;
        while let Some(at) = line[from..].find(phrase) {
            let end = from + at;
            let head = line[..end].trim_end_matches('*');
            let digits: String = head
                .chars()
                .rev()
                .take_while(|c| c.is_ascii_digit() || *c == ',')
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            let n = digits.replace(',', "");
            if !n.is_empty() {
                found.push((i + 1, n.parse().unwrap()));
            }
            from = end + phrase.len();
        }
    }
    found
}

/// Checks that every number the docs write before `phrase` is `actual`, and that
/// there is at least one (so a reworded sentence does not pass by saying nothing).
/// Returns the mismatches as "file:line: ..." lines.
pub fn check_count(phrase: &str, actual: u64, what: &str) -> Vec<String> {
    let mut bad = Vec::new();
    let mut seen = 0;
    for (name, text) in docs() {
        for (line, n) in numbers_before(&text, phrase) {
            seen += 1;
            if n != actual {
                bad.push(format!(
                    "{name}:{line}: says {n}{phrase}, but {what} is {actual}"
                ));
            }
        }
    }
    if seen == 0 {
        bad.push(format!(
            "no doc states \"N{phrase}\" any more: update the drift test with the new wording ({what} is {actual})"
        ));
    }
    bad
}

/// The text of a test target: `tests/NAME.rs`, or every file of `tests/NAME/`.
pub fn test_source(path: &Path) -> Option<String> {
    if path.is_file() {
        return std::fs::read_to_string(path).ok();
    }
    if path.is_dir() {
        let mut all = String::new();
        for e in std::fs::read_dir(path).ok()? {
            let p = e.ok()?.path();
            if p.extension().is_some_and(|e| e == "rs") {
                all.push_str(&std::fs::read_to_string(&p).ok()?);
            }
        }
        return Some(all);
    }
    None
}
