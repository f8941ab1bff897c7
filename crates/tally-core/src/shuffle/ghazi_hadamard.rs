//! Algorithm 1 of Ghazi, Golowich, Kumar, Pagh and Velingker (arXiv 1908.11358v4, §4.1;
//! docs/algorithms.md §5.1): private-coin multi-message Hadamard response, `P^Had`.
//!
//! # Indexing
//!
//! `B` is a power of 2 and coordinates live in `[2B] = {0, …, 2B−1}`. Row `j ∈ {1, …, 2B−1}`
//! of the Sylvester Hadamard matrix `H_{2B}` (0-indexed; the all-ones row 0 is never used)
//! defines `H_{2B,j} = {a ∈ [2B] : popcount(j & a) is even}`. The paper's items are
//! `1, …, B`; here items are 0-indexed, and **item `x ∈ 0..B` uses row `x + 1`**
//! ([`item_row`]). The padding ids of the paper, `B+1, …, 2B−1`, are used as rows directly,
//! so they never collide with an item's row.
//!
//! # Decoding
//!
//! A tuple `(a_1, …, a_τ)` lies in `H^τ_{2B,j}` iff `A·j = 0` over `F_2`, where the rows of
//! the `τ × log2(2B)` matrix `A` are the bits of the `a_g`. [`kernel_counts`] reduces `A` by
//! Gaussian elimination, enumerates the `2^{dim ker} − 1` nonzero kernel vectors and counts the
//! item rows among them (Lemma 4.6); [`brute_force_counts`] tests every row and must agree
//! exactly. The estimate is de-biased as `x̂_j ← (x̂_j − (ρ+k)·n·2^{−τ})/(1 − 2^{−τ})`.
//!
//! # Drawing the analyzer's counts
//!
//! [`raw_counts_of_sets`] draws the raw counts after every device answered from how many sets
//! contain each item alone, equal in distribution to decoding the tuples:
//!
//! * The blanket tuples are i.i.d. uniform `τ × m` matrices over `F_2` (`m = log2(2B)`), and
//!   the counts depend on the tuples only through the multiset of their kernels.
//! * The rank of a uniform matrix grows column by column: with rank `r` after some columns,
//!   the next (uniform) column lies in the span of the previous ones with probability
//!   `2^{r−τ}` (1 once `r = τ`), independently of everything else. The kernel dimension is the
//!   number of such dependent columns. Tuples that stay full rank (most, when `τ > m`) have a
//!   trivial kernel and count for nothing.
//! * Given its dimension `d`, the kernel is a uniformly random `d`-dimensional subspace: for
//!   every invertible `G`, `AG` is again uniform and `ker(AG) = G^{−1} ker(A)`, and invertible
//!   matrices act transitively on the `d`-dimensional subspaces. It is drawn as the span of `d`
//!   uniform vectors, redrawn until they are independent (every subspace has the same number of
//!   ordered bases, so the span is uniform).

use rand::Rng;
use rand_chacha::ChaCha20Rng;

use tally_accounting::ghazi::HadamardParams;
use tally_accounting::{Collusion, ErrorLaw, Guarantee};

use super::set_oracle::{SetHolders, SetOracleRound, SetQuery, check_set_size, valid_set};
use crate::Error;
use crate::histogram::{DomainHistogram, DomainMap, MessageCost, check_map};
use crate::protocol::wire::BoundedDomainQuery;
use crate::protocol::{
    CountedRound, DeviceQuery, DomainRound, Estimates, MultiMessage, RoundAggregator,
    RoundProtocol, TrustModel, WireReport,
};
use crate::sampling::exact_binomial;

/// The Hadamard row of 0-indexed item `x`: `x + 1` (the paper's item `x + 1 ∈ [B]`).
pub fn item_row(item: u32) -> u32 {
    item + 1
}

/// Tuples of `τ` coordinates of `m` bits each, packed densely (`⌈τm/64⌉` words per tuple).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedTuples {
    tau: u32,
    bits: u32,
    words_per_tuple: usize,
    words: Vec<u64>,
}

impl PackedTuples {
    /// An empty buffer for tuples of `tau` coordinates of `bits ≤ 32` bits.
    pub fn new(tau: u32, bits: u32) -> Self {
        assert!((1..=32).contains(&bits), "coordinates have 1 to 32 bits");
        let words_per_tuple = (tau as usize * bits as usize).div_ceil(64);
        Self {
            tau,
            bits,
            words_per_tuple,
            words: Vec::new(),
        }
    }

    /// The number of tuples.
    pub fn len(&self) -> usize {
        self.words
            .len()
            .checked_div(self.words_per_tuple)
            .unwrap_or(0)
    }

    /// Whether there are no tuples.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Appends a tuple.
    ///
    /// # Panics
    ///
    /// If it does not have `τ` coordinates or a coordinate does not fit in `m` bits.
    pub fn push(&mut self, tuple: &[u32]) {
        assert_eq!(tuple.len(), self.tau as usize, "a tuple has τ coordinates");
        let start = self.words.len();
        self.words.resize(start + self.words_per_tuple, 0);
        for (g, &a) in tuple.iter().enumerate() {
            assert!(u64::from(a) < 1 << self.bits, "coordinate {a} too wide");
            let bit = g * self.bits as usize;
            let (w, o) = (start + bit / 64, bit % 64);
            self.words[w] |= u64::from(a) << o;
            if o + self.bits as usize > 64 {
                self.words[w + 1] |= u64::from(a) >> (64 - o);
            }
        }
    }

