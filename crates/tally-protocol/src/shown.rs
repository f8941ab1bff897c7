//! Numbers for people, the same in the command line's tables and the console's pages: `ε` and
//! `δ` rounded up to four significant digits (a privacy parameter is never shown below its
//! value), budgets left rounded down (never shown above what is left), other parameters and
//! estimates to the nearest. The JSON documents keep full precision; only what people read is
//! rounded.

use serde_json::{Map, Value};
use tally_messages::{CollusionBody, GuaranteeBody};

/// Significant digits of the numbers shown to people.
const SHOWN_DIGITS: i32 = 4;

/// Which way a number shown to people is rounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounding {
    /// Never below the value: a privacy parameter, a charge, what was spent.
    Up,
    /// Never above the value: what is left of a budget.
    Down,
    /// To the nearest: a parameter or an estimate that bounds nothing.
    Nearest,
}

/// `x` to four significant digits, rounded as `rounding` says (its sign kept); zero, infinities
/// and NaN as they are.
pub fn to_shown_digits(x: f64, rounding: Rounding) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    let magnitude = x.abs();
    let mut scale = 10f64.powi(SHOWN_DIGITS - 1 - magnitude.log10().floor() as i32);
    // `log10` may land on the power of ten next to the value's: keep four digits before the
    // point, so that rounding down from just below a power of ten keeps them all.
    let scaled = magnitude * scale;
    if scaled < 10f64.powi(SHOWN_DIGITS - 1) {
        scale *= 10.0;
    } else if scaled >= 10f64.powi(SHOWN_DIGITS) {
        scale /= 10.0;
    }
    let nearest = (magnitude * scale).round();
    // Rounding away from zero keeps a positive bound above its value, towards zero below.
    let away = match rounding {
        Rounding::Nearest => false,
        Rounding::Up => x > 0.0,
        Rounding::Down => x < 0.0,
    };
    let toward = match rounding {
        Rounding::Nearest => false,
        Rounding::Up => x < 0.0,
        Rounding::Down => x > 0.0,
    };
    let digits = if away && nearest / scale < magnitude {
        nearest + 1.0
    } else if toward && nearest / scale > magnitude {
        nearest - 1.0
    } else {
        nearest
    };
    (digits / scale).copysign(x)
}

/// A number already rounded, for people: plain between 0.001 and 100,000, else in scientific
/// notation.
fn plain_or_scientific(x: f64) -> String {
    if x == 0.0 || (1e-3..1e5).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:.3e}")
    }
}

/// `x` for people: four significant digits, rounded as `rounding` says.
pub fn number(x: f64, rounding: Rounding) -> String {
    plain_or_scientific(to_shown_digits(x, rounding))
}

/// An `ε` or `δ` for people: rounded up to four significant digits.
pub fn privacy_number(x: f64) -> String {
    number(x, Rounding::Up)
}

/// A `δ` for people: four significant digits in scientific notation, rounded as `rounding`
/// says (up for a guarantee, down for what is left); zero as `0`.
pub fn delta_number(x: f64, rounding: Rounding) -> String {
    if x == 0.0 {
        "0".to_owned()
    } else {
        format!("{:.3e}", to_shown_digits(x, rounding))
    }
}

/// An estimate for people: to the nearest whole number from 1,000 on, else to four significant
/// digits.
pub fn estimate_number(x: f64) -> String {
    if x.is_finite() && x.abs() >= 1000.0 {
        format!("{x:.0}")
    } else {
        number(x, Rounding::Nearest)
    }
}

/// `(ε = …, δ = …)` for people, both rounded up to four significant digits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrivacyPair(pub f64, pub f64);

impl std::fmt::Display for PrivacyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "(ε = {}, δ = {})",
            privacy_number(self.0),
            delta_number(self.1, Rounding::Up)
        )
    }
}

/// A published guarantee in one line of words, `ε` and `δ` rounded up to four significant
/// digits (the JSON keeps them whole).
pub fn guarantee_body_line(guarantee: &GuaranteeBody) -> String {
    let privacy = if guarantee.delta == 0.0 {
        format!("ε = {} (pure)", privacy_number(guarantee.epsilon))
    } else {
        format!("{}", PrivacyPair(guarantee.epsilon, guarantee.delta))
    };
    let collusion = guarantee.collusion.map_or_else(String::new, |collusion| {
        format!("; {}", collusion_text(&collusion))
    });
    format!(
        "{privacy}-DP in the {} model, {} neighbours; {}; trust model {}{collusion}",
        guarantee.model,
        guarantee.neighbours,
        guarantee.method,
        guarantee.trust_model.name()
    )
}

/// What a shuffle-model guarantee keeps against devices colluding with the analyst, for
/// people: against the assumed fraction (`ε`, `δ` rounded up; `∞` where no finite `ε` reaches
/// `δ`), then the floor when every other device colludes.
pub fn collusion_text(collusion: &CollusionBody) -> String {
    let against_fraction = match collusion.epsilon {
        Some(epsilon) => format!(
            "ε = {}, δ = {}",
            privacy_number(epsilon),
            delta_number(collusion.delta, Rounding::Up)
        ),
        None => format!(
            "ε = ∞ at δ = {}",
            delta_number(collusion.delta, Rounding::Up)
        ),
    };
    let floor = match collusion.floor {
        Some(floor) => format!("ε = {} (the local ε₀)", privacy_number(floor)),
        None => "ε = ∞ (no local guarantee)".to_owned(),
    };
    format!(
        "if a fraction {} of the devices colludes with the analyst: {against_fraction}; if every \
         other device colludes: {floor}",
        number(collusion.colluding_fraction, Rounding::Nearest)
    )
}

