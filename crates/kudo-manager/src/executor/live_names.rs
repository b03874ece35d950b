//! What exists before a plan applies: the takeover check's one listing per
//! kind and namespace.
//!
//! Before a forced apply of an object the step has not applied before, the
//! manager must know whether someone else's object has that name. Asking
//! per object costs a GET per step. So the first such object of a kind in
//! a namespace in a reconcile pass is asked for alone (a pass that applies
//! one object pays what it always did); at the second, the pass lists that
//! kind's metadata there once (one page of at most [`MAX_LISTED`]) and
//! reads the rest from the listing. Why that is as safe as a GET:
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
//!   one, as before: the listing costs one request of bounded size.

use std::collections::HashMap;

use kube::api::{Api, DynamicObject, ListParams};
use serde_json::Value;

/// Above this many objects of one kind in one namespace the listing is
/// not used (one page of metadata; more would cost more than the GETs it
/// saves in most passes).
pub const MAX_LISTED: u32 = 250;

/// What is known of one kind in one namespace.
enum Listing {
    /// One object was asked for alone; the next one lists.
    AskedOnce,
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
        match self.listings.get(&key) {
            None => {
                self.listings.insert(key, Listing::AskedOnce);
                return Ok(Seen::Unknown);
            }
            Some(Listing::AskedOnce) => {
                let listing = list(api).await?;
                self.listings.insert(key.clone(), listing);
            }
            Some(_) => {}
        }
        Ok(match self.listings.get(&key) {
            Some(Listing::Listed(names)) => match names.get(name) {
                Some(meta) => Seen::Present(meta.clone()),
                None => Seen::Absent,
            },
            Some(Listing::AskedOnce | Listing::PerObject) | None => Seen::Unknown,
        })
    }
}

/// Lists the metadata of one page; more objects than fit, or a writer
/// that may not list, means asking per object.
async fn list(api: &Api<DynamicObject>) -> Result<Listing, kube::Error> {
    let page = match api
        .list_metadata(&ListParams::default().limit(MAX_LISTED))
        .await
    {
        Ok(page) => page,
        Err(kube::Error::Api(s)) if matches!(s.code, 403 | 405) => return Ok(Listing::PerObject),
        Err(e) => return Err(e),
    };
    let more = page.metadata.continue_.is_some_and(|c| !c.is_empty());
    if more || page.items.len() > MAX_LISTED as usize {
        return Ok(Listing::PerObject);
    }
    let mut names = HashMap::with_capacity(page.items.len());
    for item in page.items {
        if let Some(name) = item.metadata.name.clone() {
            names.insert(name, serde_json::to_value(&item).unwrap_or_default());
        }
    }
    Ok(Listing::Listed(names))
}

#[cfg(test)]
#[path = "live_names_tests.rs"]
mod tests;