    /// Writes tuple `i` into `out` (of length `τ`).
    pub fn get(&self, i: usize, out: &mut [u32]) {
        let start = i * self.words_per_tuple;
        let mask = (1u64 << self.bits) - 1;
        for (g, slot) in out.iter_mut().enumerate().take(self.tau as usize) {
            let bit = g * self.bits as usize;
            let (w, o) = (start + bit / 64, bit % 64);
            let mut v = self.words[w] >> o;
            if o + self.bits as usize > 64 {
                v |= self.words[w + 1] << (64 - o);
            }
            *slot = (v & mask) as u32;
        }
    }
}

/// A reduced basis of a subspace of `F_2^m`, indexed by leading bit.
struct XorBasis {
    rows: [u32; 32],
    rank: u32,
    m: u32,
}

impl XorBasis {
    fn new(m: u32) -> Self {
        Self {
            rows: [0; 32],
            rank: 0,
            m,
        }
    }

    /// Adds `v` (below `2^m`); returns whether it was independent of the rows so far.
    ///
    /// Reduces `v` by the row of every set pivot bit, from the top down (without branches on
    /// the data: row `p` only touches bits `≤ p`); what is left has no pivot bit, and if it is
    /// nonzero its leading bit becomes a new pivot.
    fn insert(&mut self, mut v: u32) -> bool {
        for p in (0..self.m as usize).rev() {
            v ^= self.rows[p] & ((v >> p) & 1).wrapping_neg();
        }
        if v == 0 {
            return false;
        }
        self.rows[(31 - v.leading_zeros()) as usize] = v;
        self.rank += 1;
        true
    }

    /// A basis of `{j ∈ F_2^m : a·j = 0 for every row a}` (the kernel of the matrix whose rows
    /// span this space), from the reduced row echelon form.
    fn orthogonal_complement(mut self, m: u32, out: &mut Vec<u32>) {
        out.clear();
        // Reduce: clear every pivot bit from the other rows.
        for p in 0..m as usize {
            let r = self.rows[p];
            if r == 0 {
                continue;
            }
            for q in p + 1..m as usize {
                // Only rows above p can have bit p set.
                self.rows[q] ^= r & ((self.rows[q] >> p) & 1).wrapping_neg();
            }
        }
        for f in 0..m {
            if self.rows[f as usize] != 0 {
                continue;
            }
            // Free column f: set bit f, and each pivot p whose row has bit f.
            let mut v = 1u32 << f;
            for p in 0..m as usize {
                if (self.rows[p] >> f) & 1 == 1 {
                    v |= 1 << p;
                }
            }
            out.push(v);
        }
    }
}

/// Calls `visit` on every nonzero vector of the span of the independent vectors `basis`
/// (Gray-code order, `2^d − 1` calls).
fn for_each_nonzero_in_span(basis: &[u32], mut visit: impl FnMut(u32)) {
    let d = basis.len();
    let mut v = 0u32;
    for i in 1..(1u64 << d) {
        v ^= basis[i.trailing_zeros() as usize];
        visit(v);
    }
}

/// Adds the tuple's kernel to the item counts: `counts[x] += 1` for every item `x` whose row
/// `x + 1` is in the kernel.
fn add_kernel(tuple: &[u32], m: u32, counts: &mut [u64], scratch: &mut Vec<u32>) {
    let mut basis = XorBasis::new(m);
    for &a in tuple {
        basis.insert(a);
    }
    if basis.rank == m {
        return; // full column rank: the kernel is {0}
    }
    basis.orthogonal_complement(m, scratch);
    add_span(scratch, counts);
}

/// `counts[j − 1] += 1` for every nonzero `j ≤ B` in the span of `basis`.
fn add_span(basis: &[u32], counts: &mut [u64]) {
    let b = counts.len() as u32;
    for_each_nonzero_in_span(basis, |j| {
        if j <= b {
            counts[(j - 1) as usize] += 1;
        }
    });
}

/// The analyzer's raw counts by the kernel decoder (Lemma 4.6): entry `x` is the number of
/// tuples with every coordinate in `H_{2B, x+1}`, for the items `x ∈ 0..B`.
pub fn kernel_counts(tuples: &PackedTuples, domain: u32) -> Vec<u64> {
    let mut counts = vec![0u64; domain as usize];
    let mut tuple = vec![0u32; tuples.tau as usize];
    let mut scratch = Vec::new();
    for i in 0..tuples.len() {
        tuples.get(i, &mut tuple);
        add_kernel(&tuple, tuples.bits, &mut counts, &mut scratch);
    }
    counts
}

/// The analyzer's raw counts by testing every item row against every tuple (`O(MτB)`; for
/// tests). Must equal [`kernel_counts`] exactly.
pub fn brute_force_counts(tuples: &PackedTuples, domain: u32) -> Vec<u64> {
    let mut tuple = vec![0u32; tuples.tau as usize];
    let mut counts = vec![0u64; domain as usize];
    for i in 0..tuples.len() {
        tuples.get(i, &mut tuple);
        for (x, c) in counts.iter_mut().enumerate() {
            let j = item_row(x as u32);
            if tuple
                .iter()
                .all(|&a| (a & j).count_ones().is_multiple_of(2))
            {
                *c += 1;
            }
        }
    }
    counts
}

