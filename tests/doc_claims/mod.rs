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

/// The text of include/vkcuda.h.
pub fn header_text() -> String {
    std::fs::read_to_string(root().join("include/vkcuda.h")).unwrap()
}

/// The header's comments (`/* ... */`), each with the line it starts at.
pub fn header_comments(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find("/*") {
        let start = from + at;
        let end = text[start..]
            .find("*/")
            .map_or(text.len(), |e| start + e + 2);
        out.push((
            text[..start].matches('\n').count() + 1,
            text[start..end].to_string(),
        ));
        from = end;
    }
    out
}

/// The header without its comments: what it declares.
pub fn header_code(text: &str) -> String {
    let mut code = String::new();
    let mut from = 0;
    while let Some(at) = text[from..].find("/*") {
        let start = from + at;
        code.push_str(&text[from..start]);
        from = text[start..]
            .find("*/")
            .map_or(text.len(), |e| start + e + 2);
    }
    code.push_str(&text[from..]);
    code.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `vkcuda_*` and `VKCUDA_*` words of `text` (a word ends at a character that
/// is not alphanumeric or `_`), with their byte offsets.
pub fn vkcuda_words(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while i < bytes.len() {
        if (i == 0 || !word(bytes[i - 1]))
            && (bytes[i..].starts_with(b"vkcuda_") || bytes[i..].starts_with(b"VKCUDA_"))
        {
            let end = (i..bytes.len())
                .find(|&k| !word(bytes[k]))
                .unwrap_or(bytes.len());
            out.push((i, &text[i..end]));
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// The doc comment of function `name` in the header (the `/** ... */` right
/// before its declaration), its `*` margins removed, or None.
pub fn function_doc(text: &str, name: &str) -> Option<String> {
    let decl = text.find(&format!(" {name}("))?;
    let start = text[..decl].rfind("/**")?;
    let end = start + text[start..].find("*/")?;
    if end > decl {
        return None;
    }
    Some(
        text[start + 3..end]
            .lines()
            .map(|l| l.trim_start().trim_start_matches('*').trim())
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// The result code a doc names last in `text`: `VKCUDA_ERROR_X`, or `_X` (the
/// header's shorthand after a full name) read as `VKCUDA_ERROR_X`.
pub fn last_code(text: &str) -> Option<String> {
    let spans: Vec<&str> = text.split('`').skip(1).step_by(2).collect();
    spans.iter().rev().find_map(|s| {
        if s.starts_with("VKCUDA_ERROR_") || *s == "VKCUDA_SUCCESS" {
            Some(s.to_string())
        } else if s
            .strip_prefix('_')
            .is_some_and(|r| r.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        {
            Some(format!("VKCUDA_ERROR{s}"))
        } else {
            None
        }
    })
}

/// The checks a function's doc lists as "- <condition>: `CODE`;" bullets after the
/// line that contains `intro`: (condition, code) each, the condition in one line.
pub fn listed_checks(doc: &str, intro: &str) -> Vec<(String, String)> {
    let Some(at) = doc.find(intro) else {
        return Vec::new();
    };
    let mut bullets: Vec<String> = Vec::new();
    for line in doc[at..].lines().skip(1) {
        if let Some(b) = line.strip_prefix("- ") {
            bullets.push(b.to_string());
        } else if line.is_empty() {
            break;
        } else if let Some(last) = bullets.last_mut() {
            last.push(' ');
            last.push_str(line);
        } else {
            break;
        }
    }
    bullets
        .into_iter()
        .filter_map(|b| {
            let code = last_code(&b)?;
            Some((b, code))
        })
        .collect()
}
