//! The engine's modules sit in four layers, and each imports only from its
//! own layer or a lower one, so no import circle can form across layers:
//!
//! 0. `model/`: inputs, observations, actions, task keys, health;
//! 1. `plan/`: the plan walk and its rules (selection, strategies, holds,
//!    windows, suppressions, operations);
//! 2. `automatic/`: the plans the engine starts by itself (recovery, pod
//!    operations, node maintenance);
//! 3. `decide/` and `admission/`: the entry points.
//!
//! This test reads the crate's source files, finds every `crate::…` and
//! `super::…` path (in `use` and in code), and names each one that reaches
//! into a higher layer or past the layers (through the crate root).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::{Path, PathBuf};

/// The top-level modules and their layers.
const LAYERS: [(&str, u8); 5] = [
    ("model", 0),
    ("plan", 1),
    ("automatic", 2),
    ("admission", 3),
    ("decide", 3),
];

fn layer_of(top: &str) -> Option<u8> {
    LAYERS.iter().find(|(name, _)| *name == top).map(|l| l.1)
}

/// The module path of a source file under `src/`: `plan/walk.rs` is
/// `plan::walk`, `plan/mod.rs` is `plan`, `lib.rs` is the crate root.
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs");
        if stem != "mod" && stem != "lib" {
            parts.push(stem.to_string());
        }
    }
    parts
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The source without comment lines and without what follows the first
/// `#[cfg(test)]` (unit tests, whose `super::` is the file's own module);
/// line numbers are kept.
fn code_of(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            break;
        }
        if !trimmed.starts_with("//") {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// Reads an identifier at the start of `s`.
fn ident(s: &str) -> &str {
    let end = s.find(|c: char| !is_ident(c)).unwrap_or(s.len());
    &s[..end]
}

/// The first names of the items of a brace group starting at `s` (just
/// after its `{`): `{a::b, c, self}` gives `a`, `c`, `self`.
fn group_items(s: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut at_item_start = true;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => at_item_start = true,
            c if at_item_start && is_ident(c) && depth == 0 => {
                items.push(ident(&s[i..]).to_string());
                at_item_start = false;
            }
            _ => {}
        }
    }
    items
}

/// One path a file names: where, as written, and the module it reaches
/// (from the crate root; empty for the root itself).
#[derive(Debug)]
struct Named {
    line: usize,
    written: String,
    target: Vec<String>,
}

/// Every `crate::` and `super::` path in `code`, resolved from `module`.
fn named_paths(module: &[String], code: &str) -> Vec<Named> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(pos) = next_path_start(code, from) {
        from = pos + 1;
        let line = code[..pos].matches('\n').count() + 1;
        let rest = &code[pos..];
        let mut base: Vec<String> = Vec::new();
        let mut cursor = 0;
        let mut supers = 0;
        if rest.starts_with("crate::") {
            cursor = "crate::".len();
        } else {
            while rest[cursor..].starts_with("super::") {
                supers += 1;
                cursor += "super::".len();
            }
            let Some(keep) = module.len().checked_sub(supers) else {
                continue;
            };
            base.extend_from_slice(&module[..keep]);
        }
        // The path's names up to its end or a group.
        let mut names = base.clone();
        loop {
            let tail = &rest[cursor..];
            if let Some(group) = tail.strip_prefix('{') {
                for item in group_items(group) {
                    let mut target = names.clone();
                    if item != "self" {
                        target.push(item.clone());
                    }
                    found.push(Named {
                        line,
                        written: format!("{}{item}", &rest[..cursor]),
                        target,
                    });
                }
                break;
            }
            let name = ident(tail);
            if name.is_empty() {
                break;
            }
            names.push(name.to_string());
            cursor += name.len();
            if rest[cursor..].starts_with("::") {
                cursor += 2;
            } else {
                found.push(Named {
                    line,
                    written: rest[..cursor].to_string(),
                    target: names,
                });
                break;
            }
        }
        from = pos + cursor.max(1);
    }
    found
}

/// Where the next `crate::` or `super::` path starts at or after `from`
/// (not inside another identifier or path).
fn next_path_start(code: &str, from: usize) -> Option<usize> {
    let mut i = from;
    while i < code.len() {
        let rest = &code[i..];
        let hit = [rest.find("crate::"), rest.find("super::")]
            .into_iter()
            .flatten()
            .min()?;
        let at = i + hit;
        let before = code[..at].chars().next_back();
        let inside = before.is_some_and(|c| is_ident(c) || c == ':');
        if !inside {
            return Some(at);
        }
        i = at + 1;
        while !code.is_char_boundary(i) {
            i += 1;
        }
    }
    None
}

