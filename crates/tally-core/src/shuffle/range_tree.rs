//! Range counting through the matrix mechanism: Algorithms 3 and 4 of Ghazi, Golowich, Kumar,
//! Pagh and Velingker (arXiv 1908.11358v4, §5; ALGORITHMS.md §5.4), on the range query tree.
//!
//! # The tree (`d = 1`)
//!
//! `B = 2^L`. Node `v_{t,s}` (depth `t = 0…L`, position `s = 1…2^t`) covers the leaves
//! `[(s−1)·B/2^t + 1, s·B/2^t]` (1-indexed). The chosen set `C_B` is the root and every left
//! child (`s` odd): exactly `B` nodes. The `j`-th chosen node (`j = 1…B`) is `(0, 1)` for
//! `j = 1` and `(⌈log2 j⌉, 2(j − 2^{t−1}) − 1)` otherwise ([`chosen_node`]); for `B = 4`:
//! `(0,1), (1,1), (2,1), (2,3)`. The frequency oracle's item for the `j`-th node is `j − 1`
//! ([`node_index`]).
//!
//! A user with leaf `x` (0-indexed; the paper's leaf `x + 1`) reports, through a `k`-set
//! frequency oracle with `k = 1 + L`, the set `A_x` of its chosen ancestors ([`ancestors`]):
//! the column of `M_B` at `x`. The analyzer answers ranges by prefix sums: `P(r)`, the count of
//! the leaves `1…r`, is the sum of the estimates of the dyadic blocks of `[1, r]`, which are
//! left children (or the root when `r = B`), and `[lo, hi] ↦ P(hi) − P(lo − 1)` (Lemma 5.5:
//! at most `2 log2 B` terms with coefficients ±1). For `B = 4`, `P(3) = y_{1,1} + y_{2,3}`.
//!
//! # `d` dimensions
//!
//! `B = B0^d` with `B0 = 2^{L0}`, `M = M_{B0} ⊗ … ⊗ M_{B0}`: a point reports the
//! `(1 + L0)^d` products of its per-axis chosen ancestors, and a box query is the product of
//! the per-axis prefix differences, expanded into at most `(2 L0)^d` signed terms (Lemma 5.7).
//! Oracle items and points are flattened in mixed radix `B0`, axis 0 least significant.

use rand::Rng;
use tally_accounting::Guarantee;

use super::ghazi_count_min::{CountMinPath, CountMinTable, GhaziCountMin};
use super::ghazi_hadamard::{GhaziHadamard, HadamardPath};
use crate::Error;
use crate::histogram::{DomainHistogram, MessageCost};

/// The writer of user `i`'s set: `set_of(i, out)` replaces `out` with it.
pub type SetSource<'a> = &'a (dyn Fn(usize, &mut Vec<u32>) + Sync);

/// A `k`-set frequency oracle (Definition 5.1): users hold sets of at most `k` items of
/// `0..B`, and the analyzer estimates how many sets contain each item.
///
/// # Privacy
///
/// An implementation states its guarantee in [`guarantee`](Self::guarantee), for neighbours
/// that change one user's whole set; protocols built on it (Theorem 5.1) inherit it as long
/// as each user's set has at most [`set_size`](Self::set_size) items.
pub trait FrequencyOracle: Send + Sync {
    /// The domain size `B`.
    fn domain(&self) -> u32;

    /// The largest set size `k`.
    fn set_size(&self) -> u32;

    /// The guarantee of one run.
    fn guarantee(&self) -> Guarantee;

    /// What each user sends.
    fn message_cost(&self) -> MessageCost;

    /// Runs the oracle on `users` users whose sets `set_of` writes, and returns the analyzer's
    /// answers.
    fn collect(
        &self,
        users: usize,
        set_of: SetSource<'_>,
        rng: &mut dyn Rng,
    ) -> Box<dyn FrequencyAnswers>;
}

/// The analyzer's side of a [`FrequencyOracle`] after a run: `𝒜(FO, j)`.
pub trait FrequencyAnswers: Send + Sync {
    /// The estimated number of sets containing item `j`.
    fn estimate(&self, item: u32) -> f64;
}

/// De-biased dense estimates.
struct DenseAnswers(Vec<f64>);

impl FrequencyAnswers for DenseAnswers {
    fn estimate(&self, item: u32) -> f64 {
        self.0[item as usize]
    }
}

