//! Pipe tasks, pure part two: the output of `stat` and `tar` in the waiter
//! container, and the Secret or ConfigMap a copied file becomes.

use std::io::Read;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use kudo_package::render::PipeFile;
use serde_json::{Map, Value, json};

/// Largest file a Pipe task copies (KUDO's limit: 1 MiB; a ConfigMap or
/// Secret cannot hold much more anyway).
pub const MAX_PIPE_FILE_SIZE: u64 = 1024 * 1024;

/// The path a pipe entry copies (`file` or `envFile`).
pub fn source_path(file: &PipeFile) -> &str {
    file.file
        .as_deref()
        .or(file.env_file.as_deref())
        .unwrap_or_default()
}

/// The size `stat -c %s FILE` printed, refused above [`MAX_PIPE_FILE_SIZE`].
pub fn checked_size(stdout: &[u8], path: &str) -> Result<u64, String> {
    let text = String::from_utf8_lossy(stdout);
    let size: u64 = text.trim().parse().map_err(|_| {
        format!(
            "`stat -c %s {path}` printed {}, not a size in bytes",
            kudo_api::param_value::preview(&text)
        )
    })?;
    if size > MAX_PIPE_FILE_SIZE {
        return Err(too_large(path, size));
    }
    Ok(size)
}

fn too_large(path: &str, size: u64) -> String {
    format!(
        "pipe file {path} is {size} bytes, over the limit of {MAX_PIPE_FILE_SIZE} bytes (1 MiB); \
         write a smaller file or keep large data in a volume"
    )
}

/// Why the content of a tar stream was not usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TarProblem {
    /// The stream is cut short or garbled (retrying may help).
    Corrupt(String),
    /// The archive is fine but does not hold the file, or holds too much.
    Unusable(String),
}

/// The content of `path` in the archive `tar cf - path` wrote (member
/// names lose their leading `/`).
pub fn file_from_tar(archive: &[u8], path: &str) -> Result<Vec<u8>, TarProblem> {
    let corrupt = |e: std::io::Error| {
        TarProblem::Corrupt(format!(
            "the tar stream of {path} is cut short or garbled: {e}"
        ))
    };
    let wanted = path.trim_start_matches('/');
    let mut ar = tar::Archive::new(archive);
    for entry in ar.entries().map_err(corrupt)? {
        let mut entry = entry.map_err(corrupt)?;
        let name = entry
            .path()
            .map_err(corrupt)?
            .to_string_lossy()
            .into_owned();
        if name.trim_start_matches("./") != wanted || !entry.header().entry_type().is_file() {
            continue;
        }
        let size = entry.header().size().map_err(corrupt)?;
        if size > MAX_PIPE_FILE_SIZE {
            return Err(TarProblem::Unusable(too_large(path, size)));
        }
        let mut content = Vec::with_capacity(usize::try_from(size).unwrap_or_default());
        entry.read_to_end(&mut content).map_err(corrupt)?;
        if content.len() as u64 != size {
            return Err(TarProblem::Corrupt(format!(
                "the tar stream of {path} is cut short: {} of {size} bytes arrived",
                content.len()
            )));
        }
        return Ok(content);
    }
    Err(TarProblem::Unusable(format!(
        "`tar cf - {path}` did not archive {path} as a regular file"
    )))
}

/// Environment variable names as Kubernetes accepts them for env files.
fn valid_env_name(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '-' || c == '.')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
}

/// `KEY=value` lines as `kubectl create configmap --from-env-file` reads
/// them: blank lines and `#` comments skipped, leading whitespace and a
/// first-line BOM dropped, the value kept verbatim after the first `=`.
pub fn parse_env_file(content: &[u8], path: &str) -> Result<Vec<(String, String)>, String> {
    let text = std::str::from_utf8(content)
        .map_err(|e| format!("env file {path} is not UTF-8 text: {e}"))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut pairs = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!(
                "env file {path}, line {}: {} is not KEY=value",
                i + 1,
                kudo_api::param_value::preview(line)
            ));
        };
        if !valid_env_name(key) {
            return Err(format!(
                "env file {path}, line {}: {key:?} is not a valid variable name \
                 (letters, digits, '_', '-', '.'; not starting with a digit)",
                i + 1
            ));
        }
        pairs.push((key.to_string(), value.to_string()));
    }
    Ok(pairs)
}

