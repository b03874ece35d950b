//! The size limit of a stored object (etcd's).

use serde_json::Value;

use crate::status::ApiError;

/// etcd's default limit on one request (`--max-request-bytes`), which
/// bounds an object's stored size.
pub const MAX_STORED_BYTES: usize = 1536 * 1024;

/// Refuses an object whose JSON (managedFields left out) passes
/// [`MAX_STORED_BYTES`], as kube-apiserver passes on etcd's refusal (500,
/// "etcdserver: request is too large").
pub(super) fn check_stored_size(object: &Value) -> Result<(), ApiError> {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            if self.0 > MAX_STORED_BYTES {
                return Err(std::io::Error::other("too large"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    if serde_json::to_writer(&mut count, object).is_err() && count.0 > MAX_STORED_BYTES {
        return Err(ApiError::too_large_to_store());
    }
    Ok(())
}
