//! The privacy-loss-distribution accountant against the exact optimal composition
//! (Kairouz–Oh–Viswanath) for pure and approximate DP rounds.

use tally_accounting::composition::{compose_optimal_homogeneous, optimal_homogeneous_delta};
use tally_accounting::pld::{PrivacyLossDistribution, compose_pld_homogeneous};

/// The randomized-response pair of a pure `ε`-DP round.
fn rr_pair(eps: f64) -> ([f64; 2], [f64; 2]) {
    let p = [1.0 / (1.0 + (-eps).exp()), 1.0 / (1.0 + eps.exp())];
    (p, [p[1], p[0]])
}

#[test]
fn pure_rounds_agree_with_the_optimal_composition() {
    for eps in [0.1, 0.25, 0.5, 1.0] {
        for k in [1_u64, 2, 10, 100, 1000] {
            for target in [1e-3, 1e-6, 1e-10] {
                let (pld, _) = compose_pld_homogeneous(eps, 0.0, k, target).unwrap();
                let (opt, _) = compose_optimal_homogeneous(eps, 0.0, k, target).unwrap();
                // Both are rounded up from the same exact value; the PLD is pessimistic.
                assert!(
                    pld >= opt * (1.0 - 1e-9) && pld <= opt * 1.01 + 1e-12,
                    "ε = {eps}, k = {k}, δ = {target}: pld {pld} vs optimal {opt}"
                );
            }
        }
    }
}

#[test]
fn approximate_rounds_agree_with_the_optimal_composition() {
    for (eps, delta, k) in [(0.5, 1e-8, 20), (0.1, 1e-9, 500), (1.0, 1e-7, 50)] {
        let (pld, _) = compose_pld_homogeneous(eps, delta, k, 1e-5).unwrap();
        let (opt, _) = compose_optimal_homogeneous(eps, delta, k, 1e-5).unwrap();
        assert!(
            pld >= opt * (1.0 - 1e-9) && pld <= opt * 1.01,
            "{pld} vs {opt}"
        );
    }
}

#[test]
fn a_fine_off_grid_step_is_pessimistic_and_close() {
    // ε = 0.3 is no multiple of h = 1e-3 · 0.7: every loss moves up by less than h.
    for (eps, k) in [(0.3, 100_u64), (1.0, 30)] {
        let step = 0.7e-3;
        let (p, q) = rr_pair(eps);
        let pld = PrivacyLossDistribution::from_pair(&p, &q, step)
            .unwrap()
            .self_compose(k)
            .unwrap();
        for e_tot in [0.0, 1.0, 3.0] {
            let exact = optimal_homogeneous_delta(eps, 0.0, k, e_tot).unwrap();
            let d = pld.delta(e_tot).unwrap();
            assert!(d >= exact, "{eps} {k} {e_tot}: {d} < {exact}");
        }
        let e = pld.epsilon(1e-6).unwrap();
        let (exact, _) = compose_optimal_homogeneous(eps, 0.0, k, 1e-6).unwrap();
        assert!(e >= exact && e <= exact + k as f64 * step, "{e} vs {exact}");
        assert!(e <= exact * 1.01, "{e} vs {exact}");
    }
}

#[test]
fn both_directions_of_an_asymmetric_pair() {
    // A three-outcome pair that is not a relabelling of its mirror image.
    let p = [0.5, 0.3, 0.2];
    let q = [0.25, 0.35, 0.4];
    let step = 1e-3;
    let k = 20;
    let forward = PrivacyLossDistribution::from_pair(&p, &q, step)
        .unwrap()
        .self_compose(k)
        .unwrap();
    let backward = PrivacyLossDistribution::from_pair(&q, &p, step)
        .unwrap()
        .self_compose(k)
        .unwrap();
    // Exact δ(ε) of the 20-fold product in each direction, by enumerating the multinomial.
    let exact = |a: &[f64; 3], b: &[f64; 3], e: f64| -> f64 {
        let mut total = 0.0;
        let ln_fact = |n: u64| (1..=n).map(|i| (i as f64).ln()).sum::<f64>();
        for i in 0..=k {
            for j in 0..=(k - i) {
                let l = k - i - j;
                let ln_c = ln_fact(k) - ln_fact(i) - ln_fact(j) - ln_fact(l);
                let lp = ln_c + i as f64 * a[0].ln() + j as f64 * a[1].ln() + l as f64 * a[2].ln();
                let lq = ln_c + i as f64 * b[0].ln() + j as f64 * b[1].ln() + l as f64 * b[2].ln();
                total += (lp.exp() - (e + lq).exp()).max(0.0);
            }
        }
        total
    };
    for e in [0.0, 0.5, 1.5] {
        let f = forward.delta(e).unwrap();
        let b = backward.delta(e).unwrap();
        let (ef, eb) = (exact(&p, &q, e), exact(&q, &p, e));
        assert!(
            f >= ef && f <= ef * 1.05 + 1e-12,
            "forward {e}: {f} vs {ef}"
        );
        assert!(
            b >= eb && b <= eb * 1.05 + 1e-12,
            "backward {e}: {b} vs {eb}"
        );
    }
}

