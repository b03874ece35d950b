//! Parts of the review path on their own, for the bench's diagnostic
//! servers (`benches/webhook`, `WEBHOOK_BENCH_SPLIT=1`): what reading the
//! body costs under load, apart from building what the rules read. Not
//! part of the crate's API.

use super::decode::decode;
use super::json_scan::Cursor;

/// The fast decode's cursor over the whole body, keeping nothing: the
/// grammar check every review pays. `false` when the cursor gives up.
#[doc(hidden)]
pub fn skip_body(body: &[u8]) -> bool {
    std::str::from_utf8(body).is_ok_and(|text| {
        let mut cursor = Cursor::new(text);
        cursor.skip().is_ok() && cursor.at_end()
    })
}

/// The review's decode (the request and both objects' views), and
/// nothing after it. `false` when the body is not an Instance review.
#[doc(hidden)]
pub fn decode_body(body: &[u8]) -> bool {
    decode(body).is_ok()
}

/// The body read into borrowed views of what the rules read, checking
/// nothing and boxing nothing: the floor under the real decode. `false`
/// when the cursor gives up.
#[doc(hidden)]
pub fn views_body(body: &[u8]) -> bool {
    views::views_body(body)
}

#[path = "probe_views.rs"]
mod views;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_read_a_review_and_refuse_what_is_not_json() {
        let review = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"kudo.dev","version":"v1beta1","kind":"Instance"},"resource":{"group":"kudo.dev","version":"v1beta1","resource":"instances"},"operation":"CREATE","userInfo":{},"object":{"metadata":{"name":"a"},"spec":{}}}}"#;
        assert!(skip_body(review));
        assert!(decode_body(review));
        assert!(views_body(review));
        let broken = &review[..review.len() - 1];
        assert!(!skip_body(broken));
        assert!(!decode_body(broken));
        assert!(!views_body(broken));
        assert!(!skip_body(b"{} {}"));
        // Unknown keys are skipped, whatever their value, as the decode does.
        let extra = String::from_utf8(review.to_vec())
            .unwrap()
            .replace(r#""kind":"Instance"}"#, r#""kind":"Instance","x":[1]}"#);
        assert!(decode_body(extra.as_bytes()));
        assert!(views_body(extra.as_bytes()));
    }

    #[test]
    fn views_read_every_allow_and_deny_fixture_the_decode_reads() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/admission");
        let mut read = 0;
        for folder in ["allow", "deny"] {
            for entry in std::fs::read_dir(format!("{root}/{folder}")).unwrap() {
                let path = entry.unwrap().path();
                let body = std::fs::read(&path).unwrap();
                let compact = serde_json::to_vec(
                    &serde_json::from_slice::<serde_json::Value>(&body).unwrap(),
                )
                .unwrap();
                assert!(decode_body(&compact), "{}", path.display());
                assert!(views_body(&compact), "{}", path.display());
                read += 1;
            }
        }
        assert!(read > 10, "only {read} fixtures found");
    }
}
