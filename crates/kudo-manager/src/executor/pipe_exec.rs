//! Copying pipe files out of the waiter container: the [`PodExec`] seam,
//! its kube implementation (`pods/exec` over WebSocket) and the copy
//! procedure, which tests drive with a fake.
//!
//! Each file takes two commands, as in KUDO: `stat -c %s FILE` first, so an
//! oversized file is refused before it is transferred, then `tar cf - FILE`.
//! tar rather than `cat`: the archive header states the file's length, so
//! a stream cut short is detected instead of silently stored truncated.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{Api, AttachParams};
use kudo_engine::TaskOutcome;
use kudo_package::render::PipeFile;
use tokio::io::{AsyncRead, AsyncReadExt};

use super::pipe_artifact::{TarProblem, checked_size, file_from_tar, source_path};
use crate::classify::outcome_for;

/// The container the pipe pod keeps running for exec.
pub const WAITER_CONTAINER: &str = "waiter";

/// Most bytes read from one command's stdout (a 1 MiB file plus tar
/// headers fits many times over).
const MAX_OUTPUT: u64 = 4 * 1024 * 1024;

/// Longest time one command may take.
const EXEC_TIMEOUT: Duration = Duration::from_secs(60);

/// What a finished command printed and its exit code.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOutput {
    /// stdout bytes.
    pub stdout: Vec<u8>,
    /// stderr, as text.
    pub stderr: String,
    /// Exit code (0 = success).
    pub exit_code: i32,
}

/// Why a command produced no [`ExecOutput`].
#[derive(Debug)]
pub enum ExecFailure {
    /// The API server refused the exec request.
    Api(kube::Error),
    /// The connection or stream broke, or timed out (worth retrying).
    Transport(String),
}

/// Runs a command in a container of a pod.
pub trait PodExec {
    /// Runs `command` in `container` of pod `namespace/pod` to the end.
    fn exec(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        command: Vec<String>,
    ) -> impl Future<Output = Result<ExecOutput, ExecFailure>> + Send;
}

/// [`PodExec`] through the API server (`kube` `ws` feature).
pub struct KubeExec {
    client: kube::Client,
}

impl KubeExec {
    /// Exec with this client.
    pub fn new(client: kube::Client) -> Self {
        Self { client }
    }
}

async fn read_capped<R: AsyncRead + Unpin>(reader: Option<R>) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    if let Some(r) = reader {
        r.take(MAX_OUTPUT).read_to_end(&mut buf).await?;
    }
    Ok(buf)
}

impl PodExec for KubeExec {
    async fn exec(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        command: Vec<String>,
    ) -> Result<ExecOutput, ExecFailure> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let params = AttachParams::default()
            .container(container)
            .stdin(false)
            .stdout(true)
            .stderr(true)
            .max_stdout_buf_size(64 * 1024);
        let run = async {
            let mut proc = api
                .exec(pod, command, &params)
                .await
                .map_err(ExecFailure::Api)?;
            let status = proc.take_status();
            let (stdout, stderr) =
                tokio::join!(read_capped(proc.stdout()), read_capped(proc.stderr()));
            let transport = |e: std::io::Error| ExecFailure::Transport(e.to_string());
            let (stdout, stderr) = (stdout.map_err(transport)?, stderr.map_err(transport)?);
            let status = match status {
                Some(s) => s.await,
                None => None,
            };
            proc.join()
                .await
                .map_err(|e| ExecFailure::Transport(e.to_string()))?;
            let status = status.ok_or_else(|| {
                ExecFailure::Transport("the exec stream ended without an exit status".into())
            })?;
            Ok(ExecOutput {
                stdout,
                stderr: String::from_utf8_lossy(&stderr).into_owned(),
                exit_code: exit_code(&status).map_err(ExecFailure::Transport)?,
            })
        };
        tokio::time::timeout(EXEC_TIMEOUT, run)
            .await
            .unwrap_or_else(|_| {
                Err(ExecFailure::Transport(format!(
                    "no answer within {EXEC_TIMEOUT:?}"
                )))
            })
    }
}

