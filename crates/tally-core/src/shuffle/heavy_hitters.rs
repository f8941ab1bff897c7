//! Heavy hitters through a prefix tree of Count-Min oracles: Appendix D of Ghazi, Golowich,
//! Kumar, Pagh and Velingker (arXiv 1908.11358v4; ALGORITHMS.md §5.6).
//!
//! The domain is `0..2^L`. Level `i = 1…L` runs one frequency oracle over `0..2^i` on the
//! length-`i` binary prefixes `x >> (L − i)` of the users' items, each at `(ε/L, δ/L)`
//! ([`tally_accounting::ghazi::heavy_hitter_levels`]). Decoding goes level by level: keep the
//! prefixes whose estimate is at least `τ_HH/2`, and at the next level query only the two
//! children of each survivor. The paper's sketch assumes the oracle's error is at most
//! `τ_HH/2`; it gives no further constants.

use rand::Rng;
use tally_accounting::Guarantee;
use tally_accounting::composition::compose_basic;
use tally_accounting::ghazi::{DEFAULT_COUNT_MIN_BETA, heavy_hitter_levels};

use super::ghazi_count_min::GhaziCountMin;
use super::range_tree::FrequencyOracle;
use crate::Error;

/// The prefix-tree heavy-hitter protocol.
///
/// # Privacy
///
/// Each level's oracle is `(ε/L, δ/L)`-DP in the shuffle model for replace-one neighbours
/// (Lemma 4.10 for Count-Min), and every user takes part in all `L` levels, so the release is
/// `(ε, δ)`-DP by basic composition ([`guarantee`](Self::guarantee) composes the levels'
/// guarantees with [`compose_basic`]).
pub struct ShuffleHeavyHitters {
    levels: Vec<Box<dyn FrequencyOracle>>,
    threshold: f64,
}

impl std::fmt::Debug for ShuffleHeavyHitters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShuffleHeavyHitters")
            .field("levels", &self.levels.len())
            .field("threshold", &self.threshold)
            .finish_non_exhaustive()
    }
}

impl ShuffleHeavyHitters {
    /// Count-Min oracles ([`GhaziCountMin`], `β` = [`DEFAULT_COUNT_MIN_BETA`]) over
    /// `0..2^domain_bits` for `users` users at a total `(ε, δ)`, reporting the items with
    /// estimate at least `threshold / 2` (`threshold` = `τ_HH`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] for `domain_bits` outside `1..=31` or a threshold that is
    /// not positive; [`Error::Accounting`] for what the level oracles reject (Count-Min needs
    /// many users at `ε/L`: the message states how many).
    pub fn new(
        domain_bits: u32,
        epsilon: f64,
        delta: f64,
        users: u64,
        threshold: f64,
    ) -> Result<Self, Error> {
        if !(1..=31).contains(&domain_bits) {
            return Err(Error::invalid(
                "domain bits",
                domain_bits,
                "an integer in [1, 31]",
            ));
        }
        let (eps_level, delta_level) =
            heavy_hitter_levels(epsilon, delta, u64::from(domain_bits))?.per_level;
        let levels = (1..=domain_bits)
            .map(|i| {
                GhaziCountMin::new(
                    users,
                    1 << i,
                    1,
                    eps_level,
                    delta_level,
                    DEFAULT_COUNT_MIN_BETA,
                )
                .map(|o| Box::new(o) as Box<dyn FrequencyOracle>)
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Self::with_oracles(levels, threshold)
    }

    /// The protocol on given level oracles: oracle `i − 1` must have domain `2^i` and accept
    /// single items.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] for no oracles, an oracle of the wrong shape or a threshold
    /// that is not positive and finite.
    pub fn with_oracles(
        levels: Vec<Box<dyn FrequencyOracle>>,
        threshold: f64,
    ) -> Result<Self, Error> {
        if levels.is_empty() || levels.len() > 31 {
            return Err(Error::invalid("levels", levels.len(), "1 to 31 oracles"));
        }
        for (i, o) in levels.iter().enumerate() {
            if o.domain() != 2 << i || o.set_size() < 1 {
                return Err(Error::invalid(
                    "level oracle domain",
                    o.domain(),
                    "2^i at level i",
                ));
            }
        }
        if !(threshold.is_finite() && threshold > 0.0) {
            return Err(Error::invalid(
                "threshold",
                threshold,
                "a finite number > 0",
            ));
        }
        Ok(Self { levels, threshold })
    }

    /// The domain size `2^L`.
    pub fn domain(&self) -> u32 {
        2 << (self.levels.len() - 1)
    }

    /// The basic composition of the levels' guarantees.
    ///
    /// # Panics
    ///
    /// Never for oracles built by this crate (their `(ε, δ)` are valid).
    pub fn guarantee(&self) -> Guarantee {
        let per: Vec<Guarantee> = self.levels.iter().map(|o| o.guarantee()).collect();
        let costs: Vec<(f64, f64)> = per.iter().map(|g| (g.epsilon, g.delta)).collect();
        let (epsilon, delta) = compose_basic(&costs).expect("valid level guarantees");
        Guarantee {
            epsilon,
            delta,
            neighbours: per[0].neighbours,
            model: per[0].model,
            analysis: format!(
                "{}; basic composition over {} prefix levels (GGKPV Appendix D)",
                per[0].analysis,
                per.len()
            ),
        }
    }

    /// The expected number of messages per user summed over the levels, and the largest
    /// message size in bits.
    pub fn message_cost(&self) -> (f64, u64) {
        self.levels.iter().fold((0.0, 0), |(m, b), o| {
            let c = o.message_cost();
            (m + c.messages_per_client, b.max(c.bits_per_message))
        })
    }

    /// Runs all levels on the users' items (one each, below `2^L`; exactly the `n` the
    /// oracles were set up for) and decodes: the items whose final-level estimate is at least
    /// `τ_HH/2`, with their estimates, in increasing order.
    ///
    /// # Panics
    ///
    /// If an item is outside the domain or the number of users is wrong.
    pub fn run(&self, items: &[u32], rng: &mut dyn Rng) -> Vec<(u32, f64)> {
        let depth = self.levels.len() as u32;
        for &x in items {
            assert!(x < self.domain(), "item {x} is outside the domain");
        }
        let keep = self.threshold / 2.0;
        let mut survivors = vec![0u32]; // the empty prefix
        let mut found = Vec::new();
        for (i, oracle) in self.levels.iter().enumerate() {
            let shift = depth - 1 - i as u32;
            let answers = oracle.collect(
                items.len(),
                &|u, out: &mut Vec<u32>| {
                    out.clear();
                    out.push(items[u] >> shift);
                },
                rng,
            );
            found = survivors
                .iter()
                .flat_map(|&p| [2 * p, 2 * p + 1])
                .map(|c| (c, answers.estimate(c)))
                .filter(|&(_, e)| e >= keep)
                .collect();
            survivors = found.iter().map(|&(c, _)| c).collect();
        }
        found
    }
}
