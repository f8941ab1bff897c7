//! The Balcer–Cheu 2020 histogram protocol `P^hist` (ALGORITHMS.md §7.3; Balcer & Cheu,
//! "Separating Local & Shuffled Differential Privacy via Histograms", ITC 2020, Fig. 2).
//!
//! **Randomizer.** A client holding `x ∈ 0..d` sends the message `x` and, for every cell `j` of
//! the domain, one noise message `j` with probability `p` (independent `Ber(p)` coins), so
//! `1 + d·p` messages of `⌈log2 d⌉` bits in expectation. `p` comes from
//! [`tally_accounting::balcer_cheu`]: the binary-sum noise probability at `(ε/2, δ/2)`.
//!
//! **Analyzer** (the paper's, kept exactly). For each cell `j`, `c*_j = (messages equal to
//! j)/n`; the frequency estimate is `c*_j − p` if `c*_j > 1` and 0 otherwise. As counts
//! ([`DomainHistogram::estimate_counts`]) that is `n·(c*_j − p)` or 0. The estimate is never
//! negative and is exactly 0 for a cell no client holds (its `Bin(n, p)` noise never exceeds
//! `n`), but it is biased towards 0 for small counts; Theorem 3.1 bounds its error
//! ([`tally_accounting::balcer_cheu::BalcerCheu::error_bound`]).
//!
//! **Two execution paths** with the same output distribution (the shuffler's output is the
//! vector of per-cell message counts):
//!
//! * [`run_per_client`](BalcerCheuHistogram::run_per_client) runs every client's randomizer.
//!   Since `p` is close to 1, it draws each client's *absent* noise messages, the cells whose
//!   `Ber(p)` coin fails, as a [`PoissonSampler`] at rate `1 − p` over the domain (geometric gap
//!   skipping, `O(d(1 − p) + 1)` per client), and counts `present = d − absent`. Clients are
//!   split into fixed chunks of [`CLIENTS_PER_CHUNK`] run in parallel with rayon, each on its
//!   own ChaCha20 stream of a key drawn from the caller's generator, so the result does not
//!   depend on the number of threads.
//! * [`run_per_cell`](BalcerCheuHistogram::run_per_cell) draws each cell's count directly:
//!   `#{clients holding j} + Bin(n, p)`, with the exact binomial sampler (which counts the
//!   `Bin(n, 1 − p)` absent messages by gap skipping).
//!
//! # Privacy
//!
//! `(ε, δ)`-DP for replace-one neighbours in the shuffle model (the adversary sees the
//! anonymous multiset of all `n` clients' messages), by Balcer–Cheu Theorem 3.2: with binary
//! sums calibrated at `(ε/2, δ/2)` the histogram is `(ε, δ)` ([`tally_accounting::balcer_cheu`],
//! where `p` is rounded down, i.e. towards more noise). Requires `ε ∈ (0, 2]`, `δ ∈ (0, 1)` and
//! `n ≥ (400/ε²) ln(4/δ)`. Every noise coin is exact: the absent coins are an exact Poisson
//! sampler at rate `1 − p` (exact in `f64` since `p ≥ 1/2`) and the per-cell counts an exact
//! binomial. There is no local guarantee: one client's messages reveal its item (a cell with
//! two messages), so the protection rests entirely on the shuffler.

use rand::Rng;
use rand_distr::Distribution;
use rayon::prelude::*;
use tally_accounting::Guarantee;
use tally_accounting::balcer_cheu::BalcerCheu;

use crate::Error;
use crate::histogram::{DomainHistogram, MessageCost};
use crate::ldp::check_domain;
use crate::parallel;
use crate::sampling::{ExactBinomial, PoissonSampler};

/// The number of clients in one parallel chunk of
/// [`run_per_client`](BalcerCheuHistogram::run_per_client); chunk `k` draws from ChaCha20
/// stream `k`, so results do not depend on the thread count.
pub const CLIENTS_PER_CHUNK: usize = parallel::CLIENTS_PER_CHUNK;

/// The Balcer–Cheu histogram over the domain `0..d` for a fixed number of clients `n`.
#[derive(Clone, Debug, PartialEq)]
pub struct BalcerCheuHistogram {
    domain: u32,
    params: BalcerCheu,
    /// A client's absent noise messages: rate `1 − p` over the domain.
    absent: PoissonSampler,
    /// One cell's noise messages over all clients: `Bin(n, p)`.
    noise: ExactBinomial,
}

impl BalcerCheuHistogram {
    /// The protocol for `n_users` clients over a domain of `domain = d ≥ 2` items, at the
    /// replace-one shuffle-model target `(epsilon, delta)`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `d < 2`; [`Error::Accounting`] unless `epsilon ∈ (0, 2]`,
    /// `delta ∈ (0, 1)` and `n_users ≥ (400/ε²) ln(4/δ)` (see
    /// [`BalcerCheu::histogram`]).
    pub fn new(domain: u32, epsilon: f64, delta: f64, n_users: u64) -> Result<Self, Error> {
        let domain = check_domain(domain)?;
        let params = BalcerCheu::histogram(epsilon, delta, n_users)?;
        let p = params.noise_probability();
        Ok(Self {
            domain,
            // p ∈ [1/2, 1): 1 − p is exact (Sterbenz).
            absent: PoissonSampler::new(1.0 - p)?,
            noise: ExactBinomial::new(n_users, p)?,
            params,
        })
    }

