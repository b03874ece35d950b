//! Opt-in fake `pods/{name}/exec`: the sandbox runs no containers, so a test
//! gives a pod an in-memory file system ([`crate::Sandbox::set_pod_files`])
//! and exec answers `stat -c %s`, `tar cf -` and `cat` from it over the real
//! WebSocket protocol (see [`crate::exec_protocol`]). Pods without files,
//! pods that are not Running and unknown containers get the API errors a
//! client would see from a real cluster.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::SinkExt;
use http::{Request, Response, StatusCode, header};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};

use crate::Sandbox;
use crate::exec_fs::{self, CommandOutput, PodFs};
use crate::exec_protocol::{self, ExecRequest};
use crate::http::{Body, ObjectPath, error_response};
use crate::server::Inner;
use crate::status::{ApiError, Subject};

/// File systems of pods, keyed by (namespace, pod name).
#[derive(Debug, Default)]
pub struct PodFiles(Mutex<HashMap<(String, String), Arc<PodFs>>>);

impl PodFiles {
    fn get(&self, ns: &str, pod: &str) -> Option<Arc<PodFs>> {
        let map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.get(&(ns.to_string(), pod.to_string())).cloned()
    }

    fn set(&self, ns: &str, pod: &str, files: Option<PodFs>) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let key = (ns.to_string(), pod.to_string());
        match files {
            Some(fs) => map.insert(key, Arc::new(fs)),
            None => map.remove(&key),
        };
    }
}

impl Sandbox {
    /// Gives pod `namespace/pod` an in-memory file system for the fake
    /// `pods/exec` (absolute path → content). It may be set before the pod
    /// exists (the name is all that links them) and replaces earlier files.
    /// Exec also needs the pod to be Running: patch its status subresource
    /// (`status.phase: Running`, condition `Ready: "True"`).
    pub fn set_pod_files<P, C>(
        &self,
        namespace: &str,
        pod: &str,
        files: impl IntoIterator<Item = (P, C)>,
    ) where
        P: Into<String>,
        C: Into<Vec<u8>>,
    {
        let fs = files
            .into_iter()
            .map(|(p, c)| (p.into(), c.into()))
            .collect();
        self.inner.exec_files.set(namespace, pod, Some(fs));
    }

    /// Removes a pod's file system: exec on it fails again.
    pub fn clear_pod_files(&self, namespace: &str, pod: &str) {
        self.inner.exec_files.set(namespace, pod, None);
    }
}

/// Whether a path is a pod's exec subresource.
pub fn is_exec(p: &ObjectPath) -> bool {
    p.group.is_empty()
        && p.plural == "pods"
        && p.name.is_some()
        && p.subresource.as_deref() == Some("exec")
}

/// Answers a `pods/{name}/exec` request: API errors before the upgrade, or
/// `101 Switching Protocols` and the command's output on the WebSocket.
/// Injected faults are the caller's (the server checks them as for `create`).
pub async fn serve(inner: Arc<Inner>, req: Request<Incoming>, p: &ObjectPath) -> Response<Body> {
    match prepare(&inner, &req, p) {
        Ok((exec, protocol, accept)) => {
            let output = exec_fs::run(&exec.command, &exec.fs);
            tokio::spawn(stream(req, exec.request, output));
            switching_protocols(protocol, &accept)
        }
        Err(e) => error_response(&e),
    }
}

/// A checked request and the file system it runs against.
struct Exec {
    request: ExecRequest,
    command: Vec<String>,
    fs: Arc<PodFs>,
}

fn prepare(
    inner: &Inner,
    req: &Request<Incoming>,
    p: &ObjectPath,
) -> Result<(Exec, &'static str, String), ApiError> {
    let ns = p.namespace.clone().unwrap_or_else(|| "default".into());
    let name = p.name.clone().unwrap_or_default();
    let request = ExecRequest::parse(req.uri().query()).map_err(ApiError::bad_request)?;
    let pod = inner
        .lock()
        .store
        .get("", "pods", &ns, &name)
        .map(|s| s.value.clone())
        .ok_or_else(|| {
            ApiError::not_found(Subject {
                group: "",
                plural: "pods",
                name: &name,
            })
        })?;
    check_pod(&pod, &ns, &name, request.container.as_deref())?;
    let fs = inner.exec_files.get(&ns, &name).ok_or_else(|| {
        ApiError::bad_request(format!(
            "pod {ns}/{name} has no files: kudo-sandbox runs no containers, so exec answers \
             only from files a test sets with Sandbox::set_pod_files"
        ))
    })?;
    let (protocol, accept) = upgrade_headers(req)?;
    Ok((
        Exec {
            command: request.command.clone(),
            request,
            fs,
        },
        protocol,
        accept,
    ))
}