impl FrequencyAnswers for CountMinTable {
    /// The unclamped `min_t C[t, h_t(j)] − γn` (linear combinations of clamped answers would
    /// be biased further).
    fn estimate(&self, item: u32) -> f64 {
        self.estimate_unclamped(item)
    }
}

impl FrequencyOracle for GhaziHadamard {
    fn domain(&self) -> u32 {
        self.params().domain as u32
    }

    fn set_size(&self) -> u32 {
        self.params().set_size as u32
    }

    fn guarantee(&self) -> Guarantee {
        self.params().guarantee()
    }

    fn message_cost(&self) -> MessageCost {
        DomainHistogram::message_cost(self).expect("a shuffle protocol sends messages")
    }

    /// Runs [`HadamardPath::Fast`] and de-biases.
    fn collect(
        &self,
        users: usize,
        set_of: SetSource<'_>,
        rng: &mut dyn Rng,
    ) -> Box<dyn FrequencyAnswers> {
        let raw = self.run_raw_with(users, set_of, HadamardPath::Fast, rng);
        Box::new(DenseAnswers(self.debias(&raw)))
    }
}

impl FrequencyOracle for GhaziCountMin {
    fn domain(&self) -> u32 {
        self.params().domain as u32
    }

    fn set_size(&self) -> u32 {
        self.params().set_size as u32
    }

    fn guarantee(&self) -> Guarantee {
        self.params().guarantee()
    }

    fn message_cost(&self) -> MessageCost {
        DomainHistogram::message_cost(self).expect("a shuffle protocol sends messages")
    }

    /// Runs [`CountMinPath::Queried`]: only the cells an item of the domain hashes to.
    fn collect(
        &self,
        users: usize,
        set_of: SetSource<'_>,
        rng: &mut dyn Rng,
    ) -> Box<dyn FrequencyAnswers> {
        Box::new(self.run_with(users, set_of, CountMinPath::Queried, rng))
    }
}

/// Which frequency oracle the range tree reports through.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RangeOracle {
    /// Algorithm 1 ([`GhaziHadamard`], Theorem 5.9).
    Hadamard,
    /// Algorithm 2 ([`GhaziCountMin`], Theorem 5.10) with accuracy failure probability `β`
    /// (which sets its number of hash rows; [`tally_accounting::ghazi::DEFAULT_COUNT_MIN_BETA`] is the usual choice).
    CountMin {
        /// The failure probability `β`.
        beta: f64,
    },
}

/// The `j`-th chosen node `(t, s)` (`j = 1…B`, 1-indexed as in the paper).
pub fn chosen_node(j: u32) -> (u32, u32) {
    assert!(j >= 1, "chosen nodes are numbered from 1");
    if j == 1 {
        return (0, 1);
    }
    let t = (j - 1).ilog2() + 1; // ⌈log2 j⌉ for j ≥ 2
    (t, 2 * (j - (1 << (t - 1))) - 1)
}

/// The oracle item (0-indexed) of the chosen node `(t, s)` (`s` odd): the inverse of
/// [`chosen_node`], minus one.
pub fn node_index(t: u32, s: u32) -> u32 {
    debug_assert!(s % 2 == 1);
    if t == 0 {
        0
    } else {
        (1 << (t - 1)) + s.div_ceil(2) - 1
    }
}

/// The oracle items of the chosen ancestors of leaf `x ∈ 0..2^L` (the support of column `x`
/// of `M_B`), root first.
pub fn ancestors(levels: u32, x: u32, out: &mut Vec<u32>) {
    out.clear();
    for t in 0..=levels {
        let s = (x >> (levels - t)) + 1;
        if s % 2 == 1 {
            out.push(node_index(t, s));
        }
    }
}

/// The signed oracle items whose sum is the prefix count `P(r)` of the leaves `0..r`
/// (`r ∈ 0..=2^L`): the dyadic blocks of `[1, r]`.
fn prefix_terms(levels: u32, r: u32, sign: f64, out: &mut Vec<(u32, f64)>) {
    if r == 1 << levels {
        out.push((0, sign));
        return;
    }
    for t in 1..=levels {
        let bit = levels - t;
        if (r >> bit) & 1 == 1 {
            out.push((node_index(t, 2 * (r >> (bit + 1)) + 1), sign));
        }
    }
}

