//! Maps kept within a size: what a tenant's input can add to the manager's
//! memory has a ceiling, and forgetting an entry only costs recomputing it.

use std::collections::HashMap;
use std::hash::Hash;

/// Inserts `key`, first dropping an arbitrary other entry when the map
/// already holds `max` and not `key`.
pub(crate) fn insert_within<K: Hash + Eq + Clone, V>(
    map: &mut HashMap<K, V>,
    key: K,
    value: V,
    max: usize,
) {
    if map.len() >= max
        && !map.contains_key(&key)
        && let Some(evicted) = map.keys().next().cloned()
    {
        map.remove(&evicted);
    }
    map.insert(key, value);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_map_makes_room_for_a_new_key_and_keeps_an_old_one_it_replaces() {
        let mut map = HashMap::new();
        for i in 0..3 {
            insert_within(&mut map, i, i, 3);
        }
        insert_within(&mut map, 9, 9, 3);
        assert_eq!(map.len(), 3);
        assert_eq!(map.get(&9), Some(&9));
        let kept: Vec<i32> = map.keys().copied().filter(|k| *k != 9).collect();
        insert_within(&mut map, kept[0], 7, 3);
        assert_eq!((map.len(), map.get(&kept[0])), (3, Some(&7)));
    }
}
