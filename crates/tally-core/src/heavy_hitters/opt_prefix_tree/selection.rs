//! How a device picks the one data point it reports in an iteration (docs/algorithms.md §6.1).

use rand::Rng;

use crate::sampling::uniform_below;

/// The data-selection rule a device uses to pick one eligible data point (docs/algorithms.md §6.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Selection {
    /// Uniformly over the distinct eligible data points (the *support*); the paper's choice.
    #[default]
    UniformSupport,
    /// Proportionally to multiplicity (the user's empirical distribution).
    Weighted,
}

impl Selection {
    /// Picks one of the `eligible` data points, given as `(element, multiplicity)` pairs with
    /// one pair per distinct data point (two data points may share an element, their common
    /// prefix), and returns its element; `None` when nothing is eligible (the device then
    /// reports `⊥`). Exactly uniform (no modulo bias).
    pub fn choose<R: Rng + ?Sized>(self, eligible: &[(u32, u32)], rng: &mut R) -> Option<u32> {
        if eligible.is_empty() {
            return None;
        }
        match self {
            Self::UniformSupport => {
                let pick = uniform_below(eligible.len() as u64, rng);
                // Unwrap safety: pick < eligible.len().
                Some(eligible[usize::try_from(pick).expect("index")].0)
            }
            Self::Weighted => {
                let total: u64 = eligible.iter().map(|&(_, m)| u64::from(m)).sum();
                let mut pick = uniform_below(total, rng);
                for &(element, m) in eligible {
                    if pick < u64::from(m) {
                        return Some(element);
                    }
                    pick -= u64::from(m);
                }
                unreachable!("pick < total")
            }
        }
    }
}
