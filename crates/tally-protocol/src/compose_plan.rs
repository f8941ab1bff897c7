//! The total `(ε, δ)` of `K` rounds that are each `(ε, δ)`-DP and its document, as `tally plan
//! compose --json` prints it.

use serde_json::{Value, json};
use tally_accounting::composition::{Composition, compose_basic};
use tally_accounting::naming::Parameter;
use tally_accounting::rdp::compose_rdp_homogeneous;
use tally_accounting::{Guarantee, Neighbours, TrustModel, compose_rounds};

/// Why a composition was refused.
#[derive(Debug, thiserror::Error)]
pub enum ComposePlanError {
    /// An argument the accountant needs is missing or out of its domain.
    #[error("{0}")]
    Invalid(String),
    /// Whatever the accountant rejects.
    #[error(transparent)]
    Accounting(#[from] tally_accounting::Error),
}

/// The accountant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ComposeMethod {
    /// A composition theorem over `(ε, δ)` rounds.
    Rule(Composition),
    /// Rényi DP of pure `ε`-DP rounds, converted by Canonne–Kamath–Steinke.
    Rdp,
}

impl ComposeMethod {
    /// The name used on the command line and in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Self::Rule(composition) => composition.name(),
            Self::Rdp => "rdp",
        }
    }
}

impl std::str::FromStr for ComposeMethod {
    type Err = ComposePlanError;

    fn from_str(s: &str) -> Result<Self, ComposePlanError> {
        if s == "rdp" {
            return Ok(Self::Rdp);
        }
        s.parse::<Composition>().map(Self::Rule).map_err(|_| {
            ComposePlanError::Invalid(format!(
                "{}: expected basic, advanced, optimal, pld or rdp",
                tally_accounting::naming::invalid("method", s)
            ))
        })
    }
}

/// The total `(ε, δ)` of `rounds` rounds of `(epsilon, delta)` by `method`, with `ε` reported
/// at `target_delta` (all methods but basic need it), and its document.
///
/// # Errors
///
/// [`ComposePlanError::Invalid`] without a needed `target_delta`, or for `rdp` with
/// `delta != 0`; whatever the accountant rejects.
pub fn compose(
    epsilon: f64,
    delta: f64,
    rounds: u64,
    target_delta: Option<f64>,
    method: ComposeMethod,
) -> Result<(f64, f64, Value), ComposePlanError> {
    let count = usize::try_from(rounds).map_err(|_| {
        ComposePlanError::Invalid(format!("{} does not fit in memory", Parameter("rounds")))
    })?;
    let target = || {
        target_delta.ok_or_else(|| {
            ComposePlanError::Invalid(format!(
                "missing {}: the total δ at which to report ε",
                Parameter("target_delta")
            ))
        })
    };
    let (total_epsilon, total_delta) = match method {
        ComposeMethod::Rule(Composition::Basic) => compose_basic(&vec![(epsilon, delta); count])?,
        ComposeMethod::Rdp => {
            if delta != 0.0 {
                return Err(ComposePlanError::Invalid(format!(
                    "{} composes pure ε-DP rounds only: give {}, or use pld or optimal",
                    Parameter("method").with_choice("rdp"),
                    Parameter("delta").with(0),
                )));
            }
            compose_rdp_homogeneous(epsilon, rounds, target()?)?
        }
        ComposeMethod::Rule(composition) => {
            // The neighbour relation and trust model carry through composition unchanged.
            let per_round = Guarantee {
                epsilon,
                delta,
                neighbours: Neighbours::AddRemove,
                model: TrustModel::Central,
                analysis: String::new(),
            };
            let total = compose_rounds(&per_round, count, composition, target()?)?;
            (total.epsilon, total.delta)
        }
    };
    let document = json!({
        "epsilon": total_epsilon,
        "delta": total_delta,
        "method": method.name(),
        "rounds": rounds,
        "per_round": {"epsilon": epsilon, "delta": delta},
        "target_delta": target_delta,
    });
    Ok((total_epsilon, total_delta, document))
}
