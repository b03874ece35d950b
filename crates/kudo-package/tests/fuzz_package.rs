#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Fuzzing the package loader and verifier (proptest).
//!
//! - Archives: real packages written as tar entries with random names
//!   (`../`, absolute, drive letters, long GNU/PAX names, non-UTF-8, the
//!   same file twice under other spellings, package files as links),
//!   kinds (links, folders, PAX headers), size fields (short, huge,
//!   base-256, garbage) and checksums, nested archives, then damaged as
//!   tar bytes and as gzip bytes (flips, truncation, trailing garbage), and
//!   gzip bombs. Loaded from a file with `load_located`, dependencies
//!   resolved, verified.
//! - Files: the example packages' operator.yaml, params.yaml and templates
//!   mutated line by line and token by token (YAML anchors and alias
//!   bombs, tags, flow nesting, huge numbers, template syntax), through
//!   `load_from_files` and `Package::verify`.
//!
//! Whatever the input: no panic; an error names the package; a loaded
//! package holds no entry that climbs out of it, unpacks to at most the
//! 64 MiB package limit, and verifies, converts and lists its parameters
//! without panicking. The bomb test also checks the process's peak memory.
//!
//! CI runs a bounded number of cases (`make test`); `make fuzz` raises them
//! through `PROPTEST_CASES`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use kudo_package::{Package, PackageError, load_from_files, load_located, resolve_dependencies};
use proptest::prelude::*;
use proptest::sample::{Index, select};
use proptest::test_runner::FileFailurePersistence;

/// The package size limit (`load/archive.rs`).
const MAX_PACKAGE_BYTES: usize = 64 * 1024 * 1024;

