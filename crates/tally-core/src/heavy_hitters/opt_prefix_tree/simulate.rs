//! The device side of OptPrefixTree and the summation that stands in for secure aggregation,
//! simulated over an in-memory population of users holding multisets of words.
//!
//! Two simulation paths produce the sum vector the server sees ([`AggregationPath`]):
//!
//! * [`AggregationPath::PerReport`]: every device draws its full one-hot + RR report with
//!   [`UnaryRandomizer::randomize`], and the reports are summed. Cost `n·|D_t|` coins.
//! * [`AggregationPath::Binomial`] (default): the bits of all reports are independent, so the
//!   sum at element `d` is `Y_d = Bin(c_d, p) + Bin(n − c_d, q)`, independently across `d`,
//!   where `c_d` devices selected `d`. Drawing that directly with [`exact_binomial`] is *equal
//!   in distribution* to summing the reports (not an approximation), and costs about
//!   `n·q·|D_t| + Σ_d c_d·min(p, 1−p)` geometric gaps instead of `n·|D_t|` coins.
//!
//! Both are deterministic for a seed regardless of the number of threads: devices are split
//! into fixed chunks, each with its own ChaCha stream (`crate::parallel`), and elements too.

use rand::Rng;
use rayon::prelude::*;

use super::{IterationQuery, IterationSums};
use crate::Error;
use crate::ldp::UnaryRandomizer;
use crate::parallel::{CLIENTS_PER_CHUNK, chunk_rng, draw_key};
use crate::sampling::{exact_binomial, uniform_below};

use std::fmt;
use std::str::FromStr;

/// Users holding multisets of items: user `u` holds the distinct items
/// `items[offsets[u]..offsets[u+1]]`, item `items[j]` with multiplicity `multiplicities[j]`.
#[derive(Clone, Copy, Debug)]
pub struct Users<'a> {
    offsets: &'a [usize],
    items: &'a [u32],
    multiplicities: &'a [u32],
}

impl<'a> Users<'a> {
    /// Checks and wraps the three arrays.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `offsets` starts at 0, never decreases and ends at
    /// `items.len() == multiplicities.len()`, and every multiplicity is at least 1.
    pub fn new(
        offsets: &'a [usize],
        items: &'a [u32],
        multiplicities: &'a [u32],
    ) -> Result<Self, Error> {
        let ok = offsets.first() == Some(&0)
            && offsets.windows(2).all(|w| w[0] <= w[1])
            && offsets.last() == Some(&items.len())
            && items.len() == multiplicities.len()
            && multiplicities.iter().all(|&m| m >= 1);
        if !ok {
            return Err(Error::invalid(
                "users",
                "inconsistent arrays",
                "offsets from 0 to the item count, multiplicities ≥ 1",
            ));
        }
        Ok(Self {
            offsets,
            items,
            multiplicities,
        })
    }

    /// The number of users.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Whether there are no users.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// User `u`'s distinct items and their multiplicities.
    pub fn user(&self, u: usize) -> (&'a [u32], &'a [u32]) {
        let range = self.offsets[u]..self.offsets[u + 1];
        (&self.items[range.clone()], &self.multiplicities[range])
    }
}

/// The data-selection rule a device uses to pick one eligible data point (ALGORITHMS.md §6.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Selection {
    /// Uniformly over the distinct eligible data points (the *support*); the paper's choice.
    #[default]
    UniformSupport,
    /// Proportionally to multiplicity (the user's empirical distribution).
    Weighted,
}

impl Selection {
    /// The name used on the command line and in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Self::UniformSupport => "uniform-support",
            Self::Weighted => "weighted",
        }
    }

    /// Picks one of the `eligible` data points, given as `(element, multiplicity)` pairs with
    /// one pair per distinct data point (two data points may share an element, their common
    /// prefix), and returns its element; `None` when nothing is eligible (the device then
    /// reports `⊥`). Exactly uniform (no modulo bias).
    pub fn choose<R: Rng + ?Sized>(self, eligible: &[(u32, u32)], rng: &mut R) -> Option<u32> {
        if eligible.is_empty() {
            return None;
        }
        match self {
            Self::UniformSupport => {
                let pick = uniform_below(eligible.len() as u64, rng);
                // Unwrap safety: pick < eligible.len().
                Some(eligible[usize::try_from(pick).expect("index")].0)
            }
            Self::Weighted => {
                let total: u64 = eligible.iter().map(|&(_, m)| u64::from(m)).sum();
                let mut pick = uniform_below(total, rng);
                for &(element, m) in eligible {
                    if pick < u64::from(m) {
                        return Some(element);
                    }
                    pick -= u64::from(m);
                }
                unreachable!("pick < total")
            }
        }
    }
}

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Selection {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        [Self::UniformSupport, Self::Weighted]
            .into_iter()
            .find(|sel| sel.name() == s)
            .ok_or_else(|| Error::invalid("selection", s, "uniform-support or weighted"))
    }
}

