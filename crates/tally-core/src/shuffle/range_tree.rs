//! Range counting through the matrix mechanism: Algorithms 3 and 4 of Ghazi, Golowich, Kumar,
//! Pagh and Velingker (arXiv 1908.11358v4, §5; docs/algorithms.md §5.4), on the range query tree.
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
//! A device with leaf `x` (0-indexed; the paper's leaf `x + 1`) reports, through a `k`-set
//! frequency oracle round ([`SetOracleRound`]) with `k = 1 + L`, the set `A_x` of its chosen
//! ancestors ([`ancestors`]):
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
use rand_chacha::ChaCha20Rng;
use tally_accounting::{Collusion, Guarantee};

use super::ghazi_count_min::{CountMinHashes, CountMinRound, GhaziCountMin};
use super::ghazi_hadamard::{GhaziHadamard, HadamardRound};
use super::number_tree::NumberTreeRound;
use super::set_oracle::{SetHolders, SetOracleRound, SetQuery};
use crate::Error;
use crate::histogram::{DomainMap, MessageCost};
use crate::protocol::wire::BoundedDomainQuery;
use crate::protocol::{
    CountedRound, DeviceQuery, Estimates, MultiMessage, RoundAggregator, RoundProtocol, TrustModel,
};
use crate::quantiles::ValueRange;

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

/// The shape of the tree over `[2^axis_levels]^dims`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TreeShape {
    axis_levels: u32,
    dims: u32,
}

impl TreeShape {
    /// The shape, if `axis_bits ≥ 1`, `dims ≥ 1` and `axis_bits·dims ≤ 31`.
    fn new(axis_bits: u32, dims: u32) -> Result<Self, Error> {
        if axis_bits == 0 || dims == 0 || axis_bits * dims > 31 {
            return Err(Error::invalid(
                "range tree shape",
                format!("{axis_bits} bits × {dims} dimensions"),
                "at least 1 bit and 1 dimension, at most 31 bits in all",
            ));
        }
        Ok(Self {
            axis_levels: axis_bits,
            dims,
        })
    }

    /// The number of leaves `B = 2^{axis_levels·d}`.
    fn domain(self) -> u32 {
        1 << (self.axis_levels * self.dims)
    }

    /// The oracle's estimates of the chosen nodes as the tree's counts.
    fn counts(self, Estimates(nodes): Estimates) -> RangeCounts {
        RangeCounts {
            axis_levels: self.axis_levels,
            dims: self.dims,
            nodes,
        }
    }

    /// The largest set a point reports, `k = (1 + axis_levels)^d`.
    fn set_size(self) -> u32 {
        (self.axis_levels + 1).pow(self.dims)
    }

    /// Checks that an oracle over `domain` items taking sets of up to `set_size` fits the tree.
    fn check_oracle(self, domain: u32, set_size: u32) -> Result<(), Error> {
        if domain != self.domain() {
            return Err(Error::invalid(
                "oracle domain",
                domain,
                "2^(axis bits · dimensions)",
            ));
        }
        if set_size < self.set_size() {
            return Err(Error::invalid(
                "oracle set size",
                set_size,
                "at least (1 + axis bits)^dimensions",
            ));
        }
        Ok(())
    }

