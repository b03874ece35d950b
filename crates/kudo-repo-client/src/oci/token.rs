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

/// The first `Bearer` challenge with a realm among `WWW-Authenticate`
/// header values (one value may hold several challenges); `None` when
/// there is none (Basic only, or nothing that parses).
pub(super) fn bearer_challenge<'h>(values: impl IntoIterator<Item = &'h str>) -> Option<Challenge> {
    values.into_iter().find_map(|value| {
        http_auth::ChallengeParser::new(value)
            .filter_map(Result::ok)
            .filter(|c| c.scheme.eq_ignore_ascii_case("bearer"))
            .find_map(|c| {
                let param = |name: &str| {
                    c.params
                        .iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case(name))
                        .map(|(_, v)| v.to_unescaped())
                };
                Some(Challenge {
                    realm: param("realm")?,
                    service: param("service"),
                })
            })
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
    /// The bearer token for `scope` (`pull`, or `pull,push`) on
    /// `reference`'s repository, if the registry wants one; `None` when it
    /// does not, or when the credentials are a token already (sent as
    /// they are). The whole exchange ends on the total deadline.
    pub(super) async fn token(
        &self,
        client: &reqwest::Client,
        reference: &OciRef,
        scope: &str,
    ) -> Result<Option<String>> {
        if matches!(self.credentials, Some(Credentials::Bearer { .. })) {
            return Ok(None);
        }
        let limit = self.transport.limits.total_timeout;
        let deadline = tokio::time::Instant::now() + limit;
        tokio::time::timeout_at(deadline, self.negotiate(client, reference, scope, deadline))
            .await
            .map_err(|_| {
                oci_err(
                    reference,
                    format!("authentication took longer than {}s", limit.as_secs()),
                    true,
                )
            })?
    }

    async fn negotiate(
        &self,
        client: &reqwest::Client,
        reference: &OciRef,
        scope: &str,
        deadline: tokio::time::Instant,
    ) -> Result<Option<String>> {
        let probe = self
            .base(reference)?
            .join("/v2/")
            .map_err(|e| oci_err(reference, format!("not a registry URL: {e}"), false))?;
        let answer = client.get(probe.clone()).send().await.map_err(|e| {
            oci_err(
                reference,
                format!("cannot reach the registry: {}", http::chain(&e)),
                true,
            )
        })?;
        if answer.status() != reqwest::StatusCode::UNAUTHORIZED {
            // No token wanted (or an error the next request reports).
            return Ok(None);
        }
        let challenge = bearer_challenge(
            answer
                .headers()
                .get_all(reqwest::header::WWW_AUTHENTICATE)
                .iter()
                .filter_map(|v| v.to_str().ok()),
        );
        drop(answer);
        let Some(challenge) = challenge else {
            // Basic: the credentials go with each request.
            return Ok(None);
        };
        let realm = self.realm_url(reference, &challenge, scope)?;
        let credentials = match &self.credentials {
            Some(basic @ Credentials::Basic { .. }) => Some(basic),
            _ => None,
        };
        // What is left of the deadline, so the token request's own limit
        // never outlasts (or races) the exchange's.
        let limits = kudo_repo::Limits {
            total_timeout: deadline.saturating_duration_since(tokio::time::Instant::now()),
            ..self.transport.limits
        };
        let fetched = http::fetch(
            client,
            &limits,
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
        let shown = kudo_repo::urls::shown(&realm);
        let answer: TokenAnswer = serde_json::from_slice(&fetched.bytes).map_err(|e| {
            oci_err(
                reference,
                format!("the token answer from {shown} is not JSON: {e}"),
                false,
            )
        })?;
        match answer.token.or(answer.access_token) {
            Some(token) if !token.is_empty() => Ok(Some(token)),
            _ => Err(oci_err(
                reference,
                format!("the token answer from {shown} holds no token"),
                false,
            )),
        }
    }

    /// The realm with the service and scope, refused when it would
    /// take the credentials from `https` to plain `http`.
    fn realm_url(&self, reference: &OciRef, challenge: &Challenge, scope: &str) -> Result<Url> {
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
                &format!("repository:{}:{scope}", reference.repository),
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
        let c = bearer_challenge([
            r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a:pull""#,
        ])
        .unwrap();
        assert_eq!(c.realm, "https://auth.example/token");
        assert_eq!(c.service.as_deref(), Some("registry.example"));
        let c =
            bearer_challenge([r#"bearer service="s, \"quoted\"", realm="https://a/t""#]).unwrap();
        assert_eq!(c.realm, "https://a/t");
        assert_eq!(c.service.as_deref(), Some(r#"s, "quoted""#));
    }

    #[test]
    fn a_bearer_challenge_is_found_beside_a_basic_one_or_in_a_later_header() {
        let c = bearer_challenge([r#"Basic realm="r", Bearer realm="https://a/t""#]).unwrap();
        assert_eq!(c.realm, "https://a/t");
        let c = bearer_challenge([r#"Basic realm="r""#, r#"Bearer realm="https://b/t""#]).unwrap();
        assert_eq!(c.realm, "https://b/t");
    }

    #[test]
    fn basic_and_malformed_challenges_are_not_bearer_ones() {
        assert_eq!(bearer_challenge([r#"Basic realm="r""#]), None);
        assert_eq!(bearer_challenge(["Bearer"]), None);
        assert_eq!(bearer_challenge([r#"Bearer service="s""#]), None);
        assert_eq!(bearer_challenge([r#"Bearer realm="unterminated"#]), None);
    }
}
