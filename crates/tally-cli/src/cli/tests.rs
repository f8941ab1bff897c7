//! The command line's own checks: clap's consistency, a heading for every option, and
//! examples in every command's help that parse.

use clap::{CommandFactory, Parser};

use super::Cli;

/// One example command line.
struct Example {
    /// The `NAME=VALUE` environment assignments before `tally`.
    assignments: Vec<(String, String)>,
    /// `tally` and its arguments.
    words: Vec<String>,
}

/// The example commands of a help text: its lines that run `tally`, each split into words
/// as a shell would (quotes, and `<(...)` or `$(...)` kept whole).
fn example_commands(help: &str) -> Vec<Example> {
    help.lines()
        .map(str::trim)
        .filter(|line| !line.starts_with('#') && line.contains("tally "))
        .map(|line| {
            let words = shell_words(line);
            let start = words.iter().position(|w| w == "tally").expect("runs tally");
            let assignments = words[..start]
                .iter()
                .map(|w| {
                    let (name, value) = w.split_once('=').expect("NAME=VALUE before tally");
                    (name.to_owned(), value.to_owned())
                })
                .collect();
            Example {
                assignments,
                words: words[start..].to_vec(),
            }
        })
        .collect()
}

/// Splits a command line into words: whitespace outside quotes and parentheses.
fn shell_words(line: &str) -> Vec<String> {
    let (mut words, mut word) = (Vec::new(), String::new());
    let (mut quote, mut depth) = (None, 0usize);
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => {
                depth += 1;
                word.push(c);
            }
            (None, ')') => {
                depth -= 1;
                word.push(c);
            }
            (None, c) if c.is_whitespace() && depth == 0 => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            (None, c) => word.push(c),
        }
    }
    assert!(quote.is_none() && depth == 0, "unbalanced: {line}");
    words.extend((!word.is_empty()).then_some(word));
    words
}