    /// The oracle items a device at the flattened point `leaf` reports.
    fn report(self, leaf: u32, out: &mut Vec<u32>) {
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
}

/// The range query tree over `[B0]^d` as a round on the `k`-set frequency oracle round `O`:
/// a device holding the (flattened) point `x` reports `A_x` through the oracle, whose
/// aggregator counts the reports; the release answers ranges and boxes ([`RangeCounts`]).
///
/// # Privacy
///
/// The guarantee of the frequency oracle (Theorem 5.1): each device's report is one `k`-set
/// query with `k = (1 + log2 B0)^d`, at most the oracle's set size. With
/// [`HadamardRound`] or [`CountMinRound`] that is `(ε, δ)`-DP in the shuffle model for
/// replace-one neighbours; it is fixed when the round is built ([`guarantee`](Self::guarantee)).
#[derive(Clone, Debug)]
pub struct RangeRound<O: SetOracleRound> {
    query: RangeQuery<O::Query>,
    oracle: O,
    guarantee: Guarantee,
}

impl RangeRound<HadamardRound> {
    /// The `d`-dimensional tree over `[2^axis_bits]^dims` on Algorithm 1 ([`GhaziHadamard`],
    /// Theorem 5.9) for `users` devices at `(ε, δ)`.
    ///
    /// # Errors
    ///
    /// As [`with_oracle`](Self::with_oracle); [`Error::Accounting`] for what the oracle's
    /// parameters reject.
    pub fn hadamard(
        axis_bits: u32,
        dims: u32,
        epsilon: f64,
        delta: f64,
        users: u64,
    ) -> Result<Self, Error> {
        let shape = TreeShape::new(axis_bits, dims)?;
        let oracle = GhaziHadamard::new(users, shape.domain(), shape.set_size(), epsilon, delta)?;
        Self::with_oracle(
            axis_bits,
            dims,
            oracle.round(DomainMap::Integers(shape.domain()))?,
        )
    }
}

impl RangeRound<CountMinRound> {
    /// The `d`-dimensional tree over `[2^axis_bits]^dims` on Algorithm 2 ([`GhaziCountMin`],
    /// Theorem 5.10) for `users` devices at `(ε, δ)`, with accuracy failure probability `β`
    /// (which sets its number of hash rows;
    /// [`tally_accounting::ghazi::DEFAULT_COUNT_MIN_BETA`] is the usual choice) and public hash
    /// functions drawn from `public_coins`.
    ///
    /// # Errors
    ///
    /// As [`with_oracle`](Self::with_oracle); [`Error::Accounting`] for what the oracle's
    /// parameters reject (too few users).
    #[allow(clippy::too_many_arguments)] // the oracle's parameters, each its own
    pub fn count_min(
        axis_bits: u32,
        dims: u32,
        epsilon: f64,
        delta: f64,
        beta: f64,
        users: u64,
        public_coins: &mut dyn Rng,
    ) -> Result<Self, Error> {
        let shape = TreeShape::new(axis_bits, dims)?;
        let oracle = GhaziCountMin::new(
            users,
            shape.domain(),
            shape.set_size(),
            epsilon,
            delta,
            beta,
        )?;
        let hashes = CountMinHashes::draw(oracle.params(), public_coins);
        Self::with_oracle(
            axis_bits,
            dims,
            oracle.round(DomainMap::Integers(shape.domain()), hashes)?,
        )
    }
}

impl<O: SetOracleRound> RangeRound<O> {
    /// The tree over `[2^axis_bits]^dims` on the oracle round `oracle`, whose domain must be
    /// `2^{axis_bits·dims}` and whose set size at least `(1 + axis_bits)^dims`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `axis_bits ≥ 1`, `dims ≥ 1` and
    /// `axis_bits·dims ≤ 31`, or for an oracle that does not fit the shape.
    pub fn with_oracle(axis_bits: u32, dims: u32, oracle: O) -> Result<Self, Error> {
        let shape = TreeShape::new(axis_bits, dims)?;
        shape.check_oracle(oracle.domain(), oracle.query().set_size())?;
        let mut guarantee = oracle.guarantee();
        guarantee.analysis = format!("{}; range tree (GGKPV Theorem 5.1)", guarantee.analysis);
        Ok(Self {
            query: RangeQuery {
                shape,
                oracle: oracle.query().clone(),
            },
            oracle,
            guarantee,
        })
    }

    /// The number of leaves `B = 2^{axis_bits·d}`.
    pub fn domain(&self) -> u32 {
        self.query.shape.domain()
    }

    /// The number of dimensions `d`.
    pub fn dims(&self) -> u32 {
        self.query.shape.dims
    }

    /// The frequency oracle round.
    pub fn oracle(&self) -> &O {
        &self.oracle
    }

    /// The oracle's guarantee (Theorem 5.1).
    pub fn guarantee(&self) -> &Guarantee {
        &self.guarantee
    }

    /// The oracle's guarantee when a fraction `colluding_fraction` of the devices colludes
    /// with the analyst ([`SetOracleRound::collusion`]): the tree is its one round.
    ///
    /// # Errors
    ///
    /// As [`SetOracleRound::collusion`].
    pub fn collusion(&self, colluding_fraction: f64) -> Result<Collusion, Error> {
        self.oracle.collusion(colluding_fraction)
    }

    /// What each device sends (the oracle's cost for a `k`-set).
    pub fn message_cost(&self) -> MessageCost {
        self.oracle.message_cost()
    }

    /// The estimates of every chosen node, which the oracle released, read as the tree's
    /// counts (what [`RangeAggregator::release`] does with them).
    pub fn read(&self, nodes: Estimates) -> RangeCounts {
        self.query.shape.counts(nodes)
    }

    /// The tree as a round whose devices hold numbers of `range` (`[0, 1]` without one):
    /// the round a federated runtime opens.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if the tree has more than one dimension.
    pub fn over_numbers(&self, range: Option<ValueRange>) -> Result<NumberTreeRound<O>, Error>
    where
        O: Clone,
    {
        NumberTreeRound::new(self.oracle.clone(), self.query.clone(), range)
    }

    fn counts(&self, oracle: O::Aggregator) -> RangeAggregator<O::Aggregator> {
        RangeAggregator {
            shape: self.query.shape,
            oracle,
        }
    }
}

impl<O: SetOracleRound> RoundProtocol for RangeRound<O> {
    type Query = RangeQuery<O::Query>;
    type Release = RangeCounts;
    type Aggregator = RangeAggregator<O::Aggregator>;

