//! The commands the fake `pods/exec` understands, run against a test-provided
//! in-memory file system. Pure: no IO, no clock.
//!
//! Supported, with busybox's output and error wording: `stat -c %s FILE...`,
//! `tar cf - PATH...` (a file, or a directory prefix of stored files) and
//! `cat FILE...`. Anything else exits 127 with a message saying what is
//! supported.

use std::collections::BTreeMap;

/// Files of one pod: absolute path → content.
pub type PodFs = BTreeMap<String, Vec<u8>>;

/// What a command printed and how it exited.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandOutput {
    /// Bytes written to stdout.
    pub stdout: Vec<u8>,
    /// Bytes written to stderr.
    pub stderr: Vec<u8>,
    /// Exit code; 0 is success.
    pub exit_code: i32,
}

impl CommandOutput {
    fn fail(&mut self, line: String) {
        self.stderr.extend_from_slice(line.as_bytes());
        self.stderr.push(b'\n');
        self.exit_code = 1;
    }
}

/// Exit code of a command the fake exec does not know (as a shell's
/// "command not found").
pub const UNSUPPORTED_EXIT_CODE: i32 = 127;

/// Runs `command` against `fs`.
pub fn run(command: &[String], fs: &PodFs) -> CommandOutput {
    let args: Vec<&str> = command.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["stat", "-c", "%s", files @ ..] if !files.is_empty() => stat_sizes(files, fs),
        ["tar", "cf" | "-cf", "-", paths @ ..] if !paths.is_empty() => tar(paths, fs),
        ["cat", files @ ..] if !files.is_empty() => cat(files, fs),
        _ => CommandOutput {
            stdout: Vec::new(),
            stderr: format!(
                "sandbox exec: command {:?} is not supported; the sandbox runs no containers and \
                 answers only `stat -c %s FILE`, `tar cf - PATH` and `cat FILE` from the files \
                 set with Sandbox::set_pod_files\n",
                command.join(" ")
            )
            .into_bytes(),
            exit_code: UNSUPPORTED_EXIT_CODE,
        },
    }
}

fn stat_sizes(files: &[&str], fs: &PodFs) -> CommandOutput {
    let mut out = CommandOutput::default();
    for file in files {
        match fs.get(*file) {
            Some(content) => out
                .stdout
                .extend_from_slice(format!("{}\n", content.len()).as_bytes()),
            None => out.fail(format!(
                "stat: can't stat '{file}': No such file or directory"
            )),
        }
    }
    out
}

fn cat(files: &[&str], fs: &PodFs) -> CommandOutput {
    let mut out = CommandOutput::default();
    for file in files {
        match fs.get(*file) {
            Some(content) => out.stdout.extend_from_slice(content),
            None => out.fail(format!(
                "cat: can't open '{file}': No such file or directory"
            )),
        }
    }
    out
}

/// Files a tar path names: the file itself, or every stored file below it.
fn matching<'a>(path: &str, fs: &'a PodFs) -> Vec<(&'a String, &'a Vec<u8>)> {
    if let Some((name, content)) = fs.get_key_value(path) {
        return vec![(name, content)];
    }
    let dir = format!("{}/", path.trim_end_matches('/'));
    fs.range(dir.clone()..)
        .take_while(|(name, _)| name.starts_with(&dir))
        .collect()
}

fn tar(paths: &[&str], fs: &PodFs) -> CommandOutput {
    let mut out = CommandOutput::default();
    if paths.iter().any(|p| p.starts_with('/')) {
        out.stderr
            .extend_from_slice(b"tar: removing leading '/' from member names\n");
    }
    let mut builder = tar::Builder::new(Vec::new());
    for path in paths {
        let found = matching(path, fs);
        if found.is_empty() {
            out.fail(format!(
                "tar: can't open '{path}': No such file or directory"
            ));
            continue;
        }
        for (name, content) in found {
            let mut header = tar::Header::new_ustar();
            header.set_size(content.len() as u64);
            header.set_mode(0o644);
            header.set_mtime(0);
            header.set_entry_type(tar::EntryType::Regular);
            let member = name.trim_start_matches('/');
            if let Err(e) = builder.append_data(&mut header, member, content.as_slice()) {
                out.fail(format!("tar: {member}: {e}"));
            }
        }
    }
    match builder.into_inner() {
        Ok(archive) => out.stdout = archive,
        Err(e) => out.fail(format!("tar: {e}")),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fs() -> PodFs {
        [
            ("/out/a.txt".to_string(), b"hello".to_vec()),
            ("/out/sub/b.bin".to_string(), vec![0, 1, 2]),
        ]
        .into_iter()
        .collect()
    }

    fn cmd(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|s| s.to_string()).collect()
    }

    fn members(archive: &[u8]) -> Vec<(String, Vec<u8>)> {
        let mut ar = tar::Archive::new(archive);
        ar.entries()
            .unwrap()
            .map(|e| {
                let mut e = e.unwrap();
                let path = e.path().unwrap().display().to_string();
                let mut data = Vec::new();
                std::io::Read::read_to_end(&mut e, &mut data).unwrap();
                (path, data)
            })
            .collect()
    }

    #[test]
    fn stat_prints_each_size_on_its_own_line() {
        let out = run(
            &cmd(&["stat", "-c", "%s", "/out/a.txt", "/out/sub/b.bin"]),
            &fs(),
        );
        assert_eq!(out.exit_code, 0);
        assert_eq!(String::from_utf8(out.stdout).unwrap(), "5\n3\n");
    }

    #[test]
    fn stat_of_a_missing_file_fails_like_busybox() {
        let out = run(&cmd(&["stat", "-c", "%s", "/out/nope"]), &fs());
        assert_eq!(out.exit_code, 1);
        assert_eq!(
            String::from_utf8(out.stderr).unwrap(),
            "stat: can't stat '/out/nope': No such file or directory\n"
        );
    }

    #[test]
    fn tar_archives_a_file_without_the_leading_slash() {
        let out = run(&cmd(&["tar", "cf", "-", "/out/a.txt"]), &fs());
        assert_eq!(out.exit_code, 0);
        assert_eq!(
            members(&out.stdout),
            vec![("out/a.txt".to_string(), b"hello".to_vec())]
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains("removing leading '/'"));
    }

    #[test]
    fn tar_of_a_directory_takes_every_file_below_it() {
        let out = run(&cmd(&["tar", "cf", "-", "/out"]), &fs());
        let names: Vec<String> = members(&out.stdout).into_iter().map(|m| m.0).collect();
        assert_eq!(names, vec!["out/a.txt", "out/sub/b.bin"]);
    }

    #[test]
    fn tar_of_a_missing_path_exits_1() {
        let out = run(&cmd(&["tar", "cf", "-", "/gone"]), &fs());
        assert_eq!(out.exit_code, 1);
        assert!(String::from_utf8_lossy(&out.stderr).contains("can't open '/gone'"));
    }

    #[test]
    fn cat_concatenates_files() {
        let out = run(&cmd(&["cat", "/out/a.txt", "/out/a.txt"]), &fs());
        assert_eq!(out.stdout, b"hellohello");
        let missing = run(&cmd(&["cat", "/x"]), &fs());
        assert_eq!(missing.exit_code, 1);
    }

    #[test]
    fn other_commands_are_refused_with_what_is_supported() {
        let out = run(&cmd(&["ls", "/out"]), &fs());
        assert_eq!(out.exit_code, UNSUPPORTED_EXIT_CODE);
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains("\"ls /out\" is not supported"), "{err}");
        assert!(err.contains("stat -c %s"), "{err}");
    }
}