/// Every command of the tree, with its path from `tally`.
fn commands(cmd: &clap::Command, path: &str, out: &mut Vec<(String, clap::Command)>) {
    out.push((path.to_owned(), cmd.clone()));
    for sub in cmd.get_subcommands().filter(|sub| sub.get_name() != "help") {
        commands(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

fn all_commands() -> Vec<(String, clap::Command)> {
    let mut cmd = Cli::command();
    cmd.build();
    let mut out = Vec::new();
    commands(&cmd, "tally", &mut out);
    out
}

/// The long flag of the option read from environment variable `name`.
fn flag_of_env(name: &str) -> String {
    all_commands()
        .iter()
        .flat_map(|(_, cmd)| cmd.get_arguments().cloned().collect::<Vec<_>>())
        .find(|arg| arg.get_env().is_some_and(|env| env == name))
        .and_then(|arg| arg.get_long().map(|long| format!("--{long}")))
        .unwrap_or_else(|| panic!("no option reads {name}"))
}

#[test]
fn cli_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn every_command_shows_examples_that_parse() {
    let mut checked = 0;
    for (path, cmd) in all_commands() {
        if cmd.has_subcommands() {
            continue;
        }
        let help = cmd
            .get_after_long_help()
            .unwrap_or_else(|| panic!("`{path} --help` shows no example"))
            .to_string();
        let examples = example_commands(&help);
        assert!(!examples.is_empty(), "`{path} --help` shows no example");
        for Example {
            assignments,
            mut words,
        } in examples
        {
            assert!(
                words.join(" ").starts_with(&path),
                "`{path} --help` shows an example of another command: {}",
                words.join(" ")
            );
            for (name, value) in assignments {
                words.extend([flag_of_env(&name), value]);
            }
            if let Err(e) = Cli::try_parse_from(&words) {
                panic!(
                    "`{path} --help` shows `{}`, which does not parse: {e}",
                    words.join(" ")
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} examples");
}

#[test]
fn every_option_is_under_a_heading() {
    for (path, cmd) in all_commands() {
        for arg in cmd.get_arguments() {
            let builtin = ["help", "version"].contains(&arg.get_id().as_str());
            assert!(
                builtin || arg.is_positional() || arg.get_help_heading().is_some(),
                "`{path} --{}` is under no heading: give it a help_heading (cli::heading)",
                arg.get_id()
            );
        }
    }
}

#[test]
fn shell_words_keeps_quotes_and_substitutions_whole() {
    assert_eq!(
        shell_words(r#"A=$(cat x y) tally --name "a b" --input <(tail -n +2 f | cut -f3)"#),
        [
            "A=$(cat x y)",
            "tally",
            "--name",
            "a b",
            "--input",
            "<(tail -n +2 f | cut -f3)"
        ]
    );
}

/// `args` parsed, or clap's error kind.
fn parse(args: &str) -> Result<Cli, clap::error::ErrorKind> {
    Cli::try_parse_from(args.split_whitespace()).map_err(|e| e.kind())
}

/// The command `args` parse to.
fn command(args: &str) -> super::Command {
    parse(args)
        .unwrap_or_else(|e| panic!("{args}: {e}"))
        .command
}

#[test]
fn benchmarks_target_epsilon_1_and_delta_1e_8_unless_told() {
    use super::{BenchCommand, Command};
    let targets = [
        "tally bench mechanism --mechanism laplace",
        "tally bench triehh",
    ]
    .map(|args| match command(args) {
        Command::Bench(BenchCommand::Mechanism(bench)) => bench.target,
        Command::Bench(BenchCommand::Triehh(bench)) => bench.target,
        other => panic!("{args} is {other:?}"),
    });
    for target in targets {
        assert_eq!((target.epsilon, target.delta()), (1.0, 1e-8));
    }
    let args = "tally bench mechanism --mechanism laplace --epsilon 2 --delta 1e-6";
    let Command::Bench(BenchCommand::Mechanism(bench)) = command(args) else {
        panic!("{args} is not bench mechanism");
    };
    assert_eq!((bench.target.epsilon, bench.target.delta()), (2.0, 1e-6));
}

#[test]
fn only_plan_sample_threshold_leaves_delta_out() {
    use super::{Command, PlanCommand};
    let args = "tally plan sample-threshold --epsilon 1 --sampling-rate 0.25 --threshold 20";
    let Command::Plan(PlanCommand::SampleThreshold(plan)) = command(args) else {
        panic!("{args} is not plan sample-threshold");
    };
    assert_eq!(plan.privacy.target.delta(), None);
    for args in [
        "tally plan quantiles --epsilon 1",
        "tally plan triehh++ --epsilon 1 --levels 4",
        "tally histogram --input x --epsilon 1",
        "tally quantiles --input x --epsilon 1",
    ] {
        assert_eq!(
            parse(args).err(),
            Some(clap::error::ErrorKind::MissingRequiredArgument),
            "{args}"
        );
    }
}

#[test]
fn only_the_plans_of_a_given_round_take_both_its_parameters() {
    let both = "--epsilon 1 --delta 1e-8 --sampling-rate 0.1 --threshold 20";
    for command in ["plan sample-threshold", "plan triehh++ --levels 4"] {
        let args = format!("tally {command} {both}");
        assert!(parse(&args).is_ok(), "{args}");
    }
    for command in [
        "histogram --input x",
        "heavy-hitters --input x --algorithm triehh++",
        "quantiles --input x",
        "range --input x --lo 0 --hi 1",
        "plan quantiles",
    ] {
        let args = format!("tally {command} {both}");
        assert_eq!(
            parse(&args).err(),
            Some(clap::error::ErrorKind::ArgumentConflict),
            "{args}"
        );
    }
}

/// Every option of `tally task create` that describes a task's kind goes in `KIND_OPTIONS`,
/// which `--kind-json` refuses beside it: an option under the Algorithm or OptPrefixTree
/// headings, and under Privacy any but the spec's own. One forgotten there would be taken
/// with `--kind-json` and then ignored.
#[cfg(feature = "federated")]
#[test]
fn kind_json_refuses_every_option_of_a_kind() {
    use super::{KIND_OPTIONS, heading};

    /// The Privacy options that belong to the spec, not to its kind.
    const SPEC_PRIVACY: [&str; 4] = ["epsilon", "delta", "method", "neighbours"];
    let create = all_commands()
        .into_iter()
        .find(|(path, _)| path == "tally task create")
        .map(|(_, command)| command)
        .expect("tally task create");
    for arg in create.get_arguments() {
        let id = arg.get_id().as_str();
        let kind = match arg.get_help_heading() {
            Some(heading::ALGORITHM | heading::OPT_PREFIX_TREE) => id != "kind_json",
            Some(heading::PRIVACY) => !SPEC_PRIVACY.contains(&id),
            _ => false,
        };
        assert_eq!(
            kind,
            KIND_OPTIONS.contains(&id),
            "--{}: an option of a kind goes in KIND_OPTIONS, and only one",
            arg.get_long().unwrap_or(id)
        );
    }
}
