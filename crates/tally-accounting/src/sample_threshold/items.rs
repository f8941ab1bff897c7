//! Sample-and-threshold when a client contributes up to `k` distinct items, each with its own
//! sampling coin (docs/privacy/sample-threshold.md, "Several items per client").

use super::{SampleThresholdParams, tight_rounds_epsilon};
use crate::partition_selection::{changed_counts, check_max_items};
use crate::{Error, Guarantee, Neighbours, TrustModel};

/// The guarantee at `delta` of one S&T release with `params` when every client contributes at
/// most `max_items ≥ 2` distinct items and flips an independent coin for each.
///
/// # Privacy
///
/// With one coin per (client, item) the counts of different items are independent, so one
/// client changes `c = k` (add/remove) or `c = 2k` (replace-one) independent counts, each an
/// S&T cell whose pair against the neighbour is dominated, in either direction and for every
/// group size, by the symmetric loss pair of [`SampleThresholdParams::loss_pair`]. The release
/// is therefore at most the `c`-fold composition of that pair, composed by the tight accountant
/// ([`tight_rounds_epsilon`]). This is a composition bound, not an exact analysis of one client:
/// the guarantee's `analysis` says so. (One coin for all of a client's items is not private:
/// docs/privacy/sample-threshold.md.)
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `2 ≤ max_items ≤`
/// [`crate::partition_selection::MAX_ITEMS_PER_CLIENT`] and `delta ∈ (0, 1)`; whatever the
/// tight accountant rejects.
pub fn items_guarantee(
    params: &SampleThresholdParams,
    max_items: u32,
    delta: f64,
    neighbours: Neighbours,
) -> Result<Guarantee, Error> {
    let k = check_max_items(max_items)?;
    if k < 2 {
        return Err(Error::invalid(
            "max items per client",
            k,
            "at least 2 (one item per client has the exact analyses)",
        ));
    }
    let counts = changed_counts(k, neighbours);
    Ok(Guarantee {
        epsilon: tight_rounds_epsilon(params, counts, delta)?,
        delta,
        neighbours,
        model: TrustModel::Central,
        analysis: format!(
            "at most {k} items per client, one coin per item: tight composition of the {counts} \
             counts a client changes (a composition bound)"
        ),
    })
}
