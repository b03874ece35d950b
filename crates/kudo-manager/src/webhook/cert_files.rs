//! Where the local webhook's certificate files go, written so that nothing
//! another process or user put on disk is overwritten or followed.
//!
//! Each process creates its own directory (mode 0700, a random name, made
//! with `mkdir`, which fails rather than reuse anything already there) and
//! creates every file in it with `O_CREAT|O_EXCL` and mode 0600: a name that
//! exists, a symlink included, is refused instead of written through. Two
//! managers started side by side therefore never share certificates, and a
//! planted `tls.key` symlink cannot make the manager write its private key
//! over the file it points to. The directory is removed when the webhook
//! stops.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::WebhookError;

/// Prefix of the directories [`PrivateCertDir::create_in`] makes.
pub const PRIVATE_DIR_PREFIX: &str = "kudo-webhook-certs-";

/// A directory this process created for its certificates; removed on drop.
#[derive(Debug)]
pub struct PrivateCertDir {
    path: PathBuf,
}

impl PrivateCertDir {
    /// Creates `<parent>/kudo-webhook-certs-<random>` with mode 0700
    /// (`parent` is created if missing).
    pub fn create_in(parent: &Path) -> Result<Self, WebhookError> {
        std::fs::create_dir_all(parent).map_err(|source| WebhookError::File {
            what: "creating the parent of the certificate directory",
            path: parent.to_path_buf(),
            source,
        })?;
        let path = parent.join(format!(
            "{PRIVATE_DIR_PREFIX}{}",
            uuid::Uuid::new_v4().simple()
        ));
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&path).map_err(|source| WebhookError::File {
            what: "creating the private certificate directory",
            path: path.clone(),
            source,
        })?;
        Ok(Self { path })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateCertDir {
    fn drop(&mut self) {
        // remove_dir_all does not follow symlinks inside the directory.
        if let Err(e) = std::fs::remove_dir_all(&self.path) {
            tracing::debug!(error = %e, dir = %self.path.display(), "certificate directory not removed");
        }
    }
}

/// Creates `dir/name` holding `contents`, readable by the owner only
/// (0600). Refuses when `name` already exists, as a file or as a symlink
/// (which is not followed): the file must be new.
pub fn write_new_private_file(
    dir: &Path,
    name: &str,
    contents: &str,
) -> Result<PathBuf, WebhookError> {
    let path = dir.join(name);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&path).map_err(|source| {
        let what = if source.kind() == std::io::ErrorKind::AlreadyExists {
            "refusing to write over an existing file or symlink (certificates go into a \
             directory of their own; point the webhook at one that does not hold them)"
        } else {
            "creating certificate file"
        };
        WebhookError::File {
            what,
            path: path.clone(),
            source,
        }
    })?;
    file.write_all(contents.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|source| WebhookError::File {
            what: "writing certificate file",
            path: path.clone(),
            source,
        })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_private_directory_is_new_and_removed_on_drop() {
        let parent = tempfile::tempdir().unwrap();
        let a = PrivateCertDir::create_in(parent.path()).unwrap();
        let b = PrivateCertDir::create_in(parent.path()).unwrap();
        assert_ne!(a.path(), b.path());
        assert!(a.path().starts_with(parent.path()));
        let kept = a.path().to_path_buf();
        drop(a);
        assert!(!kept.exists());
        assert!(b.path().exists());
    }

    #[test]
    fn a_missing_parent_is_created() {
        let parent = tempfile::tempdir().unwrap();
        let nested = parent.path().join("a/b");
        let dir = PrivateCertDir::create_in(&nested).unwrap();
        assert!(dir.path().starts_with(&nested));
    }

    #[cfg(unix)]
    #[test]
    fn the_directory_is_0700_and_files_are_0600() {
        use std::os::unix::fs::PermissionsExt;
        let parent = tempfile::tempdir().unwrap();
        let dir = PrivateCertDir::create_in(parent.path()).unwrap();
        let file = write_new_private_file(dir.path(), "tls.key", "secret").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(dir.path()), 0o700);
        assert_eq!(mode(&file), 0o600);
        assert_eq!(std::fs::read_to_string(file).unwrap(), "secret");
    }

    #[test]
    fn an_existing_file_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tls.crt"), "theirs").unwrap();
        let err = write_new_private_file(dir.path(), "tls.crt", "ours").unwrap_err();
        assert!(err.to_string().contains("refusing to write over"), "{err}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("tls.crt")).unwrap(),
            "theirs"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join("tls.key")).unwrap();
        let err = write_new_private_file(dir.path(), "tls.key", "PRIVATE KEY").unwrap_err();
        assert!(err.to_string().contains("tls.key"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        // A dangling symlink is not followed either.
        std::fs::remove_file(&victim).unwrap();
        assert!(write_new_private_file(dir.path(), "tls.key", "PRIVATE KEY").is_err());
        assert!(!victim.exists());
    }
}
