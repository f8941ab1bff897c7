//! Algorithm 2 of Ghazi, Golowich, Kumar, Pagh and Velingker (arXiv 1908.11358v4, §4.2;
//! ALGORITHMS.md §5.2): public-coin Count-Min sketch with binomial blanket noise, `P^CM`.
//!
//! Public coins: `τ` hash functions `h_t : [B] → [s]` from the pairwise-independent family
//! `h(x) = ((a·x + b) mod P) mod s` with `P = 2^61 − 1` (prime, above `B·s`), `a` uniform in
//! `1..P` and `b` in `0..P` ([`CountMinHashes`]; the reduction mod `s` makes the family
//! pairwise independent up to a factor `1 + s/P` on collision probabilities). Each user sends
//! `(t, h_t(j))` for every held item `j` and row `t`, and the blanket: every cell `(t, ℓ)` with
//! probability `γ`, drawn as `K ~ Bin(τs, γ)` followed by `K` distinct uniform cells (exact
//! samplers). The analyzer's table is `C = C̃ + Bin(n, γ)` per cell.
//!
//! Queries ([`CountMinTable`]): `x̂_j = max(min_t C[t, h_t(j)] − γn, 0)`
//! ([`CountMinTable::estimate`]), its unclamped form, and the one-sided `min_t C[t, h_t(j)]`,
//! which is never below the true count.
//!
//! [`CountMinPath::Fast`] draws each cell's blanket total `Bin(n, γ)` directly: the `n` users'
//! coins for a cell are independent `Ber(γ)` (the `K`-then-subset draw is one way of flipping
//! `τs` such coins), so their sum is `Bin(n, γ)`, independently across cells. Both paths use
//! chunks with their own ChaCha20 streams, run in parallel.

use rand::Rng;
use rayon::prelude::*;
use tally_accounting::Guarantee;
use tally_accounting::ghazi::CountMinParams;

use super::ghazi_hadamard::CHUNK_CLIENTS;
use super::one_item_each;
use crate::Error;
use crate::histogram::{DomainHistogram, MessageCost};
use crate::parallel::{chunk_rng, draw_key};
use crate::sampling::{exact_binomial, uniform_below, uniform_subset};

/// The Mersenne prime `2^61 − 1` of the hash family.
const PRIME: u64 = (1 << 61) - 1;

/// Cells per chunk of the fast path (one ChaCha20 stream each).
const CHUNK_CELLS: usize = 4096;

/// One hash function `x ↦ ((a·x + b) mod P) mod s`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairwiseHash {
    a: u64,
    b: u64,
    width: u64,
}

impl PairwiseHash {
    /// Draws `a ∈ 1..P` and `b ∈ 0..P` uniformly (public coins).
    fn draw(width: u64, rng: &mut dyn Rng) -> Self {
        let a = 1 + uniform_below(PRIME - 1, rng);
        let b = uniform_below(PRIME, rng);
        Self { a, b, width }
    }

    /// `h(x) ∈ 0..s`.
    pub fn apply(&self, x: u32) -> u64 {
        let v = (u128::from(self.a) * u128::from(x) + u128::from(self.b)) % u128::from(PRIME);
        (v as u64) % self.width
    }
}

/// The public coins of one run: `τ` hash functions into `[s]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CountMinHashes {
    rows: Vec<PairwiseHash>,
}

impl CountMinHashes {
    /// Draws `τ` hash functions for the parameters.
    pub fn draw(params: &CountMinParams, rng: &mut dyn Rng) -> Self {
        Self {
            rows: (0..params.rows)
                .map(|_| PairwiseHash::draw(params.width, rng))
                .collect(),
        }
    }

    /// The hash functions, one per row.
    pub fn rows(&self) -> &[PairwiseHash] {
        &self.rows
    }
}

/// How [`GhaziCountMin::run`] simulates the clients.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CountMinPath {
    /// Every client runs `R^CM` (real messages and `K ~ Bin(τs, γ)` distinct blanket cells).
    PerClient,
    /// Real messages as in `PerClient`; each cell's blanket total `Bin(n, γ)` drawn directly
    /// (equal in distribution).
    #[default]
    Fast,
    /// As `Fast`, but only for the cells some domain item hashes to: the only cells any
    /// query reads. The table leaves the other cells out ([`CountMinTable::count`] gives
    /// `None` for them), so the `τ·s` cells of a large table cost `O(τB)` binomials.
    Queried,
}

/// The analyzer's noisy Count-Min table and its queries.
#[derive(Clone, Debug, PartialEq)]
pub struct CountMinTable {
    params: CountMinParams,
    hashes: CountMinHashes,
    /// Row-major `τ × s` counts.
    counts: Vec<u64>,
    /// Which cells were simulated, for [`CountMinPath::Queried`] (`None`: all of them).
    simulated: Option<Vec<bool>>,
}

