//! Single-message shuffle histogram: generalized randomized response (k-RR) whose reports are
//! shuffled (docs/algorithms.md §5.8, "B-ary randomized response"), with the local `ε₀` solved
//! numerically by the amplification-by-shuffling accountant of §8.
//!
//! Each client sends one [`Grr`] report at local `ε₀`; the analyst sees the shuffled multiset of
//! the `n` reports and debiases the per-item counts with GRR's unbiased estimator
//! ([`Grr::aggregator`]). `ε₀` is the largest local ε for which [`max_local_epsilon`] proves the
//! shuffled reports `(ε, δ)`-DP: the paper's `ε_L = ln(n/ln(1/δ)) + 2 ln ε + O(1)` has an
//! unspecified constant, so it is solved instead (§5.8).
//!
//! As a round ([`ShuffledGrr::round`]) each device sends its GRR report at `ε₀`, the shuffler
//! permutes the reports and the analyzer debiases their counts.
//!
//! # Privacy
//!
//! `(ε, δ)`-DP for replace-one neighbours in the shuffle model (the adversary sees the shuffled
//! reports of all `n` clients), by the chosen [`ShuffleBound`]; each single report is also
//! `ε₀`-LDP (pure, replace-one, local model), stated by
//! [`local_guarantee`](DomainHistogram::local_guarantee).
//!
//! The amplification theorems need only that every client's randomizer is `ε₀`-LDP, for any
//! output space, which GRR is for every domain size (its keep probability is rounded so that
//! the ratio is provably at most `e^{ε₀}`; see [`crate::ldp`]):
//!
//! * [`ShuffleBound::Fmt21`] and [`ShuffleBound::ClosedForm`] (Feldman–McMillan–Talwar 2021,
//!   Theorems 3.1–3.2) hold for any `ε₀`-LDP randomizer, adaptively chosen per client.
//! * [`ShuffleBound::Fmt23`] (the default) uses the "stronger clone" probability
//!   `2/(e^{ε₀}+1)`; that this worst case covers every `ε₀`-LDP randomizer rests on a
//!   monotonicity claim of FMT23 and Wang et al. that was not verified here (docs/algorithms.md
//!   §8.1 caveat). For GRR on `k > 2` items the clone decomposition of §8.1 has
//!   `α = TV/(e^{ε₀}−1) = 1/(e^{ε₀}+k−1) < 1/(e^{ε₀}+1)`, which is exactly where that claim is
//!   needed; for `k = 2` (binary randomized response) the pair is exact. Pick
//!   [`ShuffleBound::Fmt21`] for the code-backed conservative bound.

use rand::Rng;
use rand_chacha::ChaCha20Rng;
use tally_accounting::shuffle::{ShuffleBound, grr_collusion, max_local_epsilon};
use tally_accounting::{Collusion, ErrorLaw, Guarantee, Neighbours, TrustModel};

use crate::Error;
use crate::histogram::{DomainHistogram, DomainMap, MessageCost, check_map};
use crate::ldp::{Grr, GrrAggregator};
use crate::protocol::wire::BoundedDomainQuery;
use crate::protocol::{
    CountedRound, DeviceQuery, DomainRound, Estimates, RoundProtocol, WireReport,
};

/// Shuffled k-RR over the domain `0..k` for a fixed number of clients `n`.
#[derive(Clone, Debug, PartialEq)]
pub struct ShuffledGrr {
    grr: Grr,
    epsilon: f64,
    delta: f64,
    users: u64,
    bound: ShuffleBound,
}

impl ShuffledGrr {
    /// The mechanism for `n` clients over `domain = k ≥ 2` items, at the replace-one
    /// shuffle-model target `(epsilon, delta)`, with the local `ε₀` solved by `bound`.
    ///
    /// # Errors
    ///
    /// [`Error::Accounting`] if the accountant rejects `(epsilon, n, delta)` (`epsilon ∉
    /// (0, 50]`, `n ∉ [2, 10^7]`, `delta ∉ (0, 1)`); [`Error::InvalidParameter`] if `k < 2`.
    pub fn new(
        domain: u32,
        epsilon: f64,
        delta: f64,
        n: u64,
        bound: ShuffleBound,
    ) -> Result<Self, Error> {
        let local_epsilon = max_local_epsilon(epsilon, n, delta, bound)?;
        Ok(Self {
            grr: Grr::new(domain, local_epsilon)?,
            epsilon,
            delta,
            users: n,
            bound,
        })
    }

    /// The local randomizer (at `ε₀`).
    pub fn randomizer(&self) -> &Grr {
        &self.grr
    }

    /// The local `ε₀` every report satisfies.
    pub fn local_epsilon(&self) -> f64 {
        self.grr.epsilon()
    }

    /// The number of clients `n` the mechanism is calibrated for.
    pub fn users(&self) -> u64 {
        self.users
    }

    /// The amplification bound used to solve `ε₀`.
    pub fn bound(&self) -> ShuffleBound {
        self.bound
    }

    /// The mechanism as a round over `map`'s domain: devices send their GRR report at `ε₀`,
    /// the analyzer releases GRR's unbiased count estimates.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `map`'s domain is not the mechanism's.
    pub fn round(&self, map: DomainMap) -> Result<ShuffledGrrRound, Error> {
        check_map(self.grr.domain(), map)?;
        Ok(ShuffledGrrRound {
            grr: self.grr.clone(),
            map,
        })
    }
}