/// Large round counts: the truncated distribution has `O(√k)` entries, so even `10^6` rounds
/// take well under a second.
#[test]
fn many_rounds() {
    for (eps, k) in [(0.01, 1_000_000_u64), (0.1, 100_000), (1.0, 10_000)] {
        let (pld, _) = compose_pld_homogeneous(eps, 0.0, k, 1e-8).unwrap();
        let (opt, _) = compose_optimal_homogeneous(eps, 0.0, k, 1e-8).unwrap();
        assert!(
            pld >= opt * (1.0 - 1e-9) && pld <= opt * 1.01,
            "{pld} vs {opt}"
        );
    }
}

/// The dominating pair of amplification by shuffling (docs/algorithms.md §8.1), written out from
/// its definition for a small `n`: outcomes `(c, t)` with `C ~ Bin(n−1, p_clone)`,
/// `A ~ Bin(C, 1/2)`, `D ~ Ber(e^{ε₀}/(e^{ε₀}+1))`, `t = A + D` under `P` and `A + 1 − D` under
/// `Q`. `tally_accounting::shuffle` does not expose its pair, so this test builds its own.
fn shuffle_pair(n: u64, eps0: f64) -> (Vec<f64>, Vec<f64>) {
    let p_clone = (-eps0).exp(); // FMT21
    let a = 1.0 / (1.0 + (-eps0).exp());
    let ln_fact: Vec<f64> = (0..=n)
        .scan(0.0, |acc, i| {
            if i > 0 {
                *acc += (i as f64).ln();
            }
            Some(*acc)
        })
        .collect();
    let ln_choose =
        |m: u64, k: u64| ln_fact[m as usize] - ln_fact[k as usize] - ln_fact[(m - k) as usize];
    let (mut p, mut q) = (Vec::new(), Vec::new());
    let m = n - 1;
    for c in 0..=m {
        let pc =
            (ln_choose(m, c) + c as f64 * p_clone.ln() + (m - c) as f64 * (-p_clone).ln_1p()).exp();
        let b = |t: u64| -> f64 {
            if t > c {
                0.0
            } else {
                (ln_choose(c, t) - c as f64 * std::f64::consts::LN_2).exp()
            }
        };
        for t in 0..=c + 1 {
            let below = if t >= 1 { b(t - 1) } else { 0.0 };
            p.push(pc * (a * below + (1.0 - a) * b(t)));
            q.push(pc * ((1.0 - a) * below + a * b(t)));
        }
    }
    (p, q)
}

#[test]
fn the_shuffle_pair_through_the_generic_path() {
    use tally_accounting::rdp::{Conversion, RdpCurve};
    use tally_accounting::shuffle::{ShuffleBound, shuffle_delta};
    let (n, eps0) = (200, 2.0);
    let (p, q) = shuffle_pair(n, eps0);
    let step = 1e-4;
    let forward = PrivacyLossDistribution::from_pair(&p, &q, step).unwrap();
    let backward = PrivacyLossDistribution::from_pair(&q, &p, step).unwrap();
    for eps in [0.2, 0.5, 1.0] {
        let pld = forward
            .delta(eps)
            .unwrap()
            .max(backward.delta(eps).unwrap());
        let accountant = shuffle_delta(eps0, n, eps, ShuffleBound::Fmt21).unwrap();
        // Both are upper bounds on the same divergence: the shuffle accountant's buckets and
        // the PLD's grid cost little here.
        assert!(
            (pld - accountant).abs() <= 0.02 * accountant,
            "ε = {eps}: pld {pld:e} vs shuffle accountant {accountant:e}"
        );
    }
    // Ten shuffled rounds on a coarser grid (direct convolution costs the product of the
    // supports): the PLD composition beats ten times the one-round ε.
    let step = 2e-3;
    let forward = PrivacyLossDistribution::from_pair(&p, &q, step).unwrap();
    let backward = PrivacyLossDistribution::from_pair(&q, &p, step).unwrap();
    let k = 10;
    let one = forward
        .epsilon(1e-6)
        .unwrap()
        .max(backward.epsilon(1e-6).unwrap());
    let ten = forward
        .self_compose(k)
        .unwrap()
        .epsilon(1e-5)
        .unwrap()
        .max(backward.self_compose(k).unwrap().epsilon(1e-5).unwrap());
    assert!(ten < k as f64 * one, "{ten} vs {k} × {one}");
    // The RDP route is valid but looser than the PLD.
    let rdp = RdpCurve::from_pair(&p, &q)
        .unwrap()
        .self_compose(k)
        .epsilon(1e-5, Conversion::Cks)
        .unwrap();
    assert!(rdp >= ten, "{rdp} vs {ten}");
}
