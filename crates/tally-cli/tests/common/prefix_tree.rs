//! The data and the law of the tests of Ghazi et al.'s prefix-tree heavy hitters
//! (`--algorithm count-min-prefix-tree`), offline and federated: a [`PrefixTree`] of devices
//! over `0..4` (`--domain-bits 2`), all but `3·light` holding one heavy item, the other three
//! items `light` each, at a threshold `τ_HH` and a budget `(ε, δ)` split evenly over the two
//! levels; [`PREFIX_TREE`] is the offline tests' and the single-party federated test's.

use serde_json::Value;

/// The devices, their data, the options and the law of one prefix-tree test.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PrefixTree {
    /// The devices `n`, for which the task is calibrated.
    pub(crate) devices: u64,
    /// Holders of each light item.
    pub(crate) light: u64,
    /// The threshold `τ_HH`: a prefix is kept when its estimate is at least `τ_HH/2`.
    pub(crate) threshold: u64,
    /// The budget `ε` over both levels.
    pub(crate) epsilon: f64,
    /// The budget `δ` over both levels.
    pub(crate) delta: f64,
    /// The most rows of the last level's table where [`PrefixTree::admits`] lets another
    /// item's holders raise the heavy item's cell: more of them collide with probability at
    /// most `1.4e-8` (checked there, for `3` other items and a collision probability of at most
    /// `2/s` a row over `s = 2n` cells).
    pub(crate) collided_rows: u32,
}

/// The offline tests' and the single-party federated test's: 3,000 devices, 20 holding each
/// light item, `τ_HH = 160` and the smallest integer `ε` over the two levels whose reports fit
/// `--max-report-bytes 32768`, `ε = 3` (1.5 a level) at `δ = 1e-6`. Count-Min's capped blanket
/// keeps every report's size independent of the devices: level 2's table has ten rows of
/// `2n = 6,000` cells, `γ = 0.0644` by the exact analysis of the blanket (`γn = 193`) and a
/// blanket averaging 3,863 cells, capped at 4,328, so its longest report is 4,338 cells of at
/// most 5 digits, 26,027 bytes (`ε = 2`: 58,037 bytes).
///
/// Its law ([`PrefixTree::admits`]): a light item or prefix (at most 40 holders) is found only
/// if every row of its cell that no heavier item collides with exceeds the blanket's mean `γn`
/// by 40 or more, which its `Bin(n, γ)` blanket (mean 173 or 193, standard deviation 12.8 or
/// 13.4 at levels 1 and 2) does in a row with probability below 1.8e-3 (scipy), in five rows
/// below 2e-14; the heavy item's cells hold 2,940 real messages, far above `τ_HH/2 + γn`. More
/// than four of the ten rows collide with probability below `C(10, 5)·(3·2/2n)^5 ≈ 2.5e-13`.
/// The capped blankets move the releases' law by `nη ≤ δ_cap/(1 + e^ε) ≤ 9.2e-10` a level
/// in total variation.
pub(crate) const PREFIX_TREE: PrefixTree = PrefixTree {
    devices: 3000,
    light: 20,
    threshold: 160,
    epsilon: 3.0,
    delta: 1e-6,
    collided_rows: 4,
};

impl PrefixTree {
    /// The options of every run.
    pub(crate) fn options(&self) -> String {
        format!(
            "--algorithm count-min-prefix-tree --domain-bits 2 --threshold {} --epsilon {} \
             --delta {}",
            self.threshold, self.epsilon, self.delta
        )
    }

    /// The devices' items, one a line: `heavy` held by all but `3·light`, each other item of
    /// `0..4` by `light`.
    pub(crate) fn items(&self, heavy: u32) -> String {
        (0..4_u32)
            .flat_map(|item| {
                let holders = if item == heavy {
                    self.devices - 3 * self.light
                } else {
                    self.light
                };
                (0..holders).map(move |_| format!("{item}\n"))
            })
            .collect()
    }