impl DomainHistogram for ShuffledGrr {
    fn name(&self) -> &'static str {
        "shuffled-grr"
    }

    fn domain(&self) -> u32 {
        self.grr.domain()
    }

    fn guarantee(&self) -> Guarantee {
        Guarantee {
            epsilon: self.epsilon,
            delta: self.delta,
            neighbours: Neighbours::ReplaceOne,
            model: TrustModel::Shuffle,
            analysis: format!(
                "shuffled GRR at local ε₀ = {}, amplification by shuffling ({}) over {} clients",
                self.local_epsilon(),
                self.bound,
                self.users
            ),
        }
    }

    fn local_guarantee(&self) -> Option<Guarantee> {
        Some(self.grr.guarantee())
    }

    fn collusion(&self, colluding_fraction: f64) -> Result<Option<Collusion>, Error> {
        Ok(Some(grr_collusion(
            self.local_epsilon(),
            self.users,
            (self.epsilon, self.delta),
            self.bound,
            colluding_fraction,
        )?))
    }

    fn message_cost(&self) -> Option<MessageCost> {
        Some(MessageCost {
            messages_per_client: 1.0,
            bits_per_message: u64::from(u32::BITS - (self.grr.domain() - 1).leading_zeros()),
        })
    }

    /// GRR's de-biased support count at the local `ε₀`.
    fn error_law(&self, clients: u64, count: u64) -> Option<ErrorLaw> {
        Some(self.grr.support_probabilities().error_law(clients, count))
    }
}

/// Shuffled GRR as a round, which is also its query: the public domain and the local
/// randomizer at `ε₀`.
#[derive(Clone, Debug, PartialEq)]
pub struct ShuffledGrrRound {
    grr: Grr,
    map: DomainMap,
}

impl ShuffledGrrRound {
    /// The round over `map`'s domain with GRR at local `ε₀ = local_epsilon`, as a device
    /// rebuilds it from what the server publishes.
    ///
    /// # Errors
    ///
    /// As [`Grr::new`] on the domain's size.
    pub fn new(map: DomainMap, local_epsilon: f64) -> Result<Self, Error> {
        Ok(Self {
            grr: Grr::new(map.size(), local_epsilon)?,
            map,
        })
    }

    /// The public domain.
    pub fn map(&self) -> DomainMap {
        self.map
    }

    /// The local `ε₀` of every report.
    pub fn local_epsilon(&self) -> f64 {
        self.grr.epsilon()
    }
}

impl DeviceQuery for ShuffledGrrRound {
    type Input = u32;
    type Report = u32;

    fn trust(&self) -> TrustModel {
        TrustModel::Shuffle
    }

    /// The item randomized by GRR at `ε₀`; `None` outside the domain.
    fn respond<R: Rng + ?Sized>(&self, item: &u32, rng: &mut R) -> Option<u32> {
        (*item < self.map.size()).then(|| self.grr.randomize(*item, rng))
    }

    fn admits(&self, report: &u32) -> bool {
        *report < self.map.size()
    }
}

/// One element, at most as long as the largest.
impl BoundedDomainQuery for ShuffledGrrRound {
    fn domain_map(&self) -> DomainMap {
        self.map
    }

    fn longest_report(&self) -> u64 {
        (self.map.size() - 1).encode().len() as u64
    }
}

/// Its devices hold a domain element; its release is every element's estimate.
impl DomainRound for ShuffledGrrRound {
    fn estimates(Estimates(estimates): Estimates) -> Vec<f64> {
        estimates
    }
}

impl CountedRound for ShuffledGrrRound {}

impl RoundProtocol for ShuffledGrrRound {
    type Query = Self;
    type Release = Estimates;
    type Aggregator = GrrAggregator;

    fn query(&self) -> &Self {
        self
    }

    /// The analyzer flips no coins.
    fn aggregator(&self, _: ChaCha20Rng) -> GrrAggregator {
        self.grr.aggregator()
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;
    use crate::protocol::RoundAggregator;

    #[test]
    fn the_round_randomizes_on_the_device_and_debiases_in_the_analyzer() {
        let mechanism = ShuffledGrr::new(4, 1.0, 1e-6, 1000, ShuffleBound::Fmt21).unwrap();
        let round = mechanism.round(DomainMap::Integers(4)).unwrap();
        assert_eq!(DeviceQuery::trust(&round), TrustModel::Shuffle);
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let mut direct = mechanism.randomizer().aggregator();
        let mut counts = round.aggregator(ChaCha20Rng::seed_from_u64(0));
        let mut same = ChaCha20Rng::seed_from_u64(1);
        for i in 0..1000_u32 {
            let report = DeviceQuery::respond(&round, &(i % 2), &mut rng).unwrap();
            assert!(round.admits(&report));
            assert_eq!(report, mechanism.randomizer().randomize(i % 2, &mut same));
            direct.absorb(&report).unwrap();
            RoundAggregator::absorb(&mut counts, report);
        }
        assert_eq!(counts.release(), Estimates(direct.estimate()));
        assert!(!round.admits(&4));
        assert_eq!(DeviceQuery::respond(&round, &4, &mut rng), None);
        let rebuilt = ShuffledGrrRound::new(round.map(), round.local_epsilon()).unwrap();
        assert_eq!(rebuilt, round);
        assert!(mechanism.round(DomainMap::Integers(5)).is_err());
        let responder: &dyn crate::protocol::wire::DeviceResponder = &round;
        assert!(responder.respond("3", 1, &mut rng).is_some());
        assert_eq!(responder.respond("3", 0, &mut rng), None);
        assert_eq!(responder.respond("4", 1, &mut rng), None);
    }
}