impl CountMinTable {
    /// `C[t, ℓ]`, or `None` for a cell that [`CountMinPath::Queried`] left out.
    pub fn count(&self, row: u32, cell: u64) -> Option<u64> {
        let i = row as usize * self.params.width as usize + cell as usize;
        match &self.simulated {
            Some(simulated) if !simulated[i] => None,
            _ => Some(self.counts[i]),
        }
    }

    /// The one-sided estimate `min_t C[t, h_t(j)]`: never below the true count of `j`.
    pub fn one_sided(&self, item: u32) -> f64 {
        self.hashes
            .rows
            .iter()
            .enumerate()
            .map(|(t, h)| {
                self.count(t as u32, h.apply(item))
                    .expect("every cell a domain item hashes to is simulated")
            })
            .min()
            .unwrap_or(0) as f64
    }

    /// `min_t C[t, h_t(j)] − γn` (may be negative).
    pub fn estimate_unclamped(&self, item: u32) -> f64 {
        self.one_sided(item) - self.params.expected_blanket()
    }

    /// `Q^CM(j) = max(min_t C[t, h_t(j)] − γn, 0)`.
    pub fn estimate(&self, item: u32) -> f64 {
        self.estimate_unclamped(item).max(0.0)
    }
}

/// Algorithm 2, `P^CM`: each of `n` users holds a set of at most `k` items of `0..B` and
/// sends `(t, h_t(j))` for its items plus a binomial blanket over the `τ × s` cells.
///
/// # Privacy
///
/// `(ε, δ)`-DP of the shuffled multiset, for replace-one neighbours, in the shuffle model, by
/// Lemma 4.10 (`γn ≥ 90τ²k² ln(2τk/δ)/ε²`, `γ ≤ 1/2`; see [`CountMinParams`]). The hash
/// functions are public: the guarantee holds for every choice of them. The blanket coins are
/// private and exact (`Bin(τs, γ)` by [`exact_binomial`], cells by [`uniform_subset`]).
#[derive(Clone, Debug, PartialEq)]
pub struct GhaziCountMin {
    params: CountMinParams,
}

impl GhaziCountMin {
    /// The protocol for `users` users, domain `B`, sets of at most `set_size` items, `(ε, δ)`
    /// and accuracy failure probability `β` (which sets `τ`; see
    /// [`tally_accounting::ghazi::DEFAULT_COUNT_MIN_BETA`]).
    ///
    /// # Errors
    ///
    /// [`Error::Accounting`] for what [`CountMinParams::new`] rejects, including too few users
    /// for `γ ≤ 1/2` (the message states the minimum).
    pub fn new(
        users: u64,
        domain: u32,
        set_size: u32,
        epsilon: f64,
        delta: f64,
        beta: f64,
    ) -> Result<Self, Error> {
        let params = CountMinParams::new(
            users,
            u64::from(domain),
            u64::from(set_size),
            epsilon,
            delta,
            beta,
        )?;
        Ok(Self { params })
    }

    /// The parameters (`τ`, `s`, `γ`, …).
    pub fn params(&self) -> &CountMinParams {
        &self.params
    }

    fn cells(&self) -> usize {
        self.params.rows as usize * self.params.width as usize
    }

    /// Checks a user's set: at most `k` items, each in the domain.
    fn check_set(&self, set: &[u32]) {
        assert!(
            set.len() as u64 <= self.params.set_size,
            "a set has at most k = {} items",
            self.params.set_size
        );
        for &x in set {
            assert!(
                u64::from(x) < self.params.domain,
                "item {x} is outside the domain 0..{}",
                self.params.domain
            );
        }
    }

    /// Adds the real messages of a user holding `set` to the table `counts`.
    fn add_real(&self, hashes: &CountMinHashes, set: &[u32], counts: &mut [u64]) {
        self.check_set(set);
        for &x in set {
            for (t, h) in hashes.rows.iter().enumerate() {
                counts[t * self.params.width as usize + h.apply(x) as usize] += 1;
            }
        }
    }

    /// The randomizer `R^CM` of one user holding `set` (distinct items of `0..B`, at most
    /// `k`): appends its messages `(t, ℓ)` to `out`.
    ///
    /// # Panics
    ///
    /// If the set has more than `k` items or an item outside the domain.
    pub fn randomize(
        &self,
        hashes: &CountMinHashes,
        set: &[u32],
        rng: &mut dyn Rng,
        out: &mut Vec<(u32, u64)>,
    ) {
        self.check_set(set);
        for &x in set {
            for (t, h) in hashes.rows.iter().enumerate() {
                out.push((t as u32, h.apply(x)));
            }
        }
        let w = self.params.width;
        for cell in self.blanket_cells(rng) {
            out.push(((cell / w) as u32, cell % w));
        }
    }

    /// One user's blanket: `K ~ Bin(τs, γ)`, then `K` distinct uniform cells (row-major
    /// indices).
    fn blanket_cells(&self, rng: &mut dyn Rng) -> Vec<u64> {
        let cells = self.cells() as u64;
        let k = exact_binomial(cells, self.params.gamma, rng);
        uniform_subset(cells, k, rng).expect("K ≤ τs cells")
    }