/// Algorithm 1, `P^Had = (R^Had, S, A^Had)`: each of `n` users holds a set of at most `k`
/// items of `0..B` and sends `k + ρ` tuples of `τ` coordinates in `[2B]`.
///
/// # Privacy
///
/// `(ε, δ)`-DP (`ε ≤ 1`) of the shuffled multiset of all tuples, for replace-one neighbours
/// (one user's set changes), in the shuffle model: Theorem 4.3 with `τ = ⌊log2 n⌋` and the
/// conservative `ρ` of [`HadamardParams`]. It relies on the shuffler hiding which user sent
/// which tuple, on every user sending exactly `k` real tuples (padding ids) and `ρ` blanket
/// tuples drawn with private coins, and on exactly uniform coordinates (drawn here from whole
/// random bits, `2B` being a power of 2).
#[derive(Clone, Debug, PartialEq)]
pub struct GhaziHadamard {
    params: HadamardParams,
}

impl GhaziHadamard {
    /// The protocol for `users` users, domain `B` (a power of 2), sets of at most `set_size`
    /// items and `(ε, δ)`.
    ///
    /// # Errors
    ///
    /// [`Error::Accounting`] for parameters [`HadamardParams::new`] rejects.
    pub fn new(
        users: u64,
        domain: u32,
        set_size: u32,
        epsilon: f64,
        delta: f64,
    ) -> Result<Self, Error> {
        let params = HadamardParams::new(
            users,
            u64::from(domain),
            u64::from(set_size),
            epsilon,
            delta,
        )?;
        Ok(Self { params })
    }

    /// The parameters (`τ`, `ρ`, …).
    pub fn params(&self) -> &HadamardParams {
        &self.params
    }

    fn domain_u32(&self) -> u32 {
        self.params.domain as u32
    }

    /// `m = log2(2B)`, the bits of a coordinate.
    fn m(&self) -> u32 {
        self.params.coordinate_bits()
    }

    /// An empty buffer of this protocol's tuple shape.
    pub fn empty_tuples(&self) -> PackedTuples {
        PackedTuples::new(self.params.tau, self.m())
    }

    /// The Hadamard rows a user with `set` reports: its items' rows, padded with
    /// `B+1, B+2, …` up to `k` rows.
    ///
    /// # Panics
    ///
    /// If the set has more than `k` items or an item outside the domain.
    fn padded_rows(&self, set: &[u32], rows: &mut Vec<u32>) {
        let b = self.domain_u32();
        assert!(
            set.len() as u64 <= self.params.set_size,
            "a set has at most k = {} items",
            self.params.set_size
        );
        rows.clear();
        for &x in set {
            assert!(x < b, "item {x} is outside the domain 0..{b}");
            rows.push(item_row(x));
        }
        let mut pad = b + 1;
        while (rows.len() as u64) < self.params.set_size {
            rows.push(pad);
            pad += 1;
        }
    }

    /// The randomizer `R^Had` of one user holding `set` (distinct items of `0..B`, at most
    /// `k`): appends its `k` real and `ρ` blanket tuples to `out`.
    ///
    /// # Panics
    ///
    /// As described for the set; if `out` has another shape.
    pub fn randomize(&self, set: &[u32], rng: &mut dyn Rng, out: &mut PackedTuples) {
        assert_eq!((out.tau, out.bits), (self.params.tau, self.m()));
        let mut rows = Vec::new();
        self.padded_rows(set, &mut rows);
        let mut tuple = vec![0u32; self.params.tau as usize];
        for &j in &rows {
            self.real_tuple(j, rng, &mut tuple);
            out.push(&tuple);
        }
        for _ in 0..self.params.rho {
            self.blanket_tuple(rng, &mut tuple);
            out.push(&tuple);
        }
    }

    /// `τ` i.i.d. uniform elements of `H_{2B,j}` ([`real_tuple`]).
    fn real_tuple<R: Rng + ?Sized>(&self, j: u32, rng: &mut R, tuple: &mut [u32]) {
        real_tuple(j, self.m(), rng, tuple);
    }

    /// `τ` i.i.d. uniform elements of `[2B]` ([`blanket_tuple`]).
    fn blanket_tuple<R: Rng + ?Sized>(&self, rng: &mut R, tuple: &mut [u32]) {
        blanket_tuple(self.m(), rng, tuple);
    }

    /// The analyzer `A^Had` on the shuffled tuples: de-biased estimates of every item's count.
    pub fn analyze(&self, tuples: &PackedTuples) -> Vec<f64> {
        self.debias(&kernel_counts(tuples, self.domain_u32()))
    }

    /// De-biases raw counts: `(c − (ρ+k)·n·2^{−τ})/(1 − 2^{−τ})`.
    pub fn debias(&self, raw: &[u64]) -> Vec<f64> {
        let spurious = self.params.expected_spurious();
        let scale = 1.0 - self.params.collision_probability();
        raw.iter().map(|&c| (c as f64 - spurious) / scale).collect()
    }
}

/// `tuple.len()` i.i.d. uniform elements of `H_{2B,j}`, coordinates of `m = log2(2B)` bits.
///
/// Each is a uniform `a ∈ [2B]` with the bit at `j`'s highest set bit `h` flipped when
/// `popcount(j & a)` is odd. Flipping bit `h` changes that parity, so `a ↦ a ⊕ 2^h` maps the
/// odd elements one-to-one onto the even ones: every even `b` is hit by `a = b` and
/// `a = b ⊕ 2^h`, probability `2/(2B) = 1/B = 1/|H_{2B,j}|`.
fn real_tuple<R: Rng + ?Sized>(j: u32, m: u32, rng: &mut R, tuple: &mut [u32]) {
    let h = 1u32 << (31 - j.leading_zeros());
    blanket_tuple(m, rng, tuple);
    for a in tuple.iter_mut() {
        if (*a & j).count_ones() % 2 == 1 {
            *a ^= h;
        }
    }
}

