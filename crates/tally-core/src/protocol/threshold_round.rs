//! A sample-and-threshold round over any report a device derives from its data: the item
//! itself, a prefix of it, the bucket or side of a split of its number. The histogram,
//! TrieHH++'s levels and both quantile algorithms' rounds are this one round with different
//! [`ReportFeature`]s.
//!
//! # Privacy
//!
//! One round is the S&T mechanism of [`SampleThreshold`], add/remove (or replace-one, as
//! calibrated) `(ε, δ)`-DP by [`tally_accounting::sample_threshold`], under
//! [`TrustModel::Central`] (the aggregator stands in for the trusted curator). Its guarantee assumes the Poisson sample: with
//! [`CoinHolder::Aggregator`] the aggregator keeps each admitted report with probability `p_s`
//! by the exact Bernoulli coin, from a secret stream no device sees, so no device can choose to
//! be sampled; with [`CoinHolder::Device`] every device flips that coin itself, which holds
//! only if every device does so honestly.

use std::hash::Hash;

use rand::Rng;
use rand_chacha::ChaCha20Rng;
use rustc_hash::FxHashMap;

use super::{DeviceQuery, RoundAggregator, RoundProtocol, SingleMessage, TrustModel};
use crate::histogram::{SampleThreshold, SampleThresholdAggregator, SampleThresholdQuery};
use crate::sampling::exact_binomial;

/// Who flips a sample-and-threshold round's Poisson coins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CoinHolder {
    /// The aggregator samples the reports it receives (every device reports).
    Aggregator,
    /// Each device samples itself and abstains when its coin says so.
    Device,
}

/// What a device reports in a sample-and-threshold round, derived from its data before the
/// coin decides whether it is sent.
pub trait ReportFeature {
    /// A device's data.
    type Input: ?Sized;
    /// The report: a cell of the round's histogram, one message.
    type Key: SingleMessage + Clone + Eq + Hash;

    /// The device's cell, or `None` when it has none this round.
    fn key(&self, input: &Self::Input) -> Option<Self::Key>;

    /// Whether some device could report `key`.
    fn admits(&self, key: &Self::Key) -> bool;
}

/// The query of a sample-and-threshold round: the feature to report and the coin.
#[derive(Clone, Debug)]
pub struct SampleThresholdAsk<F> {
    /// What a device reports.
    pub feature: F,
    /// The exact Bernoulli(`p_s`) coin.
    pub coin: SampleThresholdQuery,
    /// Who flips it.
    pub coins: CoinHolder,
}

impl<F> SampleThresholdAsk<F> {
    /// Whether a device sends `report`: always when the aggregator flips the coins, with
    /// probability `p_s` by the device's own coin under [`CoinHolder::Device`].
    pub fn send<T, R: Rng + ?Sized>(&self, report: T, rng: &mut R) -> Option<T> {
        match self.coins {
            CoinHolder::Device => self.coin.respond(report, rng),
            CoinHolder::Aggregator => Some(report),
        }
    }
}

impl<F: ReportFeature> DeviceQuery for SampleThresholdAsk<F> {
    type Input = F::Input;
    type Report = F::Key;

    fn trust(&self) -> TrustModel {
        TrustModel::Central
    }

    /// The device's cell; under [`CoinHolder::Device`] sent with probability `p_s` only.
    fn respond<R: Rng + ?Sized>(&self, input: &F::Input, rng: &mut R) -> Option<F::Key> {
        self.send(self.feature.key(input)?, rng)
    }

    fn admits(&self, report: &F::Key) -> bool {
        self.feature.admits(report)
    }
}

/// A sample-and-threshold round as the server holds it: its query and the calibrated
/// mechanism whose threshold the aggregator applies.
#[derive(Clone, Debug)]
pub struct SampleThresholdRound<F> {
    ask: SampleThresholdAsk<F>,
    mechanism: SampleThreshold,
}

impl<F> SampleThresholdRound<F> {
    /// The round of `mechanism` asking for `feature`, its coins flipped by `coins`.
    pub fn new(feature: F, mechanism: SampleThreshold, coins: CoinHolder) -> Self {
        Self {
            ask: SampleThresholdAsk {
                feature,
                coin: mechanism.query(),
                coins,
            },
            mechanism,
        }
    }

    /// The calibrated mechanism.
    pub fn mechanism(&self) -> &SampleThreshold {
        &self.mechanism
    }
}

impl<F: ReportFeature> RoundProtocol for SampleThresholdRound<F> {
    type Query = SampleThresholdAsk<F>;
    type Release = Vec<ThresholdCell<F::Key>>;
    type Aggregator = SampleThresholdCells<F::Key>;

    fn query(&self) -> &SampleThresholdAsk<F> {
        &self.ask
    }

    fn aggregator(&self, rng: ChaCha20Rng) -> SampleThresholdCells<F::Key> {
        SampleThresholdCells {
            ids: FxHashMap::default(),
            keys: Vec::new(),
            counts: self.mechanism.open_domain_aggregator(),
            coins: match self.ask.coins {
                CoinHolder::Aggregator => Some(Coins {
                    coin: self.ask.coin.clone(),
                    rng,
                }),
                CoinHolder::Device => None,
            },
        }
    }
}

/// One released cell: the report, its sampled count and its estimate `count / p_s`.
#[derive(Clone, Debug, PartialEq)]
pub struct ThresholdCell<K> {
    /// The cell.
    pub key: K,
    /// Its sampled count, at least the threshold.
    pub count: u64,
    /// `count / p_s`.
    pub estimate: f64,
}

/// The aggregator's own Poisson coins: the mechanism's exact Bernoulli(`p_s`) and a secret
/// stream of randomness.
struct Coins {
    coin: SampleThresholdQuery,
    rng: ChaCha20Rng,
}