    /// The calibration: target, number of clients and noise probability.
    pub fn params(&self) -> &BalcerCheu {
        &self.params
    }

    /// The noise probability `p` of every cell.
    pub fn noise_probability(&self) -> f64 {
        self.params.noise_probability()
    }

    /// The number of clients `n` the protocol is calibrated for.
    pub fn users(&self) -> u64 {
        self.params.users()
    }

    /// One client's messages for `item`, in increasing order (`item` appears twice when its
    /// own noise coin succeeds). This is the randomizer as a client runs it; the run paths
    /// below compute the same counts without materializing the messages.
    ///
    /// # Panics
    ///
    /// If `item` is not in the domain.
    pub fn randomize<R: Rng + ?Sized>(&self, item: u32, rng: &mut R) -> Vec<u32> {
        assert!(item < self.domain, "item outside the domain");
        let mut messages = Vec::with_capacity(self.domain as usize + 1);
        let mut absent = self.absent.indices(u64::from(self.domain), rng).peekable();
        for j in 0..self.domain {
            if absent.next_if_eq(&u64::from(j)).is_none() {
                messages.push(j);
            }
            if j == item {
                messages.push(j);
            }
        }
        messages
    }

    /// Runs every client's randomizer (in parallel, over fixed chunks of clients) and returns
    /// the shuffler's output as the number of messages equal to each cell.
    ///
    /// # Panics
    ///
    /// If an item is outside the domain or `items.len()` is not the calibrated `n`.
    pub fn run_per_client(&self, items: &[u32], rng: &mut dyn Rng) -> Vec<u64> {
        self.check_items(items);
        let key = parallel::draw_key(rng);
        let d = self.domain as usize;
        // Per cell: real messages minus absent noise messages; the count is n + that.
        let net = items
            .par_chunks(CLIENTS_PER_CHUNK)
            .enumerate()
            .fold(
                || vec![0i64; d],
                |mut net, (chunk, clients)| {
                    let mut stream = parallel::chunk_rng(key, chunk);
                    for &item in clients {
                        net[item as usize] += 1;
                        for j in self.absent.indices(d as u64, &mut stream) {
                            net[j as usize] -= 1;
                        }
                    }
                    net
                },
            )
            .reduce(
                || vec![0i64; d],
                |mut a, b| {
                    for (x, y) in a.iter_mut().zip(b) {
                        *x += y;
                    }
                    a
                },
            );
        let n = self.users() as i64;
        net.into_iter()
            .map(|v| u64::try_from(n + v).expect("a cell count is non-negative"))
            .collect()
    }

    /// Draws the shuffler's output cell by cell: `#{clients holding j} + Bin(n, p)` messages
    /// equal to `j`, the same distribution as [`run_per_client`](Self::run_per_client).
    ///
    /// # Panics
    ///
    /// As [`run_per_client`](Self::run_per_client).
    pub fn run_per_cell<R: Rng + ?Sized>(&self, items: &[u32], rng: &mut R) -> Vec<u64> {
        self.check_items(items);
        let mut counts = vec![0u64; self.domain as usize];
        for &item in items {
            counts[item as usize] += 1;
        }
        for count in &mut counts {
            *count += self.noise.sample(rng);
        }
        counts
    }

    /// The paper's analyzer on the per-cell message counts: the frequency estimate
    /// `c* − p` where `c* = count/n > 1`, else 0.
    ///
    /// # Panics
    ///
    /// If `message_counts` does not have one entry per domain element.
    pub fn analyze(&self, message_counts: &[u64]) -> Vec<f64> {
        assert_eq!(
            message_counts.len(),
            self.domain as usize,
            "one message count per domain element"
        );
        let n = self.users();
        let p = self.noise_probability();
        message_counts
            .iter()
            .map(|&count| {
                if count > n {
                    count as f64 / n as f64 - p
                } else {
                    0.0
                }
            })
            .collect()
    }

    fn check_items(&self, items: &[u32]) {
        assert_eq!(
            items.len() as u64,
            self.users(),
            "the protocol is calibrated for a different number of clients"
        );
        assert!(
            items.iter().all(|&x| x < self.domain),
            "item outside the domain"
        );
    }
}

impl DomainHistogram for BalcerCheuHistogram {
    fn name(&self) -> &'static str {
        "balcer-cheu"
    }

    fn domain(&self) -> u32 {
        self.domain
    }

    fn guarantee(&self) -> Guarantee {
        self.params.guarantee()
    }

    fn message_cost(&self) -> Option<MessageCost> {
        Some(MessageCost {
            messages_per_client: 1.0 + f64::from(self.domain) * self.noise_probability(),
            bits_per_message: u64::from(u32::BITS - (self.domain - 1).leading_zeros()),
        })
    }

    /// Runs [`run_per_client`](BalcerCheuHistogram::run_per_client) and returns
    /// `n·`[`analyze`](BalcerCheuHistogram::analyze): `count − n·p` where `count > n`, else
    /// 0.
    ///
    /// # Panics
    ///
    /// If an item is outside the domain or `items.len()` is not the calibrated `n`.
    fn estimate_counts(&self, items: &[u32], rng: &mut dyn Rng) -> Vec<f64> {
        let n = self.users() as f64;
        self.analyze(&self.run_per_client(items, rng))
            .into_iter()
            .map(|f| f * n)
            .collect()
    }
}