    /// Whether a release of [`PrefixTree::items`]`(heavy)` is one the protocol's law admits at
    /// α ≤ 4e-7 (two tails of 1e-7 and what the found set may miss, below; each configuration
    /// states its numbers).
    ///
    /// The found item must be `heavy` alone: a light item or prefix is found only if every row
    /// of its cell that no heavier item collides with exceeds the blanket's mean `γn` by
    /// `τ_HH/2` less its holders, which the configurations keep far in the tail. Its level-2
    /// estimate is `min_t C[t, h_t(j)] − γn`, row `t`'s cell holding its holders,
    /// `X_t ~ Bin(n, γ)` blanket messages (independent across rows) and the holders of another
    /// item whose hash collides with it there. Collisions only raise a cell, so
    /// `P[min ≤ m] ≤ τ·P[X ≤ m]`; more than `collided_rows` of the `τ` rows see a collision with
    /// probability below `P[Bin(τ, 3·2/2n) > collided_rows]` (pairwise-independent hashes over
    /// `2n` cells), bounded here by 1.4e-8, so `P[min ≥ m] ≤ P[X ≥ m]^(τ − collided_rows) +
    /// 1.4e-8`. The devices' capped blankets change these laws by at most
    /// `nη ≤ δ_cap/(1 + e^ε)` a level in total variation (`docs/privacy/ghazi.md`), which adds
    /// at most that to α.
    pub(crate) fn admits(&self, release: &Value, heavy: u32) -> bool {
        use statrs::distribution::{Binomial, DiscreteCDF};
        let items = release["items"].as_array().unwrap();
        if items.len() != 1 || items[0]["item"].as_str() != Some(heavy.to_string().as_str()) {
            return false;
        }
        let parameters = &release["parameters"];
        let last = parameters["levels"].as_array().unwrap().last().unwrap();
        let rows = last["rows"].as_u64().unwrap() as u32;
        let gamma = last["gamma"].as_f64().unwrap();
        let users = parameters["users"].as_u64().unwrap();
        let collision = 3.0 * 2.0 / (2.0 * users as f64);
        let collisions = Binomial::new(collision, u64::from(rows))
            .unwrap()
            .sf(u64::from(self.collided_rows));
        assert!(collisions <= 1.4e-8, "{collisions}: too many collided rows");
        let estimate = items[0]["estimate"].as_f64().unwrap();
        let count = (users - 3 * self.light) as f64;
        let free = rows - self.collided_rows;
        sketch_minimum_admits(estimate, count, users, gamma, rows, free, 1.4e-8)
    }
}

/// Whether `estimate`, a Count-Min estimate `min_t C[t, h_t(j)] − γn` of an item `count`
/// devices hold, lies where the sketch minimum's law puts it with both tails above 1e-7.
/// Row `t`'s cell holds the holders, `X_t ~ Bin(n, γ)` blanket messages (independent across
/// rows) and the holders of items whose hash collides there, which only raise it: so
/// `P[min ≤ m] ≤ rows·P[X ≤ m]`, and `P[min ≥ m] ≤ P[X ≥ m]^free + collisions` when at least
/// `free` rows see no collision but with probability `collisions`.
pub(crate) fn sketch_minimum_admits(
    estimate: f64,
    count: f64,
    users: u64,
    gamma: f64,
    rows: u32,
    free: u32,
    collisions: f64,
) -> bool {
    use statrs::distribution::{Binomial, DiscreteCDF};
    let law = Binomial::new(gamma, users).unwrap();
    let blanket = gamma * users as f64;
    let minimum = (estimate + blanket - count).round();
    assert!(
        (estimate + blanket - count - minimum).abs() < 1e-6,
        "estimate {estimate}: not a count minus γn = {blanket}"
    );
    if minimum < 0.0 {
        return false;
    }
    let minimum = minimum as u64;
    let below = f64::from(rows) * law.cdf(minimum);
    let above = law.sf(minimum.saturating_sub(1)).powi(free as i32);
    below > 1e-7 && above > 1e-7 - collisions
}
