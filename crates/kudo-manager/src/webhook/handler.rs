//! What the server does with each request: routing, the body limit, the
//! cap on reviews in flight (503 with `Retry-After` past it) and the
//! request budget.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Body;
use kudo_api::names::WEBHOOK_PATH;
use tokio::sync::Semaphore;

use super::answer::ReviewVerdict;
use super::ov_source::OperatorVersionSource;
use super::review::Reviewer;
use crate::metrics::Metrics;

/// What the server does with each request: routing, limits and the review.
pub(super) struct Handler<S> {
    pub(super) reviewer: Reviewer<S>,
    pub(super) max_body_bytes: u64,
    pub(super) request_timeout: Duration,
    /// One permit per review in flight: each may hold a body of up to
    /// `max_body_bytes`, so this bounds the memory bodies take.
    pub(super) reviews: Semaphore,
    pub(super) metrics: Option<Metrics>,
}

/// How long a client refused for load is told to wait.
const RETRY_AFTER_SECS: &str = "1";

/// Where a request path leads. A trailing slash is accepted, as warp's
/// `path(..).and(path::end())` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Review,
    Health,
}

fn route(path: &str) -> Option<Route> {
    let path = path
        .strip_suffix('/')
        .filter(|p| !p.is_empty())
        .unwrap_or(path);
    if path == WEBHOOK_PATH {
        Some(Route::Review)
    } else if path == "/healthz" {
        Some(Route::Health)
    } else {
        None
    }
}

impl<S: OperatorVersionSource> Handler<S> {
    /// `POST /validate-kudo-dev-v1beta1-instance` and `GET /healthz`; 405
    /// for another method on either, 404 for any other path.
    pub(super) async fn respond<B>(&self, request: Request<B>) -> Response<Full<Bytes>>
    where
        B: Body<Data = Bytes> + Unpin,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let method = request.method();
        match route(request.uri().path()) {
            None => status_only(StatusCode::NOT_FOUND),
            Some(Route::Review) if method == Method::POST => {
                let started = Instant::now();
                let (response, verdict) = match content_length(request.headers()) {
                    Err(()) => {
                        let response = plain(
                            StatusCode::BAD_REQUEST,
                            "Invalid request header \"content-length\"",
                        );
                        (response, ReviewVerdict::Invalid)
                    }
                    Ok(length) => match self.reviews.try_acquire() {
                        // Shed load: the API server retries, or applies the
                        // configuration's failurePolicy.
                        Err(_) => (busy(), ReviewVerdict::Failed),
                        Ok(_in_flight) => {
                            let handled = self.review(length, request.into_body());
                            tokio::time::timeout(self.request_timeout, handled)
                                .await
                                .unwrap_or_else(|_| {
                                    let response = plain(
                                        StatusCode::SERVICE_UNAVAILABLE,
                                        "the review took too long",
                                    );
                                    (response, ReviewVerdict::Failed)
                                })
                        }
                    },
                };
                if let Some(metrics) = &self.metrics {
                    metrics.observe_review(verdict, started.elapsed());
                }
                response
            }
            Some(Route::Health) if method == Method::GET => plain(StatusCode::OK, "ok"),
            Some(_) => plain(StatusCode::METHOD_NOT_ALLOWED, "HTTP method not allowed"),
        }
    }

    async fn review<B>(
        &self,
        length: Option<u64>,
        body: B,
    ) -> (Response<Full<Bytes>>, ReviewVerdict)
    where
        B: Body<Data = Bytes> + Unpin,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let limit = self.max_body_bytes;
        if length.is_some_and(|length| length > limit) {
            return (too_large(limit), ReviewVerdict::Invalid);
        }
        let body = match collect_limited(body, limit).await {
            Ok(body) => body,
            Err(BodyError::TooLarge) => return (too_large(limit), ReviewVerdict::Invalid),
            Err(BodyError::Read(err)) => {
                let response = plain(
                    StatusCode::BAD_REQUEST,
                    &format!("cannot read the body: {err}"),
                );
                return (response, ReviewVerdict::Invalid);
            }
        };
        let (json, verdict) = self.reviewer.review_with_verdict(&body).await;
        let mut response = Response::new(Full::new(Bytes::from(json)));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        (response, verdict)
    }
}

