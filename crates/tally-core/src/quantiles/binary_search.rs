//! One quantile by interactive binary search over `[0, 1]` (Bharadwaj and Cormode, AISTATS
//! 2022, Lemma 4.2; docs/algorithms.md §4.1): `h` rounds, each a sample-and-threshold histogram
//! with two buckets.
//!
//! See [`BinarySearchQuantile`] for the procedure and its privacy.

use tally_accounting::Guarantee;
use tally_accounting::composition::Composition;

use crate::Error;
use crate::histogram::{
    RoundPlan, SampleThreshold, SampleThresholdRelease, compose_sample_threshold_rounds,
};
use crate::task::Task;

/// The most rounds a search may run: past 52 halvings the split points near 1 stop being
/// distinct doubles.
pub const MAX_SEARCH_ROUNDS: usize = 52;

/// How a round turns its two released counts into the estimated fraction of values at or
/// below the split point.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Normalisation {
    /// `c_0/(c_0 + c_1)` from the round's own release (0 if both are suppressed).
    #[default]
    Released,
    /// `c_0/(n·p_s)` with the population size `n` taken as public (docs/algorithms.md §4.1).
    PopulationSize(u64),
}

/// The parameters of one binary search.
#[derive(Clone, Debug)]
pub struct BinarySearchConfig {
    /// The target quantile `φ ∈ [0, 1]`.
    pub quantile: f64,
    /// The number of rounds `h`, `1..=`[`MAX_SEARCH_ROUNDS`]; the final interval has width
    /// `2^{−h}`.
    pub rounds: usize,
    /// The S&T mechanism every round runs.
    pub per_round: SampleThreshold,
    /// How the rounds' guarantees compose.
    pub composition: Composition,
    /// How a round's release becomes an estimated fraction.
    pub normalisation: Normalisation,
    /// The `δ` budget of all the searches run with this configuration (the advanced and
    /// optimal rules spend what the rounds leave of it).
    pub total_delta: f64,
}

impl BinarySearchConfig {
    /// One search for `quantile` of `rounds` rounds, each running `plan`'s mechanism and read
    /// with [`Normalisation::Released`], composed by `plan`'s rule within its `δ` budget
    /// (`plan` from [`plan_rounds`](crate::histogram::plan_rounds) over the rounds of all the
    /// searches).
    pub fn planned(quantile: f64, rounds: usize, plan: &RoundPlan) -> Self {
        Self {
            quantile,
            rounds,
            per_round: plan.per_round.clone(),
            composition: plan.composition,
            normalisation: Normalisation::Released,
            total_delta: plan.total_delta,
        }
    }

    /// The guarantee of `searches` searches with this configuration over the same clients
    /// (for example one per quantile): the composition of all `searches·h` rounds.
    ///
    /// # Errors
    ///
    /// If `searches` is 0 or the composition cannot be computed.
    pub fn guarantee_of(&self, searches: usize) -> Result<Guarantee, Error> {
        if searches == 0 {
            return Err(Error::invalid("searches", 0, "at least 1"));
        }
        let rounds = searches
            .checked_mul(self.rounds)
            .ok_or_else(|| Error::invalid("searches", searches, "fewer rounds in total"))?;
        compose_sample_threshold_rounds(&self.per_round, rounds, self.composition, self.total_delta)
    }
}

/// The query of one round: is your value at most `threshold`?
#[derive(Clone, Debug)]
pub struct ThresholdQuery {
    /// The round, from 1.
    pub round: usize,
    /// The split point `t`.
    pub threshold: f64,
    /// The round's sample-and-threshold mechanism.
    pub mechanism: SampleThreshold,
}

impl ThresholdQuery {
    /// The bucket of values `x ≤ t`.
    pub const AT_OR_BELOW: u32 = 0;
    /// The bucket of values `x > t` (and NaN).
    pub const ABOVE: u32 = 1;
    /// The S&T domain size: two buckets.
    pub const BUCKETS: usize = 2;