/// `ci` cases; `PROPTEST_CASES`, when set (`make fuzz`), replaces it (the
/// `proptest!` macro reads it). A failing case is saved beside this file
/// and tried first on the next run.
fn config(ci: u32) -> ProptestConfig {
    ProptestConfig {
        cases: ci,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------
// Seeds: the example packages.
// ---------------------------------------------------------------------------

fn operators_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../operators")
}

/// The package files of `operators/<name>`, keyed by path in the package.
fn package_files(name: &str) -> BTreeMap<String, Vec<u8>> {
    fn walk(dir: &Path, prefix: &str, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
            if entry.file_type().unwrap().is_dir() {
                walk(&entry.path(), &format!("{name}/"), out);
            } else if name == "operator.yaml"
                || name == "params.yaml"
                || name.starts_with("templates/")
            {
                out.insert(name, std::fs::read(entry.path()).unwrap());
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(&operators_dir().join(name), "", &mut files);
    files
}

const SEEDS: [&str; 3] = ["first-operator", "zookeeper", "canary-web"];

fn seeds() -> &'static [BTreeMap<String, Vec<u8>>] {
    static SEEDS_FILES: OnceLock<Vec<BTreeMap<String, Vec<u8>>>> = OnceLock::new();
    SEEDS_FILES.get_or_init(|| SEEDS.iter().map(|name| package_files(name)).collect())
}

/// A parent package whose KudoOperator tasks name a nested archive and a
/// folder of the same archive (dependencies inside archives).
fn parent_operator_yaml() -> Vec<u8> {
    [
        "apiVersion: kudo.dev/v1beta1",
        "name: parent",
        "operatorVersion: 0.1.0",
        "kubernetesVersion: 1.27.0",
        "tasks:",
        "  - name: cm",
        "    kind: Apply",
        "    spec:",
        "      resources: [cm.yaml]",
        "  - name: nested",
        "    kind: KudoOperator",
        "    spec:",
        "      package: ./child.tgz",
        "  - name: folder",
        "    kind: KudoOperator",
        "    spec:",
        "      package: ./child",
        "      operatorVersion: 9.9.9",
        "plans:",
        "  deploy:",
        "    strategy: serial",
        "    phases:",
        "      - name: main",
        "        strategy: serial",
        "        steps:",
        "          - name: cm",
        "            tasks: [cm]",
        "          - name: nested",
        "            tasks: [nested]",
        "          - name: folder",
        "            tasks: [folder]",
        "",
    ]
    .join("\n")
    .into_bytes()
}

// ---------------------------------------------------------------------------
// Tar and gzip, written by hand so every header field can be wrong.
// ---------------------------------------------------------------------------

/// How an entry's size field is written.
#[derive(Clone, Debug)]
enum SizeField {
    /// The data's length, in octal.
    Actual,
    /// Octal, any value (more or less than the data).
    Octal(u64),
    /// GNU base-256 (a leading 0x80 byte).
    Base256(u64),
    /// Not a number.
    Garbage(Vec<u8>),
}

/// One tar entry as written.
#[derive(Clone, Debug)]
struct RawEntry {
    name: Vec<u8>,
    /// `0` file, `5` folder, `2` symlink, `1` hard link, `L` GNU long
    /// name, `x`/`g` PAX headers, anything else.
    kind: u8,
    data: Vec<u8>,
    size: SizeField,
    link: Vec<u8>,
    prefix: Vec<u8>,
    bad_checksum: bool,
}

impl RawEntry {
    fn file(name: &str, data: Vec<u8>) -> Self {
        Self {
            name: name.as_bytes().to_vec(),
            kind: b'0',
            data,
            size: SizeField::Actual,
            link: Vec::new(),
            prefix: Vec::new(),
            bad_checksum: false,
        }
    }
}

fn put(field: &mut [u8], value: &[u8]) {
    let n = value.len().min(field.len());
    field[..n].copy_from_slice(&value[..n]);
}

fn octal(field: &mut [u8], value: u64) {
    let text = format!("{value:0width$o}", width = field.len() - 1);
    let text = text.as_bytes();
    // Too many digits: keep the low ones (a wrong number, as a broken
    // writer would produce).
    let text = &text[text.len().saturating_sub(field.len() - 1)..];
    put(field, text);
}

fn header(entry: &RawEntry) -> [u8; 512] {
    let mut h = [0u8; 512];
    put(&mut h[0..100], &entry.name);
    put(&mut h[100..108], b"0000644\0");
    put(&mut h[108..116], b"0000000\0");
    put(&mut h[116..124], b"0000000\0");
    match &entry.size {
        SizeField::Actual => octal(&mut h[124..136], entry.data.len() as u64),
        SizeField::Octal(n) => octal(&mut h[124..136], *n),
        SizeField::Base256(n) => {
            h[124] = 0x80;
            put(&mut h[128..136], &n.to_be_bytes());
        }
        SizeField::Garbage(bytes) => put(&mut h[124..136], bytes),
    }
    put(&mut h[136..148], b"14500000000\0");
    h[156] = entry.kind;
    put(&mut h[157..257], &entry.link);
    put(&mut h[257..263], b"ustar\0");
    put(&mut h[263..265], b"00");
    put(&mut h[345..500], &entry.prefix);
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|b| u32::from(*b)).sum();
    let sum = if entry.bad_checksum { sum + 1 } else { sum };
    put(&mut h[148..156], format!("{sum:06o}\0 ").as_bytes());
    h
}

fn tar(entries: &[RawEntry], end_blocks: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for entry in entries {
        out.extend_from_slice(&header(entry));
        out.extend_from_slice(&entry.data);
        out.resize(out.len().next_multiple_of(512), 0);
    }
    out.resize(out.len() + 512 * end_blocks, 0);
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

/// A well-formed archive of `files` (`prefix` before every path).
fn tgz_of(files: &BTreeMap<String, Vec<u8>>, prefix: &str) -> Vec<u8> {
    let entries: Vec<RawEntry> = files
        .iter()
        .map(|(name, data)| RawEntry::file(&format!("{prefix}{name}"), data.clone()))
        .collect();
    gzip(&tar(&entries, 2))
}

// ---------------------------------------------------------------------------
// Strategies.
// ---------------------------------------------------------------------------

fn entry_name() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => select(&[
            "operator.yaml", "params.yaml", "templates/deployment.yaml", "templates/x.yaml",
            "templates/sub/y.yaml", "templates/notes.txt", "pkg/operator.yaml",
            "pkg/templates/a.yaml", "./operator.yaml", "./templates/z.yaml", "child.tgz",
            "child/operator.yaml", "child/templates/deployment.yaml", "child/params.yaml",
            "../operator.yaml", "/operator.yaml", "/etc/passwd", "C:/operator.yaml",
            "c:\\templates\\x.yaml", "templates/../../escape.yaml", "templates\\..\\x.yaml",
            "templates/..", "..", ".", "", "templates/", "./", "a/../operator.yaml",
            "templates/./x.yaml", "\\\\server\\share\\x.yaml", "templates//x.yaml",
        ][..])
        .prop_map(|s| s.as_bytes().to_vec()),
        1 => "[a-z./\\\\]{0,12}".prop_map(String::into_bytes),
        1 => prop::collection::vec(any::<u8>(), 0..20),
        1 => (1usize..400).prop_map(|n| format!("templates/{}.yaml", "d/".repeat(n)).into_bytes()),
    ]
}

