//! yaml.v2's order for mapping keys (`keyList.Less`), which decides the
//! byte order of every map it writes.

use std::cmp::Ordering;

/// yaml.v2's `keyList.Less` for string keys: letters after non-letters, digit
/// runs compared as numbers.
pub fn key_order(a: &str, b: &str) -> Ordering {
    if less(a, b) {
        Ordering::Less
    } else if less(b, a) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

fn less(a: &str, b: &str) -> bool {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let mut i = 0;
    while i < ar.len() && i < br.len() {
        if ar[i] == br[i] {
            i += 1;
            continue;
        }
        let al = ar[i].is_alphabetic();
        let bl = br[i].is_alphabetic();
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        // A run continuing after a non-zero digit must not lose its zeros.
        let continues_number = (ar[i] == '0' || br[i] == '0')
            && ar[..i]
                .iter()
                .rev()
                .take_while(|c| c.is_ascii_digit())
                .any(|&c| c != '0');
        let seed = i64::from(continues_number);
        let (an, ai) = digit_run(&ar, i, seed);
        let (bn, bi) = digit_run(&br, i, seed);
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

/// The number formed by the digit run at `start`, appended to `seed` with
/// Go's wrapping int64 arithmetic, and where the run ends.
fn digit_run(chars: &[char], start: usize, seed: i64) -> (i64, usize) {
    let mut n = seed;
    let mut end = start;
    while let Some(d) = chars.get(end).and_then(|c| c.to_digit(10)) {
        n = n.wrapping_mul(10).wrapping_add(i64::from(d));
        end += 1;
    }
    (n, end)
}
