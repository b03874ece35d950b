//! Optional persistence of the store to a JSON file, so a restarted dev
//! session keeps its objects.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::error::SandboxError;
use crate::server::Inner;
use crate::store::Snapshot;

/// Reads a snapshot; a missing file is an empty start.
pub fn load(path: &Path) -> Result<Option<Snapshot>, SandboxError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(SandboxError::PersistRead {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| SandboxError::PersistFormat {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
}

/// Writes a snapshot atomically (temporary file, then rename).
pub fn save(path: &Path, snapshot: &Snapshot) -> Result<(), SandboxError> {
    let err = |source| SandboxError::PersistWrite {
        path: path.to_path_buf(),
        source,
    };
    let text = serde_json::to_vec(snapshot).map_err(|e| err(std::io::Error::other(e)))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
}

/// Saves the store shortly after writes, until shutdown; saves once more at the end.
pub async fn run(inner: Arc<Inner>, path: PathBuf) {
    let mut shutdown = inner.shutdown.clone();
    loop {
        let stop = tokio::select! {
            _ = inner.dirty.notified() => false,
            _ = shutdown.changed() => true,
        };
        if !stop {
            // Coalesce bursts of writes into one save.
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let snapshot = inner.lock().store.snapshot();
        if let Err(e) = save(&path, &snapshot) {
            tracing::warn!(error = %e, "could not persist the sandbox store");
        }
        if stop {
            return;
        }
    }
}