fn check_pod(pod: &Value, ns: &str, name: &str, container: Option<&str>) -> Result<(), ApiError> {
    let containers: Vec<&str> = pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect();
    if let Some(c) = container
        && !containers.contains(&c)
    {
        return Err(ApiError::bad_request(format!(
            "container {c} is not valid for pod {name}"
        )));
    }
    match pod["status"]["phase"].as_str() {
        Some("Running") => Ok(()),
        phase => Err(ApiError::bad_request(format!(
            "unable to upgrade connection: pod {ns}/{name} is not running (phase {}); in \
             kudo-sandbox, set status.phase Running through the pods/status subresource",
            phase.unwrap_or("unset")
        ))),
    }
}

/// The negotiated subprotocol and the `Sec-WebSocket-Accept` value.
fn upgrade_headers(req: &Request<Incoming>) -> Result<(&'static str, String), ApiError> {
    let h = |name: header::HeaderName| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    };
    let key = h(header::SEC_WEBSOCKET_KEY);
    if !h(header::UPGRADE).eq_ignore_ascii_case("websocket") || key.is_empty() {
        return Err(ApiError::bad_request(
            "pods/exec needs a WebSocket upgrade (subprotocol v4.channel.k8s.io or \
             v5.channel.k8s.io); SPDY is not supported by kudo-sandbox",
        ));
    }
    let protocol =
        exec_protocol::negotiate(h(header::SEC_WEBSOCKET_PROTOCOL)).ok_or_else(|| {
            ApiError::bad_request(format!(
                "none of the offered WebSocket subprotocols {:?} is supported; use one of {}",
                h(header::SEC_WEBSOCKET_PROTOCOL),
                exec_protocol::SUBPROTOCOLS.join(", ")
            ))
        })?;
    Ok((protocol, derive_accept_key(key.as_bytes())))
}

fn switching_protocols(protocol: &'static str, accept: &str) -> Response<Body> {
    let mut resp = Response::new(http_body_util::BodyExt::boxed(http_body_util::Empty::<
        bytes::Bytes,
    >::new()));
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = resp.headers_mut();
    headers.insert(
        header::CONNECTION,
        header::HeaderValue::from_static("Upgrade"),
    );
    headers.insert(
        header::UPGRADE,
        header::HeaderValue::from_static("websocket"),
    );
    headers.insert(
        header::SEC_WEBSOCKET_PROTOCOL,
        header::HeaderValue::from_static(protocol),
    );
    if let Ok(v) = header::HeaderValue::from_str(accept) {
        headers.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    resp
}

/// Sends the output once the connection is upgraded, then closes it.
async fn stream(req: Request<Incoming>, request: ExecRequest, output: CommandOutput) {
    let upgraded = match hyper::upgrade::on(req).await {
        Ok(u) => u,
        Err(e) => {
            tracing::debug!(error = %e, "exec: the WebSocket upgrade failed");
            return;
        }
    };
    let mut ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
    for msg in exec_protocol::messages(&request, &output) {
        if let Err(e) = ws.feed(Message::binary(msg)).await {
            tracing::debug!(error = %e, "exec: the client went away");
            return;
        }
    }
    if let Err(e) = ws.flush().await {
        tracing::debug!(error = %e, "exec: the client went away");
        return;
    }
    // kubectl reads a close without a code (1005) as a broken stream.
    let normal = CloseFrame {
        code: CloseCode::Normal,
        reason: "".into(),
    };
    let _ = ws.close(Some(normal)).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_named_core_pod_exec_path_is_exec() {
        let path = |plural: &str, name: Option<&str>, sub: Option<&str>| ObjectPath {
            group: String::new(),
            version: "v1".into(),
            namespace: Some("ns".into()),
            plural: plural.into(),
            name: name.map(str::to_string),
            subresource: sub.map(str::to_string),
        };
        assert!(is_exec(&path("pods", Some("p"), Some("exec"))));
        assert!(!is_exec(&path("pods", Some("p"), Some("status"))));
        assert!(!is_exec(&path("services", Some("p"), Some("exec"))));
    }

    #[test]
    fn exec_needs_a_running_pod_and_a_known_container() {
        let pod = |phase: &str| json!({"spec": {"containers": [{"name": "waiter"}]}, "status": {"phase": phase}});
        assert!(check_pod(&pod("Running"), "ns", "p", Some("waiter")).is_ok());
        assert!(check_pod(&pod("Running"), "ns", "p", None).is_ok());
        let pending = check_pod(&pod("Pending"), "ns", "p", None).unwrap_err();
        assert_eq!(pending.code, 400);
        assert!(
            pending.message.contains("phase Pending"),
            "{}",
            pending.message
        );
        let unknown = check_pod(&pod("Running"), "ns", "p", Some("main")).unwrap_err();
        assert!(unknown.message.contains("container main is not valid"));
    }
}
