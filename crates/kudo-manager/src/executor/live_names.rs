//! What exists before a plan applies: the takeover check's one listing per
//! kind and namespace.
//!
//! Before a forced apply of an object the step has not applied before, the
//! manager must know whether someone else's object has that name. Asking
//! per object costs a GET per step; instead the first such object of a kind
//! in a namespace lists that kind's metadata there once, and the rest of
//! the reconcile pass reads the listing. Why that is as safe as a GET:
//!
//! - An object the listing shows is judged as before, and a refusal is
//!   confirmed with a fresh GET, so a stale listing never refuses.
//! - An object the listing lacks is applied. One made by someone else
//!   after the listing, within the same reconcile pass (the listing lives
//!   no longer), is taken over as it would be a moment after a GET: only
//!   someone who may write that namespace's objects can make one, so no
//!   one gains a right they did not have.
//! - The listing is made as the Instance's writer, so it shows what the
//!   writer may see; where the writer may not list (403) or the kind has
//!   more than [`MAX_LISTED`] objects there, objects are asked for one by
//!   one, as before.

use std::collections::HashMap;

use kube::api::{Api, DynamicObject, ListParams};
use serde_json::Value;

/// Above this many objects of one kind in one namespace the listing is
/// dropped (its memory would outgrow a GET per step).
pub const MAX_LISTED: usize = 1000;

/// Objects asked for per list request.
const PAGE: u32 = 250;

/// What is known of one kind in one namespace.
enum Listing {
    /// Metadata by name.
    Listed(HashMap<String, Value>),
    /// Too many, or not listable: ask per object.
    PerObject,
}

/// What the takeover check found for one object.
pub enum Seen {
    /// No such object when the listing was made.
    Absent,
    /// Its metadata as listed.
    Present(Value),
    /// Not known from a listing: GET it.
    Unknown,
}

/// The listings of one reconcile pass, by writer, API version, kind and
/// namespace.
#[derive(Default)]
pub struct LiveNames {
    listings: HashMap<(Option<String>, String, String, String), Listing>,
}

impl LiveNames {
    /// What the listing of `api`'s kind in `namespace` says about `name`,
    /// listing it first if this pass has not.
    pub async fn look_up(
        &mut self,
        writer: Option<&str>,
        api: &Api<DynamicObject>,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Seen, kube::Error> {
        let key = (
            writer.map(str::to_string),
            api_version.to_string(),
            kind.to_string(),
            namespace.to_string(),
        );
        if !self.listings.contains_key(&key) {
            let listing = list(api).await?;
            self.listings.insert(key.clone(), listing);
        }
        Ok(match self.listings.get(&key) {
            Some(Listing::Listed(names)) => match names.get(name) {
                Some(meta) => Seen::Present(meta.clone()),
                None => Seen::Absent,
            },
            Some(Listing::PerObject) | None => Seen::Unknown,
        })
    }
}

/// Lists metadata page by page, giving up above [`MAX_LISTED`] objects or
/// when the writer may not list.
async fn list(api: &Api<DynamicObject>) -> Result<Listing, kube::Error> {
    let mut names = HashMap::new();
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let page = match api.list_metadata(&params).await {
            Ok(page) => page,
            Err(kube::Error::Api(s)) if matches!(s.code, 403 | 405) => {
                return Ok(Listing::PerObject);
            }
            Err(e) => return Err(e),
        };
        for item in page.items {
            let Some(name) = item.metadata.name.clone() else {
                continue;
            };
            let meta = serde_json::to_value(&item).unwrap_or_default();
            names.insert(name, meta);
        }
        if names.len() > MAX_LISTED {
            return Ok(Listing::PerObject);
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(Listing::Listed(names)),
        }
    }
}

#[cfg(test)]
#[path = "live_names_tests.rs"]
mod tests;