/// `tuple.len()` i.i.d. uniform elements of `[2^m]`, `m` random bits each.
fn blanket_tuple<R: Rng + ?Sized>(m: u32, rng: &mut R, tuple: &mut [u32]) {
    let mask = (1u64 << m) - 1;
    let per_word = 64 / m;
    let mut word = 0u64;
    let mut left = 0;
    for a in tuple.iter_mut() {
        if left == 0 {
            word = rng.next_u64();
            left = per_word;
        }
        *a = (word & mask) as u32;
        word >>= m;
        left -= 1;
    }
}

/// A basis of a uniformly random `dim`-dimensional subspace of `F_2^m`: `dim` uniform vectors,
/// redrawn together until they are independent.
fn uniform_subspace<R: Rng + ?Sized>(dim: u32, m: u32, rng: &mut R, out: &mut Vec<u32>) {
    let mask = (1u64 << m) - 1;
    'draw: loop {
        out.clear();
        let mut basis = XorBasis::new(m);
        for _ in 0..dim {
            let v = (rng.next_u64() & mask) as u32;
            if !basis.insert(v) {
                continue 'draw;
            }
            out.push(v);
        }
        return;
    }
}

impl DomainHistogram for GhaziHadamard {
    fn name(&self) -> &'static str {
        "ghazi-hadamard"
    }

    fn domain(&self) -> u32 {
        self.domain_u32()
    }

    fn guarantee(&self) -> Guarantee {
        self.params.guarantee()
    }

    fn collusion(&self, colluding_fraction: f64) -> Result<Option<Collusion>, Error> {
        Ok(Some(self.params.collusion(colluding_fraction)?))
    }

    fn message_cost(&self) -> Option<MessageCost> {
        Some(MessageCost {
            messages_per_client: self.params.tuples_per_user() as f64,
            bits_per_message: self.params.tuple_bits(),
        })
    }

    /// Lemma 4.5's law for single items: the `count` tuples generated for the element always
    /// decode to it, each of the other `(ρ + 1)·n − count` tuples does with probability
    /// `2^{−τ}` independently, and the analyzer de-biases by the calibrated `n`.
    fn error_law(&self, _: u64, count: u64) -> Option<ErrorLaw> {
        let tuples = self.params.tuples_per_user() * self.params.users;
        let collision = self.params.collision_probability();
        Some(ErrorLaw::DebiasedBinomials {
            parts: [(tuples.saturating_sub(count), collision), (0, collision)],
            gap: 1.0 - collision,
        })
    }
}

/// The raw counts of [`kernel_counts`] after the `n` devices of the protocol answered, drawn
/// from `holders` (how many sets contain each item, and how many sets have each size) without
/// forming the tuples: the law of the analyzer's counts depends on the sets only through those
/// numbers.
///
/// * A device's real tuple for row `j` (an item's, or the padding row `B + p` of every device
///   whose set has at most `k − p` items) is `τ` uniform vectors of the hyperplane `j^⊥` (the
///   `m − 1`-dimensional `H_{2B,j}`); its kernel is the orthogonal complement of their span, so
///   it always holds `j`, and given the span's rank `r` it is a uniform `(m − r)`-dimensional
///   subspace containing `j` (invertible maps of `j^⊥` act transitively on its subspaces of
///   one dimension, and complements pair them with the subspaces containing `j`). The ranks of
///   all the tuples of one row are drawn together (`ranks_of_uniform_matrices` over `m − 1`
///   columns): each counts for its item, and the rare deficient ones for the other rows of a
///   uniform subspace containing `j`, drawn one by one.
/// * The `ρn` blanket tuples are uniform `τ × m` matrices: their ranks are drawn together as
///   well; a tuple of full rank counts for nothing, one whose kernel is a line counts for its
///   uniform nonzero vector (all such tuples spread at once by `spread_uniform`), and one with
///   a larger kernel for the rows of a uniform subspace of that dimension, drawn one by one.
///
/// # Panics
///
/// If `holders` does not have one entry per item of the domain.
pub fn raw_counts_of_sets<R: Rng + ?Sized>(
    params: &HadamardParams,
    holders: &SetHolders,
    rng: &mut R,
) -> Vec<u64> {
    let domain = params.domain as u32;
    assert_eq!(
        holders.of_item.len(),
        domain as usize,
        "one count per domain item"
    );
    let (tau, m) = (params.tau, params.coordinate_bits());
    let mut counts = vec![0u64; domain as usize];
    let mut basis = Vec::new();
    // Unwrap safety: k ≤ B (checked by the parameters), so padding rows stay below 2B.
    let set_size = u32::try_from(params.set_size).expect("k ≤ B");
    let item_rows = (0..domain).map(|x| (item_row(x), holders.of_item[x as usize]));
    let padding_rows =
        (1..set_size).map(|p| (domain + p, holders.at_most((set_size - p) as usize)));
    for (j, held) in item_rows.chain(padding_rows) {
        if held == 0 {
            continue;
        }
        if j <= domain {
            counts[(j - 1) as usize] += held;
        }
        for (rank, &tuples) in ranks_of_uniform_matrices(held, tau, m - 1, rng)
            .iter()
            .enumerate()
        {
            // Kernel dimension m − rank; a line (rank m − 1) is span(j), counted above.
            let dim = m - rank as u32;
            for _ in 0..if dim >= 2 { tuples } else { 0 } {
                uniform_subspace_through(j, dim, m, rng, &mut basis);
                // Every nonzero vector but j itself, already counted.
                for_each_nonzero_in_span(&basis, |v| {
                    if v != j && v <= domain {
                        counts[(v - 1) as usize] += 1;
                    }
                });
            }
        }
    }
    let blanket = params.rho * params.users;
    for (rank, &tuples) in ranks_of_uniform_matrices(blanket, tau, m, rng)
        .iter()
        .enumerate()
    {
        match m - rank as u32 {
            0 => {}
            1 => spread_uniform(tuples, m, domain, rng, &mut |v, k| {
                counts[(v - 1) as usize] += k;
            }),
            dim => {
                for _ in 0..tuples {
                    uniform_subspace(dim, m, rng, &mut basis);
                    add_span(&basis, &mut counts);
                }
            }
        }
    }
    counts
}