    /// The analyzer `A^CM`: the table of the shuffled messages.
    pub fn analyze(&self, hashes: &CountMinHashes, messages: &[(u32, u64)]) -> CountMinTable {
        let mut counts = vec![0u64; self.cells()];
        for &(t, l) in messages {
            counts[t as usize * self.params.width as usize + l as usize] += 1;
        }
        CountMinTable {
            params: self.params,
            hashes: hashes.clone(),
            counts,
            simulated: None,
        }
    }

    /// Runs the protocol on the users' sets (exactly `n` of them): draws the public hashes,
    /// then the clients' messages by `path`, and returns the analyzer's table.
    ///
    /// # Panics
    ///
    /// If the number of sets is not `n`, or a set is invalid.
    pub fn run(&self, sets: &[Vec<u32>], path: CountMinPath, rng: &mut dyn Rng) -> CountMinTable {
        self.run_with(
            sets.len(),
            &|i, out: &mut Vec<u32>| out.clone_from(&sets[i]),
            path,
            rng,
        )
    }

    /// [`run`](Self::run) with user `i`'s set written by `set_of(i, out)`.
    pub(crate) fn run_with(
        &self,
        users: usize,
        set_of: &(dyn Fn(usize, &mut Vec<u32>) + Sync),
        path: CountMinPath,
        rng: &mut dyn Rng,
    ) -> CountMinTable {
        assert_eq!(
            users as u64, self.params.users,
            "the protocol was set up for n = {} users",
            self.params.users
        );
        let hashes = CountMinHashes::draw(&self.params, rng);
        let seed = draw_key(rng);
        let cells = self.cells();
        let mut counts = vec![0u64; cells];
        let mut set = Vec::new();
        for i in 0..users {
            set_of(i, &mut set);
            self.add_real(&hashes, &set, &mut counts);
        }
        let simulated = match path {
            CountMinPath::PerClient => {
                let blanket = (0..users.div_ceil(CHUNK_CLIENTS))
                    .into_par_iter()
                    .map(|c| {
                        let mut rng = chunk_rng(seed, c);
                        let mut part = vec![0u64; cells];
                        let lo = c * CHUNK_CLIENTS;
                        for _ in lo..users.min(lo + CHUNK_CLIENTS) {
                            for cell in self.blanket_cells(&mut rng) {
                                part[cell as usize] += 1;
                            }
                        }
                        part
                    })
                    .reduce(
                        || vec![0u64; cells],
                        |mut a, x| {
                            a.iter_mut().zip(&x).for_each(|(s, v)| *s += v);
                            a
                        },
                    );
                counts.iter_mut().zip(&blanket).for_each(|(s, v)| *s += v);
                None
            }
            CountMinPath::Fast | CountMinPath::Queried => {
                let n = self.params.users;
                let gamma = self.params.gamma;
                let simulated = (path == CountMinPath::Queried).then(|| {
                    let width = self.params.width as usize;
                    let mut simulated = vec![false; cells];
                    for (t, h) in hashes.rows.iter().enumerate() {
                        for x in 0..self.params.domain as u32 {
                            simulated[t * width + h.apply(x) as usize] = true;
                        }
                    }
                    simulated
                });
                counts
                    .par_chunks_mut(CHUNK_CELLS)
                    .enumerate()
                    .for_each(|(c, part)| {
                        let mut rng = chunk_rng(seed, c);
                        for (i, v) in part.iter_mut().enumerate() {
                            let cell = c * CHUNK_CELLS + i;
                            if simulated.as_ref().is_none_or(|s| s[cell]) {
                                *v += exact_binomial(n, gamma, &mut rng);
                            } else {
                                // Never readable: drop the real count of a left-out cell.
                                *v = 0;
                            }
                        }
                    });
                simulated
            }
        };
        CountMinTable {
            params: self.params,
            hashes,
            counts,
            simulated,
        }
    }
}

impl DomainHistogram for GhaziCountMin {
    fn name(&self) -> &'static str {
        "ghazi-count-min"
    }

    fn domain(&self) -> u32 {
        self.params.domain as u32
    }

    fn guarantee(&self) -> Guarantee {
        self.params.guarantee()
    }

    fn message_cost(&self) -> Option<MessageCost> {
        Some(MessageCost {
            messages_per_client: self.params.expected_messages_per_user(),
            bits_per_message: self.params.bits_per_message(),
        })
    }

    /// Runs the protocol with one item per client ([`CountMinPath::Queried`]) and returns the
    /// unclamped estimates `min_t C[t, h_t(j)] − γn`.
    ///
    /// # Panics
    ///
    /// If an item is outside the domain, or the number of items is not the `n` the protocol
    /// was set up for.
    fn estimate_counts(&self, items: &[u32], rng: &mut dyn Rng) -> Vec<f64> {
        let table = self.run_with(
            items.len(),
            &one_item_each(items),
            CountMinPath::Queried,
            rng,
        );
        (0..self.domain())
            .map(|x| table.estimate_unclamped(x))
            .collect()
    }
}