/// The range query tree protocol over `[B0]^d`.
///
/// # Privacy
///
/// The guarantee of the frequency oracle (Theorem 5.1): each user's report is one
/// `k`-set query with `k = (1 + log2 B0)^d`, the oracle's set size. With
/// [`RangeOracle::Hadamard`] or [`RangeOracle::CountMin`] that is `(ε, δ)`-DP in the shuffle
/// model for replace-one neighbours.
pub struct RangeTree {
    axis_levels: u32,
    dims: u32,
    oracle: Box<dyn FrequencyOracle>,
}

impl std::fmt::Debug for RangeTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RangeTree")
            .field("axis_levels", &self.axis_levels)
            .field("dims", &self.dims)
            .field("guarantee", &self.oracle.guarantee())
            .finish_non_exhaustive()
    }
}

impl RangeTree {
    /// The one-dimensional tree over `0..2^domain_bits` for `users` users at `(ε, δ)`.
    ///
    /// # Errors
    ///
    /// As [`new_multi`](Self::new_multi).
    pub fn new(
        domain_bits: u32,
        oracle: RangeOracle,
        epsilon: f64,
        delta: f64,
        users: u64,
    ) -> Result<Self, Error> {
        Self::new_multi(domain_bits, 1, oracle, epsilon, delta, users)
    }

    /// The `d`-dimensional tree over `[2^axis_bits]^dims`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `axis_bits ≥ 1`, `dims ≥ 1` and
    /// `axis_bits·dims ≤ 31`; [`Error::Accounting`] for what the oracle's parameters reject
    /// (for Count-Min, too few users).
    pub fn new_multi(
        axis_bits: u32,
        dims: u32,
        oracle: RangeOracle,
        epsilon: f64,
        delta: f64,
        users: u64,
    ) -> Result<Self, Error> {
        check_shape(axis_bits, dims)?;
        let domain = 1u32 << (axis_bits * dims);
        let k = (axis_bits + 1).pow(dims);
        let oracle: Box<dyn FrequencyOracle> = match oracle {
            RangeOracle::Hadamard => {
                Box::new(GhaziHadamard::new(users, domain, k, epsilon, delta)?)
            }
            RangeOracle::CountMin { beta } => {
                Box::new(GhaziCountMin::new(users, domain, k, epsilon, delta, beta)?)
            }
        };
        Self::with_oracle(axis_bits, dims, oracle)
    }

    /// The tree over `[2^axis_bits]^dims` on a given frequency oracle, whose domain must be
    /// `2^{axis_bits·dims}` and whose set size at least `(1 + axis_bits)^dims`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] for a bad shape or an oracle that does not fit it.
    pub fn with_oracle(
        axis_bits: u32,
        dims: u32,
        oracle: Box<dyn FrequencyOracle>,
    ) -> Result<Self, Error> {
        check_shape(axis_bits, dims)?;
        if oracle.domain() != 1 << (axis_bits * dims) {
            return Err(Error::invalid(
                "oracle domain",
                oracle.domain(),
                "2^(axis bits · dimensions)",
            ));
        }
        if oracle.set_size() < (axis_bits + 1).pow(dims) {
            return Err(Error::invalid(
                "oracle set size",
                oracle.set_size(),
                "at least (1 + axis bits)^dimensions",
            ));
        }
        Ok(Self {
            axis_levels: axis_bits,
            dims,
            oracle,
        })
    }

    /// The number of leaves `B = 2^{axis_bits·d}`.
    pub fn domain(&self) -> u32 {
        self.oracle.domain()
    }

    /// The number of dimensions `d`.
    pub fn dims(&self) -> u32 {
        self.dims
    }

    /// The oracle's guarantee (Theorem 5.1).
    pub fn guarantee(&self) -> Guarantee {
        let mut g = self.oracle.guarantee();
        g.analysis = format!("{}; range tree (GGKPV Theorem 5.1)", g.analysis);
        g
    }

    /// What each user sends (the oracle's cost for a `k`-set).
    pub fn message_cost(&self) -> MessageCost {
        self.oracle.message_cost()
    }

    /// The oracle items a user at the flattened point `leaf` reports.
    fn report(&self, leaf: u32, out: &mut Vec<u32>) {
        let b0 = 1u32 << self.axis_levels;
        let mut axis = Vec::new();
        out.clear();
        out.push(0);
        let mut stride = 1u32;
        for a in 0..self.dims {
            let x = (leaf >> (a * self.axis_levels)) & (b0 - 1);
            ancestors(self.axis_levels, x, &mut axis);
            let prev = std::mem::take(out);
            for &p in &prev {
                for &j in &axis {
                    out.push(p + j * stride);
                }
            }
            stride *= b0;
        }
    }

