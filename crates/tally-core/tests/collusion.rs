//! The `n − 1` attack on shuffled GRR: every device but the victim colludes with the analyst,
//! so the colluders' own reports, subtracted from the shuffled multiset, leave the victim's.
//! The guarantee the victim keeps is then the one printed beside the release as the floor
//! ([`DomainHistogram::collusion`], which `tally histogram` and the federated documents
//! publish): its local `ε₀`, not the amplified central `ε`. The attack must succeed no more
//! often than that printed floor allows, and more often than `ε` would.
//!
//! Significance level 1e-6 (see `common`), fixed seed.

#[allow(dead_code)] // shared helpers; this file uses only some of them
mod common;

use common::z_critical;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use tally_accounting::shuffle::{ShuffleBound, shuffle_epsilon};
use tally_core::histogram::{DomainHistogram, DomainMap};
use tally_core::protocol::DeviceQuery;
use tally_core::shuffle::ShuffledGrr;

/// The largest probability with which any test guesses a uniform binary secret from an
/// `ε`-DP release: `e^ε/(1 + e^ε)`.
fn guessing_bound(epsilon: f64) -> f64 {
    1.0 / (1.0 + (-epsilon).exp())
}

#[test]
fn the_n_minus_one_attack_on_shuffled_grr_stays_within_the_local_floor() {
    let (n, epsilon, delta, bound) = (1000_u64, 1.0, 1e-6, ShuffleBound::Fmt23);
    let mechanism = ShuffledGrr::new(2, epsilon, delta, n, bound).unwrap();
    let eps0 = mechanism.local_epsilon();
    // The guarantees printed beside the central one: with a tenth of the cohort colluding the
    // blanket is the 900 honest reports; with every other device colluding, ε₀ itself, which
    // is also the printed floor at any fraction.
    let tenth = mechanism
        .collusion(0.1)
        .unwrap()
        .expect("a shuffle mechanism");
    assert_eq!(
        tenth.epsilon.to_bits(),
        shuffle_epsilon(eps0, 900, delta, bound).unwrap().to_bits()
    );
    assert!(
        tenth.epsilon > epsilon && tenth.epsilon < eps0,
        "{tenth:?} vs {epsilon}, {eps0}"
    );
    let all_others = mechanism
        .collusion(0.999)
        .unwrap()
        .expect("a shuffle mechanism");
    assert_eq!(all_others.epsilon.to_bits(), eps0.to_bits());
    let floor = tenth.floor;
    assert_eq!(floor.to_bits(), eps0.to_bits());

    let round = mechanism.round(DomainMap::Integers(2)).unwrap();
    let runs = 2000_u64;
    let mut rng = ChaCha20Rng::seed_from_u64(33);
    let mut successes = 0_u64;
    for _ in 0..runs {
        let secret = (rng.next_u64() & 1) as u32;
        // The shuffled multiset as counts of each report, and the colluders' own share of it.
        let mut shuffled = [0_u64; 2];
        let mut colluders = [0_u64; 2];
        let victim = round.respond(&secret, &mut rng).unwrap();
        shuffled[victim as usize] += 1;
        for _ in 1..n {
            let report = round.respond(&0, &mut rng).unwrap() as usize;
            shuffled[report] += 1;
            colluders[report] += 1;
        }
        let guess = u32::from(shuffled[1] > colluders[1]);
        successes += u64::from(guess == secret);
    }
    let rate = successes as f64 / runs as f64;
    let within = |p: f64| {
        successes as f64 <= runs as f64 * p + z_critical() * (runs as f64 * p * (1.0 - p)).sqrt()
    };
    assert!(
        within(guessing_bound(floor)),
        "the attack beats the printed floor ε₀ = {floor}: {rate}"
    );
    // Against the central ε alone the attack would be a violation: the central guarantee
    // assumes honest devices.
    assert!(
        !within(guessing_bound(epsilon)),
        "the attack does no better than the central ε = {epsilon} allows: {rate}"
    );
}
