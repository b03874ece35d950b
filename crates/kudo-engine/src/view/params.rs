//! Parameter values as a sorted list of borrowed pairs: what a map of
//! owned strings holds, without allocating for the usual handful.

use std::borrow::Cow;
use std::collections::BTreeMap;

use smallvec::SmallVec;

use super::Text;

/// Parameter values, sorted by name, names unique. Equal to another
/// `Params` exactly when the maps they stand for are equal.
#[derive(Clone, Debug, Default)]
pub struct Params<'a>(SmallVec<[(Text<'a>, Text<'a>); 8]>);

// By hand: views are invariant in their lifetime, and values borrowed from
// two sources are compared.
impl<'b> PartialEq<Params<'b>> for Params<'_> {
    fn eq(&self, other: &Params<'b>) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Params<'_> {}

impl<'a> Params<'a> {
    /// Sets `name` to `value`, replacing an earlier value (the last of
    /// repeated keys wins, as in a map). Cheapest when names come sorted,
    /// as the API server sends them.
    pub fn insert(&mut self, name: Text<'a>, value: Text<'a>) {
        match self.0.last() {
            Some((last, _)) if *last >= name => {
                match self.0.binary_search_by(|(n, _)| n.as_ref().cmp(&name)) {
                    Ok(i) => self.0[i].1 = value,
                    Err(i) => self.0.insert(i, (name, value)),
                }
            }
            _ => self.0.push((name, value)),
        }
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        // The validation looks up every defined parameter: for the usual
        // few values a scan that compares lengths first beats a binary
        // search's string comparisons.
        if self.0.len() <= 16 {
            return self
                .0
                .iter()
                .find(|(n, _)| n.len() == name.len() && n.as_ref() == name)
                .map(|(_, v)| v.as_ref());
        }
        self.0
            .binary_search_by(|(n, _)| n.as_ref().cmp(name))
            .ok()
            .map(|i| self.0[i].1.as_ref())
    }

    /// Whether `name` has a value.
    pub fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Names, sorted.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(n, _)| n.as_ref())
    }

    /// `(name, value)`, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(n, v)| (n.as_ref(), v.as_ref()))
    }

    /// How many values.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The same values, owning their text.
    pub fn into_owned<'x>(self) -> Params<'x> {
        Params(
            self.0
                .into_iter()
                .map(|(n, v)| (Cow::Owned(n.into_owned()), Cow::Owned(v.into_owned())))
                .collect(),
        )
    }
}

/// From pairs in any order; of repeated names the last one counts, as when
/// JSON with a repeated key is read into a map.
impl<'a> FromIterator<(Text<'a>, Text<'a>)> for Params<'a> {
    fn from_iter<I: IntoIterator<Item = (Text<'a>, Text<'a>)>>(pairs: I) -> Self {
        let mut params = Params::default();
        for (name, value) in pairs {
            params.insert(name, value);
        }
        params
    }
}

impl<'a> From<&'a BTreeMap<String, String>> for Params<'a> {
    fn from(map: &'a BTreeMap<String, String>) -> Self {
        // A map is sorted and unique already.
        Self(
            map.iter()
                .map(|(n, v)| (Cow::Borrowed(n.as_str()), Cow::Borrowed(v.as_str())))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs<'a>(list: &[(&'a str, &'a str)]) -> Params<'a> {
        list.iter()
            .map(|(n, v)| (Cow::from(*n), Cow::from(*v)))
            .collect()
    }

    #[test]
    fn pairs_are_sorted_and_the_last_of_a_repeated_name_wins() {
        let p = pairs(&[("b", "1"), ("a", "2"), ("b", "3")]);
        assert_eq!(p.iter().collect::<Vec<_>>(), [("a", "2"), ("b", "3")]);
        let mut inserted = Params::default();
        for (n, v) in [("b", "1"), ("a", "2"), ("c", "0"), ("b", "3")] {
            inserted.insert(n.into(), v.into());
        }
        assert_eq!(
            inserted.iter().collect::<Vec<_>>(),
            [("a", "2"), ("b", "3"), ("c", "0")]
        );
        assert_eq!(p.get("b"), Some("3"));
        assert_eq!(p.get("c"), None);
        // Past the scan's limit, the binary search finds the same.
        let names: Vec<String> = (0..40).map(|i| format!("p{i:02}")).collect();
        let many = Params::from_iter(
            names
                .iter()
                .map(|n| (Cow::from(n.as_str()), Cow::from("v"))),
        );
        assert!(names.iter().all(|n| many.get(n) == Some("v")));
        assert_eq!(many.get("p40"), None);
    }

    #[test]
    fn equal_exactly_when_the_maps_are_equal() {
        let map = BTreeMap::from([("a".to_string(), "1".to_string())]);
        let other = BTreeMap::from([("a".to_string(), "2".to_string())]);
        let more = BTreeMap::from([
            ("a".to_string(), "1".to_string()),
            ("b".to_string(), "1".to_string()),
        ]);
        assert_eq!(Params::from(&map), pairs(&[("a", "1")]));
        assert_ne!(Params::from(&other), pairs(&[("a", "1")]));
        assert_ne!(Params::from(&more), pairs(&[("a", "1")]));
        assert_eq!(Params::from(&more), pairs(&[("b", "1"), ("a", "1")]));
    }
}