fn entry_kind() -> impl Strategy<Value = u8> {
    prop_oneof![
        8 => Just(b'0'),
        1 => Just(0u8),
        1 => select(&[b'1', b'2', b'3', b'4', b'5', b'6', b'7', b'L', b'K', b'x', b'g', b'S', b'V', b'?'][..]),
        1 => any::<u8>(),
    ]
}

fn size_field() -> impl Strategy<Value = SizeField> {
    prop_oneof![
        16 => Just(SizeField::Actual),
        1 => prop_oneof![
            0u64..4096,
            Just(64 * 1024 * 1024 + 1),
            Just(0o77_777_777_777),
            Just(u64::MAX),
        ]
        .prop_map(SizeField::Octal),
        1 => prop_oneof![0u64..4096, Just(1 << 40), Just(u64::MAX), Just(i64::MAX as u64)]
            .prop_map(SizeField::Base256),
        1 => prop::collection::vec(any::<u8>(), 0..12).prop_map(SizeField::Garbage),
    ]
}

/// Entry data: package files, PAX records, nested archives, noise.
fn entry_data() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => (0usize..SEEDS.len(), any::<Index>()).prop_map(|(seed, pick)| {
            let files = &seeds()[seed];
            let names: Vec<&String> = files.keys().collect();
            files[*pick.get(&names)].clone()
        }),
        1 => Just(parent_operator_yaml()),
        1 => select(&[
            "30 path=../../etc/escape.yaml\n", "20 path=/abs.yaml\n", "30 size=99999999999999999\n",
            "16 size=-12345\n", "11 path=\n", "99 path=x\n", "0 \n", "x\n",
            "40 path=templates/pax-name-that-is-long.yaml\n",
            "27 linkpath=../../target\n",
        ][..])
        .prop_map(|s| s.as_bytes().to_vec()),
        1 => (0usize..SEEDS.len()).prop_map(|seed| tgz_of(&seeds()[seed], "")),
        1 => prop::collection::vec(any::<u8>(), 0..600),
        1 => Just(Vec::new()),
    ]
}

fn raw_entry() -> impl Strategy<Value = RawEntry> {
    (
        entry_name(),
        entry_kind(),
        entry_data(),
        size_field(),
        prop_oneof![4 => Just(Vec::new()), 1 => entry_name()],
        prop_oneof![6 => Just(Vec::new()), 1 => entry_name()],
        prop::bool::weighted(0.05),
    )
        .prop_map(
            |(name, kind, data, size, link, prefix, bad_checksum)| RawEntry {
                name,
                kind,
                data,
                size,
                link,
                prefix,
                bad_checksum,
            },
        )
}

