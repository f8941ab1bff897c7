//! Algorithm 2 of Ghazi, Golowich, Kumar, Pagh and Velingker (arXiv 1908.11358v4, §4.2;
//! docs/algorithms.md §5.2): public-coin Count-Min sketch with binomial blanket noise, `P^CM`.
//!
//! Public coins: `τ` hash functions `h_t : [B] → [s]` from the pairwise-independent family
//! `h(x) = ((a·x + b) mod P) mod s` with `P = 2^61 − 1` (prime, above `B·s`), `a` uniform in
//! `1..P` and `b` in `0..P` ([`CountMinHashes`]; the reduction mod `s` makes the family
//! pairwise independent up to a factor `1 + s/P` on collision probabilities). Each user sends
//! `(t, h_t(j))` for every held item `j` and row `t`, and the blanket: every cell `(t, ℓ)` with
//! probability `γ`, drawn as `K ~ Bin(τs, γ)` followed by `K` distinct uniform cells (exact
//! samplers), of which it sends a uniform `min(K, q)`: the cap `q`
//! ([`tally_accounting::ghazi::count_min_blanket_cap`]) bounds every report, whatever the
//! number of users, at the price of a share of `δ`. The analyzer's table is
//! `C = C̃ + Bin(n, γ)` per cell, up to the users whose `K` exceeds `q`.
//!
//! Queries ([`CountMinTable`]): `x̂_j = max(min_t C[t, h_t(j)] − γn, 0)`
//! ([`CountMinTable::estimate`]), its unclamped form, and the one-sided `min_t C[t, h_t(j)]`,
//! which is never below the true count.
//!
//! [`CountMinRound`]'s count path draws each cell's blanket total `Bin(n, γ)` directly: the
//! `n` users' coins for a cell are independent `Ber(γ)` (the `K`-then-subset draw is one way of
//! flipping `τs` such coins), so their sum is `Bin(n, γ)`, independently across cells. That is
//! the law of the uncapped protocol: the capped devices' table has another law, but the two
//! agree unless some device's `K` exceeds `q`, so they differ by at most `nη ≤ δ/100` in total
//! variation, and the count path's release is covered by the same guarantee (the cap's proof
//! bounds the uncapped protocol at `(ε, δ_L)`).

use std::collections::HashMap;
use std::sync::Arc;

use rand::Rng;
use rand_chacha::ChaCha20Rng;
use tally_accounting::ghazi::CountMinParams;
use tally_accounting::{Collusion, Guarantee};

use super::set_oracle::{SetHolders, SetOracleRound, SetQuery, check_set_size, valid_set};
use crate::Error;
use crate::histogram::{DomainHistogram, DomainMap, MessageCost, check_map};
use crate::protocol::wire::{BoundedDomainQuery, decimal_digits, decimal_digits_below};
use crate::protocol::{
    CountedRound, DeviceQuery, DomainRound, Estimates, MultiMessage, RoundAggregator,
    RoundProtocol, TrustModel, WireReport, decode_messages, encode_messages,
};
use crate::sampling::{exact_binomial, uniform_below, uniform_subset};

/// The Mersenne prime `2^61 − 1` of the hash family.
const PRIME: u64 = (1 << 61) - 1;

/// One hash function `x ↦ ((a·x + b) mod P) mod s`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairwiseHash {
    a: u64,
    b: u64,
    width: u64,
}

impl PairwiseHash {
    /// The hash `x ↦ ((a·x + b) mod P) mod width`, as a device rebuilds it from what the server
    /// publishes.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `a ∈ 1..P`, `b ∈ 0..P` and `width ≥ 1`.
    pub fn new(a: u64, b: u64, width: u64) -> Result<Self, Error> {
        if !(1..PRIME).contains(&a) {
            return Err(Error::invalid("a", a, "in [1, 2^61 − 1)"));
        }
        if b >= PRIME {
            return Err(Error::invalid("b", b, "below 2^61 − 1"));
        }
        if width == 0 {
            return Err(Error::invalid("width", width, "at least 1"));
        }
        Ok(Self { a, b, width })
    }

