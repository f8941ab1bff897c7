//! Privacy guarantees as released next to every result.

use std::fmt;
use std::str::FromStr;

use crate::Error;
use crate::composition::{
    Composition, add_up, compose_advanced, compose_basic, compose_optimal_homogeneous, mul_up,
};
use crate::pld::compose_pld_homogeneous;

/// Which pairs of datasets a guarantee protects against telling apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Neighbours {
    /// One client present or absent.
    AddRemove,
    /// One client's data replaced by other data.
    ReplaceOne,
}

impl Neighbours {
    /// The name used on the command line and in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Self::AddRemove => "add-remove",
            Self::ReplaceOne => "replace-one",
        }
    }
}

impl fmt::Display for Neighbours {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Neighbours {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "add-remove" => Ok(Self::AddRemove),
            "replace-one" => Ok(Self::ReplaceOne),
            other => Err(Error::invalid(
                "neighbours",
                other,
                "add-remove or replace-one",
            )),
        }
    }
}

/// Whom the guarantee protects against: the party that sees the mechanism's output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TrustModel {
    /// The released result: a trusted curator (or a secure aggregator standing in for one) sees
    /// the raw data, the analyst sees only the release.
    Central,
    /// Each client's report: nobody needs to be trusted.
    Local,
    /// The anonymous multiset of all clients' messages, as a trusted shuffler outputs it.
    Shuffle,
}

impl TrustModel {
    /// The name used in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Self::Central => "central",
            Self::Local => "local",
            Self::Shuffle => "shuffle",
        }
    }
}

impl fmt::Display for TrustModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An approximate differential-privacy guarantee `(ε, δ)` with the trust model and neighbour
/// relation it holds for and the analysis that proved it.
#[derive(Clone, Debug, PartialEq)]
pub struct Guarantee {
    /// The privacy-loss bound ε.
    pub epsilon: f64,
    /// The failure probability δ, an upper bound.
    pub delta: f64,
    /// The neighbour relation.
    pub neighbours: Neighbours,
    /// Who sees the output the guarantee is about.
    pub model: TrustModel,
    /// The analysis that gives the guarantee, by name (for example `tight`).
    pub analysis: String,
}

impl Guarantee {
    /// The `(ε, δ)` this guarantee gives under `neighbours`, rounded up: what a budget kept
    /// under one neighbour relation charges for it.
    ///
    /// # Privacy
    ///
    /// * Under its own relation, itself.
    /// * From add/remove to replace-one: replacing a client's data is removing the client and
    ///   adding one, so `D` and `D'` differing in one client's data are joined by `D''` with
    ///   that client removed, and for every event `S`, `P[M(D) ∈ S] ≤ e^ε P[M(D'') ∈ S] + δ ≤
    ///   e^ε (e^ε P[M(D') ∈ S] + δ) + δ`: `(2ε, (1 + e^ε) δ)`, group privacy for a group of two
    ///   (Dwork and Roth 2014, §2.3, with the `δ` terms kept). `e^ε` is taken one ulp up
    ///   (covering the library's error) and every step rounded up.
    /// * From replace-one to add/remove there is no rule: such a mechanism is calibrated for a
    ///   fixed number of clients (a shuffle blanket, a local estimate debiased by `n`, a
    ///   release that states its cohort), and adding or removing a client changes that
    ///   number, which is not protected.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] from replace-one to add/remove.
    pub fn under(&self, neighbours: Neighbours) -> Result<(f64, f64), Error> {
        match (self.neighbours, neighbours) {
            (from, to) if from == to => Ok((self.epsilon, self.delta)),
            (Neighbours::AddRemove, Neighbours::ReplaceOne) => {
                let growth = add_up(1.0, self.epsilon.exp().next_up());
                Ok((2.0 * self.epsilon, mul_up(growth, self.delta).min(1.0)))
            }
            _ => Err(Error::invalid(
                "neighbours",
                self.neighbours,
                "a guarantee convertible to add-remove: a replace-one guarantee holds for a \
                 fixed number of clients, which adding or removing one changes",
            )),
        }
    }
}