/// How many of `count` uniform `τ × columns` matrices over `F_2` have each rank (entry `r`
/// of the result, `r ≤ columns`), drawn column by column: a matrix of rank `r` after some
/// columns keeps it at the next (uniform) column with probability `2^{r−τ}` (the column falls
/// in the span of the previous ones; 1 once `r = τ`), independently of the others, so the
/// matrices of each rank split by one exact binomial per column and rank.
fn ranks_of_uniform_matrices<R: Rng + ?Sized>(
    count: u64,
    tau: u32,
    columns: u32,
    rng: &mut R,
) -> Vec<u64> {
    let mut at_rank = vec![0u64; columns as usize + 1];
    at_rank[0] = count;
    for column in 0..columns {
        // Highest rank first, so that a matrix moves up at most once per column.
        for rank in (0..=column.min(tau.saturating_sub(1))).rev() {
            let here = at_rank[rank as usize];
            if here == 0 {
                continue;
            }
            let dependent = exact_binomial(here, (f64::from(rank) - f64::from(tau)).exp2(), rng);
            at_rank[rank as usize] = dependent;
            at_rank[rank as usize + 1] += here - dependent;
        }
    }
    at_rank
}

/// Spreads `count` independent uniform nonzero vectors of `F_2^m` and calls `visit(v, k)` for
/// each `v ∈ 1..=limit` that `k > 0` of them equal. Exact: the vectors are drawn uniform over
/// all of `F_2^m` by halving (one `Bin(·, 1/2)` per node of the binary tree over `0..2^m`,
/// only along the subtrees that hold `0..=limit`), and those equal to 0 are redrawn.
fn spread_uniform<R: Rng + ?Sized>(
    count: u64,
    m: u32,
    limit: u32,
    rng: &mut R,
    visit: &mut impl FnMut(u32, u64),
) {
    /// Splits the `count` vectors of the aligned block `start..start + 2^bits`; returns how
    /// many are 0.
    fn split<R: Rng + ?Sized>(
        count: u64,
        start: u64,
        bits: u32,
        limit: u64,
        rng: &mut R,
        visit: &mut impl FnMut(u32, u64),
    ) -> u64 {
        if count == 0 || start > limit {
            return 0;
        }
        if bits == 0 {
            if start == 0 {
                return count;
            }
            // Unwrap safety: start ≤ limit, a u32.
            visit(u32::try_from(start).expect("a row"), count);
            return 0;
        }
        let low = exact_binomial(count, 0.5, rng);
        let half = 1u64 << (bits - 1);
        split(low, start, bits - 1, limit, rng, visit)
            + split(count - low, start + half, bits - 1, limit, rng, visit)
    }
    let mut left = count;
    while left > 0 {
        left = split(left, 0, m, u64::from(limit), rng, visit);
    }
}

/// A basis of a uniformly random `dim`-dimensional subspace of `F_2^m` containing `j ≠ 0`:
/// `j` and `dim − 1` uniform vectors, redrawn together until the `dim` are independent (every
/// such subspace has the same number of such bases).
fn uniform_subspace_through<R: Rng + ?Sized>(
    j: u32,
    dim: u32,
    m: u32,
    rng: &mut R,
    out: &mut Vec<u32>,
) {
    let mask = (1u64 << m) - 1;
    'draw: loop {
        out.clear();
        out.push(j);
        let mut basis = XorBasis::new(m);
        basis.insert(j);
        for _ in 1..dim {
            let v = (rng.next_u64() & mask) as u32;
            if !basis.insert(v) {
                continue 'draw;
            }
            out.push(v);
        }
        return;
    }
}

/// One message of `P^Had`: a tuple of `τ` coordinates of `m` bits, packed as the number
/// `Σ a_g·2^{g·m}` in little-endian 64-bit words with no high zero word (so 0 is no word). On
/// the wire, that number in lowercase hexadecimal without leading zeros.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HadamardTuple(Vec<u64>);

impl HadamardTuple {
    /// The tuple `coordinates`, of `m` bits each.
    fn pack(coordinates: &[u32], m: u32) -> Self {
        let bits = coordinates.len() * m as usize;
        let mut words = vec![0u64; bits.div_ceil(64)];
        for (g, &a) in coordinates.iter().enumerate() {
            let bit = g * m as usize;
            let (w, o) = (bit / 64, bit % 64);
            words[w] |= u64::from(a) << o;
            if o + m as usize > 64 {
                words[w + 1] |= u64::from(a) >> (64 - o);
            }
        }
        while words.last() == Some(&0) {
            words.pop();
        }
        Self(words)
    }

    /// Its `out.len()` coordinates of `m` bits (zero beyond its words).
    fn unpack(&self, m: u32, out: &mut [u32]) {
        let mask = (1u64 << m) - 1;
        let word = |w: usize| self.0.get(w).copied().unwrap_or(0);
        for (g, slot) in out.iter_mut().enumerate() {
            let bit = g * m as usize;
            let (w, o) = (bit / 64, bit % 64);
            let mut v = word(w) >> o;
            if o + m as usize > 64 {
                v |= word(w + 1) << (64 - o);
            }
            *slot = (v & mask) as u32;
        }
    }

