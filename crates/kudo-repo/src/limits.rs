//! What a repository (or a registry) may make the client do: everything it
//! serves is untrusted, so sizes, YAML shape, redirects and time are capped.

use std::time::Duration;

/// Largest index accepted: 32 MiB (KUDO's community index was about
/// 100 KiB; an index of 10,000 versions is about 4 MiB).
pub const MAX_INDEX_BYTES: u64 = 32 * 1024 * 1024;
/// Most versions an index may list, all operators together (an honest
/// 32 MiB index holds about 80,000); counted while it is read.
pub const MAX_INDEX_VERSIONS: usize = 100_000;
/// Most operators an index may list.
pub const MAX_INDEX_OPERATORS: usize = 10_000;
/// Most annotations an index may carry.
pub const MAX_INDEX_ANNOTATIONS: usize = 10_000;
/// Largest package archive downloaded: 16 MiB compressed (real packages
/// are tens of KiB); unpacked it is held to kudo-package's 64 MiB.
pub const MAX_PACKAGE_BYTES: u64 = 16 * 1024 * 1024;
/// Largest OCI manifest or tag list read: 1 MiB.
pub const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;
/// Redirects followed per request.
pub const MAX_REDIRECTS: usize = 5;
/// Nesting depth of the index YAML (an index needs 5).
pub const MAX_YAML_DEPTH: usize = 16;
/// YAML aliases (`*x`) in an index; none are needed, a few are allowed.
pub const MAX_YAML_ALIASES: usize = 64;

/// The limits one fetch is held to; [`Limits::default`] is what the CLI
/// uses, tests lower them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest index, in bytes.
    pub max_index_bytes: u64,
    /// Largest package archive, in bytes.
    pub max_package_bytes: u64,
    /// Largest OCI manifest or tag list, in bytes.
    pub max_manifest_bytes: u64,
    /// Redirects followed per request (never https → http, never to
    /// another scheme).
    pub max_redirects: usize,
    /// Time to open a connection (TCP and TLS).
    pub connect_timeout: Duration,
    /// Longest silence while reading a response.
    pub read_timeout: Duration,
    /// Longest a whole request may take, body included: a server that
    /// trickles bytes just fast enough to beat `read_timeout` ends here.
    pub total_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_index_bytes: MAX_INDEX_BYTES,
            max_package_bytes: MAX_PACKAGE_BYTES,
            max_manifest_bytes: MAX_MANIFEST_BYTES,
            max_redirects: MAX_REDIRECTS,
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(30),
            total_timeout: Duration::from_secs(120),
        }
    }
}

/// `16 MiB`, `512 KiB`, `100 bytes`.
pub fn human_bytes(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

/// The YAML budget of an index: shallow, almost no aliases, and node and
/// event counts that scale with the byte limit rather than serde-saphyr's
/// defaults (which a large honest index exceeds).
pub(crate) fn yaml_options() -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = MAX_YAML_DEPTH;
    budget.max_aliases = MAX_YAML_ALIASES;
    budget.max_anchors = MAX_YAML_ALIASES;
    // Anchored content is copied before aliases are counted: keep it small.
    budget.max_recorded_anchor_events = 10_000;
    budget.max_recorded_anchor_bytes = 1024 * 1024;
    budget.max_documents = 1;
    budget.max_nodes = 8_000_000;
    budget.max_events = 16_000_000;
    serde_saphyr::options! { budget: Some(budget) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_said_in_the_largest_whole_unit() {
        assert_eq!(human_bytes(MAX_INDEX_BYTES), "32 MiB");
        assert_eq!(human_bytes(512 * 1024), "512 KiB");
        assert_eq!(human_bytes(1000), "1000 bytes");
    }
}
