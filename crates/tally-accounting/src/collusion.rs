//! What a shuffle-model guarantee keeps when devices collude with the adversary.
//!
//! A shuffle-model guarantee holds because every other device's randomness hides a device's
//! message: GRR's reports among the others' ([`crate::shuffle`]), the binomial blankets of
//! Balcer–Cheu's and Ghazi et al.'s protocols ([`crate::blanket`]). A device that colludes
//! with the adversary hands over its report (and its coins): the shuffled output is a
//! post-processing of the colluders' messages and the honest devices', so an honest device
//! keeps the guarantee of the same protocol run by the [`honest_users`] alone. With every
//! other device colluding, what is left is the device's own report: its local `ε₀` where the
//! protocol has one, and nothing (`ε = ∞`) where it does not (a Balcer–Cheu or Ghazi device
//! sends its item in the clear among its blanket messages).
//!
//! Each protocol's [`Collusion`] is computed by its own calibration type
//! ([`crate::shuffle::grr_collusion`], [`crate::balcer_cheu::BalcerCheu::collusion`],
//! [`crate::ghazi::HadamardParams::collusion`], [`crate::ghazi::CountMinParams::collusion`]);
//! a task of several rounds composes its rounds' by [`Collusion::compose_basic`].
//!
//! Central and local guarantees do not depend on other devices' honesty (the curator's noise,
//! or each device's own, does all the hiding), so they have no collusion guarantee.

use crate::blanket::{BlanketCell, MessageChange};
use crate::composition::compose_basic;
use crate::{Error, honest_users};

/// The guarantee an honest device keeps when a fraction of the cohort colludes with the
/// adversary, and the one it keeps when every other device does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Collusion {
    /// The fraction `f` of the cohort assumed to collude.
    pub colluding_fraction: f64,
    /// `ε` against the colluders and the analyst together: `∞` when no finite `ε` reaches
    /// [`Self::delta`]. Never below the guarantee's own `ε`.
    pub epsilon: f64,
    /// `δ` against them, an upper bound. Never below the guarantee's own `δ`.
    pub delta: f64,
    /// `ε` when every other device colludes: the protocol's local `ε₀` (pure), or `∞` for a
    /// protocol without a local guarantee.
    pub floor: f64,
}

impl Collusion {
    /// The collusion guarantee of a mechanism whose own guarantee is `guarantee` over `users`
    /// devices, from `colluded(honest)`, the guarantee of the same mechanism run by `honest`
    /// devices alone (called only when some device colludes, `honest < users`), and the
    /// `floor`. The result is never below `guarantee` (both are upper bounds on what holds;
    /// the larger of two upper bounds is one).
    ///
    /// # Errors
    ///
    /// As [`honest_users`], and what `colluded` returns.
    pub(crate) fn over_honest(
        colluding_fraction: f64,
        users: u64,
        guarantee: (f64, f64),
        floor: f64,
        colluded: impl FnOnce(u64) -> Result<(f64, f64), Error>,
    ) -> Result<Self, Error> {
        let honest = honest_users(users, colluding_fraction)?;
        let (epsilon, delta) = if honest >= users {
            guarantee
        } else {
            let (epsilon, delta) = colluded(honest)?;
            (epsilon.max(guarantee.0), delta.max(guarantee.1))
        };
        Ok(Self {
            colluding_fraction,
            epsilon,
            delta,
            floor,
        })
    }

    /// The collusion guarantee of a binomial-blanket protocol whose own guarantee is
    /// `guarantee` over `users` devices, where `blanket(honest)` is a user's blanket cell and
    /// change with `honest` devices alone: the exact analysis at the same `δ`, and no floor
    /// (`∞`: a user's real messages are not randomized).
    ///
    /// # Errors
    ///
    /// As [`honest_users`] and [`BlanketCell::epsilon`].
    pub(crate) fn of_blanket(
        colluding_fraction: f64,
        users: u64,
        guarantee: (f64, f64),
        blanket: impl FnOnce(u64) -> (BlanketCell, MessageChange),
    ) -> Result<Self, Error> {
        Self::over_honest(
            colluding_fraction,
            users,
            guarantee,
            f64::INFINITY,
            |honest| {
                let (cell, change) = blanket(honest);
                Ok((blanket_epsilon(cell, change, guarantee.1)?, guarantee.1))
            },
        )
    }