    /// Its coefficients `(a, b)`.
    pub fn coefficients(&self) -> (u64, u64) {
        (self.a, self.b)
    }

    /// Its range `s`.
    pub fn width(&self) -> u64 {
        self.width
    }

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

    /// The hash functions `rows`, as a device rebuilds them from what the server publishes.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless there is at least one row and every row has the
    /// same width.
    pub fn new(rows: Vec<PairwiseHash>) -> Result<Self, Error> {
        let width = rows.first().map(PairwiseHash::width);
        if width.is_none() || rows.iter().any(|h| Some(h.width) != width) {
            return Err(Error::invalid(
                "hash rows",
                rows.len(),
                "at least one, all of the same width",
            ));
        }
        Ok(Self { rows })
    }
}

/// The analyzer's noisy Count-Min table and its queries.
#[derive(Clone, Debug, PartialEq)]
pub struct CountMinTable {
    params: CountMinParams,
    hashes: CountMinHashes,
    /// Row-major `τ × s` counts.
    counts: Vec<u64>,
}

impl CountMinTable {
    /// `C[t, ℓ]`.
    pub fn count(&self, row: u32, cell: u64) -> u64 {
        self.counts[row as usize * self.params.width as usize + cell as usize]
    }

    /// The one-sided estimate `min_t C[t, h_t(j)]`: never below the true count of `j`.
    pub fn one_sided(&self, item: u32) -> f64 {
        self.hashes
            .rows
            .iter()
            .enumerate()
            .map(|(t, h)| self.count(t as u32, h.apply(item)))
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
/// Lemma 4.10 at `δ_L` (`γn ≥ 90τ²k² ln(2τk/δ_L)/ε²`, `γ ≤ 1/2`) and the blanket cap's
/// `δ − δ_L` (see [`CountMinParams`] and
/// [`count_min_blanket_cap`](tally_accounting::ghazi::count_min_blanket_cap)). The hash
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
        let cells = self.cells() as u64;
        for cell in capped_blanket(cells, self.params.gamma, self.params.blanket_cap, rng) {
            out.push(((cell / w) as u32, cell % w));
        }
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

    fn collusion(&self, colluding_fraction: f64) -> Result<Option<Collusion>, Error> {
        Ok(Some(self.params.collusion(colluding_fraction)?))
    }

    fn message_cost(&self) -> Option<MessageCost> {
        Some(MessageCost {
            messages_per_client: self.params.expected_messages_per_user(),
            bits_per_message: self.params.bits_per_message(),
        })
    }
}

/// One user's blanket over `cells` cells: `K ~ Bin(cells, γ)`, then a uniform `min(K, cap)` of
/// the cells (row-major indices; a uniform subset of that size of a uniform `K`-subset).
fn capped_blanket<R: Rng + ?Sized>(cells: u64, gamma: f64, cap: u64, rng: &mut R) -> Vec<u64> {
    let coins = exact_binomial(cells, gamma, rng);
    uniform_subset(cells, coins.min(cap), rng).expect("min(K, q) ≤ τs cells")
}

/// `Bin(n, p)`, exactly, one bit of the coins' uniforms at a time: a coin succeeds iff its
/// uniform `U ∈ [0, 1)` is below `p`. The coins whose next bit of `U` is 0 are `Bin(n, 1/2)`
/// of them; if `p ≥ 1/2` they all succeed and the others go on with `2p − 1`, else the others
/// all fail and they go on with `2p` (the rest of `U` is again uniform; `2p` and `2p − 1` are
/// exact). A fair coin costs one random bit ([`fair_coins`]) and the coins still undecided
/// halve at every step, so `n` coins cost about `n/32` random words where
/// [`exact_binomial`]'s bit-sliced coins cost about `n/8` (every lane must be decided).
fn blanket_total<R: Rng + ?Sized>(mut n: u64, mut p: f64, rng: &mut R) -> u64 {
    let mut successes = 0;
    while n > 0 && p > 0.0 {
        if p >= 1.0 {
            return successes + n;
        }
        let low = fair_coins(n, rng);
        if p >= 0.5 {
            successes += low;
            n -= low;
            p = 2.0 * p - 1.0;
        } else {
            n = low;
            p *= 2.0;
        }
    }
    successes
}

/// How many of `n` fair coins come up heads (`Bin(n, 1/2)`, exactly): the ones among `n`
/// uniform random bits.
fn fair_coins<R: Rng + ?Sized>(n: u64, rng: &mut R) -> u64 {
    let mut heads = 0;
    let mut left = n;
    while left >= 64 {
        heads += u64::from(rng.next_u64().count_ones());
        left -= 64;
    }
    if left > 0 {
        heads += u64::from((rng.next_u64() & ((1 << left) - 1)).count_ones());
    }
    heads
}

/// A device's `P^CM` messages: the cells `t·s + ℓ` of the `τ × s` table (row-major), one
/// per row for its item and its blanket's. On the wire, in increasing order
/// ([`crate::protocol::encode_messages`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CountMinMessages(Vec<u32>);

impl MultiMessage for CountMinMessages {
    type Message = u32;