    /// The client's report for its value `x`: [`ThresholdQuery::AT_OR_BELOW`] if `x ≤ t`,
    /// else [`ThresholdQuery::ABOVE`]; the client then sends it through the S&T round with
    /// probability `p_s`.
    pub fn report(&self, x: f64) -> u32 {
        Self::split(self.threshold, x)
    }

    /// The bucket of `x` for the split point `threshold`: what [`ThresholdQuery::report`]
    /// computes, for a device that knows the split point but not the round's mechanism.
    pub fn split(threshold: f64, x: f64) -> u32 {
        if x <= threshold {
            Self::AT_OR_BELOW
        } else {
            Self::ABOVE
        }
    }
}

/// The result of one binary search.
#[derive(Clone, Debug, PartialEq)]
pub struct QuantileSearch {
    /// The target quantile `φ`.
    pub quantile: f64,
    /// The estimate: the upper end of the final interval.
    pub value: f64,
    /// The lower end of the final interval.
    pub lo: f64,
    /// The upper end of the final interval (equal to `value`).
    pub hi: f64,
    /// The rounds run.
    pub rounds: usize,
    /// The guarantee of this search alone.
    pub guarantee: Guarantee,
}

/// The binary-search task for one quantile. Build it with [`BinarySearchQuantile::new`] and
/// drive it with [`Task`].
///
/// ```text
/// lo ← 0, hi ← 1
/// for r = 1..h:
///     t ← (lo + hi)/2
///     run S&T on bucket(x) = 0 if x ≤ t else 1      (fresh Poisson sample; counts ≥ τ released)
///     φ̂ ← the estimated fraction of values ≤ t     (a suppressed bucket counts 0)
///     if φ̂ < φ: lo ← t else: hi ← t
/// return hi
/// ```
///
/// The paper gives the guarantee (`t ± 2^{−h}` is a `φ ± O(m^{−1/2})` quantile) and says that
/// the search starts at 1/2 and "recursively tries different split points"; the procedure
/// above is docs/algorithms.md's reconstruction, with these choices made here:
///
/// * **The estimated fraction.** [`Normalisation::Released`] (the default) uses the round's
///   own release, `φ̂ = c_0/(c_0 + c_1)` (0 when both buckets are suppressed): a
///   post-processing of the release, so the guarantee covers it under add/remove neighbours,
///   and a ratio estimator with variance about `φ(1−φ)/m` instead of `φ(1−p_s)/m`.
///   [`Normalisation::PopulationSize`] is docs/algorithms.md's literal `φ̂ = c_0/m` with the
///   expected sample size `m = n·p_s` taken as public; under add/remove neighbours the
///   number of clients `n` is itself not protected, so this is private only where `n` is
///   public anyway.
/// * **The output.** `hi`, the smallest split point of the search whose estimated fraction
///   reached `φ` (the same rule as the hierarchical quantile), together with the final
///   interval `[lo, hi]` of width `2^{−h}`. The true `φ`-quantile lies in it unless a round's
///   estimate erred across `φ`.
///
/// # Privacy
///
/// Each round is an S&T histogram over two buckets with its own fresh Poisson sample,
/// `(ε', δ')`-DP for the neighbour relation of its [`SampleThreshold`] (add/remove by the S&T
/// theorem): a client added or removed changes one bucket's count, exactly the one-cell case of
/// the theorem. The split point of a round depends on earlier releases only, so the `h` rounds
/// compose adaptively; [`compose_sample_threshold_rounds`] gives the total with the caller's rule. Several
/// quantiles are several searches over the same clients: their guarantee is the composition of
/// all their rounds ([`BinarySearchConfig::guarantee_of`]).
#[derive(Clone, Debug)]
pub struct BinarySearchQuantile {
    config: BinarySearchConfig,
    lo: f64,
    hi: f64,
    round: usize,
    pending: Option<f64>,
    guarantee: Guarantee,
}