/// The Secret or ConfigMap (not yet enhanced) a copied file becomes: a
/// `file` under its base name (Secret `data`, ConfigMap `binaryData`), an
/// `envFile` as one key per line (`data`).
pub fn build_artifact(file: &PipeFile, content: &[u8]) -> Result<Value, String> {
    let path = source_path(file);
    let secret = file.kind == "Secret";
    let mut data = Map::new();
    let field = if file.env_file.is_some() {
        for (k, v) in parse_env_file(content, path)? {
            let value = if secret { STANDARD.encode(v) } else { v };
            data.insert(k, json!(value));
        }
        "data"
    } else {
        let base = path.rsplit('/').next().unwrap_or(path);
        data.insert(base.to_string(), json!(STANDARD.encode(content)));
        if secret { "data" } else { "binaryData" }
    };
    let mut obj = json!({
        "apiVersion": "v1",
        "kind": if secret { "Secret" } else { "ConfigMap" },
        "metadata": {"name": file.artifact_name},
    });
    if secret {
        obj["type"] = json!("Opaque");
    }
    obj[field] = Value::Object(data);
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipe(kind: &str, file: Option<&str>, env: Option<&str>) -> PipeFile {
        PipeFile {
            file: file.map(str::to_string),
            env_file: env.map(str::to_string),
            kind: kind.into(),
            key: "k".into(),
            artifact_name: "i.deploy.main.gen.gen.k".into(),
        }
    }

    fn archive(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (name, data) in entries {
            let mut h = tar::Header::new_ustar();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            b.append_data(&mut h, name, *data).unwrap();
        }
        b.into_inner().unwrap()
    }

    #[test]
    fn sizes_up_to_one_mib_pass_and_bigger_ones_name_file_and_size() {
        assert_eq!(checked_size(b"1048576\n", "/out/a"), Ok(1_048_576));
        let err = checked_size(b"1048577\n", "/out/big").unwrap_err();
        assert!(
            err.starts_with("pipe file /out/big is 1048577 bytes, over the limit"),
            "{err}"
        );
        assert!(
            checked_size(b"lots", "/out/a")
                .unwrap_err()
                .contains("not a size")
        );
    }

    #[test]
    fn the_file_is_found_in_the_tar_stream_without_its_leading_slash() {
        let ar = archive(&[("out/other", b"x"), ("out/index.html", b"<p>hi</p>")]);
        assert_eq!(file_from_tar(&ar, "/out/index.html").unwrap(), b"<p>hi</p>");
    }

    #[test]
    fn a_truncated_stream_is_corrupt_and_a_missing_member_unusable() {
        let ar = archive(&[("out/index.html", &[7u8; 2000])]);
        assert!(matches!(
            file_from_tar(&ar[..700], "/out/index.html"),
            Err(TarProblem::Corrupt(_))
        ));
        assert!(matches!(
            file_from_tar(&ar, "/out/other"),
            Err(TarProblem::Unusable(m)) if m.contains("/out/other")
        ));
    }

    #[test]
    fn a_file_becomes_secret_data_or_configmap_binary_data_under_its_base_name() {
        let s = build_artifact(&pipe("Secret", Some("/out/cert.pem"), None), b"PEM").unwrap();
        assert_eq!(s["kind"], "Secret");
        assert_eq!(s["type"], "Opaque");
        assert_eq!(s["metadata"]["name"], "i.deploy.main.gen.gen.k");
        assert_eq!(s["data"]["cert.pem"], STANDARD.encode("PEM"));
        let c = build_artifact(&pipe("ConfigMap", Some("/out/index.html"), None), b"<p>").unwrap();
        assert_eq!(c["kind"], "ConfigMap");
        assert_eq!(c["binaryData"]["index.html"], STANDARD.encode("<p>"));
        assert!(c.get("data").is_none());
    }

    #[test]
    fn env_files_become_one_key_per_line() {
        let content = "\u{feff}# generated\n\nUSER=admin\n  PASSWORD=a=b \nEMPTY=\n";
        let c = build_artifact(
            &pipe("ConfigMap", None, Some("/out/env")),
            content.as_bytes(),
        )
        .unwrap();
        assert_eq!(
            c["data"],
            json!({"USER": "admin", "PASSWORD": "a=b ", "EMPTY": ""})
        );
        let s = build_artifact(&pipe("Secret", None, Some("/out/env")), b"USER=admin").unwrap();
        assert_eq!(s["data"]["USER"], STANDARD.encode("admin"));
    }

    #[test]
    fn a_malformed_env_line_names_file_and_line() {
        let err = parse_env_file(b"A=1\njust text\n", "/out/env").unwrap_err();
        assert_eq!(
            err,
            "env file /out/env, line 2: \"just text\" is not KEY=value"
        );
        let err = parse_env_file(b"1A=x", "/out/env").unwrap_err();
        assert!(err.contains("line 1") && err.contains("\"1A\""), "{err}");
        assert!(parse_env_file(&[0xff, b'='], "/out/env").is_err());
    }
}