/// How the simulator produces the sum of the reports (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AggregationPath {
    /// Draw every device's full report and sum them.
    PerReport,
    /// Draw each element's sum directly as two exact binomials (equal in distribution).
    #[default]
    Binomial,
}

/// Which element each user reports in the iteration of `query`: the number of users per
/// element of `D_t` (`⊥` last). `item_slots[i]` is the element item `i` would be reported as,
/// or `u32::MAX` when it is not eligible.
fn for_each_choice(
    query: &IterationQuery,
    users: Users<'_>,
    item_slots: &[u32],
    key: [u8; 32],
    mut on_choice: impl FnMut(u32, &mut rand_chacha::ChaCha20Rng),
    chunk: usize,
) {
    let mut rng = chunk_rng(key, chunk);
    let start = chunk * CLIENTS_PER_CHUNK;
    let end = (start + CLIENTS_PER_CHUNK).min(users.len());
    let mut eligible = Vec::new();
    for u in start..end {
        let (items, multiplicities) = users.user(u);
        eligible.clear();
        eligible.extend(items.iter().zip(multiplicities).filter_map(|(&i, &m)| {
            let slot = item_slots[i as usize];
            (slot != u32::MAX).then_some((slot, m))
        }));
        let element = query
            .selection
            .choose(&eligible, &mut rng)
            .unwrap_or_else(|| query.bottom());
        on_choice(element, &mut rng);
    }
}

/// Runs one iteration over `users`: every device selects and reports (a device with nothing
/// eligible reports `⊥`), and the reports are summed. `item_slots` maps each item id to the
/// element it would be reported as ([`IterationQuery::item_slots`]).
pub fn simulate_iteration(
    query: &IterationQuery,
    users: Users<'_>,
    item_slots: &[u32],
    path: AggregationPath,
    rng: &mut dyn Rng,
) -> IterationSums {
    let size = query.domain_size() as usize;
    let chunks = users.len().div_ceil(CLIENTS_PER_CHUNK);
    let key = draw_key(rng);
    let randomizer: &UnaryRandomizer = &query.randomizer;
    let add = |mut a: Vec<u64>, b: Vec<u64>| {
        for (x, y) in a.iter_mut().zip(b) {
            *x += y;
        }
        a
    };
    let sums = match path {
        AggregationPath::PerReport => (0..chunks)
            .into_par_iter()
            .fold(
                || vec![0u64; size],
                |mut sums, chunk| {
                    for_each_choice(
                        query,
                        users,
                        item_slots,
                        key,
                        |element, rng| {
                            for bit in randomizer.randomize(element, rng).ones() {
                                sums[bit as usize] += 1;
                            }
                        },
                        chunk,
                    );
                    sums
                },
            )
            .reduce(|| vec![0u64; size], add),
        AggregationPath::Binomial => {
            let counts = (0..chunks)
                .into_par_iter()
                .fold(
                    || vec![0u64; size],
                    |mut counts, chunk| {
                        for_each_choice(
                            query,
                            users,
                            item_slots,
                            key,
                            |element, _| {
                                counts[element as usize] += 1;
                            },
                            chunk,
                        );
                        counts
                    },
                )
                .reduce(|| vec![0u64; size], add);
            let element_key = draw_key(rng);
            let support = randomizer.support_probabilities();
            let n = users.len() as u64;
            let mut sums = vec![0u64; size];
            sums.par_chunks_mut(CLIENTS_PER_CHUNK)
                .zip(counts.par_chunks(CLIENTS_PER_CHUNK))
                .enumerate()
                .for_each(|(chunk, (out, counts))| {
                    let mut rng = chunk_rng(element_key, chunk);
                    for (y, &c) in out.iter_mut().zip(counts) {
                        *y = exact_binomial(c, support.p, &mut rng)
                            + exact_binomial(n - c, support.q, &mut rng);
                    }
                });
            sums
        }
    };
    IterationSums {
        sums,
        reports: users.len() as u64,
    }
}