    /// The collusion guarantee of running every one of `rounds` (all at the same colluding
    /// fraction) over the same devices, by basic composition (Dwork–Roth Theorem 3.16: it
    /// holds for any mechanisms, adaptively chosen, so also against the colluders): the sums
    /// of the `ε`s, `δ`s and floors.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `rounds` is empty or mixes colluding fractions.
    pub fn compose_basic(rounds: &[Self]) -> Result<Self, Error> {
        let Some(first) = rounds.first() else {
            return Err(Error::invalid("rounds", 0, "at least one"));
        };
        if rounds
            .iter()
            .any(|r| r.colluding_fraction.to_bits() != first.colluding_fraction.to_bits())
        {
            return Err(Error::invalid(
                "colluding fraction",
                first.colluding_fraction,
                "the same fraction in every round",
            ));
        }
        // Basic composition of finite parts; an infinite part stays infinite.
        let sum = |part: fn(&Self) -> f64| -> Result<f64, Error> {
            if rounds.iter().any(|r| part(r).is_infinite()) {
                return Ok(f64::INFINITY);
            }
            Ok(compose_basic(&rounds.iter().map(|r| (part(r), 0.0)).collect::<Vec<_>>())?.0)
        };
        let epsilon = sum(|r| r.epsilon)?;
        let floor = sum(|r| r.floor)?;
        let delta = compose_basic(&rounds.iter().map(|r| (0.0, r.delta)).collect::<Vec<_>>())?.1;
        Ok(Self {
            colluding_fraction: first.colluding_fraction,
            epsilon,
            delta,
            floor,
        })
    }
}

/// The smallest `ε` at which a user's `change` with blanket `cell` is `(ε, δ)`-DP
/// ([`BlanketCell::epsilon`]), `∞` where none is.
///
/// # Errors
///
/// As [`BlanketCell::epsilon`], but for [`Error::Infeasible`].
fn blanket_epsilon(cell: BlanketCell, change: MessageChange, delta: f64) -> Result<f64, Error> {
    match cell.epsilon(change, delta) {
        Ok(epsilon) => Ok(epsilon),
        Err(Error::Infeasible { .. }) => Ok(f64::INFINITY),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collusion(epsilon: f64, delta: f64, floor: f64) -> Collusion {
        Collusion {
            colluding_fraction: 0.1,
            epsilon,
            delta,
            floor,
        }
    }

    #[test]
    fn rounds_compose_by_summing_and_infinity_stays() {
        let both =
            Collusion::compose_basic(&[collusion(1.0, 1e-6, 2.0), collusion(0.5, 1e-7, 3.0)])
                .unwrap();
        assert!(both.epsilon >= 1.5 && both.epsilon < 1.5 + 1e-12);
        assert!(both.delta >= 1.1e-6 && both.delta < 1.1e-6 * (1.0 + 1e-12));
        assert!(both.floor >= 5.0 && both.floor < 5.0 + 1e-12);
        let none = Collusion::compose_basic(&[
            collusion(1.0, 1e-6, f64::INFINITY),
            collusion(f64::INFINITY, 1e-6, 1.0),
        ])
        .unwrap();
        assert!(none.epsilon.is_infinite() && none.floor.is_infinite());
        assert!(Collusion::compose_basic(&[]).is_err());
        let mut other = collusion(1.0, 1e-6, 1.0);
        other.colluding_fraction = 0.2;
        assert!(Collusion::compose_basic(&[collusion(1.0, 1e-6, 1.0), other]).is_err());
    }

    #[test]
    fn no_colluder_keeps_the_guarantee_and_colluders_never_lower_it() {
        let honest = Collusion::over_honest(0.0, 1000, (1.0, 1e-6), 5.0, |_| {
            unreachable!("nobody colludes")
        })
        .unwrap();
        assert_eq!((honest.epsilon, honest.delta), (1.0, 1e-6));
        let raised = Collusion::over_honest(0.1, 1000, (1.0, 1e-6), 5.0, |honest| {
            assert_eq!(honest, 900);
            Ok((0.9, 1e-7))
        })
        .unwrap();
        assert_eq!(
            (raised.epsilon, raised.delta, raised.floor),
            (1.0, 1e-6, 5.0)
        );
    }
}
