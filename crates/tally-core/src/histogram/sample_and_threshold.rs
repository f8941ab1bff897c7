//! The sample-and-threshold (S&T) histogram of Bharadwaj and Cormode, "Sample and Threshold
//! Differential Privacy: Histograms and applications" (AISTATS 2022), §3.1.
//!
//! Each client flips its own coin and, with probability `p_s`, sends its item. The aggregator
//! counts the reports and releases exactly the items whose count reaches the threshold `τ`,
//! with the estimate `count / p_s`. No noise is added and no item absent from the input can
//! ever be released.
//!
//! # Privacy
//!
//! The guarantee is computed by [`tally_accounting::sample_threshold`] from `(p_s, τ, ε)` with
//! the analysis the caller chose. The theorem is an add/remove one (one client present or
//! absent); replace-one guarantees are derived per affected cell (the item a client leaves is
//! pure `ln(1/(1 − p_s))`-DP, the item it joins carries the add/remove `(ε, δ)`). Sampling is
//! exact: the coin is an exact Bernoulli of the `f64` rate, which is a dyadic rational.
//!
//! Items are interned integer ids (`u32`); mapping them back to strings is the caller's job.
//! Raw counts live only inside [`SampleThresholdAggregator`], which implements neither `Debug`
//! nor any serialization; [`SampleThresholdAggregator::release`] is the only way out.

use rand::Rng;
use rand_distr::Distribution;
use rustc_hash::FxHashMap;
use tally_accounting::Guarantee;
use tally_accounting::sample_threshold::{Analysis, PlanTarget, SampleThresholdParams, plan};

use crate::Error;
use crate::sampling::ExactBernoulli;

/// Domains up to this many items are counted in a dense array; larger ones in a hash map.
const DENSE_DOMAIN_LIMIT: usize = 1 << 24;

/// A calibrated sample-and-threshold histogram mechanism: the parameters and the guarantee
/// they give.
#[derive(Clone, Debug)]
pub struct SampleThreshold {
    pub(super) params: SampleThresholdParams,
    pub(super) guarantee: Guarantee,
}

impl SampleThreshold {
    /// Builds the mechanism for `params` and computes its guarantee at `epsilon` with
    /// `analysis` for the neighbour relation given in `guarantee_for`.
    ///
    /// # Errors
    ///
    /// Whatever the accountant rejects: invalid parameters, or a sampling rate above
    /// `1 − e^{−ε}` where the analysis needs it.
    pub fn new(
        params: SampleThresholdParams,
        epsilon: f64,
        analysis: Analysis,
        neighbours: tally_accounting::Neighbours,
    ) -> Result<Self, Error> {
        let guarantee = params.guarantee(epsilon, analysis, neighbours)?;
        Ok(Self { params, guarantee })
    }

    /// Calibrates the mechanism for a target `(ε, δ)`: solves for the parameters `target`
    /// leaves open with [`tally_accounting::sample_threshold::plan`] and builds the mechanism
    /// from them.
    ///
    /// # Errors
    ///
    /// Whatever the planner rejects: invalid targets, or no parameters that meet them.
    pub fn calibrate(
        epsilon: f64,
        delta: f64,
        target: PlanTarget,
        analysis: Analysis,
        neighbours: tally_accounting::Neighbours,
    ) -> Result<Self, Error> {
        let plan = plan(epsilon, delta, target, analysis, neighbours)?;
        Self::new(plan.params, epsilon, analysis, neighbours)
    }

    /// The sampling rate and the threshold.
    pub fn params(&self) -> &SampleThresholdParams {
        &self.params
    }

    /// The privacy guarantee of one release.
    pub fn guarantee(&self) -> &Guarantee {
        &self.guarantee
    }

    /// The query the server broadcasts to clients.
    pub fn query(&self) -> SampleThresholdQuery {
        SampleThresholdQuery {
            // Unwrap safety: the accountant validated the rate, which lies in (0, 1).
            coin: ExactBernoulli::new(self.params.sampling_rate())
                .expect("validated sampling rate"),
        }
    }

    /// An empty aggregator for items with ids below `domain_size`.
    pub fn aggregator(&self, domain_size: usize) -> SampleThresholdAggregator {
        SampleThresholdAggregator {
            counts: Counts::with_domain(domain_size),
            params: self.params,
            guarantee: self.guarantee.clone(),
        }
    }

    /// An empty aggregator for an open domain: any `u32` id, counted in a hash map (a server
    /// interning the items it receives, whose domain is not known in advance).
    pub fn open_domain_aggregator(&self) -> SampleThresholdAggregator {
        SampleThresholdAggregator {
            counts: Counts::Sparse(FxHashMap::default()),
            params: self.params,
            guarantee: self.guarantee.clone(),
        }
    }
}

/// What the server asks each client: send your item with probability `p_s`.
#[derive(Clone, Debug)]
pub struct SampleThresholdQuery {
    coin: ExactBernoulli,
}

impl SampleThresholdQuery {
    /// The query for sampling rate `p_s`, as a device rebuilds it from the round's published
    /// rate.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `0 < p_s < 1`.
    pub fn new(sampling_rate: f64) -> Result<Self, Error> {
        if !(sampling_rate > 0.0 && sampling_rate < 1.0) {
            return Err(Error::invalid(
                "sampling_rate",
                sampling_rate,
                "a probability strictly between 0 and 1",
            ));
        }
        Ok(Self {
            coin: ExactBernoulli::new(sampling_rate)?,
        })
    }

