//! Where the client keeps things, as KUDO and Helm do:
//!
//! - `$KUDO_HOME` (default `~/.kudo`): `repository/repositories.yaml`
//!   (KUDO's file) and `repository/credentials.yaml` (0600);
//! - `$XDG_CACHE_HOME/kudo/repository` (default `~/.cache/kudo/repository`):
//!   one cached index per repository.
//!
//! Files are replaced whole (written beside, then renamed), so a crash or a
//! refused download never leaves half a file.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use kudo_repo::config::{CredentialsFile, RepositoriesFile};

use crate::error::{ClientError, Result};

/// Configuration files are small; anything larger is not ours.
const MAX_CONFIG_BYTES: u64 = 4 * 1024 * 1024;

/// The client's directories.
#[derive(Clone, Debug)]
pub struct Home {
    /// `$KUDO_HOME`.
    pub kudo_home: PathBuf,
    /// The index cache folder.
    pub cache: PathBuf,
}

impl Home {
    /// From the environment (`KUDO_HOME`, `XDG_CACHE_HOME`, `HOME`).
    pub fn from_env() -> Result<Self> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let kudo_home = match std::env::var_os("KUDO_HOME").filter(|v| !v.is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => home
                .as_ref()
                .map(|h| h.join(".kudo"))
                .ok_or_else(|| no_home("KUDO_HOME"))?,
        };
        let cache_root = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => home
                .as_ref()
                .map(|h| h.join(".cache"))
                .ok_or_else(|| no_home("XDG_CACHE_HOME"))?,
        };
        Ok(Self {
            kudo_home,
            cache: cache_root.join("kudo").join("repository"),
        })
    }

    /// `repository/repositories.yaml`.
    pub fn repositories_file(&self) -> PathBuf {
        self.kudo_home.join("repository").join("repositories.yaml")
    }

    /// `repository/credentials.yaml`.
    pub fn credentials_file(&self) -> PathBuf {
        self.kudo_home.join("repository").join("credentials.yaml")
    }

    /// The cached index of a repository.
    pub fn cache_file(&self, repository: &str) -> PathBuf {
        self.cache.join(format!("{repository}-index.cache"))
    }

    /// The configured repositories (none when the file does not exist).
    pub fn load_repositories(&self) -> Result<RepositoriesFile> {
        load_yaml(&self.repositories_file())
    }

    /// Writes the repositories file.
    pub fn save_repositories(&self, file: &RepositoriesFile) -> Result<()> {
        let path = self.repositories_file();
        let text = serde_saphyr::to_string(file).map_err(|e| ClientError::file(&path, e))?;
        write_atomic(&path, text.as_bytes(), 0o644)
    }

    /// Stored credentials (none when the file does not exist).
    pub fn load_credentials(&self) -> Result<CredentialsFile> {
        load_yaml(&self.credentials_file())
    }

    /// Writes the credentials, readable by the user only.
    pub fn save_credentials(&self, file: &CredentialsFile) -> Result<()> {
        let path = self.credentials_file();
        let text = serde_saphyr::to_string(file).map_err(|e| ClientError::file(&path, e))?;
        write_atomic(&path, text.as_bytes(), 0o600)
    }
}

fn no_home(var: &str) -> ClientError {
    ClientError::File {
        path: "~".into(),
        detail: format!("HOME is not set; set {var}"),
    }
}

fn load_yaml<T: serde::de::DeserializeOwned + Default>(path: &Path) -> Result<T> {
    let Some(bytes) = read_capped(path, MAX_CONFIG_BYTES)? else {
        return Ok(T::default());
    };
    let text = String::from_utf8(bytes).map_err(|_| ClientError::file(path, "not UTF-8"))?;
    if text.trim().is_empty() {
        return Ok(T::default());
    }
    serde_saphyr::from_str(&text)
        .map_err(|e| ClientError::file(path, e.to_string().lines().next().unwrap_or_default()))
}

/// A file's bytes, `None` when it does not exist; more than `limit` is an
/// error.
pub fn read_capped(path: &Path, limit: u64) -> Result<Option<Vec<u8>>> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ClientError::file(path, e)),
    };
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ClientError::file(path, e))?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > limit {
        return Err(ClientError::file(
            path,
            "larger than expected; not a kudo-rs file",
        ));
    }
    Ok(Some(bytes))
}

/// Replaces `path` with `bytes`: written to a new file beside it with
/// `mode`, synced, then renamed over it.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| ClientError::file(dir, e))?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.{nanos}.tmp", std::process::id()));
    let result = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
        let mut file = options.open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(ClientError::file(path, e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_written_for_the_user_only_and_replace_the_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home {
            kudo_home: dir.path().join("kudo"),
            cache: dir.path().join("cache"),
        };
        let mut creds = CredentialsFile::default();
        creds.credentials.insert(
            "r".into(),
            kudo_repo::config::Credentials::Bearer { token: "t".into() },
        );
        home.save_credentials(&creds).unwrap();
        home.save_credentials(&creds).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(home.credentials_file())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(home.load_credentials().unwrap(), creds);
        let leftovers: Vec<_> = std::fs::read_dir(home.credentials_file().parent().unwrap())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn missing_files_read_as_empty_and_foreign_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home {
            kudo_home: dir.path().to_path_buf(),
            cache: dir.path().join("c"),
        };
        assert!(home.load_repositories().unwrap().repositories.is_empty());
        std::fs::create_dir_all(dir.path().join("repository")).unwrap();
        std::fs::write(home.repositories_file(), "repositories: 7\n").unwrap();
        let err = home.load_repositories().unwrap_err().to_string();
        assert!(err.contains("repositories.yaml"), "{err}");
    }
}