/// `Ok(None)` without the header, `Err` when it is not a number.
fn content_length(headers: &http::HeaderMap) -> Result<Option<u64>, ()> {
    match headers.get(header::CONTENT_LENGTH) {
        None => Ok(None),
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|v| v.parse().ok())
            .map(Some)
            .ok_or(()),
    }
}

enum BodyError {
    TooLarge,
    Read(Box<dyn std::error::Error + Send + Sync>),
}

/// Reads the body, giving up as soon as it exceeds the limit (a chunked
/// body has no Content-Length to check up front). A body that arrives in
/// one frame (the usual case) comes back as it is, without a copy.
async fn collect_limited<B>(body: B, limit: u64) -> Result<Bytes, BodyError>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    match http_body_util::Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(err) if err.is::<http_body_util::LengthLimitError>() => Err(BodyError::TooLarge),
        Err(err) => Err(BodyError::Read(err)),
    }
}

fn too_large(limit: u64) -> Response<Full<Bytes>> {
    plain(
        StatusCode::PAYLOAD_TOO_LARGE,
        &format!("AdmissionReview bodies are limited to {limit} bytes"),
    )
}

/// 503 with `Retry-After` when all review slots are taken.
fn busy() -> Response<Full<Bytes>> {
    let mut response = plain(
        StatusCode::SERVICE_UNAVAILABLE,
        "the webhook is reviewing as many requests as it may at once; retry shortly",
    );
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from_static(RETRY_AFTER_SECS),
    );
    response
}

fn status_only(status: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = status;
    response
}

