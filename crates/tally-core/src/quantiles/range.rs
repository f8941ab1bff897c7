//! The geometry of the `β`-ary tree over `[0, 1]`: buckets, nodes, and the greedy decomposition
//! of a range into maximal tree nodes (docs/algorithms.md §4.2).

use crate::Error;
use crate::sampling::decompose;

/// The shape of a `β`-ary hierarchy over `[0, 1]` with `L` levels.
///
/// Level `ℓ = 1..=L` cuts `[0, 1]` into `β^ℓ` equal buckets; bucket `b` of level `ℓ` is the
/// interval `[b/β^ℓ, (b+1)/β^ℓ)`, except that the last bucket also holds the value 1. The
/// buckets of level `L` are the *leaves*; a leaf boundary is a point `j/β^L`, `j = 0..=β^L`.
/// There is no level 0: the whole interval is never measured as one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TreeShape {
    branching: u32,
    levels: u32,
    leaves: u64,
}

/// One node of a [`TreeShape`]: bucket `index` of level `level`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Node {
    /// The level, `1..=L`.
    pub level: u32,
    /// The bucket index within the level, `0..β^level`.
    pub index: u64,
}

impl TreeShape {
    /// The largest number of leaves: bucket ids are `u32` items of an S&T histogram.
    pub const MAX_LEAVES: u64 = 1 << 32;

    /// A tree with branching factor `β = branching` and `L = levels` levels.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `β ≥ 2`, `L ≥ 1` and `β^L ≤ 2^32`.
    pub fn new(branching: u32, levels: u32) -> Result<Self, Error> {
        if branching < 2 {
            return Err(Error::invalid("branching", branching, "an integer ≥ 2"));
        }
        if levels == 0 {
            return Err(Error::invalid("levels", 0, "an integer ≥ 1"));
        }
        let leaves = u64::from(branching)
            .checked_pow(levels)
            .filter(|&leaves| leaves <= Self::MAX_LEAVES)
            .ok_or_else(|| {
                Error::invalid(
                    "levels",
                    levels,
                    "at most as many levels as keep branching^levels ≤ 2^32",
                )
            })?;
        Ok(Self {
            branching,
            levels,
            leaves,
        })
    }

    /// The branching factor `β`.
    pub fn branching(&self) -> u32 {
        self.branching
    }

    /// The number of levels `L`.
    pub fn levels(&self) -> u32 {
        self.levels
    }

    /// The number of leaves, `β^L`.
    pub fn leaves(&self) -> u64 {
        self.leaves
    }

    /// The number of buckets of `level`, `β^level`.
    ///
    /// # Panics
    ///
    /// If `level > L`.
    pub fn buckets(&self, level: u32) -> u64 {
        assert!(level <= self.levels, "level {level} > {}", self.levels);
        u64::from(self.branching).pow(level)
    }

    /// The bucket of `level` holding the value `x`: `min(⌊x·β^level⌋, β^level − 1)`, computed
    /// exactly (the product of the `f64` and the integer is formed without rounding), so the
    /// buckets of a value nest: its bucket at level `ℓ` is its leaf divided by `β^{L−ℓ}`.
    ///
    /// Values are meant to lie in `[0, 1]`; smaller ones (and NaN) fall in bucket 0, larger
    /// ones in the last bucket.
    ///
    /// # Panics
    ///
    /// If `level` is 0 or above `L`.
    pub fn bucket(&self, level: u32, x: f64) -> u32 {
        assert!(
            (1..=self.levels).contains(&level),
            "level {level} not in 1..={}",
            self.levels
        );
        let buckets = self.buckets(level);
        let bucket = floor_scaled(x, buckets).min(buckets - 1);
        // Unwrap safety: β^L ≤ 2^32, so bucket indices fit in u32.
        u32::try_from(bucket).expect("bucket index fits in u32")
    }

    /// The leaf holding `x`, as [`TreeShape::bucket`] at level `L`.
    pub fn leaf(&self, x: f64) -> u64 {
        u64::from(self.bucket(self.levels, x))
    }

    /// The leaf boundary at or below `x`: `⌊x·β^L⌋` clamped to `0..=β^L` (exactly), so that
    /// `x = 1` gives `β^L`, the end of the last leaf. Range endpoints snap to it.
    pub fn boundary_below(&self, x: f64) -> u64 {
        floor_scaled(x, self.leaves)
    }

    /// The point of `[0, 1]` at leaf boundary `j`, `j/β^L`.
    pub fn boundary_point(&self, j: u64) -> f64 {
        // β^L ≤ 2^32 and j ≤ β^L are exact in f64, so this is the correctly rounded quotient.
        j as f64 / self.leaves as f64
    }

    /// The leaves `[start, end)` below `node`.
    pub fn leaf_span(&self, node: Node) -> (u64, u64) {
        let width = u64::from(self.branching).pow(self.levels - node.level);
        (node.index * width, (node.index + 1) * width)
    }