    /// The number of bits of the packed number.
    fn bit_length(&self) -> u64 {
        self.0.last().map_or(0, |top| {
            64 * (self.0.len() as u64 - 1) + u64::from(64 - top.leading_zeros())
        })
    }

    fn write_hex(&self, text: &mut String) {
        use std::fmt::Write;
        let mut words = self.0.iter().rev();
        match words.next() {
            None => text.push('0'),
            Some(top) => {
                // Writing to a String cannot fail.
                let _ = write!(text, "{top:x}");
                for word in words {
                    let _ = write!(text, "{word:016x}");
                }
            }
        }
    }

    /// The tuple `hex` spells: lowercase hexadecimal digits, no leading zero but in "0".
    fn read_hex(hex: &str) -> Option<Self> {
        let digits = hex.as_bytes();
        let canonical = !digits.is_empty()
            && digits
                .iter()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
            && (hex == "0" || digits[0] != b'0');
        if !canonical {
            return None;
        }
        let mut words: Vec<u64> = digits
            .rchunks(16)
            .map(|chunk| {
                // Unwrap safety: ASCII hex digits, at most 16.
                u64::from_str_radix(std::str::from_utf8(chunk).expect("ascii"), 16)
                    .expect("hex digits")
            })
            .collect();
        while words.last() == Some(&0) {
            words.pop();
        }
        Some(Self(words))
    }
}

impl Ord for HadamardTuple {
    /// As numbers.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }
}

impl PartialOrd for HadamardTuple {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// A device's `P^Had` report: its real tuple and its `ρ` blanket tuples. On the wire, the
/// tuples in increasing order, separated by commas.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HadamardTuples(Vec<HadamardTuple>);

impl MultiMessage for HadamardTuples {
    type Message = HadamardTuple;

    fn into_messages(self) -> Vec<HadamardTuple> {
        self.0
    }

    fn from_message(message: HadamardTuple) -> Self {
        Self(vec![message])
    }
}

/// One tuple: its number in lowercase hexadecimal, as in a report.
impl WireReport for HadamardTuple {
    fn encode(self) -> String {
        let mut text = String::new();
        self.write_hex(&mut text);
        text
    }

    fn decode(text: String) -> Option<Self> {
        Self::read_hex(&text)
    }
}

impl WireReport for HadamardTuples {
    /// The tuples in increasing order, in hexadecimal, separated by commas.
    fn encode(mut self) -> String {
        self.0.sort_unstable();
        let mut text = String::new();
        for tuple in &self.0 {
            if !text.is_empty() {
                text.push(',');
            }
            tuple.write_hex(&mut text);
        }
        text
    }

    /// Refuses an empty list, a tuple not in canonical hexadecimal and tuples out of order.
    fn decode(text: String) -> Option<Self> {
        let mut tuples: Vec<HadamardTuple> = Vec::new();
        for item in text.split(',') {
            let tuple = HadamardTuple::read_hex(item)?;
            if tuples.last().is_some_and(|last| *last > tuple) {
                return None;
            }
            tuples.push(tuple);
        }
        Some(Self(tuples))
    }
}

/// The query of a `P^Had` round over a domain of `B` items: the domain, the tuple length `τ`,
/// the number `ρ` of blanket tuples and the set size `k` (1 when devices hold one item), all
/// public.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HadamardQuery {
    map: DomainMap,
    tau: u32,
    rho: u64,
    set_size: u32,
}

impl HadamardQuery {
    /// The query over `map`'s domain with tuples of `tau` coordinates and `rho` blanket tuples
    /// per device, as a device rebuilds it from what the server publishes.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless the domain is a power of 2 of at least 2 elements,
    /// `1 ≤ τ ≤ 64` and `1 ≤ ρ ≤ 2^20`.
    pub fn new(map: DomainMap, tau: u32, rho: u64) -> Result<Self, Error> {
        let size = map.size();
        if !(size.is_power_of_two() && (2..=1 << 31).contains(&size)) {
            return Err(Error::invalid("domain", size, "a power of 2 in [2, 2^31]"));
        }
        if !(1..=64).contains(&tau) {
            return Err(Error::invalid("tau", tau, "in [1, 64]"));
        }
        if !(1..=1 << 20).contains(&rho) {
            return Err(Error::invalid("rho", rho, "in [1, 2^20]"));
        }
        Ok(Self {
            map,
            tau,
            rho,
            set_size: 1,
        })
    }

    /// The query for devices holding sets of at most `set_size` items: each sends `k` real
    /// tuples (its items' rows, padded with the rows `B + 1, B + 2, …`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `1 ≤ k < B`.
    pub fn with_set_size(self, set_size: u32) -> Result<Self, Error> {
        check_set_size(set_size, self.map.size())?;
        Ok(Self { set_size, ..self })
    }

    /// The public domain.
    pub fn map(&self) -> DomainMap {
        self.map
    }

    /// The coordinates `τ` of a tuple.
    pub fn tau(&self) -> u32 {
        self.tau
    }

    /// The blanket tuples `ρ` of a device.
    pub fn rho(&self) -> u64 {
        self.rho
    }

    /// `m = log2(2B)`, the bits of a coordinate.
    fn m(&self) -> u32 {
        self.map.size().ilog2() + 1
    }
}

impl DeviceQuery for HadamardQuery {
    type Input = u32;
    type Report = HadamardTuples;

    fn trust(&self) -> TrustModel {
        TrustModel::Shuffle
    }