/// The aggregator of a sample-and-threshold round: interns the cells it receives to ids and
/// counts them with tally's S&T aggregator. Deliberately neither `Debug` nor serializable;
/// [`RoundAggregator::release`] is the only way out.
pub struct SampleThresholdCells<K> {
    ids: FxHashMap<K, u32>,
    keys: Vec<K>,
    counts: SampleThresholdAggregator,
    /// `Some` when the aggregator samples the reports.
    coins: Option<Coins>,
}

impl<K: Clone + Eq + Hash> SampleThresholdCells<K> {
    /// The id of `key`, interned on first sight (ids follow arrival order, which orders ties
    /// in the release).
    fn id(&mut self, key: K) -> u32 {
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        // Unwrap safety: a round cannot hold 2^32 distinct reports within its upload cap.
        let id = u32::try_from(self.keys.len()).expect("fewer than 2^32 cells");
        self.keys.push(key.clone());
        self.ids.insert(key, id);
        id
    }
}

impl<K: Clone + Eq + Hash> RoundAggregator for SampleThresholdCells<K> {
    type Report = K;
    type Release = Vec<ThresholdCell<K>>;

    /// Under aggregator-side sampling the report is kept with probability `p_s` (and
    /// otherwise dropped unseen); under device-side sampling always.
    fn absorb(&mut self, report: K) {
        let report = match &mut self.coins {
            Some(coins) => match coins.coin.respond(report, &mut coins.rng) {
                Some(report) => report,
                None => return,
            },
            None => report,
        };
        let id = self.id(report);
        self.counts.absorb(id);
    }

    /// Under aggregator-side sampling `Bin(times, p_s)` copies are kept, drawn exactly
    /// ([`exact_binomial`]); under device-side sampling all of them.
    fn absorb_repeated(&mut self, report: K, times: u64) {
        let kept = match &mut self.coins {
            Some(coins) => exact_binomial(times, coins.coin.sampling_rate(), &mut coins.rng),
            None => times,
        };
        if kept > 0 {
            let id = self.id(report);
            self.counts.absorb_many(id, kept);
        }
    }

    fn merge(&mut self, other: Self) {
        let relabel: Vec<u32> = other.keys.into_iter().map(|key| self.id(key)).collect();
        self.counts
            .merge_relabelled(other.counts, |id| relabel[id as usize]);
    }

    /// The cells whose count reaches the threshold, by decreasing count (ties in arrival
    /// order).
    fn release(self) -> Vec<ThresholdCell<K>> {
        let mut keys: Vec<Option<K>> = self.keys.into_iter().map(Some).collect();
        self.counts
            .release()
            .items
            .into_iter()
            .map(|cell| ThresholdCell {
                // Unwrap safety: every released id was interned once and is released once.
                key: keys[cell.item as usize].take().expect("a released id"),
                count: cell.count,
                estimate: cell.estimate,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use tally_accounting::Neighbours;
    use tally_accounting::sample_threshold::{Analysis, SampleThresholdParams};

    use super::*;
    use crate::protocol::WholeItem;

    fn round(coins: CoinHolder) -> SampleThresholdRound<WholeItem> {
        let params = SampleThresholdParams::new(0.5, 3).unwrap();
        let mechanism =
            SampleThreshold::new(params, 2.0, Analysis::Tight, Neighbours::AddRemove).unwrap();
        SampleThresholdRound::new(WholeItem, mechanism, coins)
    }

    fn absorb_all(aggregator: &mut SampleThresholdCells<String>, reports: &[&str]) {
        for report in reports {
            aggregator.absorb((*report).to_owned());
        }
    }

    #[test]
    fn releases_only_what_reaches_the_threshold() {
        let round = round(CoinHolder::Device);
        let mut aggregator = round.aggregator(ChaCha20Rng::seed_from_u64(0));
        absorb_all(&mut aggregator, &["a", "b", "a", "c", "a", "b", "b", "b"]);
        let release: Vec<_> = aggregator
            .release()
            .into_iter()
            .map(|c| (c.key, c.count, c.estimate))
            .collect();
        assert_eq!(
            release,
            [("b".to_owned(), 4, 8.0), ("a".to_owned(), 3, 6.0)]
        );
    }

    /// Shards interning in different orders merge into the counts of one aggregator that saw
    /// every report.
    #[test]
    fn merged_shards_release_what_one_aggregator_releases() {
        let round = round(CoinHolder::Device);
        let rng = || ChaCha20Rng::seed_from_u64(0);
        let mut left = round.aggregator(rng());
        absorb_all(&mut left, &["x", "y", "y", "z"]);
        let mut right = round.aggregator(rng());
        absorb_all(&mut right, &["z", "z", "y", "w", "x"]);
        left.merge(right);
        let mut whole = round.aggregator(rng());
        absorb_all(&mut whole, &["x", "y", "y", "z", "z", "z", "y", "w", "x"]);
        assert_eq!(left.release(), whole.release());
    }

    #[test]
    fn aggregator_side_coins_keep_a_sample() {
        let round = round(CoinHolder::Aggregator);
        let mut aggregator = round.aggregator(ChaCha20Rng::seed_from_u64(4));
        for _ in 0..1000 {
            aggregator.absorb("a".to_owned());
        }
        let release = aggregator.release();
        // Binomial(1000, 1/2): far from both 0 and 1000 at any plausible seed.
        assert!((300..700).contains(&release[0].count), "{release:?}");
        // Devices report every round under aggregator-side sampling.
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        assert!((0..100).all(|_| round.query().respond("a", &mut rng).is_some()));
    }
}
