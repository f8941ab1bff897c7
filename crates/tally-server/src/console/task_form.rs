//! The "new task" form: one per task kind, with the fields `tally task create` takes for that
//! kind and its defaults, grouped as its help groups them (the task, privacy, the kind's own,
//! rounds). A submitted form becomes the JSON spec the API reads, field by field, and nothing
//! else: the server's checks of the spec ([`crate::runtime::Runtime::plan_task`]) stay the only
//! checks, and a form field is named by its place in that spec.

use std::collections::HashMap;

use serde_json::{Map, Value};
use tally_accounting::Neighbours;
use tally_accounting::composition::Composition;
use tally_messages::{PROTOCOL_VERSION, TaskKind, TaskSpec};
use tally_protocol::{DEFAULT_MIN_COHORT, definition};

use crate::error::ApiError;
use tally_messages::ErrorCode;

/// What a field takes.
#[derive(Clone, Copy, Debug)]
pub(super) enum Input {
    /// A number.
    Number,
    /// A whole number.
    Whole,
    /// A box, checked or not.
    Flag,
    /// Numbers separated by commas.
    Numbers,
    /// One of the names.
    Choice(&'static [&'static str]),
    /// A composition theorem of the task's rounds; left empty, the command line's default for
    /// the task's neighbours ([`Composition::default_for_rounds`]).
    Composition,
    /// Text.
    Text,
}

/// Where a field sits on the form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Group {
    /// The population and its size.
    Task,
    /// The privacy target and what calibrates it.
    Privacy,
    /// The kind's own parameters.
    Kind,
    /// The rounds' policy.
    Rounds,
}

/// Every group, in the form's order, with its legend.
pub(super) const GROUPS: [(Group, &str); 4] = [
    (Group::Task, "Task"),
    (Group::Privacy, "Privacy"),
    (Group::Kind, "Parameters of the kind"),
    (Group::Rounds, "Rounds"),
];

/// One field: its name is its place in the spec (`privacy.epsilon`, `kind.range.0`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Field {
    /// Its place in the spec, `.` between keys, an array's index as a number.
    pub(super) name: &'static str,
    /// What it is, for people.
    pub(super) label: &'static str,
    /// The option of `tally task create` it is.
    pub(super) flag: &'static str,
    /// What it takes.
    pub(super) input: Input,
    /// Its value when the form opens; empty: left out (the server's default), or required.
    pub(super) default: &'static str,
    /// Whether it must be given.
    pub(super) required: bool,
    /// Where it sits.
    pub(super) group: Group,
    /// What leaving it empty means, or what it takes.
    pub(super) hint: &'static str,
}

/// A field of `group` named `name`, optional and empty.
const fn field(name: &'static str, label: &'static str, flag: &'static str, input: Input) -> Field {
    Field {
        name,
        label,
        flag,
        input,
        default: "",
        required: false,
        group: Group::Kind,
        hint: "",
    }
}

impl Field {
    const fn default(self, default: &'static str) -> Self {
        Self { default, ..self }
    }

    const fn required(self) -> Self {
        Self {
            required: true,
            ..self
        }
    }

    const fn group(self, group: Group) -> Self {
        Self { group, ..self }
    }

    const fn hint(self, hint: &'static str) -> Self {
        Self { hint, ..self }
    }
}