    /// The report of the one-item set `{item}` ([`SetQuery::respond_set`]); `None` outside the
    /// domain.
    fn respond<R: Rng + ?Sized>(&self, item: &u32, rng: &mut R) -> Option<HadamardTuples> {
        self.respond_set(&[*item], rng)
    }

    /// Exactly `k + ρ` tuples, each of `τ` coordinates of `m` bits.
    fn admits(&self, report: &HadamardTuples) -> bool {
        report.0.len() as u64 == u64::from(self.set_size) + self.rho
            && report.0.iter().all(|t| self.admits_message(t))
    }

    /// A tuple of `τ` coordinates of `m` bits.
    fn admits_message(&self, tuple: &HadamardTuple) -> bool {
        tuple.bit_length() <= u64::from(self.tau) * u64::from(self.m())
    }
}

impl SetQuery for HadamardQuery {
    fn set_size(&self) -> u32 {
        self.set_size
    }

    /// The real tuples of the items' rows, padded with the rows `B + 1, B + 2, …` up to `k`,
    /// and `ρ` blanket tuples, drawn with the device's own coins.
    fn respond_set<R: Rng + ?Sized>(&self, set: &[u32], rng: &mut R) -> Option<HadamardTuples> {
        let domain = self.map.size();
        if !valid_set(set, self.set_size, domain) {
            return None;
        }
        let m = self.m();
        let mut coordinates = vec![0u32; self.tau as usize];
        let mut tuples = Vec::with_capacity(self.set_size as usize + self.rho as usize);
        let padding = (domain + 1..).take(self.set_size as usize - set.len());
        for row in set.iter().map(|&x| item_row(x)).chain(padding) {
            real_tuple(row, m, rng, &mut coordinates);
            tuples.push(HadamardTuple::pack(&coordinates, m));
        }
        for _ in 0..self.rho {
            blanket_tuple(m, rng, &mut coordinates);
            tuples.push(HadamardTuple::pack(&coordinates, m));
        }
        Some(HadamardTuples(tuples))
    }
}

impl BoundedDomainQuery for HadamardQuery {
    fn domain_map(&self) -> DomainMap {
        self.map
    }

    /// `k + ρ` tuples of at most `⌈τm/4⌉` hexadecimal digits, with a comma between tuples.
    fn longest_report(&self) -> u64 {
        let tuples = u64::from(self.set_size) + self.rho;
        let digits = (u64::from(self.tau) * u64::from(self.m())).div_ceil(4);
        tuples * digits + tuples - 1
    }
}

impl GhaziHadamard {
    /// The protocol as a round over `map`'s domain, each device holding a set of at most `k`
    /// items (one, as a [`DomainRound`]): devices send their tuples, the analyzer decodes them
    /// and releases every item's de-biased estimate ([`debias`](Self::debias)).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `map`'s domain is not the protocol's.
    pub fn round(&self, map: DomainMap) -> Result<HadamardRound, Error> {
        check_map(self.domain_u32(), map)?;
        // Unwrap safety: k < B ≤ 2^31 (checked by the parameters).
        let set_size = u32::try_from(self.params.set_size).expect("k < B");
        Ok(HadamardRound {
            query: HadamardQuery::new(map, self.params.tau, self.params.rho)?
                .with_set_size(set_size)?,
            protocol: self.clone(),
        })
    }
}

/// `P^Had` as a round: its query and the calibrated analyzer.
#[derive(Clone, Debug, PartialEq)]
pub struct HadamardRound {
    query: HadamardQuery,
    protocol: GhaziHadamard,
}

impl HadamardRound {
    /// The calibrated protocol.
    pub fn protocol(&self) -> &GhaziHadamard {
        &self.protocol
    }
}

impl RoundProtocol for HadamardRound {
    type Query = HadamardQuery;
    type Release = Estimates;
    type Aggregator = HadamardCounts;

    fn query(&self) -> &HadamardQuery {
        &self.query
    }

    /// The analyzer flips no coins.
    fn aggregator(&self, _: ChaCha20Rng) -> HadamardCounts {
        HadamardCounts {
            raw: vec![0; self.protocol.domain_u32() as usize],
            protocol: self.protocol.clone(),
        }
    }
}

/// Its devices hold a domain element; its release is every element's estimate.
impl DomainRound for HadamardRound {
    fn estimates(Estimates(estimates): Estimates) -> Vec<f64> {
        estimates
    }
}

impl CountedRound for HadamardRound {
    /// When the calibrated `n` devices answer, each holding one item: the analyzer's counts
    /// drawn from the number of devices holding each element ([`raw_counts_of_sets`]).
    fn aggregate_counts<R: Rng + ?Sized>(
        &self,
        holders: &[u64],
        rng: &mut R,
    ) -> Option<HadamardCounts> {
        self.aggregate_sets(&SetHolders::of_single_items(holders), rng)
    }
}

impl SetOracleRound for HadamardRound {
    fn domain(&self) -> u32 {
        self.protocol.domain_u32()
    }

    fn guarantee(&self) -> Guarantee {
        self.protocol.params.guarantee()
    }

    fn collusion(&self, colluding_fraction: f64) -> Result<Collusion, Error> {
        Ok(self.protocol.params.collusion(colluding_fraction)?)
    }

    fn message_cost(&self) -> MessageCost {
        DomainHistogram::message_cost(&self.protocol).expect("a shuffle protocol sends messages")
    }

