//! Where an index and its packages are, and which package URLs an index
//! may give: relative URLs are relative to the repository; an https
//! repository may not send the client to plain http or to local files; a
//! `file://` package must lie inside a `file://` repository; and packages
//! on another host are refused unless the repository was added with
//! `--allow-other-hosts`.

pub use url::Url;

use crate::error::RepoError;
use crate::index::INDEX_FILE;

/// A repository URL as given to `repo add`: http, https or file, with a
/// trailing slash so relative package URLs land inside it.
pub fn repository_url(text: &str) -> Result<Url, RepoError> {
    let refused = |reason: &str| RepoError::UrlRefused {
        url: text.to_string(),
        reason: reason.to_string(),
    };
    if text.starts_with("oci://") {
        return Err(refused(
            "an OCI registry is not added as a repository; install from it directly: \
             kubectl kudo install oci://HOST/NAMESPACE/NAME --operator-version V",
        ));
    }
    let mut url = Url::parse(text).map_err(|e| refused(&format!("not a URL ({e})")))?;
    match url.scheme() {
        "http" | "https" => {
            if url.host_str().is_none_or(str::is_empty) {
                return Err(refused("the URL has no host"));
            }
        }
        "file" => {}
        other => {
            return Err(refused(&format!(
                "the scheme {other} is not supported (http, https or file)"
            )));
        }
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refused(
            "credentials do not belong in the URL (they would be printed and stored in clear); \
             pass --username with --password-stdin instead",
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(refused("a repository URL has no query or fragment"));
    }
    if let Some(path) = url.path().strip_suffix(INDEX_FILE) {
        // `https://x/index.yaml` names the index; the repository is its folder.
        let folder = path.to_string();
        url.set_path(&folder);
    }
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(url)
}

/// The index of a repository.
pub fn index_url(repository: &Url) -> Result<Url, RepoError> {
    repository
        .join(INDEX_FILE)
        .map_err(|e| RepoError::UrlRefused {
            url: repository.to_string(),
            reason: format!("cannot name its index ({e})"),
        })
}

/// A package URL of an index entry, resolved against the repository and
/// checked against the rules above.
pub fn package_url(
    repository: &Url,
    entry_url: &str,
    allow_other_hosts: bool,
) -> Result<Url, RepoError> {
    let refused = |reason: String| RepoError::UrlRefused {
        url: entry_url.to_string(),
        reason,
    };
    let url = repository
        .join(entry_url)
        .map_err(|e| refused(format!("not a URL ({e})")))?;
    let (from, to) = (repository.scheme(), url.scheme());
    match (from, to) {
        ("https", "https") | ("http", "http" | "https") | ("file", "file") => {}
        ("file", "http" | "https") => {
            if !allow_other_hosts {
                return Err(refused(format!(
                    "the index of {repository} points at another host ({}); such packages are \
                     refused unless the repository is added with --allow-other-hosts",
                    url.host_str().unwrap_or_default()
                )));
            }
        }
        ("https", "http") => {
            return Err(refused(format!(
                "the repository {repository} is https but this package URL is plain http; \
                 it was refused"
            )));
        }
        (_, "file") => {
            return Err(refused(format!(
                "the repository {repository} may not point at local files"
            )));
        }
        (_, other) => {
            return Err(refused(format!(
                "the scheme {other} is not supported for packages (http, https or file)"
            )));
        }
    }
    if to == "file" {
        // An encoded separator (`%2F`, `%5C`) or NUL passes the check below
        // as text and becomes a path step when the file is opened.
        let path = url.path().to_ascii_lowercase();
        if ["%2f", "%5c", "%00"].iter().any(|e| path.contains(e)) {
            return Err(refused(
                "the file name carries an encoded separator or NUL".into(),
            ));
        }
        if !url.path().starts_with(repository.path()) {
            return Err(refused(format!(
                "the file lies outside the repository folder {}",
                repository.path()
            )));
        }
    } else if !allow_other_hosts && !same_origin(repository, &url) {
        return Err(refused(format!(
            "the index of {repository} points at another host ({}); such packages are refused \
             unless the repository is added with --allow-other-hosts",
            url.host_str().unwrap_or_default()
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refused("a package URL may not carry credentials".into()));
    }
    Ok(url)
}

/// Same host and port (credentials go only there).
pub fn same_origin(a: &Url, b: &Url) -> bool {
    a.host_str() == b.host_str() && a.port_or_known_default() == b.port_or_known_default()
}

/// A URL for messages: without a query, which may carry a token.
pub fn shown(url: &Url) -> String {
    let mut url = url.clone();
    url.set_query(None);
    url.set_fragment(None);
    let _ = url.set_password(None);
    let _ = url.set_username("");
    url.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(text: &str) -> Url {
        repository_url(text).unwrap()
    }

    #[test]
    fn repository_urls_end_in_a_slash_and_name_their_index() {
        assert_eq!(
            repo("https://r.example/ops").as_str(),
            "https://r.example/ops/"
        );
        assert_eq!(
            repo("https://r.example/ops/index.yaml").as_str(),
            "https://r.example/ops/"
        );
        assert_eq!(
            index_url(&repo("http://127.0.0.1:8080")).unwrap().as_str(),
            "http://127.0.0.1:8080/index.yaml"
        );
        assert_eq!(repo("file:///srv/repo").as_str(), "file:///srv/repo/");
    }

    #[test]
    fn unusable_repository_urls_are_refused_saying_why() {
        for (text, why) in [
            ("oci://r.example/ns", "install from it directly"),
            ("ftp://r.example/", "scheme ftp"),
            ("not a url", "not a URL"),
            ("https://user:pw@r.example/", "credentials do not belong"),
            ("https://r.example/?token=x", "no query"),
        ] {
            let err = repository_url(text).unwrap_err().to_string();
            assert!(err.contains(why), "{text}: {err}");
        }
    }

    #[test]
    fn package_urls_resolve_against_the_repository() {
        let r = repo("https://r.example/ops/");
        let u = package_url(&r, "kafka-1.0.0.tgz", false).unwrap();
        assert_eq!(u.as_str(), "https://r.example/ops/kafka-1.0.0.tgz");
        let abs = package_url(&r, "https://r.example/other/k.tgz", false).unwrap();
        assert_eq!(abs.as_str(), "https://r.example/other/k.tgz");
    }

    #[test]
    fn a_hostile_index_cannot_send_the_client_elsewhere() {
        let https = repo("https://r.example/ops/");
        let http = repo("http://r.example/ops/");
        let file = repo("file:///srv/repo/");
        for (base, url, why) in [
            (&https, "http://r.example/k.tgz", "plain http"),
            (&https, "file:///etc/passwd", "local files"),
            (&http, "file:///etc/passwd", "local files"),
            (
                &https,
                "https://evil.example/k.tgz",
                "another host (evil.example)",
            ),
            (&https, "https://r.example:8443/k.tgz", "another host"),
            (&https, "gopher://r.example/k", "scheme gopher"),
            (&file, "file:///etc/passwd", "outside the repository folder"),
            (&file, "../../etc/passwd", "outside the repository folder"),
            (&file, "a%2F..%2F..%2Fetc%2Fpasswd", "encoded separator"),
            (&file, "a%5c..%5cx", "encoded separator"),
            (&file, "https://r.example/k.tgz", "another host"),
            (&https, "https://u:p@r.example/k.tgz", "credentials"),
        ] {
            let err = package_url(base, url, false).unwrap_err().to_string();
            assert!(err.contains(why), "{base} {url}: {err}");
        }
        assert!(package_url(&https, "https://mirror.example/k.tgz", true).is_ok());
        assert!(
            package_url(&https, "http://mirror.example/k.tgz", true).is_err(),
            "never a downgrade"
        );
        assert!(package_url(&file, "sub/k.tgz", false).is_ok());
    }

    #[test]
    fn shown_urls_drop_queries_and_credentials() {
        let u = Url::parse("https://u:p@r.example/k.tgz?sig=secret#x").unwrap();
        assert_eq!(shown(&u), "https://r.example/k.tgz");
    }
}