/// The fields of every kind: the task, its privacy target, its rounds.
const COMMON: [Field; 11] = [
    field(
        "expected_population",
        "Devices in the population",
        "--expected-population",
        Input::Whole,
    )
    .required()
    .group(Group::Task)
    .hint("the n the guarantee and the release's estimates are calibrated for"),
    field("privacy.epsilon", "ε", "--epsilon", Input::Number)
        .required()
        .group(Group::Privacy)
        .hint("for the whole task, > 0"),
    field("privacy.delta", "δ", "--delta", Input::Number)
        .required()
        .group(Group::Privacy)
        .hint("for the whole task, in (0, 1); well below 1/n"),
    field(
        "privacy.neighbours",
        "Neighbours",
        "--neighbours",
        Input::Choice(&["add-remove", "replace-one"]),
    )
    .group(Group::Privacy),
    field(
        "privacy.analysis",
        "Analysis of sample-and-threshold",
        "--method",
        Input::Choice(&["tight", "exact", "theorem1", "closed-form"]),
    )
    .default("tight")
    .group(Group::Privacy),
    field(
        "rounds.min_cohort",
        "Minimum cohort",
        "--min-cohort",
        Input::Whole,
    )
    .group(Group::Rounds)
    .hint("empty: 100, or the expected population for a shuffle mechanism"),
    field(
        "rounds.cohort_target",
        "Cohort target",
        "--cohort-target",
        Input::Whole,
    )
    .group(Group::Rounds)
    .hint("empty: the expected population"),
    field(
        "rounds.deadline_secs",
        "Deadline (seconds)",
        "--deadline-secs",
        Input::Whole,
    )
    .default("600")
    .group(Group::Rounds),
    field(
        "rounds.max_attempts",
        "Attempts per round",
        "--max-attempts",
        Input::Whole,
    )
    .default("3")
    .group(Group::Rounds),
    field(
        "rounds.max_report_bytes",
        "Largest report (bytes)",
        "--max-report-bytes",
        Input::Whole,
    )
    .default("256")
    .group(Group::Rounds),
    field(
        "sampling",
        "Who samples",
        "--sampling",
        Input::Choice(&["aggregator", "device"]),
    )
    .default("aggregator")
    .group(Group::Rounds),
];

const SAMPLING_RATE: Field = field(
    "kind.sampling_rate",
    "Sampling rate p_s",
    "--sampling-rate",
    Input::Number,
)
.group(Group::Privacy)
.hint("empty: the largest that meets (ε, δ) at the threshold");
const THRESHOLD: Field = field("kind.threshold", "Threshold τ", "--threshold", Input::Whole)
    .group(Group::Privacy)
    .hint("empty: calibrated from (ε, δ)");
const LEVELS: Field = field("kind.levels", "Levels", "--levels", Input::Whole).default("10");
const SEGMENT: Field = field(
    "kind.segment",
    "Characters per level",
    "--segment",
    Input::Whole,
)
.default("1");
const COMPOSITION: Field = field(
    "kind.composition",
    "Composition of the rounds",
    "--composition",
    Input::Composition,
)
.group(Group::Privacy)
.hint("empty: tight under add-remove neighbours, basic under replace-one");
const BRANCHING: Field = field("kind.branching", "Branching", "--branching", Input::Whole)
    .hint("empty: the kind's default");
const CONSISTENT: Field = field(
    "kind.consistent",
    "Consistent tree",
    "--consistent",
    Input::Flag,
);
const RANGE_MIN: Field = field("kind.range.0", "Smallest value", "--min", Input::Number)
    .hint("with the largest; empty: the kind's default range");
const RANGE_MAX: Field = field("kind.range.1", "Largest value", "--max", Input::Number);
const DOMAIN: Field = field(
    "kind.domain.integers",
    "Domain: integers 0..B",
    "--domain",
    Input::Whole,
)
.hint("give this or the buckets");
const BUCKETS: Field = field(
    "kind.domain.buckets",
    "Domain: hashed into B buckets",
    "--buckets",
    Input::Whole,
);

/// A task kind as the form offers it.
#[derive(Debug)]
pub(super) struct FormKind {
    /// Its name in the form's address (`?kind=`).
    pub(super) name: &'static str,
    /// What it is, for people.
    pub(super) title: &'static str,
    /// The options of `tally task create` that choose it.
    pub(super) command: &'static str,
    /// Its fixed fields in the spec's `kind` object.
    pub(super) fixed: &'static str,
    /// The relation its guarantee is for: the form's default, and the populations it suits.
    pub(super) neighbours: Neighbours,
    /// Its own fields.
    pub(super) fields: &'static [Field],
}