/// Damage done to bytes: a flip, a cut, an insertion, a repeat.
#[derive(Clone, Debug)]
enum Damage {
    Flip(Index, u8),
    Truncate(Index),
    Insert(Index, Vec<u8>),
    Repeat(Index, Index),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        6 => (any::<Index>(), 1u8..=255).prop_map(|(at, x)| Damage::Flip(at, x)),
        1 => any::<Index>().prop_map(Damage::Truncate),
        1 => (any::<Index>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, bytes)| Damage::Insert(at, bytes)),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Damage::Repeat(a, b)),
    ]
}

fn apply(bytes: &mut Vec<u8>, damage: &Damage) {
    if bytes.is_empty() {
        return;
    }
    match damage {
        Damage::Flip(at, x) => {
            let i = at.index(bytes.len());
            bytes[i] ^= x;
        }
        Damage::Truncate(at) => bytes.truncate(at.index(bytes.len())),
        Damage::Insert(at, extra) => {
            let i = at.index(bytes.len() + 1);
            bytes.splice(i..i, extra.iter().copied());
        }
        Damage::Repeat(a, b) => {
            let (a, b) = (a.index(bytes.len()), b.index(bytes.len()));
            let (from, to) = (a.min(b), a.max(b).min(a.min(b) + 4096));
            let copy = bytes[from..to].to_vec();
            bytes.splice(to..to, copy);
        }
    }
}

/// A whole archive: a seed package (at the root or in a folder), random
/// entries spliced in, damage to the tar and to the gzip bytes.
#[derive(Clone, Debug)]
struct ArchiveCase {
    seed: usize,
    folder: &'static str,
    with_children: bool,
    extra: Vec<(Index, RawEntry)>,
    end_blocks: usize,
    tar_damage: Vec<Damage>,
    gzip_damage: Vec<Damage>,
    /// Not gzip at all: the tar as is, or random bytes.
    raw: Option<Option<Vec<u8>>>,
}

fn archive_case() -> impl Strategy<Value = ArchiveCase> {
    (
        0usize..SEEDS.len(),
        select(&["", "pkg/", "./", "a/b/"][..]),
        any::<bool>(),
        prop::collection::vec((any::<Index>(), raw_entry()), 0..4),
        0usize..3,
        prop_oneof![4 => Just(vec![]), 1 => prop::collection::vec(damage(), 1..4)],
        prop_oneof![4 => Just(vec![]), 1 => prop::collection::vec(damage(), 1..3)],
        prop_oneof![
            24 => Just(None),
            1 => Just(Some(None)),
            1 => prop::collection::vec(any::<u8>(), 0..2048).prop_map(|b| Some(Some(b))),
        ],
    )
        .prop_map(
            |(seed, folder, with_children, extra, end_blocks, tar_damage, gzip_damage, raw)| {
                ArchiveCase {
                    seed,
                    folder,
                    with_children,
                    extra,
                    end_blocks,
                    tar_damage,
                    gzip_damage,
                    raw,
                }
            },
        )
}

impl ArchiveCase {
    fn bytes(&self) -> Vec<u8> {
        if let Some(Some(random)) = &self.raw {
            return random.clone();
        }
        let mut entries: Vec<RawEntry> = seeds()[self.seed]
            .iter()
            .map(|(name, data)| RawEntry::file(&format!("{}{name}", self.folder), data.clone()))
            .collect();
        if self.with_children {
            // The parent's dependencies: a nested archive and a folder.
            entries.retain(|e| !e.name.ends_with(b"operator.yaml"));
            entries.push(RawEntry::file(
                &format!("{}operator.yaml", self.folder),
                parent_operator_yaml(),
            ));
            entries.push(RawEntry::file(
                &format!("{}templates/cm.yaml", self.folder),
                b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\n".to_vec(),
            ));
            entries.push(RawEntry::file(
                &format!("{}child.tgz", self.folder),
                tgz_of(&seeds()[0], ""),
            ));
            for (name, data) in &seeds()[0] {
                entries.push(RawEntry::file(
                    &format!("{}child/{name}", self.folder),
                    data.clone(),
                ));
            }
        }
        for (at, entry) in &self.extra {
            let i = at.index(entries.len() + 1);
            entries.insert(i, entry.clone());
        }
        let mut bytes = tar(&entries, self.end_blocks);
        for d in &self.tar_damage {
            apply(&mut bytes, d);
        }
        if self.raw.is_some() {
            return bytes;
        }
        let mut bytes = gzip(&bytes);
        for d in &self.gzip_damage {
            apply(&mut bytes, d);
        }
        bytes
    }
}