/// The guarantee of running a mechanism with guarantee `per_round` in each of `rounds` rounds
/// over the same clients, by the `composition` rule, within the total `δ` budget `total_delta`.
///
/// * `Basic`: `(k ε', k δ')`; `total_delta` must cover `k δ'`.
/// * `Advanced`: `δ' k` plus the slack `δ̃ = total_delta − k δ'`, and the matching `ε`.
/// * `Optimal`: the smallest `ε` at which the `k`-fold composition is `(ε, total_delta)`-DP.
/// * `Pld`: the same from the privacy-loss-distribution accountant (rounded up, so never below
///   `Optimal`'s up to rounding).
///
/// # Errors
///
/// [`Error::Infeasible`] if `k δ'` already exceeds `total_delta`; otherwise whatever the
/// composition rule rejects ([`Composition::Tight`] always: it needs the mechanism).
pub fn compose_rounds(
    per_round: &Guarantee,
    rounds: usize,
    composition: Composition,
    total_delta: f64,
) -> Result<Guarantee, Error> {
    let k = rounds as u64;
    let (basic_epsilon, basic_delta) =
        compose_basic(&vec![(per_round.epsilon, per_round.delta); rounds])?;
    if basic_delta > total_delta {
        return Err(Error::infeasible(
            "composition",
            format!(
                "{rounds} rounds of δ = {} need δ ≥ {basic_delta}, above the budget {total_delta}",
                per_round.delta
            ),
        ));
    }
    let (epsilon, delta) = match composition {
        Composition::Basic => (basic_epsilon, basic_delta),
        Composition::Advanced => {
            // One ulp down, so that k·δ' + slack cannot round above the budget.
            let slack = (total_delta - basic_delta).next_down();
            if slack <= 0.0 {
                return Err(Error::infeasible(
                    "composition",
                    "no δ left for the advanced composition's slack",
                ));
            }
            compose_advanced(per_round.epsilon, per_round.delta, k, slack)?
        }
        Composition::Optimal => {
            compose_optimal_homogeneous(per_round.epsilon, per_round.delta, k, total_delta)?
        }
        Composition::Pld => {
            compose_pld_homogeneous(per_round.epsilon, per_round.delta, k, total_delta)?
        }
        Composition::Tight => return Err(crate::composition::tight_needs_the_mechanism()),
    };
    Ok(Guarantee {
        epsilon,
        delta,
        neighbours: per_round.neighbours,
        model: per_round.model,
        analysis: format!(
            "{} per round, {} composition over {rounds} rounds",
            per_round.analysis, composition
        ),
    })
}

/// The users whose coins stay secret from a victim when a fraction `colluding_fraction` of a
/// cohort of `users` colludes with the adversary (revealing its coins and reports): the
/// colluders are `⌈f·n⌉`, rounded up, but at most `n − 1`, since the victim is honest. The
/// victim is counted among the honest users.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `users ≥ 1` and `colluding_fraction ∈ [0, 1]`.
pub fn honest_users(users: u64, colluding_fraction: f64) -> Result<u64, Error> {
    if users == 0 {
        return Err(Error::invalid("users", users, "at least 1"));
    }
    if !(0.0..=1.0).contains(&colluding_fraction) {
        return Err(Error::invalid(
            "colluding fraction",
            colluding_fraction,
            "a number in [0, 1]",
        ));
    }
    let colluding = ((users as f64) * colluding_fraction).ceil() as u64;
    Ok(users - colluding.min(users - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_remove_converts_to_replace_one_by_group_privacy_and_not_back() {
        let guarantee = |epsilon, delta, neighbours| Guarantee {
            epsilon,
            delta,
            neighbours,
            model: TrustModel::Central,
            analysis: "test".into(),
        };
        let add_remove = guarantee(1.0, 1e-8, Neighbours::AddRemove);
        assert_eq!(
            add_remove.under(Neighbours::AddRemove).unwrap(),
            (1.0, 1e-8)
        );
        let (epsilon, delta) = add_remove.under(Neighbours::ReplaceOne).unwrap();
        assert_eq!(epsilon.to_bits(), 2.0f64.to_bits());
        let exact = (1.0 + std::f64::consts::E) * 1e-8;
        assert!(delta >= exact && delta < exact * (1.0 + 1e-15), "{delta}");
        let capped = guarantee(3.0, 0.5, Neighbours::AddRemove)
            .under(Neighbours::ReplaceOne)
            .unwrap()
            .1;
        assert_eq!(capped.to_bits(), 1.0f64.to_bits());
        let replace_one = guarantee(1.0, 1e-8, Neighbours::ReplaceOne);
        assert_eq!(
            replace_one.under(Neighbours::ReplaceOne).unwrap(),
            (1.0, 1e-8)
        );
        let refused = replace_one.under(Neighbours::AddRemove).unwrap_err();
        assert!(
            refused.to_string().contains("fixed number of clients"),
            "{refused}"
        );
    }

    #[test]
    fn colluders_are_rounded_up_and_leave_the_victim() {
        assert_eq!(honest_users(1000, 0.0).unwrap(), 1000);
        assert_eq!(honest_users(1000, 0.1).unwrap(), 900);
        assert_eq!(honest_users(1000, 0.1001).unwrap(), 899);
        assert_eq!(honest_users(1000, 0.999).unwrap(), 1);
        assert_eq!(honest_users(1000, 1.0).unwrap(), 1);
        assert!(honest_users(1000, 1.5).is_err());
        assert!(honest_users(0, 0.5).is_err());
    }
}