/// Every kind the form offers, the default first.
pub(super) const KINDS: [FormKind; 10] = [
    FormKind {
        name: "histogram",
        title: "Histogram of the devices' items",
        command: "--mechanism sample-threshold|laplace-threshold|gaussian-threshold|truncated-geometric",
        fixed: r#"{"type":"histogram"}"#,
        neighbours: Neighbours::AddRemove,
        fields: &[
            field(
                "kind.mechanism",
                "Mechanism",
                "--mechanism",
                Input::Choice(&[
                    "sample-threshold",
                    "laplace-threshold",
                    "gaussian-threshold",
                    "truncated-geometric",
                ]),
            )
            .default("sample-threshold"),
            SAMPLING_RATE.hint("sample-threshold only; empty: the largest that meets (ε, δ)"),
            THRESHOLD.hint("sample-threshold only; empty: calibrated from (ε, δ)"),
        ],
    },
    FormKind {
        name: "single-round",
        title: "Single-round heavy hitters (sample-and-threshold)",
        command: "--algorithm single-round",
        fixed: r#"{"type":"single-round"}"#,
        neighbours: Neighbours::AddRemove,
        fields: &[SAMPLING_RATE, THRESHOLD],
    },
    FormKind {
        name: "heavy-hitters",
        title: "TrieHH++ heavy hitters",
        command: "--algorithm triehh++",
        fixed: r#"{"type":"heavy-hitters","algorithm":"triehh++"}"#,
        neighbours: Neighbours::AddRemove,
        fields: &[
            LEVELS,
            SEGMENT,
            field(
                "kind.restricted",
                "Restricted (clear for --unrestricted)",
                "--unrestricted",
                Input::Flag,
            )
            .default("on"),
            COMPOSITION,
            SAMPLING_RATE,
            THRESHOLD,
        ],
    },
    FormKind {
        name: "quantiles",
        title: "Quantiles of the devices' numbers",
        command: "--algorithm hierarchical-quantiles|binary-search-quantiles",
        fixed: r#"{"type":"quantiles"}"#,
        neighbours: Neighbours::AddRemove,
        fields: &[
            field(
                "kind.method",
                "Method",
                "--algorithm",
                Input::Choice(&["hierarchical", "binary-search"]),
            )
            .default("hierarchical"),
            field("kind.quantiles", "Quantiles", "--quantiles", Input::Numbers)
                .default("0.1, 0.5, 0.9")
                .hint("in (0, 1), separated by commas"),
            RANGE_MIN,
            RANGE_MAX,
            LEVELS,
            BRANCHING.hint("hierarchical only; empty: the kind's default"),
            CONSISTENT,
            COMPOSITION,
            SAMPLING_RATE,
            THRESHOLD,
        ],
    },
    FormKind {
        name: "range",
        title: "Count of the devices' numbers in a range",
        command: "--algorithm range",
        fixed: r#"{"type":"range"}"#,
        neighbours: Neighbours::AddRemove,
        fields: &[
            field("kind.lo", "From (included)", "--lo", Input::Number).required(),
            field("kind.hi", "To (excluded)", "--hi", Input::Number).required(),
            RANGE_MIN,
            RANGE_MAX,
            LEVELS,
            BRANCHING,
            CONSISTENT,
            COMPOSITION,
            SAMPLING_RATE,
            THRESHOLD,
        ],
    },
    FormKind {
        name: "domain-histogram",
        title: "Histogram over a public domain, local or shuffled",
        command: "--mechanism oue|grr|sue|olh|hadamard-response|subset-selection|balcer-cheu|shuffled-grr|ghazi-hadamard|ghazi-count-min",
        fixed: r#"{"type":"domain-histogram"}"#,
        neighbours: Neighbours::ReplaceOne,
        fields: &[
            field(
                "kind.mechanism",
                "Mechanism",
                "--mechanism",
                Input::Choice(&[
                    "oue",
                    "grr",
                    "sue",
                    "olh",
                    "hadamard-response",
                    "subset-selection",
                    "balcer-cheu",
                    "shuffled-grr",
                    "ghazi-hadamard",
                    "ghazi-count-min",
                ]),
            )
            .default("oue"),
            DOMAIN,
            BUCKETS,
        ],
    },
    FormKind {
        name: "central-domain-histogram",
        title: "Histogram over a public domain, central noise",
        command: "--mechanism laplace|gaussian",
        fixed: r#"{"type":"domain-histogram"}"#,
        neighbours: Neighbours::AddRemove,
        fields: &[
            field(
                "kind.mechanism",
                "Mechanism",
                "--mechanism",
                Input::Choice(&["laplace", "gaussian"]),
            )
            .default("laplace"),
            DOMAIN,
            BUCKETS,
        ],
    },
    FormKind {
        name: "triehh",
        title: "TrieHH heavy hitters",
        command: "--algorithm triehh",
        fixed: r#"{"type":"triehh"}"#,
        neighbours: Neighbours::ReplaceOne,
        fields: &[
            LEVELS,
            SEGMENT,
            field("kind.beam", "Beam", "--beam", Input::Whole).hint("empty: no beam"),
        ],
    },
    FormKind {
        name: "opt-prefix-tree",
        title: "OptPrefixTree heavy hitters (words as bytes)",
        command: "--algorithm opt-prefix-tree --encoding bytes",
        fixed: r#"{"type":"opt-prefix-tree","encoding":{"type":"bytes"}}"#,
        neighbours: Neighbours::ReplaceOne,
        fields: &[
            field(
                "kind.iterations",
                "Iterations per run",
                "--iterations",
                Input::Whole,
            )
            .default("5"),
            field("kind.runs", "Runs", "--runs", Input::Whole).default("1"),
            field(
                "kind.domain_cap",
                "Domain cap",
                "--domain-cap",
                Input::Whole,
            )
            .default("65537"),
            field("kind.fpr", "False-positive ratio", "--fpr", Input::Number).default("0.1"),
            field(
                "kind.selection",
                "Data selection",
                "--selection",
                Input::Choice(&["uniform-support", "weighted"]),
            )
            .default("uniform-support"),
            field(
                "kind.randomizer",
                "Randomizer",
                "--randomizer",
                Input::Choice(&["oue", "sue"]),
            )
            .default("oue"),
            field("kind.segment", "Segment rule", "--segment", Input::Text)
                .hint("max-under-cap, max-mass or fixed:S; empty: the kind's default"),
            field(
                "kind.max_length",
                "Longest prefix (bytes)",
                "--max-length",
                Input::Whole,
            )
            .hint("empty: 24"),
            COMPOSITION.hint("empty: tight"),
        ],
    },
    FormKind {
        name: "count-min-prefix-tree",
        title: "Count-min prefix tree heavy hitters (shuffled)",
        command: "--algorithm count-min-prefix-tree",
        fixed: r#"{"type":"count-min-prefix-tree"}"#,
        neighbours: Neighbours::ReplaceOne,
        fields: &[
            field(
                "kind.domain_bits",
                "Domain bits",
                "--domain-bits",
                Input::Whole,
            )
            .required(),
            field(
                "kind.threshold",
                "Heavy-hitter threshold τ_HH",
                "--threshold",
                Input::Whole,
            )
            .required(),
            field(
                "kind.failure_probability",
                "Failure probability",
                "--failure-probability",
                Input::Number,
            )
            .hint("empty: the kind's default"),
        ],
    },
];