/// The exit code a remote-command `Status` reports. A Failure without an
/// exit code (the runtime could not run the command at all) is an error.
pub fn exit_code(status: &Status) -> Result<i32, String> {
    if status.status.as_deref() == Some("Success") {
        return Ok(0);
    }
    if status.reason.as_deref() == Some("NonZeroExitCode") {
        let code = status
            .details
            .as_ref()
            .and_then(|d| d.causes.as_ref())
            .into_iter()
            .flatten()
            .find(|c| c.reason.as_deref() == Some("ExitCode"))
            .and_then(|c| c.message.as_deref())
            .and_then(|m| m.parse().ok());
        return Ok(code.unwrap_or(1));
    }
    Err(format!(
        "exec failed: {}",
        status.message.as_deref().unwrap_or("no message")
    ))
}

fn shell_words(command: &[String]) -> String {
    command.join(" ")
}

/// Runs one command; a non-zero exit is FATAL with its stderr, transport
/// problems are transient, API refusals are classified as usual.
async fn run<E: PodExec>(
    exec: &E,
    namespace: &str,
    pod: &str,
    command: Vec<String>,
) -> Result<Vec<u8>, TaskOutcome> {
    let label = format!("pipe pod {namespace}/{pod}");
    let words = shell_words(&command);
    match exec.exec(namespace, pod, WAITER_CONTAINER, command).await {
        Ok(out) if out.exit_code == 0 => Ok(out.stdout),
        Ok(out) => Err(TaskOutcome::Fatal {
            message: format!(
                "{label}: `{words}` in container {WAITER_CONTAINER} exited with code {}: {}",
                out.exit_code,
                kudo_api::message::bounded_to(out.stderr.trim(), 1024)
            ),
        }),
        Err(ExecFailure::Api(e)) => Err(outcome_for(&format!("{label} (exec `{words}`)"), &e)),
        Err(ExecFailure::Transport(why)) => Err(TaskOutcome::Transient {
            message: format!("{label}: exec `{words}` failed: {why}"),
        }),
    }
}