/// A document's `parameters` as rows for people: each field's name in words and its value as
/// [`field_text`] shows it.
pub fn parameter_rows(parameters: &Map<String, Value>) -> Vec<(String, String)> {
    parameters
        .iter()
        .map(|(name, value)| (name.replace('_', " "), field_text(name, value)))
        .collect()
}

/// The field `name` of a document for people: a number whose name is an `ε` or a `δ`
/// (`epsilon`, `target_delta`, `local_epsilon`, …) rounded up, anything else as
/// [`parameters_line`] shows it.
pub fn field_text(name: &str, value: &Value) -> String {
    match value.as_f64() {
        Some(x) if name.contains("epsilon") || name.contains("delta") => {
            if name.contains("delta") && x != 0.0 {
                delta_number(x, Rounding::Up)
            } else {
                privacy_number(x)
            }
        }
        _ => parameters_line(value),
    }
}

/// A document's `parameters` in one line for people: `name value` pairs, names in words,
/// numbers to four significant digits, a nested guarantee as its `(ε, δ)` rounded up.
pub fn parameters_line(parameters: &Value) -> String {
    match parameters {
        Value::Object(fields) => {
            if let (Some(epsilon), Some(delta)) = (
                fields.get("epsilon").and_then(Value::as_f64),
                fields.get("delta").and_then(Value::as_f64),
            ) {
                return PrivacyPair(epsilon, delta).to_string();
            }
            parameter_rows(fields)
                .into_iter()
                .map(|(name, value)| format!("{name} {value}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
        Value::Number(number) => match number.as_f64() {
            Some(x) if !number.is_u64() && !number.is_i64() => self::number(x, Rounding::Nearest),
            _ => number.to_string(),
        },
        Value::Bool(true) => "yes".to_owned(),
        Value::Bool(false) => "no".to_owned(),
        Value::String(text) => text.clone(),
        Value::Array(values) => format!(
            "[{}]",
            values
                .iter()
                .map(parameters_line)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Null => "none".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn privacy_numbers_are_rounded_up_to_four_digits() {
        assert_eq!(privacy_number(0.9999502514237878), "1");
        assert_eq!(privacy_number(0.5233783398103751), "0.5234");
        assert_eq!(privacy_number(0.1), "0.1");
        assert_eq!(privacy_number(1.0), "1");
        assert_eq!(privacy_number(21.4), "21.4");
        assert_eq!(privacy_number(0.000_123_41), "1.235e-4");
        assert_eq!(
            PrivacyPair(0.10000030517671259, 9.99999999999998e-9).to_string(),
            "(ε = 0.1001, δ = 1.000e-8)"
        );
        assert_eq!(
            PrivacyPair(2.0, 4.861718314491602e-10).to_string(),
            "(ε = 2, δ = 4.862e-10)"
        );
    }

    #[test]
    fn what_is_left_is_rounded_down_and_the_rest_to_the_nearest() {
        assert_eq!(number(0.10000030517671259, Rounding::Down), "0.1");
        assert_eq!(number(9.87654, Rounding::Down), "9.876");
        assert_eq!(
            delta_number(9.99999999999998e-9, Rounding::Down),
            "9.999e-9"
        );
        assert_eq!(number(9.87654, Rounding::Nearest), "9.877");
        assert_eq!(number(-9.87654, Rounding::Nearest), "-9.877");
        assert_eq!(number(-9.87654, Rounding::Up), "-9.876");
        assert_eq!(number(-9.87654, Rounding::Down), "-9.877");
        assert_eq!(number(0.0, Rounding::Up), "0");
        assert_eq!(estimate_number(27763.679379626818), "27764");
        assert_eq!(estimate_number(-1234.5678), "-1235");
        assert_eq!(estimate_number(123.456789), "123.5");
    }

    #[test]
    fn every_rounding_is_on_its_side_of_the_value() {
        let mut x = 1.234_567_89e-9;
        while x < 1e9 {
            for value in [x, -x] {
                let up = to_shown_digits(value, Rounding::Up);
                let down = to_shown_digits(value, Rounding::Down);
                assert!(up >= value && down <= value, "{value}: {down} {up}");
                assert!((up - down).abs() <= x * 2e-3, "{value}: {down} {up}");
            }
            x *= 3.7;
        }
    }

    #[test]
    fn a_collusion_statement_is_rounded_up() {
        let collusion = CollusionBody {
            colluding_fraction: 0.1,
            epsilon: Some(1.234_567_8),
            delta: 9.99999999999998e-9,
            floor: None,
        };
        assert_eq!(
            collusion_text(&collusion),
            "if a fraction 0.1 of the devices colludes with the analyst: ε = 1.235, δ = \
             1.000e-8; if every other device colludes: ε = ∞ (no local guarantee)"
        );
    }

    #[test]
    fn parameters_read_as_words_and_rounded_numbers() {
        let parameters = serde_json::json!({
            "levels": 10,
            "restricted": true,
            "composition": "tight",
            "sampling_rate": 0.21794661713462468,
            "scale": 9.999969482421875,
            "per_level_guarantee": {"epsilon": 0.5233783398103751, "delta": 9.99999000000941e-9,
                                    "neighbours": "add-remove"},
            "population": 835229,
        });
        assert_eq!(
            parameters_line(&parameters),
            "levels 10, restricted yes, composition tight, sampling rate 0.2179, scale 10, \
             per level guarantee (ε = 0.5234, δ = 1.000e-8), population 835229"
        );
        let Value::Object(fields) = &parameters else {
            unreachable!("an object")
        };
        assert_eq!(
            parameter_rows(fields)[3],
            ("sampling rate".to_owned(), "0.2179".to_owned())
        );
    }
}