/// The kind named `name`.
pub(super) fn kind(name: &str) -> Option<&'static FormKind> {
    KINDS.iter().find(|kind| kind.name == name)
}

impl FormKind {
    /// Every field of the kind's form, the common ones with the kind's defaults.
    pub(super) fn all_fields(&self) -> impl Iterator<Item = Field> + '_ {
        COMMON
            .iter()
            .map(|field| match field.name {
                "privacy.neighbours" => field.default(self.neighbours.name()),
                _ => *field,
            })
            .chain(self.fields.iter().copied())
    }

    /// The spec the submitted `values` ask for (field name to text; a checked box is present,
    /// an unchecked one absent), over `population`: each field set at its place in the spec, a
    /// field left empty left out (or, for the minimum cohort and the composition, the command
    /// line's default).
    ///
    /// # Errors
    ///
    /// A field that is required and empty, or does not read as what it takes, named.
    pub(super) fn spec(
        &self,
        population: &str,
        values: &HashMap<String, String>,
    ) -> Result<TaskSpec, ApiError> {
        // Unwrap safety: the fixed fields are JSON objects (tested).
        let fixed: Value = serde_json::from_str(self.fixed).expect("a kind's fixed fields");
        let mut spec = serde_json::json!({
            "version": PROTOCOL_VERSION,
            "population": population,
            "kind": fixed,
        });
        for field in self.all_fields() {
            let text = values.get(field.name).map_or("", |v| v.trim());
            if let Some(value) = read(&field, text)? {
                set(&mut spec, field.name, value);
            }
        }
        let neighbours = spec["privacy"]["neighbours"]
            .as_str()
            .and_then(|name| name.parse::<Neighbours>().ok())
            .unwrap_or(self.neighbours);
        if self
            .fields
            .iter()
            .any(|f| matches!(f.input, Input::Composition))
            && spec["kind"]["composition"].is_null()
            && self.neighbours == Neighbours::AddRemove
        {
            spec["kind"]["composition"] =
                Value::from(Composition::default_for_rounds(neighbours).name());
        }
        if spec["rounds"]["min_cohort"].is_null() {
            // A kind or population that does not parse is refused below, by the spec's parse.
            let kind = serde_json::from_value::<TaskKind>(spec["kind"].clone()).ok();
            let min_cohort = match (kind, spec["expected_population"].as_u64()) {
                (Some(kind), Some(expected)) => definition(&kind).default_min_cohort(expected),
                _ => DEFAULT_MIN_COHORT,
            };
            spec["rounds"]["min_cohort"] = Value::from(min_cohort);
        }
        check_pairs(&spec["kind"])?;
        serde_json::from_value(spec).map_err(|e| malformed(format!("the task's fields: {e}")))
    }
}

