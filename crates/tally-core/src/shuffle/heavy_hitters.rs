//! Heavy hitters through a prefix tree of Count-Min oracles: Appendix D of Ghazi, Golowich,
//! Kumar, Pagh and Velingker (arXiv 1908.11358v4; docs/algorithms.md §5.6).
//!
//! The domain is `0..2^L`. Level `i = 1…L` runs one frequency oracle over `0..2^i` on the
//! length-`i` binary prefixes `x >> (L − i)` of the users' items, each at `(ε/L, δ/L)`
//! ([`tally_accounting::ghazi::heavy_hitter_levels`]). Decoding goes level by level: keep the
//! prefixes whose estimate is at least `τ_HH/2`, and at the next level query only the two
//! children of each survivor. The paper's sketch assumes the oracle's error is at most
//! `τ_HH/2`; it gives no further constants.

use rand::Rng;
use tally_accounting::composition::compose_basic;
use tally_accounting::ghazi::heavy_hitter_levels;
use tally_accounting::{Collusion, Guarantee};

use super::ghazi_count_min::{CountMinHashes, CountMinRound, GhaziCountMin};
use super::prefix_level::{PrefixLevelRound, check_domain_bits};
use super::set_oracle::SetOracleRound;
use crate::Error;
use crate::histogram::DomainMap;
use crate::protocol::Estimates;
use crate::task::Task;

/// The prefix-tree heavy-hitter protocol: a task of `L` Count-Min rounds, round `i`
/// ([`PrefixLevelRound`]) over the length-`i` prefixes ([`prefix`](Self::prefix)) of the
/// devices' items, every device answering every round; once every level released, the task's
/// output is the decoded heavy hitters ([`decode`](Self::decode)).
///
/// # Privacy
///
/// Each level's round is `(ε/L, δ/L)`-DP in the shuffle model for replace-one neighbours
/// (Lemma 4.10 for Count-Min), and every device takes part in all `L` levels, so the release is
/// `(ε, δ)`-DP by basic composition ([`guarantee`](Self::guarantee), composed with
/// [`compose_basic`] when the protocol is built). The levels' queries are fixed at build time
/// (the decoding reads the releases only at the end), so no level's query depends on an
/// earlier release.
#[derive(Clone, Debug)]
pub struct ShuffleHeavyHitters {
    levels: Vec<PrefixLevelRound<CountMinRound>>,
    threshold: f64,
    guarantee: Guarantee,
    /// The releases observed so far, level `i` at index `i − 1`.
    released: Vec<Vec<f64>>,
}