    /// The interval `[lo, hi)` of `[0, 1]` that `node` covers.
    pub fn interval(&self, node: Node) -> (f64, f64) {
        let (start, end) = self.leaf_span(node);
        (self.boundary_point(start), self.boundary_point(end))
    }

    /// The greedy decomposition of the leaves `[lo, hi)` into maximal tree nodes, ordered by
    /// position (docs/algorithms.md §4.2): from the leaves up, the nodes at each end that do not
    /// fill a whole parent are taken at their own level, and the aligned middle moves up one
    /// level. At most `2(β−1)` nodes per level below level 1, and at most `β` at level 1;
    /// for `lo = 0` it is exactly the prefix decomposition of §4.2 (`d_ℓ` buckets per level).
    /// An empty range (`lo ≥ hi`) gives no node.
    ///
    /// # Panics
    ///
    /// If `hi > β^L`.
    pub fn decompose(&self, lo: u64, hi: u64) -> Vec<Node> {
        assert!(hi <= self.leaves, "leaf boundary {hi} > {}", self.leaves);
        let beta = u64::from(self.branching);
        let mut left = Vec::new();
        let mut right = Vec::new();
        let (mut lo, mut hi) = (lo, hi);
        let mut level = self.levels;
        while lo < hi {
            let lo_up = lo.div_ceil(beta) * beta;
            let hi_down = hi / beta * beta;
            if level == 1 || lo_up >= hi_down {
                left.extend((lo..hi).map(|index| Node { level, index }));
                break;
            }
            left.extend((lo..lo_up).map(|index| Node { level, index }));
            right.extend((hi_down..hi).map(|index| Node { level, index }));
            lo = lo_up / beta;
            hi = hi_down / beta;
            level -= 1;
        }
        // The nodes are disjoint, so ordering by first leaf orders them by position.
        left.append(&mut right);
        left.sort_by_key(|&node| self.leaf_span(node).0);
        left
    }

    /// Whether `node` lies in the tree.
    pub fn contains(&self, node: Node) -> bool {
        (1..=self.levels).contains(&node.level) && node.index < self.buckets(node.level)
    }
}