/// A malformed form.
fn malformed(message: String) -> ApiError {
    ApiError::new(ErrorCode::Malformed, message)
}

/// The value of `field` from its text, `None` when left empty (refused when required).
fn read(field: &Field, text: &str) -> Result<Option<Value>, ApiError> {
    let named = || format!("{} ({}, {})", field.label, field.name, field.flag);
    if let Input::Flag = field.input {
        return Ok(Some(Value::Bool(!text.is_empty())));
    }
    if text.is_empty() {
        return if field.required {
            Err(malformed(format!("{}: required", named())))
        } else {
            Ok(None)
        };
    }
    let number = |text: &str| -> Result<Value, ApiError> {
        text.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .map(Value::from)
            .ok_or_else(|| malformed(format!("{}: {text:?} is not a number", named())))
    };
    let value = match field.input {
        Input::Number => number(text)?,
        Input::Whole => Value::from(
            text.parse::<u64>()
                .map_err(|_| malformed(format!("{}: {text:?} is not a whole number", named())))?,
        ),
        Input::Numbers => Value::Array(
            text.split(',')
                .map(|part| number(part.trim()))
                .collect::<Result<_, _>>()?,
        ),
        Input::Choice(names) => {
            if !names.contains(&text) {
                return Err(malformed(format!(
                    "{}: {text:?} is not one of {}",
                    named(),
                    names.join(", ")
                )));
            }
            Value::from(text)
        }
        Input::Composition => {
            let known = Composition::ALL.iter().any(|c| c.name() == text);
            if !known {
                return Err(malformed(format!(
                    "{}: {text:?} is not a composition ({})",
                    named(),
                    Composition::ALL.map(Composition::name).join(", ")
                )));
            }
            Value::from(text)
        }
        Input::Text => Value::from(text),
        // A checked box (an unchecked one is read above).
        Input::Flag => Value::Bool(true),
    };
    Ok(Some(value))
}

/// Sets `value` at `path` in `spec`, making the objects and arrays on the way.
fn set(spec: &mut Value, path: &str, value: Value) {
    let mut at = spec;
    let mut keys = path.split('.').peekable();
    while let Some(key) = keys.next() {
        let last = keys.peek().is_none();
        let next_is_index = keys.peek().is_some_and(|k| k.parse::<usize>().is_ok());
        at = match key.parse::<usize>() {
            Ok(index) => {
                let items = match at {
                    Value::Array(items) => items,
                    // Unwrap safety: an index follows a key whose value was made an array.
                    _ => unreachable!("an index into an array"),
                };
                if items.len() <= index {
                    items.resize(index + 1, Value::Null);
                }
                &mut items[index]
            }
            Err(_) => {
                if !at.is_object() {
                    *at = Value::Object(Map::new());
                }
                let empty = if next_is_index {
                    Value::Array(Vec::new())
                } else {
                    Value::Object(Map::new())
                };
                // Unwrap safety: made an object above.
                at.as_object_mut()
                    .expect("an object")
                    .entry(key)
                    .or_insert(empty)
            }
        };
        if last {
            *at = value;
            return;
        }
    }
}

/// Refuses half of a pair of fields: a range with one end, a domain of both kinds.
fn check_pairs(kind: &Value) -> Result<(), ApiError> {
    if let Some(range) = kind.get("range").and_then(Value::as_array)
        && (range.len() != 2 || range.iter().any(Value::is_null))
    {
        return Err(malformed(
            "Smallest value (kind.range.0, --min) and largest value (kind.range.1, --max): give \
             both, or neither"
                .to_owned(),
        ));
    }
    if let Some(domain) = kind.get("domain").and_then(Value::as_object)
        && domain.len() != 1
    {
        return Err(malformed(
            "Domain: give the integers (kind.domain.integers, --domain) or the buckets \
             (kind.domain.buckets, --buckets), one of them"
                .to_owned(),
        ));
    }
    Ok(())
}
