//! The header: the prototypes and structs of include/vkcuda.h, and what the table
//! must cover for each function.

use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug)]
pub struct Param {
    pub ty: String,
    pub name: String,
}

#[derive(Debug)]
pub struct Proto {
    pub name: String,
    pub params: Vec<Param>,
}

pub struct Header {
    pub protos: Vec<Proto>,
    pub structs: BTreeMap<String, Vec<Param>>,
    pub enums: BTreeSet<String>,
}

pub fn strip_comments(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("/*") {
        out.push_str(&rest[..i]);
        match rest[i..].find("*/") {
            Some(j) => rest = &rest[i + j + 2..],
            None => rest = "",
        }
    }
    out.push_str(rest);
    out.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A prototype without its `VKCUDA_DEPRECATED("...")` attribute (the 0.1 names kept
/// for one minor), whose parentheses would read as the parameter list.
fn without_deprecated(decl: &str) -> String {
    match decl.find("VKCUDA_DEPRECATED(") {
        Some(i) => {
            let close = i + decl[i..].find(')').expect("VKCUDA_DEPRECATED(...)");
            format!("{}{}", &decl[..i], &decl[close + 1..])
        }
        None => decl.to_string(),
    }
}

/// "const struct vkcuda_buffer *buffer" -> (type "const struct vkcuda_buffer *", name "buffer");
/// arrays keep their brackets in the type ("uint8_t[16]").
fn split_decl(d: &str) -> Param {
    let d = d.split_whitespace().collect::<Vec<_>>().join(" ");
    let (d, array) = match d.find('[') {
        Some(i) => (d[..i].to_string(), d[i..].to_string()),
        None => (d.clone(), String::new()),
    };
    let cut = d
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map(|i| i + 1)
        .unwrap_or(0);
    Param {
        ty: format!("{}{array}", d[..cut].trim()),
        name: d[cut..].to_string(),
    }
}

pub fn parse_header(text: &str) -> Header {
    let h = strip_comments(text);
    let mut protos = Vec::new();
    let mut rest = h.as_str();
    while let Some(i) = rest.find("VKCUDA_API") {
        rest = &rest[i + "VKCUDA_API".len()..];
        if rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            continue; // a longer identifier
        }
        let end = rest.find(';').expect("a prototype ends with ;");
        let decl = without_deprecated(&rest[..end]);
        let decl = decl.as_str();
        rest = &rest[end..];
        if decl.contains("#define") || !decl.contains('(') {
            continue;
        }
        let open = decl.find('(').unwrap();
        let close = decl.rfind(')').unwrap();
        let head = split_decl(&decl[..open]);
        let args = decl[open + 1..close].trim();
        let params = if args == "void" || args.is_empty() {
            Vec::new()
        } else {
            args.split(',').map(split_decl).collect()
        };
        protos.push(Proto {
            name: head.name,
            params,
        });
    }
    let mut structs = BTreeMap::new();
    let mut rest = h.as_str();
    while let Some(i) = rest.find("typedef struct ") {
        rest = &rest[i + "typedef struct ".len()..];
        let name_end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap();
        let name = rest[..name_end].to_string();
        let after = rest[name_end..].trim_start();
        if !after.starts_with('{') {
            continue; // an opaque handle
        }
        let close = after.find('}').unwrap();
        let fields = after[1..close]
            .split(';')
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .map(split_decl)
            .collect();
        structs.insert(name, fields);
    }
    let mut enums = BTreeSet::new();
    let mut rest = h.as_str();
    while let Some(i) = rest.find("typedef enum ") {
        rest = &rest[i + "typedef enum ".len()..];
        let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
        enums.insert(rest[..end.unwrap()].to_string());
    }
    Header {
        protos,
        structs,
        enums,
    }
}

pub fn header() -> Header {
    // Also compiled into the root crate's tests/doc_counts.rs: the root is the
    // folder above CARGO_MANIFEST_DIR that holds cbindgen.toml.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|p| p.join("cbindgen.toml").is_file())
        .expect("the repository root")
        .join("include/vkcuda.h");
    parse_header(&std::fs::read_to_string(&path).expect("include/vkcuda.h"))
}

/// Handle types that C code may pass as NULL (dispatchable handles are pointers;
/// non-dispatchable ones are pointers on 64-bit targets).
fn is_handle(ty: &str) -> bool {
    let t = ty.trim_start_matches("const ").trim();
    t.starts_with("PFN_")
        || t.ends_with("_fn")
        || matches!(
            t,
            "VkInstance"
                | "VkPhysicalDevice"
                | "VkDevice"
                | "VkQueue"
                | "VkCommandBuffer"
                | "VkBuffer"
                | "VkDeviceMemory"
                | "VkImage"
                | "VkSemaphore"
        )
}

/// What the table must cover for one function: (path, needs a null case).
pub fn requirements(p: &Proto, h: &Header) -> Vec<(String, bool)> {
    fn fields(h: &Header, ty: &str, prefix: &str, out: &mut Vec<(String, bool)>) {
        let base = ty
            .trim_start_matches("const ")
            .trim_start_matches("struct ")
            .trim();
        if base == "VkExtent3D" {
            for f in ["width", "height", "depth"] {
                out.push((format!("{prefix}{f}"), false));
            }
            return;
        }
        let Some(fs) = h.structs.get(base) else {
            return;
        };
        for f in fs {
            let path = format!("{prefix}{}", f.name);
            let inner = f.ty.trim_start_matches("struct ").trim();
            if h.structs.contains_key(inner) || inner == "VkExtent3D" {
                fields(h, inner, &format!("{path}."), out);
            } else {
                out.push((path, f.ty.contains('*') || is_handle(&f.ty)));
            }
        }
    }
    let mut out = Vec::new();
    for a in &p.params {
        let pointer = a.ty.contains('*');
        out.push((a.name.clone(), pointer || is_handle(&a.ty)));
        // Input structs: every field.
        if pointer && a.ty.starts_with("const struct ") && a.ty.matches('*').count() == 1 {
            fields(
                h,
                a.ty.trim_end_matches('*').trim(),
                &format!("{}->", a.name),
                &mut out,
            );
        }
    }
    out
}