    fn into_messages(self) -> Vec<u32> {
        self.0
    }

    fn from_message(message: u32) -> Self {
        Self(vec![message])
    }
}

impl WireReport for CountMinMessages {
    /// The cells in increasing order.
    fn encode(mut self) -> String {
        self.0.sort_unstable();
        encode_messages(self.0)
    }

    /// Refuses a list that is empty, not canonical or not sorted.
    fn decode(text: String) -> Option<Self> {
        decode_messages(&text).map(Self)
    }
}

/// The query of a `P^CM` round: the public domain, the public hash functions, the blanket
/// probability `γ`, the blanket cap `q` and the set size `k` (1 when devices hold one item).
#[derive(Clone, Debug, PartialEq)]
pub struct CountMinQuery {
    map: DomainMap,
    hashes: CountMinHashes,
    gamma: f64,
    blanket_cap: u64,
    set_size: u32,
}

impl CountMinQuery {
    /// The query over `map`'s domain with the hash functions `hashes`, blanket probability
    /// `gamma` and at most `blanket_cap` blanket cells per device, as a device rebuilds it from
    /// what the server publishes.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless the domain has at least 2 elements, the table's
    /// `τ·s` cells are numbered below `2^32`, `γ ∈ (0, 1/2]` and the cap is at most `τ·s`.
    pub fn new(
        map: DomainMap,
        hashes: CountMinHashes,
        gamma: f64,
        blanket_cap: u64,
    ) -> Result<Self, Error> {
        crate::ldp::check_domain(map.size())?;
        let cells = hashes.rows.len() as u128 * u128::from(hashes.rows[0].width);
        if cells > u128::from(u32::MAX) {
            return Err(Error::invalid(
                "table",
                cells,
                "at most 2^32 − 1 cells (rows × width)",
            ));
        }
        if !(gamma > 0.0 && gamma <= 0.5) {
            return Err(Error::invalid("blanket probability", gamma, "in (0, 1/2]"));
        }
        if u128::from(blanket_cap) > cells {
            return Err(Error::invalid(
                "blanket cap",
                blanket_cap,
                "at most the table's τ·s cells",
            ));
        }
        Ok(Self {
            map,
            hashes,
            gamma,
            blanket_cap,
            set_size: 1,
        })
    }

    /// The query for devices holding sets of at most `set_size` items.
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

    /// The public hash functions.
    pub fn hashes(&self) -> &CountMinHashes {
        &self.hashes
    }

    /// The blanket probability `γ` of every cell.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }

    /// The most blanket cells a device sends, `q`.
    pub fn blanket_cap(&self) -> u64 {
        self.blanket_cap
    }

    /// The most cells a device sends: `k` per row and the blanket cap, `kτ + q`.
    fn most_cells(&self) -> u64 {
        self.hashes.rows.len() as u64 * u64::from(self.set_size) + self.blanket_cap
    }

    fn width(&self) -> u64 {
        self.hashes.rows[0].width
    }

    fn cells(&self) -> u64 {
        self.hashes.rows.len() as u64 * self.width()
    }