    fn query(&self) -> &RangeQuery<O::Query> {
        &self.query
    }

    fn aggregator(&self, rng: ChaCha20Rng) -> RangeAggregator<O::Aggregator> {
        self.counts(self.oracle.aggregator(rng))
    }
}

/// Its devices hold a leaf.
impl<O: SetOracleRound> CountedRound for RangeRound<O> {
    /// The oracle's aggregate ([`SetOracleRound::aggregate_sets`]) from how many points lie
    /// below each chosen node and how many report each number of nodes, when it can draw one.
    fn aggregate_counts<R: Rng + ?Sized>(
        &self,
        counts: &[u64],
        rng: &mut R,
    ) -> Option<RangeAggregator<O::Aggregator>> {
        self.oracle
            .aggregate_sets(&self.query.leaf_holders(counts), rng)
            .map(|oracle| self.counts(oracle))
    }
}

/// The query of a [`RangeRound`]: the tree's shape and the oracle's query.
#[derive(Clone, Debug, PartialEq)]
pub struct RangeQuery<Q> {
    shape: TreeShape,
    oracle: Q,
}

impl<Q> RangeQuery<Q> {
    /// How many of the sets the devices report contain each chosen node, and how many have
    /// each size, when `counts[j]` devices hold leaf `j`.
    ///
    /// # Panics
    ///
    /// If `counts` does not have one entry per leaf.
    pub(crate) fn leaf_holders(&self, counts: &[u64]) -> SetHolders {
        let shape = self.shape;
        assert_eq!(counts.len(), shape.domain() as usize, "one count per leaf");
        let mut holders = SetHolders {
            of_item: vec![0; shape.domain() as usize],
            of_size: vec![0; shape.set_size() as usize + 1],
        };
        let mut set = Vec::new();
        for (leaf, &count) in (0..).zip(counts) {
            if count == 0 {
                continue;
            }
            shape.report(leaf, &mut set);
            for &node in &set {
                holders.of_item[node as usize] += count;
            }
            holders.of_size[set.len()] += count;
        }
        holders
    }
}

impl<Q: SetQuery + BoundedDomainQuery> RangeQuery<Q> {
    /// The query of the tree over `[2^axis_bits]^dims` on the oracle query `oracle`, as a
    /// device rebuilds it from what the server publishes.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] as for [`RangeRound::with_oracle`].
    pub fn new(axis_bits: u32, dims: u32, oracle: Q) -> Result<Self, Error> {
        let shape = TreeShape::new(axis_bits, dims)?;
        shape.check_oracle(oracle.domain_map().size(), oracle.set_size())?;
        Ok(Self { shape, oracle })
    }
}

impl<Q> RangeQuery<Q> {
    /// The levels `log2 B0` of each axis.
    pub fn axis_levels(&self) -> u32 {
        self.shape.axis_levels
    }

    /// The number of dimensions `d`.
    pub fn dims(&self) -> u32 {
        self.shape.dims
    }

    /// The number of leaves `B`.
    pub fn domain(&self) -> u32 {
        self.shape.domain()
    }

    /// The oracle's query.
    pub fn oracle(&self) -> &Q {
        &self.oracle
    }
}

impl<Q: SetQuery> DeviceQuery for RangeQuery<Q> {
    type Input = u32;
    type Report = Q::Report;

    fn trust(&self) -> TrustModel {
        self.oracle.trust()
    }

    /// The oracle's report of the point's chosen ancestors `A_x`; `None` outside the domain.
    fn respond<R: Rng + ?Sized>(&self, leaf: &u32, rng: &mut R) -> Option<Q::Report> {
        if *leaf >= self.shape.domain() {
            return None;
        }
        let mut set = Vec::new();
        self.shape.report(*leaf, &mut set);
        self.oracle.respond_set(&set, rng)
    }

    /// What the oracle admits.
    fn admits(&self, report: &Q::Report) -> bool {
        self.oracle.admits(report)
    }

    /// What the oracle admits of a message.
    fn admits_message(&self, message: &<Q::Report as MultiMessage>::Message) -> bool {
        self.oracle.admits_message(message)
    }
}

/// The aggregator of a [`RangeRound`]: the oracle's, its estimates released as the chosen
/// nodes' ([`RangeCounts`]).
pub struct RangeAggregator<A> {
    shape: TreeShape,
    oracle: A,
}

impl<A: RoundAggregator<Release = Estimates>> RoundAggregator for RangeAggregator<A> {
    type Report = A::Report;
    type Release = RangeCounts;

    fn absorb(&mut self, report: A::Report) {
        self.oracle.absorb(report);
    }

    fn merge(&mut self, other: Self) {
        self.oracle.merge(other.oracle);
    }

    fn release(self) -> RangeCounts {
        self.shape.counts(self.oracle.release())
    }
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

    /// The number of leaves `B`.
    pub fn domain(&self) -> u32 {
        1 << (self.axis_levels * self.dims)
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
