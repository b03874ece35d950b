//! The Kubernetes remote-command WebSocket protocol, server side, as far as
//! the fake exec needs it. Pure: parsing the request and framing the answer.
//!
//! Every WebSocket message is binary and starts with a channel byte:
//! 0 stdin, 1 stdout, 2 stderr, 3 status (a JSON `Status` when the command
//! ends), 4 resize. Subprotocols `v4.channel.k8s.io` and `v5.channel.k8s.io`
//! (v5 only adds a client-side "close stdin" message, which this server does
//! not need) are spoken; older ones carry plain-text errors and are refused.

use serde_json::{Value, json};

use crate::exec_fs::CommandOutput;

/// Channel of stdout messages.
pub const STDOUT: u8 = 1;
/// Channel of stderr messages.
pub const STDERR: u8 = 2;
/// Channel of the final status message.
pub const STATUS: u8 = 3;

/// Largest payload of one stdout/stderr message.
const CHUNK: usize = 32 * 1024;

/// Subprotocols spoken, in order of preference.
pub const SUBPROTOCOLS: [&str; 2] = ["v5.channel.k8s.io", "v4.channel.k8s.io"];

/// The query of a `pods/{name}/exec` request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecRequest {
    /// The command and its arguments (`command=` repeated).
    pub command: Vec<String>,
    /// Container; None means the pod's only (first) container.
    pub container: Option<String>,
    /// Whether stdout is wanted.
    pub stdout: bool,
    /// Whether stderr is wanted.
    pub stderr: bool,
}

impl ExecRequest {
    /// Parses the raw query string (`command` repeats, so a map will not do).
    pub fn parse(query: Option<&str>) -> Result<Self, String> {
        let mut req = Self::default();
        for pair in query
            .unwrap_or_default()
            .split('&')
            .filter(|p| !p.is_empty())
        {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let value = crate::http::percent_decode(v);
            match crate::http::percent_decode(k).as_str() {
                "command" => req.command.push(value),
                "container" if !value.is_empty() => req.container = Some(value),
                "stdout" => req.stdout = is_true(&value),
                "stderr" => req.stderr = is_true(&value),
                "tty" if is_true(&value) => {
                    return Err("tty=true is not supported by the sandbox's fake exec".into());
                }
                _ => {}
            }
        }
        if req.command.is_empty() {
            return Err("you must specify at least 1 command".into());
        }
        Ok(req)
    }
}

fn is_true(v: &str) -> bool {
    matches!(v, "true" | "1" | "True")
}

/// Picks the subprotocol from the client's `Sec-WebSocket-Protocol` list
/// (comma-separated, client's preference first).
pub fn negotiate(offered: &str) -> Option<&'static str> {
    offered
        .split(',')
        .map(str::trim)
        .find_map(|p| SUBPROTOCOLS.iter().find(|s| **s == p).copied())
}

/// The `Status` sent on the status channel when the command ends.
pub fn status(command: &[String], exit_code: i32) -> Value {
    if exit_code == 0 {
        return json!({"metadata": {}, "status": "Success"});
    }
    json!({
        "metadata": {},
        "status": "Failure",
        "message": format!(
            "command terminated with non-zero exit code: error executing command {command:?}, exit code {exit_code}"
        ),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": exit_code.to_string()}]},
    })
}

fn channel_messages(channel: u8, data: &[u8], out: &mut Vec<Vec<u8>>) {
    for chunk in data.chunks(CHUNK) {
        let mut msg = Vec::with_capacity(chunk.len() + 1);
        msg.push(channel);
        msg.extend_from_slice(chunk);
        out.push(msg);
    }
}

/// The binary messages that answer `req`: one empty message per open
/// output channel (as the API server sends on connect), the output, then
/// the status.
pub fn messages(req: &ExecRequest, output: &CommandOutput) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    if req.stdout {
        out.push(vec![STDOUT]);
    }
    if req.stderr {
        out.push(vec![STDERR]);
    }
    if req.stdout {
        channel_messages(STDOUT, &output.stdout, &mut out);
    }
    if req.stderr {
        channel_messages(STDERR, &output.stderr, &mut out);
    }
    let mut status_msg = vec![STATUS];
    status_msg.extend_from_slice(
        status(&req.command, output.exit_code)
            .to_string()
            .as_bytes(),
    );
    out.push(status_msg);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_command_parameters_keep_their_order_and_are_decoded() {
        let req = ExecRequest::parse(Some(
            "&container=waiter&stderr=true&stdout=true&command=stat&command=-c&command=%25s&command=%2Fout%2Fa",
        ))
        .unwrap();
        assert_eq!(req.command, vec!["stat", "-c", "%s", "/out/a"]);
        assert_eq!(req.container.as_deref(), Some("waiter"));
        assert!(req.stdout && req.stderr);
    }

    #[test]
    fn a_request_without_command_or_with_a_tty_is_refused() {
        assert!(
            ExecRequest::parse(Some("stdout=true"))
                .unwrap_err()
                .contains("at least 1 command")
        );
        assert!(
            ExecRequest::parse(Some("command=sh&tty=true"))
                .unwrap_err()
                .contains("tty")
        );
    }

    #[test]
    fn negotiation_follows_the_clients_preference_among_v4_and_v5() {
        assert_eq!(
            negotiate("v5.channel.k8s.io, v4.channel.k8s.io"),
            Some("v5.channel.k8s.io")
        );
        assert_eq!(
            negotiate("channel.k8s.io,v4.channel.k8s.io"),
            Some("v4.channel.k8s.io")
        );
        assert_eq!(negotiate("channel.k8s.io, base64.channel.k8s.io"), None);
    }

    #[test]
    fn every_message_starts_with_its_channel_and_status_comes_last() {
        let req = ExecRequest {
            command: vec!["cat".into(), "/f".into()],
            container: None,
            stdout: true,
            stderr: true,
        };
        let output = CommandOutput {
            stdout: vec![7; CHUNK + 10],
            stderr: b"warn\n".to_vec(),
            exit_code: 0,
        };
        let msgs = messages(&req, &output);
        let channels: Vec<u8> = msgs.iter().map(|m| m[0]).collect();
        assert_eq!(
            channels,
            vec![STDOUT, STDERR, STDOUT, STDOUT, STDERR, STATUS]
        );
        assert_eq!(msgs[2].len(), CHUNK + 1);
        assert_eq!(msgs[3].len(), 11);
        assert_eq!(&msgs[4][1..], b"warn\n");
        let status: Value = serde_json::from_slice(&msgs[5][1..]).unwrap();
        assert_eq!(status["status"], "Success");
    }

    #[test]
    fn unwanted_channels_are_not_sent() {
        let req = ExecRequest {
            command: vec!["x".into()],
            container: None,
            stdout: true,
            stderr: false,
        };
        let output = CommandOutput {
            stdout: b"o".to_vec(),
            stderr: b"e".to_vec(),
            exit_code: 0,
        };
        assert!(messages(&req, &output).iter().all(|m| m[0] != STDERR));
    }

    #[test]
    fn non_zero_exit_is_a_failure_status_carrying_the_code() {
        let s = status(&["stat".into(), "/x".into()], 2);
        assert_eq!(s["status"], "Failure");
        assert_eq!(s["reason"], "NonZeroExitCode");
        assert_eq!(s["details"]["causes"][0]["reason"], "ExitCode");
        assert_eq!(s["details"]["causes"][0]["message"], "2");
    }
}