    /// The cell of row `t` that `item` hashes to.
    fn cell(&self, t: usize, item: u32) -> u32 {
        // Unwrap safety: cells are numbered below 2^32 (checked by `new`).
        u32::try_from(t as u64 * self.width() + self.hashes.rows[t].apply(item))
            .expect("a cell below 2^32")
    }
}

impl DeviceQuery for CountMinQuery {
    type Input = u32;
    type Report = CountMinMessages;

    fn trust(&self) -> TrustModel {
        TrustModel::Shuffle
    }

    /// The report of the one-item set `{item}` ([`SetQuery::respond_set`]); `None` outside the
    /// domain.
    fn respond<R: Rng + ?Sized>(&self, item: &u32, rng: &mut R) -> Option<CountMinMessages> {
        self.respond_set(&[*item], rng)
    }

    /// At most `kτ + q` cells of the table (what an honest device could send), each at most
    /// `k + 1` times, with at least one in every row.
    fn admits(&self, report: &CountMinMessages) -> bool {
        if report.0.len() as u64 > self.most_cells() {
            return false;
        }
        let mut sorted = report.0.clone();
        sorted.sort_unstable();
        let width = self.width();
        let mut rows_seen = vec![false; self.hashes.rows.len()];
        let in_table = sorted.iter().all(|&c| u64::from(c) < self.cells());
        let repeats = self.set_size as usize + 2;
        let at_most_k_plus_once = sorted.windows(repeats).all(|w| w[0] != w[repeats - 1]);
        if !(in_table && at_most_k_plus_once) {
            return false;
        }
        for &c in &sorted {
            rows_seen[(u64::from(c) / width) as usize] = true;
        }
        rows_seen.into_iter().all(|seen| seen)
    }

    /// A cell of the table.
    fn admits_message(&self, cell: &u32) -> bool {
        u64::from(*cell) < self.cells()
    }
}

impl SetQuery for CountMinQuery {
    fn set_size(&self) -> u32 {
        self.set_size
    }

    /// The cell of every row each item hashes to, and the blanket: `K ~ Bin(τs, γ)`, then a
    /// uniform `min(K, q)` distinct cells, drawn with the device's own coins.
    fn respond_set<R: Rng + ?Sized>(&self, set: &[u32], rng: &mut R) -> Option<CountMinMessages> {
        if !valid_set(set, self.set_size, self.map.size()) {
            return None;
        }
        let rows = self.hashes.rows.len();
        let mut cells: Vec<u32> = set
            .iter()
            .flat_map(|&item| (0..rows).map(move |t| self.cell(t, item)))
            .collect();
        let blanket = capped_blanket(self.cells(), self.gamma, self.blanket_cap, rng);
        // Unwrap safety: cells are numbered below 2^32.
        cells.extend(
            blanket
                .into_iter()
                .map(|c| u32::try_from(c).expect("a cell")),
        );
        Some(CountMinMessages(cells))
    }
}

impl BoundedDomainQuery for CountMinQuery {
    fn domain_map(&self) -> DomainMap {
        self.map
    }