// ---------------------------------------------------------------------------
// Checks.
// ---------------------------------------------------------------------------

/// The message of a load error names the package (its path or name).
fn assert_names_the_package(err: &PackageError, source: &str) {
    let text = err.to_string();
    assert!(!text.trim().is_empty(), "{err:?}");
    match err {
        PackageError::Io { .. }
        | PackageError::Archive { .. }
        | PackageError::MissingFile { .. }
        | PackageError::Parse { .. }
        | PackageError::NotUtf8 { .. }
        | PackageError::Invalid { .. } => {
            assert!(text.starts_with(source), "{text}");
        }
        _ => {}
    }
}

/// Everything a loaded package is used for must work on it.
fn exercise(pkg: &Package) {
    let size: usize = pkg.templates.iter().map(|(k, v)| k.len() + v.len()).sum();
    assert!(size <= MAX_PACKAGE_BYTES, "{size} bytes of templates");
    for name in pkg.templates.keys() {
        let climbs = name.split(['/', '\\']).any(|part| part == "..");
        assert!(!climbs, "template {name:?} climbs out of the package");
    }
    let report = pkg.verify();
    for issue in report.errors.iter().chain(&report.warnings) {
        assert!(!issue.message.trim().is_empty(), "{issue:?}");
    }
    let _ = report.to_string();
    match pkg.verified() {
        Ok(_) => assert!(!report.has_errors()),
        Err(err) => {
            assert!(report.has_errors());
            assert_names_the_package(&err, &pkg.source);
        }
    }
    let _ = pkg.operator_version_name();
    let ov = pkg.to_operator_version("ns");
    let _ = pkg.to_operator("ns");
    let _ = kudo_package::params::params_table(&ov.spec, true);
    let _ = kudo_package::params::params_table(&ov.spec, false);
    let _ = kudo_package::params::template_values(&ov.spec, &BTreeMap::new());
}

/// Writes `bytes` as an archive, loads it, resolves its dependencies and
/// exercises what loaded.
fn load_archive(dir: &Path, bytes: &[u8]) {
    let path = dir.join("pkg.tgz");
    std::fs::write(&path, bytes).unwrap();
    let source = path.display().to_string();
    match load_located(&path) {
        Ok(located) => {
            assert_eq!(located.package.source, source);
            exercise(&located.package);
            match resolve_dependencies(located) {
                Ok(resolved) => {
                    for dep in &resolved.dependencies {
                        exercise(dep);
                    }
                }
                Err(err) => assert!(!err.to_string().trim().is_empty(), "{err:?}"),
            }
        }
        Err(err) => assert_names_the_package(&err, &source),
    }
}

// ---------------------------------------------------------------------------
// Package files.
// ---------------------------------------------------------------------------

/// Pieces spliced into YAML: structure, anchors and aliases, tags, numbers
/// KUDO reads specially, template syntax.
const YAML_PIECES: &[&str] = &[
    ":",
    ": ",
    "- ",
    "\n",
    "\n  ",
    "  ",
    "\t",
    "#",
    "---\n",
    "...\n",
    "{",
    "}",
    "[",
    "]",
    ",",
    "\"",
    "'",
    "|",
    ">",
    "|-",
    "&a ",
    "*a",
    "<<: *a\n",
    "? ",
    "!!binary ",
    "!!str ",
    "!custom ",
    "~",
    "null",
    "true",
    "no",
    "0755",
    "0x1F",
    "1e999",
    "-.inf",
    ".nan",
    "2e3",
    "9223372036854775808",
    "\u{feff}",
    "\r\n",
    "\\u0000",
    "é",
    "{{ .Params.X }}",
    "{{",
    "}}",
    "{{ end }}",
    "{{ range until 1000000000 }}",
    "{{ indent 9000000000 \"x\" }}",
    "tasks:\n",
    "plans:\n",
    "parameters:\n",
    "  - name: ",
    "kind: KudoOperator\n",
    "kind: Toggle\n",
    "kind: Pipe\n",
    "value-type: ",
    "type: map\n",
    "type: array\n",
    "type: integer\n",
    "enum: [a, b]\n",
    "default: ",
    "required: true\n",
    "immutable: true\n",
    "strategy: serial-canary\n",
    "package: ../../x\n",
    "package: ./child.tgz\n",
];

