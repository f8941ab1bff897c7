//! The data and the law of the tests of Ghazi et al.'s prefix-tree heavy hitters
//! (`--algorithm count-min-prefix-tree`), offline and federated: [`PREFIX_TREE_DEVICES`]
//! devices over `0..4` (`--domain-bits 2`), all but 60 holding one heavy item, the other three
//! items 20 each, at `τ_HH = 160` and the smallest integer `ε` over the two levels whose
//! reports fit `--max-report-bytes 32768` (`ε = 3`, 1.5 a level) at `δ = 1e-6`.

use serde_json::Value;

/// The devices. Count-Min's capped blanket keeps every report's size independent of them: at
/// these parameters level 2's table has ten rows of `2n = 6,000` cells, `γ = 0.0644` by the
/// exact analysis of the blanket and a blanket capped at 4,328 cells, so its longest report
/// is 4,338 cells of at most 5 digits, 26,027 bytes, within `--max-report-bytes 32768`
/// (`ε = 2`: 58,037 bytes).
pub(crate) const PREFIX_TREE_DEVICES: u64 = 3000;

/// Holders of each light item.
const LIGHT: u64 = 20;

/// The options of every run.
pub(crate) const PREFIX_TREE_OPTIONS: &str = "--algorithm count-min-prefix-tree --domain-bits 2 \
     --threshold 160 --epsilon 3 --delta 1e-6";

/// The devices' items, one a line: `heavy` held by all but 60, each other item of `0..4` by
/// 20.
pub(crate) fn prefix_tree_items(heavy: u32) -> String {
    (0..4_u32)
        .flat_map(|item| {
            let holders = if item == heavy {
                PREFIX_TREE_DEVICES - 3 * LIGHT
            } else {
                LIGHT
            };
            (0..holders).map(move |_| format!("{item}\n"))
        })
        .collect()
}

/// Whether a release of [`prefix_tree_items`]`(heavy)` is one the protocol's law admits at
/// α ≤ 4e-7 (two tails of 1e-7 and what the found set may miss, below).
///
/// The found item must be `heavy` alone: a light item or prefix (at most 40 holders) is found
/// only if every row of its cell that no heavier item collides with exceeds the blanket's mean
/// `γn` by 40 or more, which its `Bin(n, γ)` blanket (mean 173 or 193, standard deviation
/// 12.8 or 13.4 at levels 1 and 2) does in a row with probability below 1.8e-3 (scipy), in
/// five rows below 2e-14; the heavy item's cells hold 2,940 real messages, far above
/// `τ_HH/2 + γn`. Its level-2 estimate is `min_t C[t, h_t(j)] − γn`, row `t`'s cell holding
/// its holders, `X_t ~ Bin(n, γ)` blanket messages (independent across rows) and the holders
/// of another item whose hash collides with it there. Collisions only raise a cell, so
/// `P[min ≤ m] ≤ τ·P[X ≤ m]`; more than four of the ten rows see a collision with
/// probability below `C(10, 5)·(3·2/2n)^5 ≈ 2.5e-13` (pairwise-independent hashes over `2n`
/// cells), bounded here by 1.4e-8, so `P[min ≥ m] ≤ P[X ≥ m]^(τ−4) + 1.4e-8`. The devices'
/// capped blankets change these laws by at most `nη ≤ δ/100 = 1e-8` in total variation over
/// both levels (`docs/privacy/ghazi.md`), which adds at most that to α.
pub(crate) fn prefix_tree_admits(release: &Value, heavy: u32) -> bool {
    let items = release["items"].as_array().unwrap();
    if items.len() != 1 || items[0]["item"].as_str() != Some(heavy.to_string().as_str()) {
        return false;
    }
    let parameters = &release["parameters"];
    let last = parameters["levels"].as_array().unwrap().last().unwrap();
    let rows = last["rows"].as_u64().unwrap() as u32;
    let gamma = last["gamma"].as_f64().unwrap();
    let users = parameters["users"].as_u64().unwrap();
    let estimate = items[0]["estimate"].as_f64().unwrap();
    let count = (users - 3 * LIGHT) as f64;
    sketch_minimum_admits(estimate, count, users, gamma, rows, rows - 4, 1.4e-8)
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