    /// The sampling rate `p_s`.
    pub fn sampling_rate(&self) -> f64 {
        self.coin.p()
    }

    /// The client side of the round: flips the client's own exact coin and returns the report
    /// to upload, if any.
    pub fn respond<T, R: Rng + ?Sized>(&self, item: T, rng: &mut R) -> Option<T> {
        self.coin.sample(rng).then_some(item)
    }
}

/// Raw per-item counts. Deliberately not `Debug`.
enum Counts {
    Dense(Vec<u64>),
    Sparse(FxHashMap<u32, u64>),
}

impl Counts {
    fn with_domain(domain_size: usize) -> Self {
        if domain_size <= DENSE_DOMAIN_LIMIT {
            Self::Dense(vec![0; domain_size])
        } else {
            Self::Sparse(FxHashMap::default())
        }
    }

    fn add_each(&mut self, items: &[u32]) {
        match self {
            Self::Dense(counts) => {
                for &item in items {
                    counts[item as usize] += 1;
                }
            }
            Self::Sparse(counts) => {
                for &item in items {
                    *counts.entry(item).or_insert(0) += 1;
                }
            }
        }
    }

    fn add(&mut self, item: u32, count: u64) {
        match self {
            Self::Dense(counts) => counts[item as usize] += count,
            Self::Sparse(counts) => *counts.entry(item).or_insert(0) += count,
        }
    }

    fn for_each_at_least(&self, threshold: u64, mut f: impl FnMut(u32, u64)) {
        match self {
            Self::Dense(counts) => {
                for (item, &count) in counts.iter().enumerate() {
                    if count >= threshold {
                        // Unwrap safety: dense domains are indexed by u32 ids.
                        f(u32::try_from(item).expect("u32 item id"), count);
                    }
                }
            }
            Self::Sparse(counts) => {
                for (&item, &count) in counts {
                    if count >= threshold {
                        f(item, count);
                    }
                }
            }
        }
    }
}

/// The aggregator of one S&T round: absorbs reports, merges with other shards and releases
/// the thresholded histogram. Its raw counts cannot be read.
pub struct SampleThresholdAggregator {
    counts: Counts,
    params: SampleThresholdParams,
    guarantee: Guarantee,
}

impl SampleThresholdAggregator {
    /// Absorbs one client's report.
    ///
    /// # Panics
    ///
    /// If `item` is not below the domain size given to [`SampleThreshold::aggregator`].
    pub fn absorb(&mut self, item: u32) {
        self.counts.add(item, 1);
    }

    /// Absorbs a batch of clients' reports.
    ///
    /// # Panics
    ///
    /// If an item is not below the domain size given to [`SampleThreshold::aggregator`].
    pub fn absorb_all(&mut self, items: &[u32]) {
        self.counts.add_each(items);
    }

    /// Absorbs `count` reports of `item` at once: the simulator's aggregate-level path, which
    /// draws the number of sampled holders of each item directly.
    pub fn absorb_many(&mut self, item: u32, count: u64) {
        self.counts.add(item, count);
    }

    /// Adds another shard's reports to this one.
    pub fn merge(&mut self, other: Self) {
        other
            .counts
            .for_each_at_least(1, |item, count| self.counts.add(item, count));
    }

    /// Adds another shard's reports to this one, its item `id` counted as `relabel(id)` (for
    /// shards that interned their items to ids apart).
    pub fn merge_relabelled(&mut self, other: Self, relabel: impl Fn(u32) -> u32) {
        other
            .counts
            .for_each_at_least(1, |item, count| self.counts.add(relabel(item), count));
    }

    /// Releases every item whose count reaches the threshold, by decreasing count (ties by
    /// item id), with the estimate `count / p_s`. This is the only way raw counts leave.
    pub fn release(self) -> SampleThresholdRelease {
        let rate = self.params.sampling_rate();
        let mut items = Vec::new();
        self.counts
            .for_each_at_least(self.params.threshold(), |item, count| {
                items.push(ReleasedCount {
                    item,
                    count,
                    estimate: count as f64 / rate,
                });
            });
        items.sort_unstable_by(|a, b| b.count.cmp(&a.count).then(a.item.cmp(&b.item)));
        SampleThresholdRelease {
            items,
            params: self.params,
            guarantee: self.guarantee,
        }
    }
}

/// One released histogram cell.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReleasedCount {
    /// The item's id.
    pub item: u32,
    /// The number of sampled clients holding it (at least the threshold).
    pub count: u64,
    /// The estimated number of clients holding it in the population, `count / p_s`.
    pub estimate: f64,
}

/// A released S&T histogram with the parameters and guarantee it was made with.
#[derive(Clone, Debug)]
pub struct SampleThresholdRelease {
    /// Released cells, by decreasing count.
    pub items: Vec<ReleasedCount>,
    /// The sampling rate and threshold.
    pub params: SampleThresholdParams,
    /// The privacy guarantee of this release.
    pub guarantee: Guarantee,
}