/// A YAML document that expands exponentially through aliases.
fn alias_bomb(levels: usize, width: usize) -> String {
    let mut out = String::from("a0: &a0 [\"lol\"]\n");
    for level in 1..=levels {
        let refs = vec![format!("*a{}", level - 1); width].join(", ");
        out.push_str(&format!("a{level}: &a{level} [{refs}]\n"));
    }
    out
}

#[derive(Clone, Debug)]
enum Edit {
    /// Delete a line.
    DeleteLine(Index),
    /// Repeat a line.
    RepeatLine(Index),
    /// Swap two lines.
    SwapLines(Index, Index),
    /// Put a piece at a place in the text.
    Splice(Index, String),
    /// Replace what follows `: ` on a line.
    Value(Index, String),
    /// Indent or dedent a line.
    Indent(Index, bool),
    /// Append a whole document (alias bombs, deep flow nesting).
    Append(String),
}

fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => select(YAML_PIECES).prop_map(str::to_string),
        2 => "[ -~]{0,20}",
        1 => (1usize..200).prop_map(|n| "[".repeat(n)),
        1 => (1usize..100_000).prop_map(|n| "x".repeat(n)),
        1 => any::<i64>().prop_map(|n| n.to_string()),
        1 => any::<f64>().prop_map(|f| f.to_string()),
    ]
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        3 => any::<Index>().prop_map(Edit::DeleteLine),
        2 => any::<Index>().prop_map(Edit::RepeatLine),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Edit::SwapLines(a, b)),
        4 => (any::<Index>(), scalar()).prop_map(|(at, s)| Edit::Splice(at, s)),
        4 => (any::<Index>(), scalar()).prop_map(|(at, s)| Edit::Value(at, s)),
        1 => (any::<Index>(), any::<bool>()).prop_map(|(at, dedent)| Edit::Indent(at, dedent)),
        1 => prop_oneof![
            (2usize..8, 2usize..5).prop_map(|(levels, width)| alias_bomb(levels, width)),
            (1usize..2000).prop_map(|n| format!("x: {}{}\n", "[".repeat(n), "]".repeat(n))),
            (1usize..2000).prop_map(|n| {
                (0..n).map(|i| format!("{}- \n", "  ".repeat(i))).collect::<String>()
            }),
            Just("parameters:\n  - &p {name: P, default: x}\n  - *p\n  - <<: *p\n    name: Q\n".into()),
        ]
        .prop_map(Edit::Append),
    ]
}

fn apply_edit(text: &str, edit: &Edit) -> String {
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    let line = |at: &Index, lines: &[String]| at.index(lines.len());
    match edit {
        Edit::DeleteLine(at) => {
            let i = line(at, &lines);
            lines.remove(i);
        }
        Edit::RepeatLine(at) => {
            let i = line(at, &lines);
            lines.insert(i, lines[i].clone());
        }
        Edit::SwapLines(a, b) => {
            let (a, b) = (line(a, &lines), line(b, &lines));
            lines.swap(a, b);
        }
        Edit::Splice(at, piece) => {
            let boundaries: Vec<usize> = (0..=text.len())
                .filter(|i| text.is_char_boundary(*i))
                .collect();
            let i = *at.get(&boundaries);
            return format!("{}{piece}{}", &text[..i], &text[i..]);
        }
        Edit::Value(at, value) => {
            let i = line(at, &lines);
            if let Some((key, _)) = lines[i].split_once(": ") {
                lines[i] = format!("{key}: {value}");
            } else {
                lines[i].push_str(value);
            }
        }
        Edit::Indent(at, dedent) => {
            let i = line(at, &lines);
            lines[i] = if *dedent {
                lines[i].trim_start().to_string()
            } else {
                format!("  {}", lines[i])
            };
        }
        Edit::Append(doc) => return format!("{text}\n{doc}"),
    }
    lines.join("\n")
}