fn command(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

/// Copies every pipe file out of the pod: sizes checked first, then the
/// content. Returns the contents in the order of `files`.
pub async fn copy_files<E: PodExec>(
    exec: &E,
    namespace: &str,
    pod: &str,
    files: &[PipeFile],
) -> Result<Vec<Vec<u8>>, TaskOutcome> {
    let fatal = |message| TaskOutcome::Fatal { message };
    let mut contents = Vec::with_capacity(files.len());
    for file in files {
        let path = source_path(file);
        let stat = run(exec, namespace, pod, command(&["stat", "-c", "%s", path])).await?;
        checked_size(&stat, path).map_err(fatal)?;
        let archive = run(exec, namespace, pod, command(&["tar", "cf", "-", path])).await?;
        match file_from_tar(&archive, path) {
            Ok(content) => contents.push(content),
            Err(TarProblem::Corrupt(why)) => {
                return Err(TaskOutcome::Transient {
                    message: format!("pipe pod {namespace}/{pod}: {why}"),
                });
            }
            Err(TarProblem::Unusable(why)) => return Err(fatal(why)),
        }
    }
    Ok(contents)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    /// Answers from a map of files, like busybox would; records commands.
    #[derive(Default)]
    struct FakeExec {
        files: BTreeMap<String, Vec<u8>>,
        broken_stream: bool,
        seen: Mutex<Vec<String>>,
    }

    impl PodExec for FakeExec {
        async fn exec(
            &self,
            _ns: &str,
            _pod: &str,
            container: &str,
            command: Vec<String>,
        ) -> Result<ExecOutput, ExecFailure> {
            assert_eq!(container, WAITER_CONTAINER);
            self.seen.lock().unwrap().push(command.join(" "));
            if self.broken_stream {
                return Err(ExecFailure::Transport("connection reset".into()));
            }
            let path = command.last().cloned().unwrap_or_default();
            let Some(content) = self.files.get(&path) else {
                return Ok(ExecOutput {
                    stderr: format!(
                        "{}: can't open '{path}': No such file or directory\n",
                        command[0]
                    ),
                    exit_code: 1,
                    ..ExecOutput::default()
                });
            };
            let stdout = if command[0] == "stat" {
                format!("{}\n", content.len()).into_bytes()
            } else {
                let mut b = tar::Builder::new(Vec::new());
                let mut h = tar::Header::new_ustar();
                h.set_size(content.len() as u64);
                b.append_data(&mut h, path.trim_start_matches('/'), content.as_slice())
                    .unwrap();
                b.into_inner().unwrap()
            };
            Ok(ExecOutput {
                stdout,
                ..ExecOutput::default()
            })
        }
    }

    fn pipe_file(path: &str) -> PipeFile {
        PipeFile {
            file: Some(path.into()),
            env_file: None,
            kind: "ConfigMap".into(),
            key: "k".into(),
            artifact_name: "a".into(),
        }
    }

    fn fake(files: &[(&str, Vec<u8>)]) -> FakeExec {
        FakeExec {
            files: files
                .iter()
                .map(|(p, c)| (p.to_string(), c.clone()))
                .collect(),
            ..FakeExec::default()
        }
    }

    #[tokio::test]
    async fn files_are_sized_then_copied_in_order() {
        let exec = fake(&[("/out/a", b"AAA".to_vec()), ("/out/b", b"B".to_vec())]);
        let got = copy_files(
            &exec,
            "ns",
            "p",
            &[pipe_file("/out/a"), pipe_file("/out/b")],
        )
        .await
        .unwrap();
        assert_eq!(got, vec![b"AAA".to_vec(), b"B".to_vec()]);
        assert_eq!(
            *exec.seen.lock().unwrap(),
            vec![
                "stat -c %s /out/a",
                "tar cf - /out/a",
                "stat -c %s /out/b",
                "tar cf - /out/b"
            ]
        );
    }

    #[tokio::test]
    async fn an_oversized_file_is_fatal_before_it_is_transferred() {
        let exec = fake(&[("/out/big", vec![0; 1024 * 1024 + 1])]);
        let err = copy_files(&exec, "ns", "p", &[pipe_file("/out/big")])
            .await
            .unwrap_err();
        assert!(
            matches!(&err, TaskOutcome::Fatal { message } if message.contains("/out/big is 1048577 bytes")),
            "{err:?}"
        );
        assert_eq!(
            exec.seen.lock().unwrap().len(),
            1,
            "no tar after a failed size check"
        );
    }

    #[tokio::test]
    async fn a_non_zero_exit_is_fatal_with_stderr() {
        let exec = fake(&[]);
        let err = copy_files(&exec, "ns", "p", &[pipe_file("/out/none")])
            .await
            .unwrap_err();
        let TaskOutcome::Fatal { message } = err else {
            panic!("expected fatal, got {err:?}")
        };
        assert_eq!(
            message,
            "pipe pod ns/p: `stat -c %s /out/none` in container waiter exited with code 1: \
             stat: can't open '/out/none': No such file or directory"
        );
    }

    #[tokio::test]
    async fn a_broken_connection_is_transient() {
        let exec = FakeExec {
            broken_stream: true,
            ..fake(&[("/out/a", b"x".to_vec())])
        };
        let err = copy_files(&exec, "ns", "p", &[pipe_file("/out/a")])
            .await
            .unwrap_err();
        assert!(
            matches!(&err, TaskOutcome::Transient { message } if message.contains("connection reset")),
            "{err:?}"
        );
    }

    #[test]
    fn exit_codes_come_from_the_status_causes() {
        let status = |s: serde_json::Value| -> Status { serde_json::from_value(s).unwrap() };
        assert_eq!(
            exit_code(&status(serde_json::json!({"status": "Success"}))),
            Ok(0)
        );
        assert_eq!(
            exit_code(&status(
                serde_json::json!({"status": "Failure", "reason": "NonZeroExitCode",
                "details": {"causes": [{"reason": "ExitCode", "message": "2"}]}})
            )),
            Ok(2)
        );
        assert!(
            exit_code(&status(
                serde_json::json!({"status": "Failure", "reason": "InternalError",
                "message": "container not found"})
            ))
            .unwrap_err()
            .contains("container not found")
        );
    }
}
