//! The key that signs render books. A book lives in a Secret of the
//! Instance's namespace, where a tenant may write Secrets too: recovery
//! trusts only a book carrying an HMAC made with this key, which only the
//! manager holds, over the book and the Instance it belongs to (so a book
//! copied to another Instance fails too).
//!
//! In a cluster the key is kept in a Secret of the manager's namespace
//! (created on first start), so books stay trusted across restarts and
//! replicas. Where that Secret cannot be read or made, the key lives in
//! memory: books written by an earlier process are then not trusted, and
//! drift of their objects is recovered only after a plan applies them again.

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, PostParams};
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

/// Data key of the key bytes in its Secret.
const KEY_DATA: &str = "key";
/// Bytes of key material.
const KEY_LEN: usize = 32;

/// Signs and checks render books.
pub struct BookKey(hmac::Key);

impl std::fmt::Debug for BookKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BookKey(..)")
    }
}

/// Which Instance a book belongs to.
#[derive(Debug, Clone, Copy)]
pub struct Owner<'a> {
    /// Instance uid.
    pub uid: &'a str,
    /// Instance namespace.
    pub namespace: &'a str,
    /// Instance name.
    pub name: &'a str,
}

impl BookKey {
    /// A fresh random key, kept in memory only.
    pub fn random() -> Self {
        let mut bytes = [0u8; KEY_LEN];
        // The system's randomness does not fail on the platforms we build
        // for; should it, the key falls back to the time and process id,
        // which someone on the cluster could guess: say so.
        if SystemRandom::new().fill(&mut bytes).is_err() {
            tracing::warn!("no system randomness: the render book key is guessable");
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default();
            bytes[..16].copy_from_slice(&now.to_le_bytes());
            bytes[16..20].copy_from_slice(&std::process::id().to_le_bytes());
        }
        Self::from_bytes(&bytes)
    }

    /// A key from stored bytes.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        Self(hmac::Key::new(hmac::HMAC_SHA256, bytes))
    }

    /// The signature of `book` for `owner`.
    pub fn sign(&self, owner: Owner<'_>, book: &[u8]) -> Vec<u8> {
        let mut ctx = hmac::Context::with_key(&self.0);
        feed(&mut ctx, owner, book);
        ctx.sign().as_ref().to_vec()
    }

    /// Whether `tag` signs `book` for `owner` with this key.
    pub fn verify(&self, owner: Owner<'_>, book: &[u8], tag: &[u8]) -> bool {
        let mut ctx = hmac::Context::with_key(&self.0);
        feed(&mut ctx, owner, book);
        // Compare every byte whatever differs first (no timing oracle).
        let expected = ctx.sign();
        let expected = expected.as_ref();
        expected.len() == tag.len()
            && expected
                .iter()
                .zip(tag)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    }

    /// The key in Secret `namespace/name`, made (random) if the Secret does
    /// not exist yet; two managers racing both end up with the stored one.
    pub async fn load_or_create(
        client: &kube::Client,
        namespace: &str,
        name: &str,
    ) -> Result<Self, String> {
        let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
        let read = |secret: Secret| -> Result<Self, String> {
            let bytes = secret
                .data
                .and_then(|mut d| d.remove(KEY_DATA))
                .ok_or_else(|| format!("Secret {namespace}/{name} has no {KEY_DATA:?}"))?;
            if bytes.0.len() < KEY_LEN {
                return Err(format!("Secret {namespace}/{name}: the key is too short"));
            }
            Ok(Self::from_bytes(&bytes.0))
        };
        let describe = |e: kube::Error| format!("Secret {namespace}/{name}: {e}");
        if let Some(secret) = api.get_opt(name).await.map_err(describe)? {
            return read(secret);
        }
        let mut bytes = vec![0u8; KEY_LEN];
        SystemRandom::new()
            .fill(&mut bytes)
            .map_err(|_| "the system's random number generator failed".to_string())?;
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some(namespace.to_string()),
                ..ObjectMeta::default()
            },
            type_: Some("Opaque".into()),
            data: Some([(KEY_DATA.to_string(), ByteString(bytes))].into()),
            ..Secret::default()
        };
        match api.create(&PostParams::default(), &secret).await {
            Ok(created) => read(created),
            Err(kube::Error::Api(s)) if s.code == 409 => {
                read(api.get(name).await.map_err(describe)?)
            }
            Err(e) => Err(describe(e)),
        }
    }
}

/// What the signature covers: a version tag, the Instance and the book.
fn feed(ctx: &mut hmac::Context, owner: Owner<'_>, book: &[u8]) {
    for part in [
        "kudo-render-book/v1".as_bytes(),
        owner.uid.as_bytes(),
        owner.namespace.as_bytes(),
        owner.name.as_bytes(),
    ] {
        ctx.update(&(part.len() as u64).to_be_bytes());
        ctx.update(part);
    }
    ctx.update(book);
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWNER: Owner<'static> = Owner {
        uid: "u1",
        namespace: "ns",
        name: "zk",
    };

    #[test]
    fn a_book_signed_with_the_key_verifies_and_nothing_else_does() {
        let key = BookKey::random();
        let tag = key.sign(OWNER, b"book");
        assert!(key.verify(OWNER, b"book", &tag));
        assert!(!key.verify(OWNER, b"book!", &tag), "another book");
        assert!(
            !BookKey::random().verify(OWNER, b"book", &tag),
            "another key"
        );
        assert!(!key.verify(OWNER, b"book", b""), "no signature");
    }

    #[test]
    fn a_book_copied_to_another_instance_does_not_verify() {
        let key = BookKey::from_bytes(&[7; KEY_LEN]);
        let tag = key.sign(OWNER, b"book");
        for other in [
            Owner { uid: "u2", ..OWNER },
            Owner {
                namespace: "other",
                ..OWNER
            },
            Owner {
                name: "zk2",
                ..OWNER
            },
        ] {
            assert!(!key.verify(other, b"book", &tag), "{other:?}");
        }
        // Field boundaries count: ("ab","c") is not ("a","bc").
        let a = Owner {
            namespace: "ab",
            name: "c",
            ..OWNER
        };
        let b = Owner {
            namespace: "a",
            name: "bc",
            ..OWNER
        };
        assert!(!key.verify(b, b"book", &key.sign(a, b"book")));
    }
}