    /// The shorter of two bounds, decimal with commas between: every cell once and `k` more
    /// per row, or `kτ + q` cells ([`admits`](DeviceQuery::admits)'s most) of the largest
    /// cell's digits.
    fn longest_report(&self) -> u64 {
        let cells = self.cells();
        let largest = decimal_digits(cells - 1);
        let repeated = self.hashes.rows.len() as u64 * u64::from(self.set_size);
        let every_cell = decimal_digits_below(cells) + repeated * largest + cells + repeated - 1;
        let most = self.most_cells();
        every_cell.min(most * (largest + 1) - 1)
    }
}

impl GhaziCountMin {
    /// The protocol as a round over `map`'s domain with the public hash functions `hashes`
    /// (drawn by whoever builds the round, [`CountMinHashes::draw`], and published with its
    /// query), each device holding a set of at most `k` items (one, as a [`DomainRound`]):
    /// devices send their cells, the analyzer counts the cells some item hashes to and
    /// releases every item's unclamped estimate [`CountMinTable::estimate_unclamped`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `map`'s domain is not the protocol's, the hash functions
    /// do not fit the table or it has `2^32` cells or more.
    pub fn round(&self, map: DomainMap, hashes: CountMinHashes) -> Result<CountMinRound, Error> {
        check_map(self.params.domain as u32, map)?;
        if hashes.rows.len() != self.params.rows as usize
            || hashes.rows[0].width != self.params.width
        {
            return Err(Error::invalid(
                "hash rows",
                hashes.rows.len(),
                "τ rows of width s",
            ));
        }
        // Unwrap safety: k < B ≤ 2^32 (checked by the parameters).
        let set_size = u32::try_from(self.params.set_size).expect("k < B");
        let query = CountMinQuery::new(map, hashes, self.params.gamma, self.params.blanket_cap)?
            .with_set_size(set_size)?;
        // The queried cells, in increasing order, and every item's cell of every row.
        let mut cells: Vec<u32> = (0..map.size())
            .flat_map(|x| (0..query.hashes.rows.len()).map(move |t| (t, x)))
            .map(|(t, x)| query.cell(t, x))
            .collect();
        cells.sort_unstable();
        cells.dedup();
        let slot_of: HashMap<u32, u32> = cells.iter().zip(0..).map(|(&c, i)| (c, i)).collect();
        let slots = (0..map.size())
            .flat_map(|x| (0..query.hashes.rows.len()).map(move |t| (t, x)))
            .map(|(t, x)| slot_of[&query.cell(t, x)])
            .collect();
        Ok(CountMinRound {
            query,
            protocol: self.clone(),
            slots: Arc::new(Slots {
                of_cell: slot_of,
                of_item: slots,
            }),
        })
    }
}

/// The cells some item hashes to (the only ones a query reads), numbered densely.
#[derive(Debug, PartialEq)]
struct Slots {
    /// A queried cell's slot.
    of_cell: HashMap<u32, u32>,
    /// Item `x`'s slot of row `t` at `x·τ + t`.
    of_item: Vec<u32>,
}

/// `P^CM` as a round: its query and the calibrated analyzer.
#[derive(Clone, Debug, PartialEq)]
pub struct CountMinRound {
    query: CountMinQuery,
    protocol: GhaziCountMin,
    slots: Arc<Slots>,
}

impl CountMinRound {
    /// The calibrated protocol.
    pub fn protocol(&self) -> &GhaziCountMin {
        &self.protocol
    }

    fn counts(&self, counts: Vec<u64>) -> CountMinCounts {
        CountMinCounts {
            counts,
            slots: Arc::clone(&self.slots),
            rows: self.query.hashes.rows.len(),
            expected_blanket: self.protocol.params.expected_blanket(),
        }
    }
}

impl RoundProtocol for CountMinRound {
    type Query = CountMinQuery;
    type Release = Estimates;
    type Aggregator = CountMinCounts;

    fn query(&self) -> &CountMinQuery {
        &self.query
    }

    /// The analyzer flips no coins.
    fn aggregator(&self, _: ChaCha20Rng) -> CountMinCounts {
        self.counts(vec![0; self.slots.of_cell.len()])
    }
}

/// Its devices hold a domain element; its release is every element's estimate.
impl DomainRound for CountMinRound {
    fn estimates(Estimates(estimates): Estimates) -> Vec<f64> {
        estimates
    }
}

impl CountedRound for CountMinRound {
    /// When the calibrated `n` devices answer, each holding one item: as
    /// [`aggregate_sets`](SetOracleRound::aggregate_sets).
    fn aggregate_counts<R: Rng + ?Sized>(
        &self,
        holders: &[u64],
        rng: &mut R,
    ) -> Option<CountMinCounts> {
        self.aggregate_sets(&SetHolders::of_single_items(holders), rng)
    }
}

impl SetOracleRound for CountMinRound {
    fn domain(&self) -> u32 {
        self.query.map.size()
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

    /// When the calibrated `n` devices answer: every queried cell's count drawn as the real
    /// messages of the sets holding an item that hashes there plus its blanket total
    /// `Bin(n, γ)` (the `n` devices' coins for one cell are independent `Ber(γ)`: the
    /// `K`-then-subset draw is one way of flipping `τs` such coins), independently across
    /// cells, in increasing order of cell.
    fn aggregate_sets<R: Rng + ?Sized>(
        &self,
        holders: &SetHolders,
        rng: &mut R,
    ) -> Option<CountMinCounts> {
        let params = &self.protocol.params;
        if !holders.of_devices(self.query.map.size(), params.users) {
            return None;
        }
        let rows = self.query.hashes.rows.len();
        let mut counts = vec![0u64; self.slots.of_cell.len()];
        for (x, &holders) in holders.of_item.iter().enumerate() {
            for &slot in &self.slots.of_item[x * rows..(x + 1) * rows] {
                counts[slot as usize] += holders;
            }
        }
        for count in &mut counts {
            *count += blanket_total(params.users, params.gamma, rng);
        }
        Some(self.counts(counts))
    }
}

/// The analyzer of a `P^CM` round: the count of every cell some item hashes to (the others
/// are never read, so never kept).
pub struct CountMinCounts {
    counts: Vec<u64>,
    slots: Arc<Slots>,
    rows: usize,
    expected_blanket: f64,
}

impl RoundAggregator for CountMinCounts {
    type Report = CountMinMessages;
    type Release = Estimates;

