//! The simulator of OptPrefixTree: a whole task over an in-memory population of users holding
//! multisets of words, each iteration's reports summed along one of two paths
//! ([`AggregationPath`]):
//!
//! * [`AggregationPath::PerReport`]: the round protocol's own executor, [`run_round`], over
//!   the users' multisets: every device answers the iteration's [`IterationQuery`] (selection,
//!   one-hot, randomized response with its own coins, `n·|D_t|` coins) and the round's
//!   aggregator sums the reports, as the federated server's does.
//! * [`AggregationPath::Binomial`] (default, the declared faster path): the bits of all reports
//!   are independent, so the sum at element `d` is `Y_d = Bin(c_d, p) + Bin(n − c_d, q)`,
//!   independently across `d`, where `c_d` devices selected `d`. Drawing that directly with
//!   [`exact_binomial`] is *equal in distribution* to summing the reports (not an
//!   approximation), and costs about `n·q·|D_t| + Σ_d c_d·min(p, 1−p)` geometric gaps.
//!
//! Both are deterministic for a seed regardless of the number of threads: devices are split
//! into fixed chunks, each with its own ChaCha stream, and elements too.

use crate::parallel::{CLIENTS_PER_CHUNK, chunk_rng, draw_key};
use rand::Rng;
use rayon::prelude::*;
use tally_core::heavy_hitters::{
    IterationQuery, IterationSums, OptPrefixTree, OptPrefixTreeOutput, WordMultiset,
};
use tally_core::sampling::exact_binomial;
use tally_core::task::Task;

use crate::Error;
use crate::round::run_round;

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
    /// [`Error::InconsistentUsers`] unless `offsets` starts at 0, never decreases and ends at
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
            return Err(Error::InconsistentUsers);
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

/// How the simulator produces the sum of the reports (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AggregationPath {
    /// Every device answers the round ([`run_round`]) and the reports are summed.
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

/// The sums of one iteration over `users` along the binomial path: every device selects (a
/// device with nothing eligible selects `⊥`), and each element's sum is drawn as two exact
/// binomials. `item_slots` maps each item id to the element it would be reported as
/// ([`IterationQuery::item_slots`]).
pub fn binomial_iteration(
    query: &IterationQuery,
    users: Users<'_>,
    item_slots: &[u32],
    rng: &mut dyn Rng,
) -> IterationSums {
    let size = query.domain_size() as usize;
    let chunks = users.len().div_ceil(CLIENTS_PER_CHUNK);
    let key = draw_key(rng);
    let add = |mut a: Vec<u64>, b: Vec<u64>| {
        for (x, y) in a.iter_mut().zip(b) {
            *x += y;
        }
        a
    };
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
    let support = query.randomizer.support_probabilities();
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
    IterationSums { sums, reports: n }
}

/// Every user's multiset of words, as a device holds it: the inputs of [`run_round`].
pub fn word_multisets(users: Users<'_>, vocabulary: &[String]) -> Vec<WordMultiset> {
    (0..users.len())
        .map(|u| {
            let (items, multiplicities) = users.user(u);
            WordMultiset::from_counts(
                items
                    .iter()
                    .zip(multiplicities)
                    .map(|(&i, &m)| (vocabulary[i as usize].clone(), m)),
            )
        })
        .collect()
}

/// Simulates a whole OptPrefixTree task over `users`, whose item ids index `vocabulary`, with
/// the reports summed along `path`. Deterministic for the generator's state, whatever the
/// number of threads.
pub fn run_opt_prefix_tree(
    mut task: OptPrefixTree,
    users: Users<'_>,
    vocabulary: &[String],
    path: AggregationPath,
    rng: &mut dyn Rng,
) -> OptPrefixTreeOutput {
    let devices = (path == AggregationPath::PerReport).then(|| word_multisets(users, vocabulary));
    while let Some(query) = task.next_query() {
        let sums = match &devices {
            Some(devices) => run_round(&query, devices, rng.next_u64()),
            None => binomial_iteration(&query, users, &query.item_slots(vocabulary), rng),
        };
        task.observe(sums);
    }
    task.finish()
}