/// `⌊x·scale⌋` for `x ∈ [0, 1]` and `scale ≤ 2^32`, exactly; `x ≤ 0` or NaN gives 0 and
/// `x ≥ 1` gives `scale`.
fn floor_scaled(x: f64, scale: u64) -> u64 {
    if x.is_nan() || x <= 0.0 {
        return 0;
    }
    if x >= 1.0 {
        return scale;
    }
    // x = mantissa · 2^exponent with exponent < 0 because x < 1.
    let (mantissa, exponent) = decompose(x);
    let product = u128::from(mantissa) * u128::from(scale);
    let shift = exponent.unsigned_abs();
    if shift >= 128 {
        0
    } else {
        // Unwrap safety: x < 1, so the floor is below scale ≤ 2^32.
        u64::try_from(product >> shift).expect("below scale")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(level: u32, index: u64) -> Node {
        Node { level, index }
    }

    #[test]
    fn shapes_validate() {
        assert!(TreeShape::new(1, 3).is_err());
        assert!(TreeShape::new(4, 0).is_err());
        assert!(TreeShape::new(4, 16).is_ok());
        assert!(TreeShape::new(4, 17).is_err());
        assert!(TreeShape::new(2, 32).is_ok());
        assert!(TreeShape::new(2, 33).is_err());
        assert!(TreeShape::new(u32::MAX, 1).is_ok());
        assert!(TreeShape::new(u32::MAX, 2).is_err());
        let shape = TreeShape::new(4, 8).unwrap();
        assert_eq!(shape.leaves(), 65_536);
        assert_eq!(shape.buckets(3), 64);
    }

    #[test]
    fn appendix_a_11_bucket_of_one_third() {
        // docs/algorithms.md Appendix A item 11: β = 4, x = 1/3 is in bucket 1 at level 1
        // ([0.25, 0.5)) and bucket 5 at level 2 ([5/16, 6/16)).
        let shape = TreeShape::new(4, 2).unwrap();
        assert_eq!(shape.bucket(1, 1.0 / 3.0), 1);
        assert_eq!(shape.bucket(2, 1.0 / 3.0), 5);
    }

    #[test]
    fn buckets_at_the_edges() {
        let shape = TreeShape::new(4, 3).unwrap();
        assert_eq!(shape.bucket(1, 0.0), 0);
        assert_eq!(shape.bucket(1, 0.25), 1);
        assert_eq!(shape.bucket(1, 0.25f64.next_down()), 0);
        assert_eq!(shape.bucket(3, 1.0), 63);
        assert_eq!(shape.bucket(3, 1.0f64.next_down()), 63);
        assert_eq!(shape.bucket(2, -0.5), 0);
        assert_eq!(shape.bucket(2, f64::NAN), 0);
        assert_eq!(shape.bucket(2, 7.0), 15);
        assert_eq!(shape.bucket(1, f64::MIN_POSITIVE / 4.0), 0);
        assert_eq!(shape.boundary_below(1.0), 64);
        assert_eq!(shape.boundary_below(0.5), 32);
        assert_eq!(shape.boundary_point(32).to_bits(), 0.5_f64.to_bits());
    }

    #[test]
    fn buckets_are_exact_where_floating_point_products_round() {
        // 1/3 rounds to a double just below 1/3, whose product with 3 rounds up to 1.0 in
        // floating point; the exact floor is 0.
        let shape = TreeShape::new(3, 2).unwrap();
        assert_eq!(((1.0f64 / 3.0) * 3.0).to_bits(), 1.0_f64.to_bits());
        assert_eq!(shape.bucket(1, 1.0 / 3.0), 0);
        assert_eq!(shape.bucket(2, 1.0 / 3.0), 2);
    }

    #[test]
    fn buckets_nest_across_levels() {
        let shape = TreeShape::new(5, 6).unwrap();
        let mut x = 0.0f64;
        while x <= 1.0 {
            let leaf = shape.leaf(x);
            for level in 1..=6 {
                let width = 5u64.pow(6 - level);
                assert_eq!(u64::from(shape.bucket(level, x)), leaf / width, "x = {x}");
            }
            x += 0.000_123_7;
        }
    }

    #[test]
    fn appendix_a_11_decomposition_of_0_7() {
        // β = 4, r = 0.7: level-1 buckets {0, 1}, level-2 buckets {8, 9, 10}.
        let shape = TreeShape::new(4, 2).unwrap();
        let r = shape.boundary_below(0.7);
        assert_eq!(r, 11);
        assert_eq!(
            shape.decompose(0, r),
            vec![node(1, 0), node(1, 1), node(2, 8), node(2, 9), node(2, 10)]
        );
    }

    #[test]
    fn prefix_decomposition_is_the_digit_rule_of_section_4_2() {
        // d_ℓ = ⌊rβ^ℓ⌋ − β⌊rβ^{ℓ−1}⌋ buckets β⌊rβ^{ℓ−1}⌋ + j at level ℓ, j < d_ℓ.
        // The rule is for r < 1; r = 1 is the whole of level 1.
        let shape = TreeShape::new(3, 5).unwrap();
        assert_eq!(
            shape.decompose(0, shape.leaves()),
            vec![node(1, 0), node(1, 1), node(1, 2)]
        );
        for r in 0..shape.leaves() {
            let mut want = Vec::new();
            for level in 1..=5u32 {
                let at = r / 3u64.pow(5 - level);
                let parent = at / 3;
                want.extend((3 * parent..at).map(|index| node(level, index)));
            }
            assert_eq!(shape.decompose(0, r), want, "r = {r}");
        }
    }

    #[test]
    fn decompositions_tile_the_range_with_maximal_nodes() {
        let shape = TreeShape::new(3, 4).unwrap();
        let beta = 3u64;
        for lo in 0..=shape.leaves() {
            for hi in lo..=shape.leaves() {
                let nodes = shape.decompose(lo, hi);
                let mut at = lo;
                for &n in &nodes {
                    let (start, end) = shape.leaf_span(n);
                    assert_eq!(start, at, "[{lo}, {hi}): {nodes:?}");
                    at = end;
                    // Maximal: the parent does not fit inside the range.
                    if n.level > 1 {
                        let parent = node(n.level - 1, n.index / beta);
                        let (ps, pe) = shape.leaf_span(parent);
                        assert!(ps < lo || pe > hi, "[{lo}, {hi}): {n:?} is not maximal");
                    }
                }
                assert_eq!(at, hi);
                let per_level = |level: u32| nodes.iter().filter(|n| n.level == level).count();
                assert!(per_level(1) <= 3);
                assert!((2..=4).all(|level| per_level(level) <= 4));
            }
        }
    }

    #[test]
    fn appendix_a_12_prefix_nodes_of_the_binary_tree() {
        // docs/algorithms.md Appendix A item 12 (Ghazi et al., B = 4): P(3) = y_{1,1} + y_{2,3},
        // nodes v_{t,s} with 1-based positions s. In this tree that is level-1 bucket 0 and
        // level-2 bucket 2 (0-based); the chosen node set C_B = root + left children is the
        // union of every prefix decomposition (plus the root, which this tree does not have).
        let shape = TreeShape::new(2, 2).unwrap();
        assert_eq!(shape.decompose(0, 3), vec![node(1, 0), node(2, 2)]);
        let mut used: Vec<Node> = (0..=4).flat_map(|r| shape.decompose(0, r)).collect();
        used.sort();
        used.dedup();
        // (1,1), (2,1), (2,3) in Ghazi's numbering, plus level-1 bucket 1 for r = B (the root's
        // place, since there is no level 0 here).
        assert_eq!(used, vec![node(1, 0), node(1, 1), node(2, 0), node(2, 2)]);
    }
}