/// What is wrong with the imports of the file whose module is `module`:
/// one line per path reaching into a higher layer or through the crate
/// root.
fn violations(file: &str, module: &[String], text: &str) -> Vec<String> {
    let Some(own) = module.first().and_then(|top| layer_of(top)) else {
        return if module.is_empty() {
            Vec::new()
        } else {
            vec![format!(
                "{file}: module {} is in no layer",
                module.join("::")
            )]
        };
    };
    let mut out = Vec::new();
    for named in named_paths(module, &code_of(text)) {
        let Some(top) = named.target.first() else {
            continue;
        };
        match layer_of(top) {
            Some(layer) if layer <= own => {}
            Some(layer) => out.push(format!(
                "{file}:{}: `{}` reaches up from layer {own} ({}) to layer {layer} ({top})",
                named.line, named.written, module[0]
            )),
            None => out.push(format!(
                "{file}:{}: `{}` names `{top}` at the crate root, which is in no layer; \
                 name it by its layer's module",
                named.line, named.written
            )),
        }
    }
    out
}

fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            source_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_module_imports_from_a_higher_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&src, &mut files);
    files.sort();
    assert!(files.len() > 20, "found only {} source files", files.len());
    let mut problems = Vec::new();
    for path in &files {
        let relative = path.strip_prefix(&src).expect("under src");
        let text = fs::read_to_string(path).expect("source is readable");
        let file = relative.display().to_string();
        problems.extend(violations(&file, &module_path(relative), &text));
    }
    assert!(
        problems.is_empty(),
        "imports against the layering:\n{}",
        problems.join("\n")
    );
}

fn module(path: &str) -> Vec<String> {
    module_path(Path::new(path))
}

#[test]
fn an_import_from_a_higher_layer_is_named_with_its_file_and_line() {
    let text = "//! model code\nuse kudo_api::Instance;\nuse crate::model::keys::TaskKey;\n\
                use crate::plan::walk::WalkOutput;\n";
    let found = violations("model/facts.rs", &module("model/facts.rs"), text);
    assert_eq!(
        found,
        vec![
            "model/facts.rs:4: `crate::plan::walk::WalkOutput` reaches up from layer 0 (model) to layer 1 (plan)"
                .to_string()
        ]
    );
}

#[test]
fn grouped_and_inline_paths_are_checked_item_by_item() {
    let text = "use crate::{\n    model::facts,\n    automatic::recovery,\n};\n\
                fn f() { crate::decide::decide_in_place(); crate::plan::tree::x(); }\n";
    let found = violations("plan/holds.rs", &module("plan/holds.rs"), text);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].contains("`crate::automatic`"), "{found:?}");
    assert!(found[0].starts_with("plan/holds.rs:1:"), "{found:?}");
    assert!(
        found[1].contains("`crate::decide::decide_in_place`"),
        "{found:?}"
    );
    assert!(found[1].starts_with("plan/holds.rs:5:"), "{found:?}");
}

#[test]
fn super_paths_resolve_from_the_files_module() {
    // From plan/ownership/write.rs, `super::` is plan::ownership (allowed)
    // and `super::super::super::automatic` is the crate's automatic layer.
    let text = "use super::Claimant;\nuse super::super::super::automatic::recovery;\n";
    let found = violations(
        "plan/ownership/write.rs",
        &module("plan/ownership/write.rs"),
        text,
    );
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("to layer 2 (automatic)"), "{found:?}");
}

#[test]
fn the_crate_root_and_unit_tests_are_not_layer_imports_but_root_items_are() {
    let text = "use crate::time;\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::decide::x;\n}\n";
    let found = violations("model/facts.rs", &module("model/facts.rs"), text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("`crate::time` names `time` at the crate root"));
    assert!(violations("lib.rs", &module("lib.rs"), "use crate::decide::x;").is_empty());
    assert_eq!(
        violations("stray.rs", &module("stray.rs"), "").len(),
        1,
        "a file outside the layers is named"
    );
}

#[test]
fn a_lower_layer_may_be_imported_from_every_higher_one() {
    let text = "use crate::model::health::Health;\nuse crate::plan::select;\nuse crate::automatic::recovery;\n";
    assert!(violations("decide/stages.rs", &module("decide/stages.rs"), text).is_empty());
    assert!(violations("admission/mod.rs", &module("admission/mod.rs"), text).is_empty());
    assert_eq!(
        violations(
            "automatic/recovery.rs",
            &module("automatic/recovery.rs"),
            text
        )
        .len(),
        0
    );
}