impl BinarySearchQuantile {
    /// Validates the configuration and computes the guarantee of the `h` rounds.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `φ ∈ [0, 1]`, `1 ≤ h ≤` [`MAX_SEARCH_ROUNDS`] and a
    /// public population size is positive; or if the composition cannot be computed.
    pub fn new(config: BinarySearchConfig) -> Result<Self, Error> {
        if !(0.0..=1.0).contains(&config.quantile) {
            return Err(Error::invalid(
                "quantile",
                config.quantile,
                "a number in [0, 1]",
            ));
        }
        if !(1..=MAX_SEARCH_ROUNDS).contains(&config.rounds) {
            return Err(Error::invalid(
                "rounds",
                config.rounds,
                "an integer in 1..=52",
            ));
        }
        if config.normalisation == Normalisation::PopulationSize(0) {
            return Err(Error::invalid("population size", 0, "at least 1"));
        }
        let guarantee = config.guarantee_of(1)?;
        Ok(Self {
            config,
            lo: 0.0,
            hi: 1.0,
            round: 0,
            pending: None,
            guarantee,
        })
    }

    /// The current interval `[lo, hi]`.
    pub fn interval(&self) -> (f64, f64) {
        (self.lo, self.hi)
    }

    /// The estimated fraction of values at or below the split point from a round's counts.
    fn fraction(&self, below: u64, above: u64) -> f64 {
        match self.config.normalisation {
            Normalisation::Released if below + above == 0 => 0.0,
            Normalisation::Released => below as f64 / (below + above) as f64,
            Normalisation::PopulationSize(n) => {
                below as f64 / (n as f64 * self.config.per_round.params().sampling_rate())
            }
        }
    }
}

impl Task for BinarySearchQuantile {
    type Query = ThresholdQuery;
    type Release = SampleThresholdRelease;
    type Output = QuantileSearch;

    fn next_query(&mut self) -> Option<ThresholdQuery> {
        if self.round == self.config.rounds {
            return None;
        }
        self.round += 1;
        // Dyadic intervals of width ≥ 2^-51: the midpoint is exact.
        let threshold = self.lo + (self.hi - self.lo) / 2.0;
        self.pending = Some(threshold);
        Some(ThresholdQuery {
            round: self.round,
            threshold,
            mechanism: self.config.per_round.clone(),
        })
    }

    /// Takes the round's release: the released counts of the two buckets.
    ///
    /// # Panics
    ///
    /// If no query is pending.
    fn observe(&mut self, release: SampleThresholdRelease) {
        let threshold = self.pending.take().expect("observe follows next_query");
        let count = |bucket| {
            release
                .items
                .iter()
                .find(|cell| cell.item == bucket)
                .map_or(0, |cell| cell.count)
        };
        let fraction = self.fraction(
            count(ThresholdQuery::AT_OR_BELOW),
            count(ThresholdQuery::ABOVE),
        );
        if fraction < self.config.quantile {
            self.lo = threshold;
        } else {
            self.hi = threshold;
        }
    }

    fn finish(self) -> QuantileSearch {
        QuantileSearch {
            quantile: self.config.quantile,
            value: self.hi,
            lo: self.lo,
            hi: self.hi,
            rounds: self.round,
            guarantee: self.guarantee,
        }
    }

    fn guarantee(&self) -> &Guarantee {
        &self.guarantee
    }
}

#[cfg(test)]
mod tests {
    use tally_accounting::Neighbours;
    use tally_accounting::sample_threshold::{Analysis, SampleThresholdParams};

    use super::*;
    use crate::histogram::ReleasedCount;

    const RATE: f64 = 0.1;
    const THRESHOLD: u64 = 20;

    fn config(quantile: f64, rounds: usize, normalisation: Normalisation) -> BinarySearchConfig {
        let params = SampleThresholdParams::new(RATE, THRESHOLD).unwrap();
        BinarySearchConfig {
            quantile,
            rounds,
            per_round: SampleThreshold::new(params, 1.0, Analysis::Tight, Neighbours::AddRemove)
                .unwrap(),
            composition: Composition::Basic,
            normalisation,
            total_delta: 1e-6,
        }
    }

    /// A release of the two buckets with the given sampled counts, suppressing counts below
    /// the threshold.
    fn release(config: &BinarySearchConfig, below: u64, above: u64) -> SampleThresholdRelease {
        let items = [(0, below), (1, above)]
            .into_iter()
            .filter(|&(_, count)| count >= THRESHOLD)
            .map(|(item, count)| ReleasedCount {
                item,
                count,
                estimate: count as f64 / RATE,
            })
            .collect();
        SampleThresholdRelease {
            items,
            params: *config.per_round.params(),
            guarantee: config.per_round.guarantee().clone(),
        }
    }