fn plain(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::copy_from_slice(text.as_bytes())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use super::*;
    use crate::webhook::ov_source::StaticOperatorVersions;

    fn test_handler(metrics: Option<Metrics>) -> Handler<StaticOperatorVersions> {
        Handler {
            reviewer: Reviewer::new(StaticOperatorVersions::new(), Duration::from_secs(1)),
            max_body_bytes: 1024,
            request_timeout: Duration::from_secs(1),
            reviews: Semaphore::new(4),
            metrics,
        }
    }

    async fn call(method: &str, path: &str, body: Vec<u8>) -> (StatusCode, Bytes) {
        call_counted(method, path, body, None).await
    }

    async fn call_counted(
        method: &str,
        path: &str,
        body: Vec<u8>,
        metrics: Option<Metrics>,
    ) -> (StatusCode, Bytes) {
        let handler = test_handler(metrics);
        let request = http::Request::builder()
            .method(method)
            .uri(path)
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        let response = handler.respond(request).await;
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, body)
    }

    #[tokio::test]
    async fn bodies_over_the_limit_get_413() {
        let (status, _) = call("POST", WEBHOOK_PATH, vec![b' '; 2048]).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    }

    #[tokio::test]
    async fn garbage_gets_an_admission_review_error_not_a_crash() {
        let (status, body) = call("POST", WEBHOOK_PATH, b"{not json".to_vec()).await;
        assert_eq!(status, StatusCode::OK);
        let review: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(review["response"]["allowed"], false);
        assert_eq!(review["response"]["status"]["code"], 400);
    }

    #[tokio::test]
    async fn reviews_are_counted_by_verdict_and_other_routes_are_not() {
        let metrics = Metrics::new();
        let counted =
            |body: Vec<u8>| call_counted("POST", WEBHOOK_PATH, body, Some(metrics.clone()));
        counted(b"{not json".to_vec()).await;
        counted(vec![b' '; 2048]).await;
        // A create whose OperatorVersion is not known: denied by the rules.
        let create = serde_json::json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u1", "operation": "CREATE", "resource": {}, "userInfo": {},
                "kind": {"group": "kudo.dev", "version": "v1beta1", "kind": "Instance"},
                "object": {"metadata": {"name": "zk"},
                           "spec": {"operatorVersion": {"name": "zk-9"}}}}
        });
        counted(serde_json::to_vec(&create).unwrap()).await;
        call_counted("GET", "/healthz", vec![], Some(metrics.clone())).await;
        let handler = test_handler(Some(metrics.clone()));
        let bad_length = http::Request::builder()
            .method("POST")
            .uri(WEBHOOK_PATH)
            .header(header::CONTENT_LENGTH, "lots")
            .body(Full::new(Bytes::new()))
            .unwrap();
        let response = handler.respond(bad_length).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let text = metrics.render();
        for expected in [
            "kudo_manager_webhook_reviews_total{verdict=\"invalid\"} 3",
            "kudo_manager_webhook_reviews_total{verdict=\"denied\"} 1",
            "kudo_manager_webhook_review_duration_seconds_count 4",
        ] {
            assert!(text.contains(expected), "{expected} missing from\n{text}");
        }
    }

    #[tokio::test]
    async fn a_review_over_the_cap_in_flight_gets_503_with_retry_after_and_health_still_answers() {
        let handler = test_handler(None);
        // Every slot taken, as by reviews waiting for a slow read.
        let taken = handler.reviews.try_acquire_many(4).unwrap();
        let request = http::Request::builder()
            .method("POST")
            .uri(WEBHOOK_PATH)
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap();
        let response = handler.respond(request).await;
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
        let health = http::Request::get("/healthz")
            .body(Full::new(Bytes::new()))
            .unwrap();
        assert_eq!(handler.respond(health).await.status(), StatusCode::OK);
        drop(taken);
        let request = http::Request::builder()
            .method("POST")
            .uri(WEBHOOK_PATH)
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap();
        assert_eq!(handler.respond(request).await.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn other_paths_and_methods_are_not_served() {
        let (wrong_path, _) = call("POST", "/mutate", vec![]).await;
        assert_eq!(wrong_path, StatusCode::NOT_FOUND);
        let (wrong_method, _) = call("GET", WEBHOOK_PATH, vec![]).await;
        assert_eq!(wrong_method, StatusCode::METHOD_NOT_ALLOWED);
    }

    #[tokio::test]
    async fn health_endpoint_answers_ok() {
        let (status, body) = call("GET", "/healthz", vec![]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, "ok");
    }

    #[tokio::test]
    async fn trailing_slash_is_the_same_route_and_post_on_health_is_405() {
        let (status, body) = call("GET", "/healthz/", vec![]).await;
        assert_eq!((status, body.as_ref()), (StatusCode::OK, b"ok".as_ref()));
        let (status, _) = call("POST", "/healthz", vec![]).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        let (status, _) = call("GET", "/healthz//", vec![]).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }

    fn chunks(parts: Vec<&'static [u8]>) -> impl Body<Data = Bytes, Error = Infallible> + Unpin {
        let frames = parts
            .into_iter()
            .map(|p| Ok(hyper::body::Frame::data(Bytes::from_static(p))));
        http_body_util::StreamBody::new(futures::stream::iter(frames))
    }

    #[tokio::test]
    async fn a_body_in_several_frames_is_joined_in_order() {
        let body = collect_limited(chunks(vec![b"ab", b"", b"cd", b"e"]), 5).await;
        assert!(matches!(body, Ok(ref b) if b == "abcde"));
    }

    #[tokio::test]
    async fn a_streamed_body_over_the_limit_is_refused_while_reading() {
        let body = collect_limited(chunks(vec![b"abc", b"def"]), 5).await;
        assert!(matches!(body, Err(BodyError::TooLarge)));
    }
}
