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
    /// From pairs in any order; of repeated names the last one counts, as
    /// when JSON with a repeated key is read into a map.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (Text<'a>, Text<'a>)>) -> Self {
        let mut list: SmallVec<[(Text<'a>, Text<'a>); 8]> = pairs.into_iter().collect();
        if !list.windows(2).all(|w| w[0].0 < w[1].0) {
            // Stable, so that of equal names the last read stays last.
            list.sort_by(|a, b| a.0.cmp(&b.0));
            let mut unique: SmallVec<[(Text<'a>, Text<'a>); 8]> = SmallVec::new();
            for pair in list {
                match unique.last_mut() {
                    Some(last) if last.0 == pair.0 => *last = pair,
                    _ => unique.push(pair),
                }
            }
            list = unique;
        }
        Self(list)
    }

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

    /// As an owned map.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    /// Whether these are exactly the values of `map`.
    pub fn equals_map(&self, map: &BTreeMap<String, String>) -> bool {
        self.len() == map.len()
            && self
                .iter()
                .zip(map)
                .all(|((n, v), (mn, mv))| n == mn && v == mv)
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
        Params::from_pairs(list.iter().map(|(n, v)| (Cow::from(*n), Cow::from(*v))))
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
        let many = Params::from_pairs(
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
        assert_eq!(Params::from(&map), pairs(&[("a", "1")]));
        assert!(pairs(&[("a", "1")]).equals_map(&map));
        assert!(!pairs(&[("a", "2")]).equals_map(&map));
        assert!(!pairs(&[("a", "1"), ("b", "1")]).equals_map(&map));
        assert_eq!(pairs(&[("a", "1")]).to_map(), map);
    }
}