    /// Runs a search whose rounds see the exact sampled fraction `cdf(t)` of `m` clients.
    fn search(config: BinarySearchConfig, m: u64, cdf: impl Fn(f64) -> f64) -> QuantileSearch {
        let mut task = BinarySearchQuantile::new(config.clone()).unwrap();
        let mut thresholds = Vec::new();
        while let Some(query) = task.next_query() {
            thresholds.push(query.threshold);
            let below = (cdf(query.threshold) * m as f64).round() as u64;
            task.observe(release(&config, below, m - below));
        }
        assert_eq!(thresholds[0].to_bits(), 0.5_f64.to_bits());
        task.finish()
    }

    #[test]
    fn finds_the_quantile_of_an_exact_cdf() {
        // F(t) = t²: the median is 1/√2.
        for normalisation in [
            Normalisation::Released,
            Normalisation::PopulationSize(10_000_000),
        ] {
            let out = search(config(0.5, 20, normalisation), 1_000_000, |t| t * t);
            assert_eq!(out.rounds, 20);
            assert_eq!(out.value.to_bits(), out.hi.to_bits());
            assert!((out.hi - out.lo - 2f64.powi(-20)).abs() < 1e-18);
            assert!(out.lo <= 0.5f64.sqrt() + 1e-6 && 0.5f64.sqrt() <= out.hi + 1e-6);
        }
    }

    #[test]
    fn reports_at_or_below_the_split() {
        let query = ThresholdQuery {
            round: 1,
            threshold: 0.5,
            mechanism: config(0.5, 1, Normalisation::Released).per_round,
        };
        assert_eq!(query.report(0.5), ThresholdQuery::AT_OR_BELOW);
        assert_eq!(query.report(0.25), ThresholdQuery::AT_OR_BELOW);
        assert_eq!(query.report(0.5f64.next_up()), ThresholdQuery::ABOVE);
        assert_eq!(query.report(f64::NAN), ThresholdQuery::ABOVE);
    }

    #[test]
    fn suppressed_buckets_count_zero() {
        // Every value is at 0.9: the upper bucket is suppressed while the split is above it.
        let out = search(config(0.5, 10, Normalisation::Released), 1000, |t| {
            if t >= 0.9 { 1.0 } else { 0.0 }
        });
        assert!(out.lo < 0.9 && 0.9 <= out.hi, "{out:?}");
        // Too few clients for either bucket: no information, the search walks up.
        let out = search(config(0.5, 4, Normalisation::Released), 30, |_| 0.5);
        assert_eq!(out.value.to_bits(), 1.0_f64.to_bits());
    }

    #[test]
    fn guarantees_compose_over_all_rounds() {
        let c = config(0.5, 10, Normalisation::Released);
        let one = BinarySearchQuantile::new(c.clone()).unwrap();
        let per_round = c.per_round.guarantee().clone();
        assert!((one.guarantee().epsilon - 10.0 * per_round.epsilon).abs() < 1e-12);
        let three = c.guarantee_of(3).unwrap();
        assert!((three.epsilon - 30.0 * per_round.epsilon).abs() < 1e-12);
        assert!(three.delta >= 30.0 * per_round.delta);
        assert!(c.guarantee_of(0).is_err());
    }

    #[test]
    fn configurations_validate() {
        let bad = |c: BinarySearchConfig| BinarySearchQuantile::new(c).is_err();
        assert!(bad(config(1.5, 10, Normalisation::Released)));
        assert!(bad(config(f64::NAN, 10, Normalisation::Released)));
        assert!(bad(config(0.5, 0, Normalisation::Released)));
        assert!(bad(config(0.5, 53, Normalisation::Released)));
        assert!(bad(config(0.5, 10, Normalisation::PopulationSize(0))));
        assert!(!bad(config(0.5, 52, Normalisation::Released)));
    }
}