proptest! {
    #![proptest_config(config(256))]

    /// Random and damaged archives load or fail naming the archive.
    #[test]
    fn archives_load_or_fail_cleanly(case in archive_case()) {
        let dir = tempfile::tempdir().unwrap();
        load_archive(dir.path(), &case.bytes());
    }

    /// A file stored twice, under any spelling of its path, is refused
    /// naming it, wherever the second copy is.
    #[test]
    fn an_archive_holding_a_file_twice_is_refused(
        seed in 0usize..SEEDS.len(),
        folder in select(&["", "pkg/", "a/b/"][..]),
        pick in any::<Index>(),
        at in any::<Index>(),
        spelling in 0usize..4,
        other_data in any::<bool>(),
    ) {
        let mut entries = seed_entries(seed, folder);
        let chosen = pick.index(entries.len());
        let name = String::from_utf8(entries[chosen].name.clone()).unwrap();
        let data = if other_data { b"kind: Evil\n".to_vec() } else { entries[chosen].data.clone() };
        let copy = RawEntry::file(&spelled(&name, spelling), data);
        entries.insert(at.index(entries.len() + 1), copy);
        let err = load_entries(&entries);
        prop_assert!(
            err.contains(&format!("entry {name:?} appears twice in the archive")),
            "{err}"
        );
    }

    /// A package file stored as a link (symbolic or hard) is refused
    /// naming it, whatever it points to.
    #[test]
    fn an_archive_with_a_link_for_a_package_file_is_refused(
        seed in 0usize..SEEDS.len(),
        folder in select(&["", "pkg/", "a/b/"][..]),
        pick in any::<Index>(),
        kind in select(&[b'1', b'2'][..]),
        target in select(&["/etc/passwd", "../../secret", "operator.yaml", "templates"][..]),
        spelling in 0usize..4,
    ) {
        let mut entries = seed_entries(seed, folder);
        let chosen = pick.index(entries.len());
        let name = String::from_utf8(entries[chosen].name.clone()).unwrap();
        entries[chosen] = RawEntry {
            kind,
            link: target.as_bytes().to_vec(),
            ..RawEntry::file(&spelled(&name, spelling), Vec::new())
        };
        let err = load_entries(&entries);
        prop_assert!(err.contains(&format!("entry {name:?} is a link")), "{err}");
    }

    /// Mutated operator.yaml, params.yaml and templates load, verify,
    /// convert and list their parameters, or fail naming the file.
    #[test]
    fn mutated_package_files_load_and_verify_or_fail_cleanly(
        seed in 0usize..SEEDS.len(),
        targets in prop::collection::vec((any::<Index>(), prop::collection::vec(edit(), 1..4)), 1..3),
        bytes in prop::option::weighted(0.05, prop::collection::vec(any::<u8>(), 0..64)),
    ) {
        let mut files = seeds()[seed].clone();
        let names: Vec<String> = files.keys().cloned().collect();
        for (pick, edits) in &targets {
            let name = pick.get(&names);
            let mut text = String::from_utf8(files[name].clone()).unwrap();
            for e in edits {
                text = apply_edit(&text, e);
            }
            files.insert(name.clone(), text.into_bytes());
        }
        if let Some(bytes) = bytes {
            // Not UTF-8, or not YAML at all.
            files.insert(names[0].clone(), bytes);
        }
        match load_from_files(files, "pkg") {
            Ok(pkg) => exercise(&pkg),
            Err(err) => assert_names_the_package(&err, "pkg"),
        }
    }
}