    /// Runs the protocol: user `i` holds the (flattened) leaf `leaves[i]`; there must be
    /// exactly as many users as the oracle was set up for.
    ///
    /// # Panics
    ///
    /// If a leaf is outside the domain or the number of users is wrong.
    pub fn run(&self, leaves: &[u32], rng: &mut dyn Rng) -> RangeCounts {
        let b = self.domain();
        for &x in leaves {
            assert!(x < b, "leaf {x} is outside the domain 0..{b}");
        }
        let answers = self.oracle.collect(
            leaves.len(),
            &|i, out: &mut Vec<u32>| self.report(leaves[i], out),
            rng,
        );
        RangeCounts {
            axis_levels: self.axis_levels,
            dims: self.dims,
            nodes: (0..b).map(|j| answers.estimate(j)).collect(),
        }
    }
}

fn check_shape(axis_bits: u32, dims: u32) -> Result<(), Error> {
    if axis_bits == 0 || dims == 0 || axis_bits * dims > 31 {
        return Err(Error::invalid(
            "range tree shape",
            format!("{axis_bits} bits × {dims} dimensions"),
            "at least 1 bit and 1 dimension, at most 31 bits in all",
        ));
    }
    Ok(())
}

/// The estimates of every chosen node after a run, answering range and box queries.
#[derive(Clone, Debug, PartialEq)]
pub struct RangeCounts {
    axis_levels: u32,
    dims: u32,
    nodes: Vec<f64>,
}

impl RangeCounts {
    /// The estimate `y` of every chosen node, by oracle item (node `j` of [`chosen_node`] at
    /// index `j − 1`; flattened in `d` dimensions).
    pub fn nodes(&self) -> &[f64] {
        &self.nodes
    }

    /// The estimated number of leaves in `0..r` (`r ≤ B`; the paper's `P(r)`), in one
    /// dimension.
    ///
    /// # Panics
    ///
    /// If the tree has more than one dimension or `r > B`.
    pub fn prefix(&self, r: u32) -> f64 {
        assert_eq!(self.dims, 1, "prefix is for one-dimensional trees");
        assert!(r <= 1 << self.axis_levels, "prefix {r} beyond the domain");
        let mut terms = Vec::new();
        prefix_terms(self.axis_levels, r, 1.0, &mut terms);
        terms.iter().map(|&(j, c)| c * self.nodes[j as usize]).sum()
    }

    /// The estimated number of leaves in `lo..=hi`, in one dimension: `P(hi+1) − P(lo)`.
    ///
    /// # Panics
    ///
    /// If the tree has more than one dimension, `lo > hi` or `hi ≥ B`.
    pub fn count(&self, lo: u32, hi_inclusive: u32) -> f64 {
        self.box_count(&[lo], &[hi_inclusive])
    }

    /// The estimated number of points in the box `lo[a]..=hi[a]` on every axis `a`.
    ///
    /// # Panics
    ///
    /// If the slices do not have one entry per dimension, or some `lo[a] > hi[a]` or
    /// `hi[a] ≥ B0`.
    pub fn box_count(&self, lo: &[u32], hi_inclusive: &[u32]) -> f64 {
        assert_eq!(lo.len(), self.dims as usize, "one bound per dimension");
        assert_eq!(
            hi_inclusive.len(),
            self.dims as usize,
            "one bound per dimension"
        );
        let b0 = 1u32 << self.axis_levels;
        let mut terms = vec![(0u32, 1.0f64)];
        let mut stride = 1u32;
        let mut axis = Vec::new();
        for (&l, &h) in lo.iter().zip(hi_inclusive) {
            assert!(l <= h && h < b0, "bad range {l}..={h} for an axis of {b0}");
            axis.clear();
            prefix_terms(self.axis_levels, h + 1, 1.0, &mut axis);
            prefix_terms(self.axis_levels, l, -1.0, &mut axis);
            terms = terms
                .iter()
                .flat_map(|&(p, c)| axis.iter().map(move |&(j, s)| (p + j * stride, c * s)))
                .collect();
            stride *= b0;
        }
        terms.iter().map(|&(j, c)| c * self.nodes[j as usize]).sum()
    }
}
