//! Request paths, query parameters and response helpers.

use std::collections::HashMap;
use std::convert::Infallible;

use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};

use crate::status::ApiError;

/// The response body type.
pub type Body = BoxBody<Bytes, Infallible>;

/// What a request path addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/version`.
    Version,
    /// `/api`.
    CoreVersions,
    /// `/apis`.
    Groups,
    /// `/apis/{group}`.
    Group(String),
    /// `/api/v1` or `/apis/{group}/{version}`.
    Resources {
        /// API group.
        group: String,
        /// Version.
        version: String,
    },
    /// `/openapi/v2`, `/openapi/v3` and below.
    OpenApi(String),
    /// `/healthz`, `/readyz`, `/livez`.
    Health,
    /// A resource collection, object or subresource.
    Object(ObjectPath),
}

/// A path to a resource collection, object or subresource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectPath {
    /// API group.
    pub group: String,
    /// Version.
    pub version: String,
    /// Namespace from the path, if any.
    pub namespace: Option<String>,
    /// Plural resource.
    pub plural: String,
    /// Object name.
    pub name: Option<String>,
    /// Subresource (`status`, `scale`).
    pub subresource: Option<String>,
}

/// Parses a request path.
pub fn route(path: &str) -> Option<Route> {
    let segs: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    match segs.as_slice() {
        ["version"] => Some(Route::Version),
        ["api"] => Some(Route::CoreVersions),
        ["apis"] => Some(Route::Groups),
        ["apis", g] => Some(Route::Group((*g).to_string())),
        ["api", v] => Some(Route::Resources {
            group: String::new(),
            version: (*v).to_string(),
        }),
        ["apis", g, v] => Some(Route::Resources {
            group: (*g).to_string(),
            version: (*v).to_string(),
        }),
        ["openapi", rest @ ..] => Some(Route::OpenApi(rest.join("/"))),
        ["healthz" | "readyz" | "livez", ..] => Some(Route::Health),
        ["api", v, rest @ ..] => object_path("", v, rest).map(Route::Object),
        ["apis", g, v, rest @ ..] => object_path(g, v, rest).map(Route::Object),
        _ => None,
    }
}

fn object_path(group: &str, version: &str, rest: &[&str]) -> Option<ObjectPath> {
    let mk = |ns: Option<&str>, plural: &str, name: Option<&str>, sub: Option<&str>| ObjectPath {
        group: group.to_string(),
        version: version.to_string(),
        namespace: ns.map(str::to_string),
        plural: plural.to_string(),
        name: name.map(str::to_string),
        subresource: sub.map(str::to_string),
    };
    match rest {
        ["namespaces", name, sub @ ("status" | "finalize")] if group.is_empty() => {
            Some(mk(None, "namespaces", Some(name), Some(sub)))
        }
        ["namespaces", ns, plural, tail @ ..] => match tail {
            [] => Some(mk(Some(ns), plural, None, None)),
            [name] => Some(mk(Some(ns), plural, Some(name), None)),
            [name, sub] => Some(mk(Some(ns), plural, Some(name), Some(sub))),
            _ => None,
        },
        [plural] => Some(mk(None, plural, None, None)),
        [plural, name] => Some(mk(None, plural, Some(name), None)),
        [plural, name, sub] => Some(mk(None, plural, Some(name), Some(sub))),
        _ => None,
    }
}

pub(crate) fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Decoded query parameters.
#[derive(Debug, Clone, Default)]
pub struct Query(HashMap<String, String>);

impl Query {
    /// Parses a query string.
    pub fn parse(q: Option<&str>) -> Self {
        let mut map = HashMap::new();
        for pair in q.unwrap_or_default().split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            map.insert(percent_decode(k), percent_decode(v));
        }
        Self(map)
    }

    /// A parameter's value.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// A boolean parameter (`true`, `1`).
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "1" | "True"))
    }

    /// A non-empty parameter.
    pub fn non_empty(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.is_empty())
    }
}

/// A JSON response.
pub fn json_response<T: serde::Serialize + ?Sized>(code: u16, value: &T) -> Response<Body> {
    let body = serde_json::to_vec(value).unwrap_or_default();
    let mut resp = Response::new(Full::new(Bytes::from(body)).boxed());
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    resp
}

/// A Status error response.
pub fn error_response(e: &ApiError) -> Response<Body> {
    let mut resp = json_response(e.code, &e.to_status());
    if e.code == 429 || e.code == 503 {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    }
    resp
}

/// Reads the whole request body.
pub async fn read_body(body: hyper::body::Incoming) -> Result<Bytes, ApiError> {
    body.collect()
        .await
        .map(|c| c.to_bytes())
        .map_err(|e| ApiError::bad_request(format!("could not read the request body: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_namespaced_object_and_subresource_paths() {
        let Some(Route::Object(p)) = route("/apis/apps/v1/namespaces/ns/deployments/web/status")
        else {
            panic!("not an object route")
        };
        assert_eq!(
            (
                p.group.as_str(),
                p.namespace.as_deref(),
                p.name.as_deref(),
                p.subresource.as_deref()
            ),
            ("apps", Some("ns"), Some("web"), Some("status"))
        );
        let Some(Route::Object(p)) = route("/api/v1/namespaces/ns/status") else {
            panic!("no route")
        };
        assert_eq!(
            (p.plural.as_str(), p.name.as_deref()),
            ("namespaces", Some("ns"))
        );
        let Some(Route::Object(p)) = route("/api/v1/namespaces/ns") else {
            panic!("no route")
        };
        assert_eq!(
            (p.plural.as_str(), p.name.as_deref(), p.namespace),
            ("namespaces", Some("ns"), None)
        );
        assert_eq!(
            route("/apis/apps/v1"),
            Some(Route::Resources {
                group: "apps".into(),
                version: "v1".into()
            })
        );
    }

    #[test]
    fn query_values_are_decoded() {
        let q = Query::parse(Some("labelSelector=app%3Dweb%2Ctier+in+(a)&watch=1"));
        assert_eq!(q.get("labelSelector"), Some("app=web,tier in (a)"));
        assert!(q.flag("watch"));
    }
}