/// The entries of a seed package under `folder`.
fn seed_entries(seed: usize, folder: &str) -> Vec<RawEntry> {
    seeds()[seed]
        .iter()
        .map(|(name, data)| RawEntry::file(&format!("{folder}{name}"), data.clone()))
        .collect()
}

/// Another way to write the same path inside an archive.
fn spelled(path: &str, spelling: usize) -> String {
    match spelling {
        0 => path.to_string(),
        1 => format!("./{path}"),
        2 => path.replace('/', "//"),
        _ => format!("./{}", path.replace('/', "/./")),
    }
}

/// Loads these entries as a .tgz file; the error it ended with ("" if it
/// loaded).
fn load_entries(entries: &[RawEntry]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pkg.tgz");
    std::fs::write(&path, gzip(&tar(entries, 2))).unwrap();
    load_located(&path)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------
// Gzip bombs.
// ---------------------------------------------------------------------------

/// A tar of one `operator.yaml` of `size` zero bytes, gzipped (built once:
/// compressing 65 MiB takes a while in a debug build).
fn bomb(size: u64) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let mut h = RawEntry::file("operator.yaml", Vec::new());
    h.size = SizeField::Octal(size);
    gz.write_all(&header(&h)).unwrap();
    let chunk = vec![0u8; 1 << 20];
    let mut left = size.next_multiple_of(512) + 1024;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        gz.write_all(&chunk[..n]).unwrap();
        left -= n as u64;
    }
    gz.finish().unwrap()
}

fn bombs() -> &'static [Vec<u8>; 2] {
    static BOMBS: OnceLock<[Vec<u8>; 2]> = OnceLock::new();
    BOMBS.get_or_init(|| {
        [
            bomb(MAX_PACKAGE_BYTES as u64 + (1 << 20)),
            bomb(MAX_PACKAGE_BYTES as u64 - 4096),
        ]
    })
}

/// Resident memory now and at its peak since the last reset (Linux).
fn resident() -> Option<(usize, usize)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<usize> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        let kb: usize = line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kb * 1024)
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// Loads `bytes` as an archive and checks the peak memory of the load;
/// the error it ended with ("" if it loaded).
fn load_bomb(bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bomb.tgz");
    std::fs::write(&path, bytes).unwrap();
    let measured = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let before = resident();
    let result = load_located(&path);
    if let (true, Some((rss, _)), Some((_, peak))) = (measured, before, resident()) {
        let grown = peak.saturating_sub(rss);
        assert!(
            grown <= 3 * MAX_PACKAGE_BYTES,
            "peak memory grew by {grown} bytes"
        );
    }
    result.err().map(|e| e.to_string()).unwrap_or_default()
}

/// A bomb past the limit is refused naming the limit; one just under it
/// is read, and refused as not YAML. The peak memory of either stays
/// within a small multiple of the limit.
#[test]
fn gzip_bombs_are_refused_within_the_size_limit() {
    let err = load_bomb(&bombs()[0]);
    assert!(err.contains("unpacks to more than 64 MiB"), "{err}");
    let err = load_bomb(&bombs()[1]);
    assert!(err.contains("operator.yaml"), "{err}");
    assert!(!err.contains("64 MiB"), "{err}");
}

/// Damaged bombs fail too, within the same memory. Each case may unpack
/// 64 MiB (75 ms on average in a debug build, up to 2 s): 8 cases in CI,
/// `PROPTEST_CASES / 100` under `make fuzz`. Run through a `TestRunner` of
/// its own, since the `proptest!` macro lets `PROPTEST_CASES` replace any
/// count it is given.
#[test]
fn damaged_gzip_bombs_fail_within_the_size_limit() {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse::<u32>().ok())
        .map_or(8, |n| (n / 100).max(8));
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let result = runner.run(&(0usize..2, damage()), |(which, damage)| {
        let mut bytes = bombs()[which].clone();
        apply(&mut bytes, &damage);
        let err = load_bomb(&bytes);
        prop_assert!(!err.is_empty(), "a bomb of zeros loaded");
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