    /// Counts every message in a queried cell.
    fn absorb(&mut self, report: CountMinMessages) {
        for cell in report.0 {
            if let Some(&slot) = self.slots.of_cell.get(&cell) {
                self.counts[slot as usize] += 1;
            }
        }
    }

    fn merge(&mut self, other: Self) {
        for (count, more) in self.counts.iter_mut().zip(other.counts) {
            *count += more;
        }
    }

    /// Every item's `min_t C[t, h_t(j)] − γn`, with `n` the calibrated number of devices.
    fn release(self) -> Estimates {
        Estimates(
            self.slots
                .of_item
                .chunks(self.rows)
                .map(|slots| {
                    let least = slots
                        .iter()
                        .map(|&slot| self.counts[slot as usize])
                        .min()
                        .unwrap_or(0);
                    least as f64 - self.expected_blanket
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use tally_accounting::blanket::BlanketAnalysis;

    use super::*;
    use crate::shuffle::two_sample::same_law;

    /// A small table (2 rows of 8 cells, `γ = 1/4`, 20 devices over 4 items, the blanket not
    /// capped), below what the guarantee needs, so that every device's messages can be drawn
    /// many times.
    fn small() -> CountMinRound {
        small_of_sets(1)
    }

    /// [`small`] for devices holding sets of at most `set_size` items.
    fn small_of_sets(set_size: u64) -> CountMinRound {
        small_capped(set_size, 16)
    }

    /// [`small_of_sets`] with every blanket capped at `blanket_cap` cells.
    fn small_capped(set_size: u64, blanket_cap: u64) -> CountMinRound {
        let params = CountMinParams {
            users: 20,
            domain: 4,
            set_size,
            epsilon: 1.0,
            delta: 1e-6,
            lemma_delta: 0.99e-6,
            beta: 0.5,
            rows: 2,
            width: 8,
            gamma: 0.25,
            blanket_cap,
            analysis: BlanketAnalysis::Theorem,
        };
        let protocol = GhaziCountMin { params };
        let hashes = CountMinHashes::draw(&params, &mut ChaCha20Rng::seed_from_u64(1));
        protocol.round(DomainMap::Integers(4), hashes).unwrap()
    }

    /// A device's cells sealed apart count as its report does; a cell off the table (16), or
    /// not one canonical cell, is refused alone.
    #[test]
    fn cells_count_apart_as_in_the_whole_report() {
        crate::protocol::wire::assert_messages_count_apart_as_whole(
            &small(),
            &[0, 1, 2, 3, 3, 0],
            &["16", "0,1", "01", ""],
        );
    }

    #[test]
    fn a_report_holds_its_items_cells_and_has_one_spelling() {
        let round = small();
        let query = round.query();
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        for item in 0..4 {
            let report = DeviceQuery::respond(query, &item, &mut rng).unwrap();
            assert!(query.admits(&report));
            for t in 0..2 {
                assert!(report.0.contains(&query.cell(t, item)), "{report:?}");
            }
            let text = report.clone().encode();
            let decoded = CountMinMessages::decode(text.clone()).unwrap();
            assert_eq!(decoded.clone().encode(), text);
            assert!(query.admits(&decoded));
        }
        assert_eq!(DeviceQuery::respond(query, &4, &mut rng), None);
        // Outside the table, three times the same cell, a row without a message.
        for bad in ["0,16", "0,0,0,8", "0,1"] {
            let report = CountMinMessages::decode(bad.to_owned()).unwrap();
            assert!(!query.admits(&report), "{bad}");
        }
        assert_eq!(CountMinMessages::decode("2,1".to_owned()), None);
        // 0..16 once and one cell per row twice: 10 + 2·6 digits, 17 commas.
        assert_eq!(query.longest_report(), 10 + 12 + 2 * 2 + 17);
        let rebuilt = CountMinQuery::new(
            query.map(),
            CountMinHashes::new(
                query
                    .hashes()
                    .rows()
                    .iter()
                    .map(|h| {
                        let (a, b) = h.coefficients();
                        PairwiseHash::new(a, b, h.width()).unwrap()
                    })
                    .collect(),
            )
            .unwrap(),
            query.gamma(),
            query.blanket_cap(),
        )
        .unwrap();
        assert_eq!(&rebuilt, query);
        assert!(PairwiseHash::new(0, 1, 8).is_err());
        assert!(CountMinQuery::new(query.map(), query.hashes().clone(), 0.6, 16).is_err());
        assert!(CountMinQuery::new(query.map(), query.hashes().clone(), 0.25, 17).is_err());
    }

    /// With the blanket capped at `q = 5` of the 16 cells (`K ~ Bin(16, 1/4)` exceeds it with
    /// probability 0.19), a device's blanket count follows `min(Bin(16, 1/4), 5)` (chi-square
    /// over 20,000 devices at α = 1e-6), no report is longer than `longest_report` (which
    /// then is the `kτ + q = 7` cells' bound, 7·2 digits and 6 commas, below the 41 bytes of
    /// every cell once), and a report of more than 7 cells is refused.
    #[test]
    fn stat_a_capped_blanket_follows_the_law_of_the_cap() {
        use statrs::distribution::{Binomial, ChiSquared, ContinuousCDF, Discrete, DiscreteCDF};
        let (cap, cells) = (5, 16);
        let round = small_capped(1, cap);
        let query = round.query();
        assert_eq!(query.longest_report(), 7 * 2 + 6);
        let mut rng = ChaCha20Rng::seed_from_u64(6);
        let mut seen = vec![0f64; cells as usize + 1];
        for i in 0..20_000 {
            let report = query.respond(&(i % 4), &mut rng).unwrap();
            assert!(query.admits(&report));
            seen[report.0.len() - 2] += 1.0;
            assert!(report.encode().len() as u64 <= query.longest_report());
        }
        let law = Binomial::new(0.25, cells).unwrap();
        let expected: Vec<f64> = (0..=cells)
            .map(|k| match k {
                k if k < cap => law.pmf(k),
                k if k == cap => law.sf(cap - 1),
                _ => 0.0,
            })
            .map(|p| 20_000.0 * p)
            .collect();
        assert!(
            seen[cap as usize + 1..].iter().all(|&s| s == 0.0),
            "{seen:?}"
        );
        let stat: f64 = (0..=cap as usize)
            .map(|k| (seen[k] - expected[k]).powi(2) / expected[k])
            .sum();
        let critical = ChiSquared::new(cap as f64).unwrap().inverse_cdf(1.0 - 1e-6);
        assert!(stat <= critical, "{stat} > {critical}: {seen:?}");
        let eight = CountMinMessages::decode("0,1,2,3,8,9,10,11".to_owned()).unwrap();
        assert!(!query.admits(&eight));
        let seven = CountMinMessages::decode("0,1,2,3,8,9,10".to_owned()).unwrap();
        assert!(query.admits(&seven));
    }

    /// The blanket totals drawn bit by bit have the binomial's law, at a probability with a
    /// long binary expansion and at dyadic ones; one drawn at another probability is caught.
    #[test]
    fn stat_blanket_totals_are_binomial() {
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        for p in [0.3, 0.75, 0.5, 1.0 / 3.0] {
            let ours: Vec<u64> = (0..20_000)
                .map(|_| blanket_total(100, p, &mut rng))
                .collect();
            let exact: Vec<u64> = (0..20_000)
                .map(|_| exact_binomial(100, p, &mut rng))
                .collect();
            assert!(same_law(&ours, &exact), "p = {p}");
        }
        let off: Vec<u64> = (0..20_000)
            .map(|_| blanket_total(100, 0.32, &mut rng))
            .collect();
        let exact: Vec<u64> = (0..20_000)
            .map(|_| exact_binomial(100, 0.3, &mut rng))
            .collect();
        assert!(!same_law(&off, &exact), "the mutant passes");
    }

    /// The holders of `sets` over the small table's 4 items.
    fn holders_of(sets: &[Vec<u32>]) -> SetHolders {
        let mut holders = SetHolders {
            of_item: vec![0; 4],
            of_size: vec![0; 4],
        };
        for set in sets {
            set.iter().for_each(|&x| holders.of_item[x as usize] += 1);
            holders.of_size[set.len()] += 1;
        }
        holders
    }

    /// The analyzer counts the queried cells of the devices' messages; its count path
    /// ([`SetOracleRound::aggregate_sets`]) has the law of every device holding `sets` answering
    /// (each item's least count, 3,000 runs each), and a count path fed the holders of `moved`
    /// is caught on item 0.
    fn assert_devices_and_count_path_agree(
        round: &CountMinRound,
        sets: &[Vec<u32>],
        moved: &[Vec<u32>],
    ) {
        let (holders, moved) = (holders_of(sets), holders_of(moved));
        let least = |estimates: Estimates| -> Vec<u64> {
            estimates.0.iter().map(|e| (e + 5.0) as u64).collect()
        };
        let mut devices = ChaCha20Rng::seed_from_u64(3);
        let mut counted = ChaCha20Rng::seed_from_u64(4);
        let (mut by_devices, mut by_counts, mut mutant) = (vec![], vec![], vec![]);
        for _ in 0..3_000 {
            let mut aggregator = round.aggregator(ChaCha20Rng::seed_from_u64(0));
            for set in sets {
                let report = round.query().respond_set(set, &mut devices).unwrap();
                assert!(round.query().admits(&report));
                aggregator.absorb(report);
            }
            by_devices.push(least(aggregator.release()));
            let answered = round.aggregate_sets(&holders, &mut counted).unwrap();
            by_counts.push(least(answered.release()));
            let wrong = round.aggregate_sets(&moved, &mut counted).unwrap();
            mutant.push(least(wrong.release()));
        }
        let column =
            |runs: &[Vec<u64>], x: usize| -> Vec<u64> { runs.iter().map(|r| r[x]).collect() };
        for x in 0..4 {
            assert!(
                same_law(&column(&by_devices, x), &column(&by_counts, x)),
                "item {x}"
            );
        }
        assert!(
            !same_law(&column(&by_devices, 0), &column(&mutant, 0)),
            "the mutant passes"
        );
    }

    /// One item per device; the mutant's 20 devices all hold item 1.
    #[test]
    fn stat_devices_and_count_path_agree_in_distribution() {
        let sets: Vec<Vec<u32>> = (0..20).map(|i| vec![[0, 0, 0, 1, 2][i % 5]]).collect();
        assert_devices_and_count_path_agree(&small(), &sets, &vec![vec![1]; 20]);
    }

    /// Sets of 1 to `k = 3` items; the mutant's 20 devices all hold `{2}`.
    #[test]
    fn stat_devices_and_count_path_agree_for_sets() {
        let sets: Vec<Vec<u32>> = (0..20)
            .map(|i| [vec![0], vec![1, 2], vec![3, 0, 1]][i % 3].clone())
            .collect();
        assert_devices_and_count_path_agree(&small_of_sets(3), &sets, &vec![vec![2]; 20]);
    }
}