    /// When the calibrated `n` devices answer: the analyzer's counts drawn from how many sets
    /// contain each item and how many sets have each size ([`raw_counts_of_sets`]).
    fn aggregate_sets<R: Rng + ?Sized>(
        &self,
        holders: &SetHolders,
        rng: &mut R,
    ) -> Option<HadamardCounts> {
        if !holders.of_devices(self.protocol.domain_u32(), self.protocol.params.users) {
            return None;
        }
        Some(HadamardCounts {
            raw: raw_counts_of_sets(&self.protocol.params, holders, rng),
            protocol: self.protocol.clone(),
        })
    }
}

/// The analyzer of a `P^Had` round: every item's raw count, the tuples decoded so far whose
/// every coordinate lies in the item's `H_{2B, x+1}`.
pub struct HadamardCounts {
    raw: Vec<u64>,
    protocol: GhaziHadamard,
}

impl HadamardCounts {
    /// Every item's raw count, before de-biasing.
    pub fn raw(&self) -> &[u64] {
        &self.raw
    }
}

impl RoundAggregator for HadamardCounts {
    type Report = HadamardTuples;
    type Release = Estimates;

    /// Decodes every tuple of an admitted report (Lemma 4.6's kernel decoder).
    fn absorb(&mut self, report: HadamardTuples) {
        let m = self.protocol.m();
        let mut coordinates = vec![0u32; self.protocol.params.tau as usize];
        let mut scratch = Vec::new();
        for tuple in &report.0 {
            tuple.unpack(m, &mut coordinates);
            add_kernel(&coordinates, m, &mut self.raw, &mut scratch);
        }
    }

    fn merge(&mut self, other: Self) {
        for (raw, more) in self.raw.iter_mut().zip(other.raw) {
            *raw += more;
        }
    }

    /// The de-biased estimates `(c − (ρ+k)·n·2^{−τ})/(1 − 2^{−τ})`, with `n` the calibrated
    /// number of devices.
    fn release(self) -> Estimates {
        Estimates(self.protocol.debias(&self.raw))
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use tally_accounting::blanket::BlanketAnalysis;

    use super::*;
    use crate::shuffle::two_sample::same_law;

    /// A small protocol (16 devices with sets of at most 3 of 8 items, `τ = 4`, one blanket
    /// tuple each), below what the guarantee needs, so that the padding rows' share of the
    /// counts stands out of the blanket's.
    fn small() -> HadamardRound {
        let params = HadamardParams {
            users: 16,
            domain: 8,
            set_size: 3,
            epsilon: 1.0,
            delta: 0.1,
            tau: 4,
            rho: 1,
            analysis: BlanketAnalysis::Theorem,
        };
        GhaziHadamard { params }
            .round(DomainMap::Integers(8))
            .unwrap()
    }

    /// A device's tuples sealed apart count as its report does; a tuple of more than `τ` 4-bit
    /// coordinates, or not one canonical tuple, is refused alone.
    #[test]
    fn tuples_count_apart_as_in_the_whole_report() {
        let params = HadamardParams {
            users: 16,
            domain: 8,
            set_size: 1,
            epsilon: 1.0,
            delta: 0.1,
            tau: 4,
            rho: 1,
            analysis: BlanketAnalysis::Theorem,
        };
        let round = GhaziHadamard { params }
            .round(DomainMap::Integers(8))
            .unwrap();
        crate::protocol::wire::assert_messages_count_apart_as_whole(
            &round,
            &[0, 5, 7, 7],
            &["10000", "0a,1", "0a"],
        );
    }

    /// With sets of 1 to 3 items, the count path ([`raw_counts_of_sets`]) has the law of every
    /// device answering, padding rows included: every item's raw count and their total agree;
    /// a count path that leaves the padding rows out (every set counted as full) is caught.
    #[test]
    fn stat_devices_and_count_path_agree_with_padding() {
        let round = small();
        let sets: Vec<Vec<u32>> = (0..16)
            .map(|i| [vec![0], vec![1, 2], vec![0], vec![3, 4, 0]][i % 4].clone())
            .collect();
        let mut holders = SetHolders {
            of_item: vec![0; 8],
            of_size: vec![0; 4],
        };
        for set in &sets {
            set.iter().for_each(|&x| holders.of_item[x as usize] += 1);
            holders.of_size[set.len()] += 1;
        }
        let unpadded = SetHolders {
            of_item: holders.of_item.clone(),
            of_size: vec![0, 0, 0, 16],
        };
        let with_total = |mut raw: Vec<u64>| {
            raw.push(raw.iter().sum());
            raw
        };
        let mut devices = ChaCha20Rng::seed_from_u64(8);
        let mut counted = ChaCha20Rng::seed_from_u64(9);
        let (mut by_devices, mut by_counts, mut mutant) = (vec![], vec![], vec![]);
        for _ in 0..3_000 {
            let mut aggregator = round.aggregator(ChaCha20Rng::seed_from_u64(0));
            for set in &sets {
                let report = round.query().respond_set(set, &mut devices).unwrap();
                assert!(round.query().admits(&report));
                aggregator.absorb(report);
            }
            by_devices.push(with_total(aggregator.raw));
            let answered = round.aggregate_sets(&holders, &mut counted).unwrap();
            by_counts.push(with_total(answered.raw));
            let wrong = round.aggregate_sets(&unpadded, &mut counted).unwrap();
            mutant.push(with_total(wrong.raw));
        }
        let column =
            |runs: &[Vec<u64>], x: usize| -> Vec<u64> { runs.iter().map(|r| r[x]).collect() };
        for x in 0..=8 {
            assert!(
                same_law(&column(&by_devices, x), &column(&by_counts, x)),
                "column {x}"
            );
        }
        assert!(
            !same_law(&column(&by_devices, 8), &column(&mutant, 8)),
            "the mutant passes"
        );
    }
}