impl ShuffleHeavyHitters {
    /// Count-Min rounds ([`GhaziCountMin`], accuracy failure probability `beta`, which sets
    /// each level's number of hash rows;
    /// [`tally_accounting::ghazi::DEFAULT_COUNT_MIN_BETA`] is the usual choice) over
    /// `0..2^domain_bits` for `users` devices at a total `(ε, δ)`, with public hash functions
    /// drawn from `public_coins` (level 1's first), reporting the items with estimate at least
    /// `threshold / 2` (`threshold` = `τ_HH`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] for `domain_bits` outside `1..=31` or a threshold that is
    /// not positive; [`Error::Accounting`] for what the level oracles reject (Count-Min needs
    /// many users at `ε/L`: the message states how many).
    #[allow(clippy::too_many_arguments)] // the protocol's parameters, each its own
    pub fn new(
        domain_bits: u32,
        epsilon: f64,
        delta: f64,
        beta: f64,
        users: u64,
        threshold: f64,
        public_coins: &mut dyn Rng,
    ) -> Result<Self, Error> {
        check_domain_bits(domain_bits)?;
        if !(threshold.is_finite() && threshold > 0.0) {
            return Err(Error::invalid(
                "threshold",
                threshold,
                "a finite number > 0",
            ));
        }
        let (eps_level, delta_level) =
            heavy_hitter_levels(epsilon, delta, u64::from(domain_bits))?.per_level;
        let levels = (1..=domain_bits)
            .map(|i| {
                let oracle = GhaziCountMin::new(users, 1 << i, 1, eps_level, delta_level, beta)?;
                let hashes = CountMinHashes::draw(oracle.params(), public_coins);
                PrefixLevelRound::new(
                    i,
                    domain_bits,
                    oracle.round(DomainMap::Integers(1 << i), hashes)?,
                )
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let per: Vec<Guarantee> = levels.iter().map(|l| l.oracle().guarantee()).collect();
        let costs: Vec<(f64, f64)> = per.iter().map(|g| (g.epsilon, g.delta)).collect();
        let (epsilon, delta) = compose_basic(&costs)?;
        let guarantee = Guarantee {
            epsilon,
            delta,
            neighbours: per[0].neighbours,
            model: per[0].model,
            analysis: format!(
                "{}; basic composition over {} prefix levels (GGKPV Appendix D)",
                per[0].analysis,
                per.len()
            ),
        };
        Ok(Self {
            levels,
            threshold,
            guarantee,
            released: Vec::new(),
        })
    }

    /// The rounds, level `i` (over `0..2^i`) at index `i − 1`.
    pub fn levels(&self) -> &[PrefixLevelRound<CountMinRound>] {
        &self.levels
    }

    /// The domain size `2^L`.
    pub fn domain(&self) -> u32 {
        2 << (self.levels.len() - 1)
    }

    /// The threshold `τ_HH`.
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// The estimate at which a prefix is kept at each level: `τ_HH/2`.
    pub fn kept_at(&self) -> f64 {
        kept_at(self.threshold)
    }

    /// What a device holding `item` answers at level `level` (1…L): its length-`level` prefix.
    pub fn prefix(&self, item: u32, level: u32) -> u32 {
        item >> (self.levels.len() as u32 - level)
    }

    /// The basic composition of the levels' guarantees.
    pub fn guarantee(&self) -> &Guarantee {
        &self.guarantee
    }

    /// The basic composition of the levels' guarantees when a fraction `colluding_fraction`
    /// of the devices colludes with the analyst ([`Collusion::compose_basic`], as
    /// [`Self::guarantee`] composes them without collusion).
    ///
    /// # Errors
    ///
    /// As [`SetOracleRound::collusion`].
    pub fn collusion(&self, colluding_fraction: f64) -> Result<Collusion, Error> {
        let levels = self
            .levels
            .iter()
            .map(|level| level.oracle().collusion(colluding_fraction))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Collusion::compose_basic(&levels)?)
    }

    /// The expected number of messages per device summed over the levels, and the largest
    /// message size in bits.
    pub fn message_cost(&self) -> (f64, u64) {
        self.levels.iter().fold((0.0, 0), |(m, b), round| {
            let c = round.oracle().message_cost();
            (m + c.messages_per_client, b.max(c.bits_per_message))
        })
    }

    /// Decodes the levels' releases (`estimates[i − 1]`, every prefix's estimate at level
    /// `i`) level by level: the items whose final-level estimate is at least `τ_HH/2` and
    /// whose every prefix's was, with their estimates, in increasing order.
    ///
    /// # Panics
    ///
    /// Unless there is one release per level, each with one estimate per prefix.
    pub fn decode(&self, estimates: &[Vec<f64>]) -> Vec<(u32, f64)> {
        decode_levels(estimates, self.threshold)
    }
}

/// The levels in order, then the decoded heavy hitters.
impl Task for ShuffleHeavyHitters {
    type Query = PrefixLevelRound<CountMinRound>;
    type Release = Estimates;
    type Output = Vec<(u32, f64)>;

    fn next_query(&mut self) -> Option<PrefixLevelRound<CountMinRound>> {
        self.levels.get(self.released.len()).cloned()
    }

    fn observe(&mut self, Estimates(estimates): Estimates) {
        self.released.push(estimates);
    }

    /// # Panics
    ///
    /// If some level's release was not observed.
    fn finish(self) -> Vec<(u32, f64)> {
        self.decode(&self.released)
    }

    fn guarantee(&self) -> &Guarantee {
        &self.guarantee
    }
}

/// The estimate at which a prefix is kept at threshold `τ_HH`: `τ_HH/2`.
fn kept_at(threshold: f64) -> f64 {
    threshold / 2.0
}

/// [`ShuffleHeavyHitters::decode`] at threshold `τ_HH`: keep the prefixes whose estimate is at
/// least `τ_HH/2`, and at the next level look only at the two children of each survivor.
///
/// # Panics
///
/// Unless `estimates[i]` has `2^{i+1}` entries.
pub fn decode_levels(estimates: &[Vec<f64>], threshold: f64) -> Vec<(u32, f64)> {
    let keep = kept_at(threshold);
    let mut survivors = vec![0u32]; // the empty prefix
    let mut found = Vec::new();
    for (i, level) in estimates.iter().enumerate() {
        assert_eq!(
            level.len(),
            2 << i,
            "one estimate per prefix of level {}",
            i + 1
        );
        found = survivors
            .iter()
            .flat_map(|&p| [2 * p, 2 * p + 1])
            .map(|c| (c, level[c as usize]))
            .filter(|&(_, e)| e >= keep)
            .collect();
        survivors = found.iter().map(|&(c, _)| c).collect();
    }
    found
}
