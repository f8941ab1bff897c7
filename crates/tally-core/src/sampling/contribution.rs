//! Per-client contribution bounds: at most `k` distinct items from each client.

use rand::Rng;

use super::uniform_subset;
use crate::Error;

/// The positions in `items` of the distinct items one client contributes: all of them when
/// there are at most `max_items`, else a uniformly random `max_items`-subset of the distinct
/// items; each item appears once, at the first position holding it, and the positions come in
/// increasing order.
///
/// # Privacy
///
/// The choice depends on this client's rows and the generator only, so whatever the mechanism
/// proves for clients of at most `max_items` distinct items holds for the bounded data. The
/// subset is exactly uniform ([`uniform_subset`]).
///
/// # Errors
///
/// [`Error::InvalidParameter`] if `max_items` is 0.
pub fn bound_items<T: Ord, R: Rng + ?Sized>(
    items: &[T],
    max_items: u32,
    rng: &mut R,
) -> Result<Vec<usize>, Error> {
    if max_items == 0 {
        return Err(Error::invalid("max items per client", 0, "an integer ≥ 1"));
    }
    let distinct = first_positions(items);
    let n = distinct.len() as u64;
    let k = u64::from(max_items);
    if n <= k {
        return Ok(distinct);
    }
    let mut chosen: Vec<usize> = uniform_subset(n, k, rng)?
        .into_iter()
        .map(|i| distinct[i as usize])
        .collect();
    chosen.sort_unstable();
    Ok(chosen)
}

/// The first position of each distinct item of `items`, in increasing order of position.
pub(crate) fn first_positions<T: Ord>(items: &[T]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    // Stable: equal items keep their order, so the first of each run is its first position.
    order.sort_by(|&a, &b| items[a].cmp(&items[b]));
    order.dedup_by(|later, first| items[*later] == items[*first]);
    order.sort_unstable();
    order
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    use super::*;

    #[test]
    fn duplicates_count_once_and_small_clients_keep_everything() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let rows = ["b", "a", "b", "c", "a"];
        assert_eq!(first_positions(&rows), [0, 1, 3]);
        assert_eq!(bound_items(&rows, 3, &mut rng).unwrap(), [0, 1, 3]);
        assert_eq!(bound_items(&rows, 9, &mut rng).unwrap(), [0, 1, 3]);
        let two = bound_items(&rows, 2, &mut rng).unwrap();
        assert_eq!(two.len(), 2);
        assert!(two.iter().all(|p| [0, 1, 3].contains(p)));
        assert!(bound_items(&rows, 0, &mut rng).is_err());
        assert!(bound_items::<&str, _>(&[], 1, &mut rng).unwrap().is_empty());
    }
}
