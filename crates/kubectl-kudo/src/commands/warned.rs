//! Writes the admission webhook may answer with warnings (the plan will
//! wait for a window, a suppression, a pause): the API server returns
//! them as `Warning` headers, which kube's typed calls drop, so these
//! writes go through the raw client and print them as kubectl does.

use kube::core::{Request, Status};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Sends `request`; prints each warning as `Warning: TEXT` on stderr and
/// returns the object, or the server's error as kube's typed calls do.
pub async fn send<K: DeserializeOwned>(
    client: &Client,
    request: http::Request<Vec<u8>>,
) -> Result<K, kube::Error> {
    let response = client.send(request.map(kube::client::Body::from)).await?;
    for value in response.headers().get_all(http::header::WARNING) {
        errln!("Warning: {}", warning_text(value.as_bytes()));
    }
    let status = response.status();
    let body = response.into_body().collect_bytes().await?;
    if status.is_client_error() || status.is_server_error() {
        let error = serde_json::from_slice::<Status>(&body).unwrap_or_else(|_| {
            Status::failure(
                String::from_utf8_lossy(&body).trim(),
                "Failed to parse error data",
            )
            .with_code(status.as_u16())
        });
        return Err(kube::Error::Api(error.boxed()));
    }
    serde_json::from_slice(&body).map_err(kube::Error::SerdeError)
}

/// A JSON merge patch of a namespaced object, warnings printed.
pub async fn merge_patch<K>(
    client: &Client,
    namespace: &str,
    name: &str,
    params: &kube::api::PatchParams,
    patch: &serde_json::Value,
) -> Result<K, kube::Error>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    let request = Request::new(K::url_path(&(), Some(namespace)))
        .patch(name, params, &kube::api::Patch::Merge(patch))
        .map_err(kube::Error::BuildRequest)?;
    send(client, request).await
}

/// A create of a namespaced object, warnings printed.
pub async fn create<K>(client: &Client, namespace: &str, object: &K) -> Result<K, kube::Error>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned,
{
    let body = serde_json::to_vec(object).map_err(kube::Error::SerdeError)?;
    let request = Request::new(K::url_path(&(), Some(namespace)))
        .create(&kube::api::PostParams::default(), body)
        .map_err(kube::Error::BuildRequest)?;
    send(client, request).await
}

/// The text of a `Warning` header (`299 - "text"`), unquoted; a value in
/// another form is shown as it is.
pub fn warning_text(value: &[u8]) -> String {
    let value = String::from_utf8_lossy(value);
    let Some(quoted) = value
        .splitn(3, ' ')
        .nth(2)
        .and_then(|q| q.strip_prefix('"'))
        .and_then(|q| q.strip_suffix('"'))
    else {
        return value.into_owned();
    };
    let mut text = String::with_capacity(quoted.len());
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => text.extend(chars.next()),
            c => text.push(c),
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warning_headers_are_unquoted() {
        assert_eq!(
            warning_text(br#"299 - "plan \"update\" will wait""#),
            r#"plan "update" will wait"#
        );
        assert_eq!(
            warning_text(b"not a warning header"),
            "not a warning header"
        );
    }
}
