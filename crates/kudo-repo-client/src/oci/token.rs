//! The bearer token a registry hands out for pulls (the registry token
//! protocol), fetched with the repository client's own limits: the
//! registry's `/v2/` answers 401 with `WWW-Authenticate: Bearer realm=...`,
//! and the realm answers a token for `repository:NAME:pull`.
//!
//! Fetched here rather than by oci-client, whose token request reads the
//! whole answer however large, and sends the credentials to whatever realm
//! the registry names: an `https` registry naming an `http` realm would
//! have them cross the network in clear. Here the answer is bounded
//! ([`MAX_TOKEN_BYTES`]), the whole exchange ends on the total deadline,
//! and an `http` realm is refused unless the registry itself is plain
//! `http` (`--plain-http`).

use kudo_repo::config::Credentials;
use kudo_repo::urls::Url;
use serde::Deserialize;

use super::{OciRef, Registry, oci_err};
use crate::error::Result;
use crate::http::{self, Download};

/// Largest token answer read.
pub const MAX_TOKEN_BYTES: u64 = 64 << 10;

/// What a `Bearer` challenge asks for.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Challenge {
    /// Where to ask for the token.
    pub realm: String,
    /// The service to name in the request.
    pub service: Option<String>,
}

/// Reads a `WWW-Authenticate` header's `Bearer` challenge; `None` for
/// another scheme (Basic) or a header that does not parse.
pub(super) fn bearer_challenge(header: &str) -> Option<Challenge> {
    let (scheme, params) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let mut realm = None;
    let mut service = None;
    let mut rest = params.trim();
    while !rest.is_empty() {
        let (key, after) = rest.split_once('=')?;
        let key = key.trim().trim_start_matches(',').trim();
        let after = after.trim_start();
        let (value, tail) = match after.strip_prefix('"') {
            Some(quoted) => {
                let end = quoted.find('"')?;
                (&quoted[..end], &quoted[end + 1..])
            }
            None => match after.find(',') {
                Some(end) => (&after[..end], &after[end..]),
                None => (after, ""),
            },
        };
        match key.to_ascii_lowercase().as_str() {
            "realm" => realm = Some(value.to_string()),
            "service" => service = Some(value.to_string()),
            _ => {}
        }
        rest = tail.trim_start().trim_start_matches(',').trim_start();
    }
    Some(Challenge {
        realm: realm?,
        service,
    })
}

#[derive(Deserialize)]
struct TokenAnswer {
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    access_token: Option<String>,
}

impl Registry {
    /// The bearer token for pulling `reference`, if the registry wants
    /// one; `None` when it does not, or when the credentials are a token
    /// already (sent as they are).
    pub(super) async fn pull_token(&self, reference: &OciRef) -> Result<Option<String>> {
        if matches!(self.credentials, Some(Credentials::Bearer { .. })) {
            return Ok(None);
        }
        let limit = self.transport.limits.total_timeout;
        tokio::time::timeout(limit, self.negotiate(reference))
            .await
            .map_err(|_| {
                oci_err(
                    reference,
                    format!("authentication took longer than {}s", limit.as_secs()),
                    true,
                )
            })?
    }

    async fn negotiate(&self, reference: &OciRef) -> Result<Option<String>> {
        let client = http::client(&self.transport)?;
        let scheme = if self.plain_http { "http" } else { "https" };
        let probe = Url::parse(&format!("{scheme}://{}/v2/", reference.registry))
            .map_err(|e| oci_err(reference, format!("not a registry URL: {e}"), false))?;
        let answer = client.get(probe.clone()).send().await.map_err(|e| {
            oci_err(
                reference,
                format!("cannot reach the registry: {}", http::chain(&e)),
                true,
            )
        })?;
        if answer.status() != reqwest::StatusCode::UNAUTHORIZED {
            // No token wanted (or an error the manifest request reports).
            return Ok(None);
        }
        let Some(challenge) = answer
            .headers()
            .get(reqwest::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer_challenge)
        else {
            // Basic: the credentials go with each request.
            return Ok(None);
        };
        drop(answer);
        let realm = self.realm_url(reference, &challenge)?;
        let credentials = match &self.credentials {
            Some(basic @ Credentials::Basic { .. }) => Some(basic),
            _ => None,
        };
        let fetched = http::fetch(
            &client,
            &self.transport.limits,
            &Download {
                url: &realm,
                max_bytes: MAX_TOKEN_BYTES,
                what: "token",
                credentials,
                origin: Some(&realm),
                accept: Some("application/json"),
            },
        )
        .await?;
        let answer: TokenAnswer = serde_json::from_slice(&fetched.bytes).map_err(|e| {
            oci_err(
                reference,
                format!(
                    "the token answer from {} is not JSON: {e}",
                    kudo_repo::urls::shown(&realm)
                ),
                false,
            )
        })?;
        match answer.token.or(answer.access_token) {
            Some(token) if !token.is_empty() => Ok(Some(token)),
            _ => Err(oci_err(
                reference,
                format!(
                    "the token answer from {} holds no token",
                    kudo_repo::urls::shown(&realm)
                ),
                false,
            )),
        }
    }

    /// The realm with the service and pull scope, refused when it would
    /// take the credentials from `https` to plain `http`.
    fn realm_url(&self, reference: &OciRef, challenge: &Challenge) -> Result<Url> {
        let mut realm = Url::parse(&challenge.realm).map_err(|e| {
            oci_err(
                reference,
                format!(
                    "the registry names a token realm that is not a URL ({:?}): {e}",
                    challenge.realm
                ),
                false,
            )
        })?;
        match realm.scheme() {
            "https" => {}
            "http" if self.plain_http => {}
            other => {
                return Err(oci_err(
                    reference,
                    format!(
                        "the registry names a token realm over {other:?} ({}); only https is \
                         followed from an https registry, so credentials never cross the network \
                         in clear",
                        kudo_repo::urls::shown(&realm)
                    ),
                    false,
                ));
            }
        }
        {
            let mut query = realm.query_pairs_mut();
            if let Some(service) = &challenge.service {
                query.append_pair("service", service);
            }
            query.append_pair(
                "scope",
                &format!("repository:{}:pull", reference.repository),
            );
        }
        Ok(realm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_challenge_gives_its_realm_and_service() {
        let c = bearer_challenge(
            r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a:pull""#,
        )
        .unwrap();
        assert_eq!(c.realm, "https://auth.example/token");
        assert_eq!(c.service.as_deref(), Some("registry.example"));
        let c = bearer_challenge(r#"bearer service="s, with comma", realm="https://a/t""#).unwrap();
        assert_eq!(c.realm, "https://a/t");
        assert_eq!(c.service.as_deref(), Some("s, with comma"));
    }

    #[test]
    fn basic_and_malformed_challenges_are_not_bearer_ones() {
        assert_eq!(bearer_challenge(r#"Basic realm="r""#), None);
        assert_eq!(bearer_challenge("Bearer"), None);
        assert_eq!(bearer_challenge(r#"Bearer service="s""#), None);
        assert_eq!(bearer_challenge(r#"Bearer realm="unterminated"#), None);
    }
}
