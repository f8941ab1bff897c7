//! The console's pages. Every value is interpolated through the templates, which escape it:
//! a name or a released item is text, never markup.

use std::time::{Duration, UNIX_EPOCH};

use maud::{DOCTYPE, Markup, PreEscaped, html};
use serde_json::Value;
use tally_messages::{
    CredentialInfo, GuaranteeBody, IssuedCredential, LedgerBalance, PopulationInfo, Role,
    RoundQuery, TaskInfo, TaskSpec,
};
use tally_protocol::definition;
use tally_protocol::shown::{
    Rounding, collusion_text, delta_number, estimate_number, field_text, number, privacy_number,
};

use std::collections::HashMap;

use super::Session;
use super::charts;
use super::release_curve::ReleaseCurves;
use super::task_form::{self, Field, FormKind, Input};

/// The console's one stylesheet, inline and allowed by its hash alone.
pub(super) const STYLE: &str = "\
body{font-family:system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}\
header{background:#1d2330;color:#fff;padding:.6em 1.2em;display:flex;gap:1.2em;align-items:center}\
header a{color:#fff}header form{margin-left:auto}\
main{padding:1em 1.2em;max-width:70em}\
section{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:.8em 1em;margin:0 0 1em}\
h1{font-size:1.3em}h2{font-size:1.1em;margin:.2em 0 .6em}\
body,td,th,p,li{overflow-wrap:break-word;word-break:normal;hyphens:manual}\
table{border-collapse:collapse;margin:.4em 0;max-width:100%}td,th{border-bottom:1px solid #e4e7ec;padding:.25em .7em;text-align:left;vertical-align:top}\
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\
table.fields th{white-space:nowrap;font-weight:500;color:#384152}table.fields table.fields{margin:0}\
textarea{width:100%;font-family:monospace}\
.error{color:#9b1c1c;font-weight:600}.note{color:#566}\
.prompt{background:#eef3fc;border-left:4px solid #2457c5;padding:.5em .8em}\
.cards{display:flex;flex-wrap:wrap;gap:1em}.cards section{flex:1 1 22em}\
.pages a{padding:0 .3em}\
fieldset{border:1px solid #dde1e7;border-radius:4px;margin:.6em 0;padding:.4em .8em}legend{font-weight:600}\
.field{display:inline-block;margin:.25em 1.2em .25em 0}.field small{display:block;color:#566}\
pre{background:#f0f2f5;padding:.5em;overflow:auto;white-space:pre-wrap}";

/// A whole page.
fn layout(session: Option<&Session>, title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · tally console" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                header {
                    strong { "tally console" }
                    @if let Some(session) = session {
                        a href="/console" { "Overview" }
                        a href="/console/ledger" { "Ledger" }
                        @if session.who.role == Role::Analyst {
                            a href="/console/tasks/new" { "New task" }
                        }
                        @if session.who.role == Role::Operator {
                            a href="/console/credentials" { "Credentials" }
                        }
                        span { "signed in as " (session.who.role.name()) " " code { (session.who.id) } }
                        form method="post" action="/console/logout" {
                            (form_token(session))
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main {
                    h1 { (title) }
                    (body)
                }
            }
        }
    }
}

/// The hidden anti-forgery field of a form that changes state.
fn form_token(session: &Session) -> Markup {
    html! { input type="hidden" name="form_token" value=(session.form_token); }
}

/// An `ε` for people: rounded up ([`privacy_number`]).
fn epsilon(x: f64) -> String {
    privacy_number(x)
}

/// A `δ` for people: rounded up, in scientific notation.
fn delta(x: f64) -> String {
    delta_number(x, Rounding::Up)
}

/// A time in seconds since the Unix epoch, as a date.
fn date(at: i64) -> String {
    let at = UNIX_EPOCH + Duration::from_secs(u64::try_from(at).unwrap_or(0));
    httpdate::fmt_http_date(at)
}

/// The sign-in form, with why the last attempt was refused.
pub(super) fn login(refusal: Option<&str>) -> Markup {
    layout(
        None,
        "Sign in",
        html! {
            section {
                @if let Some(refusal) = refusal {
                    p.error { (refusal) }
                } @else {
                    p.prompt { "Sign in with the token of an operator or an analyst." }
                }
                form method="post" action="/console/login" {
                    label { "Token of an operator or an analyst " input type="password" name="token" autocomplete="off" required; }
                    " "
                    button type="submit" { "Sign in" }
                }
                p.note { "The token is kept in a cookie of this site only, never in an address." }
            }
        },
    )
}

/// A refusal.
pub(super) fn refusal(session: Option<&Session>, message: &str) -> Markup {
    layout(
        session,
        "Refused",
        html! { section { p.error { (message) } p { a href="/console" { "Back to the overview" } } } },
    )
}

/// Populations and their budgets, tasks and their rounds; the population form for an operator.
pub(super) fn overview(
    session: &Session,
    populations: &[PopulationInfo],
    ledger: &[LedgerBalance],
    tasks: &[TaskInfo],
    rounds: &[(RoundQuery, (u64, u64))],
) -> Markup {
    let operator = session.who.role == Role::Operator;
    layout(
        Some(session),
        "Overview",
        html! {
            h2 { "Populations" }
            @if populations.is_empty() { p.note { "No population yet." } }
            div.cards {
                @for population in populations {
                    @let balance = ledger.iter().find(|b| b.population == population.name);
                    section {
                        h2 { (population.name) }
                        p {
                            "Budget ε = " (epsilon(population.budget.epsilon)) ", δ = " (delta(population.budget.delta))
                            "; min cohort " (population.min_cohort)
                            @if let Some(cap) = population.max_task_epsilon { "; at most ε = " (epsilon(cap)) " per task" }
                            "; trust model " (population.trust.name())
                            "; device-side sampling " (allowed(population.allow_device_sampling))
                            "; " (colluding(population.colluding_fraction))
                            "; budget under " (population.neighbours.name()) " neighbours"
                        }
                        @if let Some(balance) = balance {
                            p {
                                "Spent ε = " (epsilon(balance.spent.epsilon)) ", reserved " (epsilon(balance.reserved.epsilon))
                                ", remaining " strong { (number(balance.remaining.epsilon, Rounding::Down)) }
                                " (δ remaining " (delta_number(balance.remaining.delta, Rounding::Down)) ")"
                                (bound_use(balance))
                            }
                            (charts::budget(population.created_at, balance))
                        }
                    }
                }
            }
            @if operator {
                section {
                    h2 { "New population" }
                    form method="post" action="/console/populations" {
                        (form_token(session))
                        label { "Name " input name="name" required pattern="[a-z0-9][a-z0-9._-]{0,63}"; } " "
                        label { "Budget ε " input name="epsilon" value="10" size="6"; } " "
                        label { "δ " input name="delta" value="1e-5" size="8"; } " "
                        label { "Min cohort " input name="min_cohort" value="100" size="6"; } " "
                        label { "Max ε per task " input name="max_task_epsilon" size="6" placeholder="none"; } " "
                        label { "Trust " select name="trust" {
                            option value="single-party" selected { "single-party" }
                            option value="split" { "split (through a relay)" }
                        } } " "
                        label { input type="checkbox" name="allow_device_sampling" value="on"; " Allow device-side sampling (only if every enrolled device is trusted to flip its own coin)" } " "
                        label { "Colluding fraction " input name="colluding_fraction" size="5" placeholder="0"; " (shuffle tasks are charged their guarantee against this fraction of devices colluding with the analyst)" } " "
                        label { "Neighbours " select name="neighbours" {
                            option value="add-remove" selected { "add-remove (a client present or absent)" }
                            option value="replace-one" { "replace-one (needed by shuffle and local tasks)" }
                        } } " "
                        br;
                        "Declared S&T pair (optional): "
                        label { "p_s ≤ " input name="bound_rate" size="6" placeholder="none"; } " "
                        label { "τ ≥ " input name="bound_threshold" size="4"; } " "
                        label { "its share ε " input name="bound_epsilon" size="6" placeholder="all"; } " "
                        label { "δ " input name="bound_delta" size="8" placeholder="all"; } " "
                        br;
                        button type="submit" { "Create population" }
                    }
                }
            }
            h2 { "Tasks" }
            @if tasks.is_empty() { p.note { "No task yet." } }
            @else {
                section {
                    table {
                        tr { th { "Task" } th { "Population" } th { "Kind" } th { "State" } th { "ε" } th { "δ" } th { "Rounds released" } th { "Open round" } th { "Created" } }
                        @for task in tasks {
                            tr {
                                td { a href=(format!("/console/tasks/{}", task.id)) { (task.id) } }
                                td { (task.spec.population) }
                                td { (kind_name(&task.spec)) }
                                td { (task.state.name()) }
                                td.n { (epsilon(task.guarantee.epsilon)) }
                                td.n { (delta(task.guarantee.delta)) }
                                td.n { (task.rounds_released) }
                                td { @if let Some(round) = &task.open_round { code { (round) } } }
                                td { (date(task.created_at)) }
                            }
                        }
                    }
                }
            }
            @if operator {
                h2 { "Open rounds" }
                @if rounds.is_empty() { p.note { "No round is open." } }
                @else {
                    section { (round_table(rounds)) }
                }
            }
        },
    )
}

/// The open rounds with their cohorts so far.
fn round_table(rounds: &[(RoundQuery, (u64, u64))]) -> Markup {
    html! {
        table {
            tr { th { "Task" } th { "Round" } th { "Attempt" } th { "Cohort filled" } th {} th { "Deadline" } }
            @for (query, (uploads, target)) in rounds {
                tr {
                    td { a href=(format!("/console/tasks/{}", query.task_id)) { (query.task_id) } }
                    td.n { (query.round) }
                    td.n { (query.attempt) }
                    td.n { (uploads) " of " (target) }
                    td { (charts::progress(*uploads, *target)) }
                    td { (date(query.deadline)) }
                }
            }
        }
    }
}

/// The name of a task's kind, as its spec spells it.
fn kind_name(spec: &TaskSpec) -> String {
    serde_json::to_value(&spec.kind)
        .ok()
        .and_then(|kind| kind.get("type").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_default()
}

/// The rounds of a population's declared pair left, in words (nothing without one).
fn bound_use(balance: &LedgerBalance) -> String {
    balance.task_bound.map_or_else(String::new, |bound| {
        format!(
            "; {} of {} rounds left within the declared pair",
            bound.bound.rounds.saturating_sub(bound.rounds_used),
            bound.bound.rounds
        )
    })
}

/// A population's device-sampling policy in words.
fn allowed(allow_device_sampling: bool) -> &'static str {
    if allow_device_sampling {
        "allowed by the operator"
    } else {
        "not allowed (rounds sample at the aggregator)"
    }
}

/// A population's collusion policy in words.
fn colluding(colluding_fraction: f64) -> String {
    if colluding_fraction > 0.0 {
        format!(
            "shuffle tasks charged their guarantee against a fraction {} of devices colluding \
             with the analyst",
            number(colluding_fraction, Rounding::Nearest)
        )
    } else {
        "the budget assumes honest devices (colluding fraction 0)".to_owned()
    }
}

/// Each population's spending, debit by debit.
pub(super) fn ledger(session: &Session, ledger: &[LedgerBalance]) -> Markup {
    layout(
        Some(session),
        "Ledger",
        html! {
            @if ledger.is_empty() { p.note { "No population yet." } }
            @for balance in ledger {
                section {
                    h2 { (balance.population) }
                    p {
                        "Device-side sampling " (allowed(balance.allow_device_sampling)) ". "
                        "Every amount is under " (balance.neighbours.name()) " neighbours."
                    }
                    p { "Colluding devices: " (colluding(balance.colluding_fraction)) "." }
                    p.note { "ε and δ to four significant digits: rounded up, and what remains rounded down." }
                    table {
                        tr { th {} th { "ε" } th { "δ" } }
                        tr { td { "Budget" } td.n { (epsilon(balance.budget.epsilon)) } td.n { (delta(balance.budget.delta)) } }
                        tr { td { "Spent" } td.n { (epsilon(balance.spent.epsilon)) } td.n { (delta(balance.spent.delta)) } }
                        tr { td { "Reserved by running tasks" } td.n { (epsilon(balance.reserved.epsilon)) } td.n { (delta(balance.reserved.delta)) } }
                        tr { td { "Remaining for tasks charged their own guarantee (basic composition, what the server enforces)" } td.n { (number(balance.remaining.epsilon, Rounding::Down)) } td.n { (delta_number(balance.remaining.delta, Rounding::Down)) } }
                    }
                    p {
                        @match &balance.task_bound {
                            None => "No declared pair: every task is charged its own (ε, δ) by basic composition.",
                            Some(bound) => {
                                "Declared pair p_s ≤ " (number(bound.bound.sampling_rate, Rounding::Nearest)) ", τ ≥ " (bound.bound.threshold)
                                ": its share (ε = " (epsilon(bound.bound.share.epsilon)) ", δ = " (delta(bound.bound.share.delta))
                                ") covers " (bound.bound.rounds) " rounds, " (bound.rounds_used) " taken; other tasks share the rest of the budget."
                            }
                        }
                    }
                    @if balance.entries.is_empty() { p.note { "Nothing debited yet." } }
                    @else {
                        table {
                            tr { th { "Task" } th { "ε" } th { "δ" } th { "Debited" } }
                            @for entry in &balance.entries {
                                tr {
                                    td { a href=(format!("/console/tasks/{}", entry.task_id)) { (entry.task_id) } }
                                    td.n { (epsilon(entry.amount.epsilon)) }
                                    td.n { (delta(entry.amount.delta)) }
                                    td { (date(entry.at)) }
                                }
                            }
                        }
                    }
                }
            }
        },
    )
}

/// The guarantee's rows.
fn guarantee_table(guarantee: &GuaranteeBody) -> Markup {
    html! {
        table {
            tr { th { "ε" } td.n { (epsilon(guarantee.epsilon)) } }
            tr { th { "δ" } td.n { (delta(guarantee.delta)) } }
            tr { th { "Neighbours" } td { (guarantee.neighbours) } }
            tr { th { "Trust model" } td { (guarantee.model) } }
            tr { th { "Analysis" } td { (guarantee.method) } }
            @if let Some(collusion) = &guarantee.collusion {
                tr { th { "Colluding devices" } td { (collusion_text(collusion)) } }
            }
        }
    }
}

/// A spec as the server reads it (defaults filled in), as JSON: what the plan's confirmation
/// sends back.
fn spec_text(spec: &TaskSpec) -> String {
    // Unwrap safety: a spec serializes.
    serde_json::to_string_pretty(spec).expect("specs serialize")
}

/// A spec as the server reads it (defaults filled in), as a table for people.
fn spec_table(spec: &TaskSpec) -> Markup {
    match serde_json::to_value(spec) {
        Ok(Value::Object(fields)) => fields_table(&fields),
        // Unwrap safety: a spec serializes to an object.
        _ => unreachable!("a spec is a JSON object"),
    }
}

/// An object's fields as a table for people: names in words, numbers rounded
/// ([`field_text`]), a nested object as a nested table, nothing for an absent (`null`) field.
fn fields_table(fields: &serde_json::Map<String, Value>) -> Markup {
    html! {
        table.fields {
            @for (name, value) in fields {
                @match value {
                    Value::Null => {},
                    Value::Object(nested) => tr { th { (name.replace('_', " ")) } td { (fields_table(nested)) } },
                    _ => tr { th { (name.replace('_', " ")) } td { (cell(name, value)) } },
                }
            }
        }
    }
}

/// The rows of a released list shown on one page of a task.
pub(super) const RELEASE_PAGE_ROWS: usize = 50;

/// One task: its guarantee, its round, its release (if the session may read it), the release's
/// lists at `page` (from 1, [`RELEASE_PAGE_ROWS`] rows each).
pub(super) fn task(
    session: &Session,
    info: &TaskInfo,
    round: Option<&(RoundQuery, (u64, u64))>,
    release: Option<&str>,
    page: usize,
) -> Markup {
    layout(
        Some(session),
        &format!("Task {}", info.id),
        html! {
            section {
                p {
                    "Population " strong { (info.spec.population) } ", " (kind_name(&info.spec)) ", "
                    strong { (info.state.name()) } "; " (info.rounds_released) " rounds released; created " (date(info.created_at))
                }
                @if let Some(error) = &info.error { p.error { (error) } }
                (guarantee_table(&info.guarantee))
                @if info.state == tally_messages::TaskState::Running {
                    form method="post" action=(format!("/console/tasks/{}/cancel", info.id)) {
                        (form_token(session))
                        button type="submit" { "Cancel the task" }
                    }
                }
            }
            @if let Some(round) = round {
                section { h2 { "Open round" } (round_table(std::slice::from_ref(round))) }
            } @else if let Some(round) = &info.open_round {
                section { h2 { "Open round" } p { code { (round) } } }
            }
            section {
                h2 { "Release" }
                @match (session.who.role, release) {
                    (Role::Operator, _) => p.note { "An operator reads no release: only the analyst who created the task does." },
                    (_, None) => p.note { "Not released yet." },
                    (_, Some(document)) => {
                        p.note {
                            "Numbers rounded for reading (ε and δ up). The whole release at full precision is its JSON: "
                            code { "GET /v1/tasks/" (info.id) "/result" } " with the analyst's token, or "
                            code { "tally task result " (info.id) " --json" } "."
                        }
                        (release_view(document, &info.guarantee, &format!("/console/tasks/{}", info.id), page))
                    }
                }
            }
            details { summary { "Spec" } (spec_table(&info.spec)) }
        },
    )
}

/// A release document for people: its single fields as a table (each guarantee but the task's
/// `shown` one above it as its own table, the diagnosis as sentences), then each released list
/// a page at a time, `page` of them (from 1) with links to the pages beside it at
/// `path?page=`, with a bar chart of that page's rows.
fn release_view(document: &str, shown: &GuaranteeBody, path: &str, page: usize) -> Markup {
    let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(document) else {
        return html! { pre { (document) } };
    };
    let mut single = serde_json::Map::new();
    let mut guarantees = Vec::new();
    let mut sentences: Vec<(&str, &Vec<Value>)> = Vec::new();
    let mut lists: Vec<(&str, &Vec<Value>)> = Vec::new();
    for (name, value) in &fields {
        match value {
            Value::Object(_) if name.ends_with("guarantee") => {
                if let Ok(guarantee) = serde_json::from_value::<GuaranteeBody>(value.clone())
                    && guarantee != *shown
                {
                    guarantees.push((heading(name), guarantee));
                }
            }
            Value::Object(diagnosis) if name == "diagnosis" => {
                for part in ["explanation", "warnings"] {
                    if let Some(Value::Array(lines)) = diagnosis.get(part) {
                        sentences.push((part, lines));
                    }
                }
            }
            Value::Array(rows) if rows.iter().all(Value::is_string) => {
                sentences.push((name, rows));
            }
            Value::Array(rows) => lists.push((name, rows)),
            _ => {
                single.insert(name.clone(), value.clone());
            }
        }
    }
    html! {
        (fields_table(&single))
        @for (name, guarantee) in &guarantees {
            h3 { (name) }
            (guarantee_table(guarantee))
        }
        @for (part, lines) in &sentences {
            @if !lines.is_empty() {
                div.sentences data-part=(part) {
                    @for line in lines.iter() { p { (line.as_str().unwrap_or_default()) } }
                }
            }
        }
        @for (name, rows) in &lists {
            @let pages = rows.len().div_ceil(RELEASE_PAGE_ROWS).max(1);
            @let page = page.clamp(1, pages);
            @let shown = &rows[(page - 1) * RELEASE_PAGE_ROWS..(page * RELEASE_PAGE_ROWS).min(rows.len())];
            h2 { (name.replace('_', " ")) " (" (rows.len()) ")" }
            @if pages > 1 {
                (page_links(path, page, pages, rows.len()))
            }
            (charts::bars(shown))
            (rows_table(shown))
            @if pages > 1 {
                (page_links(path, page, pages, rows.len()))
            }
        }
    }
}

/// The links to the pages before and after `page` of `pages`, and which rows of `rows` it
/// shows.
fn page_links(path: &str, page: usize, pages: usize, rows: usize) -> Markup {
    let first = (page - 1) * RELEASE_PAGE_ROWS + 1;
    let last = (page * RELEASE_PAGE_ROWS).min(rows);
    html! {
        p.pages {
            @if page > 1 { a rel="prev" href=(format!("{path}?page={}", page - 1)) { "← previous" } " " }
            "rows " (first) "–" (last) " of " (rows) " (page " (page) " of " (pages) ")"
            @if page < pages { " " a rel="next" href=(format!("{path}?page={}", page + 1)) { "next →" } }
        }
    }
}

/// A list of rows as a table, its columns those of its objects in order of appearance.
fn rows_table(rows: &[Value]) -> Markup {
    let mut columns: Vec<&str> = Vec::new();
    for row in rows {
        if let Value::Object(fields) = row {
            for key in fields.keys() {
                if !columns.contains(&key.as_str()) {
                    columns.push(key);
                }
            }
        }
    }
    html! {
        table.release {
            @if columns.is_empty() {
                @for row in rows { tr { td { (cell("", row)) } } }
            } @else {
                tr { @for column in &columns { th { (column.replace('_', " ")) } } }
                @for row in rows {
                    tr {
                        @for column in &columns {
                            @let value = row.get(column).unwrap_or(&Value::Null);
                            @if value.is_number() { td.n { (cell(column, value)) } } @else { td { (cell(column, value)) } }
                        }
                    }
                }
            }
        }
    }
}

/// The field `name` of a release as text for people: a string as itself, an estimate to the
/// nearest whole number from 1,000 on, any other number rounded ([`field_text`]), nothing for
/// `null`.
fn cell(name: &str, value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::Number(_) if name.starts_with("estimate") => value
            .as_f64()
            .map_or_else(|| value.to_string(), estimate_number),
        other => field_text(name, other),
    }
}

/// The credentials, the form to make one, and the token just made (shown this once).
pub(super) fn credentials(
    session: &Session,
    list: &[CredentialInfo],
    issued: Option<&IssuedCredential>,
) -> Markup {
    layout(
        Some(session),
        "Credentials",
        html! {
            @if let Some(issued) = issued {
                section {
                    h2 { "New " (issued.credential.role.name()) " credential " code { (issued.credential.id) } }
                    p { "Its token, shown this once:" }
                    pre #issued-token { (issued.token) }
                }
            }
            section {
                h2 { "New credential" }
                form method="post" action="/console/credentials" {
                    (form_token(session))
                    label { "Name " input name="name" required; } " "
                    label { "Role "
                        select name="role" {
                            option value="analyst" { "analyst" }
                            option value="operator" { "operator" }
                            option value="device" { "device" }
                            option value="relay" { "relay" }
                        }
                    } " "
                    label { "Populations " input name="populations" placeholder="a, b"; } " "
                    button type="submit" { "Create credential" }
                }
            }
            section {
                table {
                    tr { th { "Id" } th { "Name" } th { "Role" } th { "Populations" } th { "Created" } th { "State" } }
                    @for credential in list {
                        tr {
                            td { code { (credential.id) } }
                            td { (credential.name) }
                            td { (credential.role.name()) }
                            td { (credential.populations.join(", ")) }
                            td { (date(credential.created_at)) }
                            td { @if credential.revoked { "revoked" } @else { "live" } }
                        }
                    }
                }
            }
        },
    )
}

/// What the task form shows: the kind and population chosen, the fields' values, and why the
/// last plan was refused.
pub(super) struct TaskFormPage<'a> {
    /// The kind whose fields the form has.
    pub(super) kind: &'static FormKind,
    /// The analyst's populations.
    pub(super) populations: &'a [PopulationInfo],
    /// The population the task runs over.
    pub(super) population: &'a str,
    /// The population's size when the server knows it, and how it knows.
    pub(super) size: Option<(u64, String)>,
    /// The values sent, when the form comes back refused; the defaults otherwise.
    pub(super) values: Option<&'a HashMap<String, String>>,
    /// The spec sent as JSON, when that came back refused.
    pub(super) spec: Option<&'a str>,
    /// Why the last plan was refused.
    pub(super) refusal: Option<&'a str>,
}

/// The task form: the kind and population first, then the kind's fields grouped as `tally task
/// create`'s help groups them, and the task as JSON for those who prefer it.
pub(super) fn new_task(session: &Session, page: &TaskFormPage<'_>) -> Markup {
    let kind = page.kind;
    let value = |field: &Field| -> String {
        match (page.values, field.name) {
            (Some(values), name) => values.get(name).cloned().unwrap_or_default(),
            (None, "expected_population") => page
                .size
                .as_ref()
                .map_or_else(String::new, |(size, _)| size.to_string()),
            (None, _) => field.default.to_owned(),
        }
    };
    layout(
        Some(session),
        "New task",
        html! {
            section {
                @if let Some(refusal) = page.refusal { p.error #refusal { (refusal) } }
                p.note { "The next page shows the guarantee the server fixes for the task and what it releases; nothing is created before you confirm." }
                form #choose-kind method="get" action="/console/tasks/new" {
                    label.field { "Kind " select name="kind" {
                        @for option in &task_form::KINDS {
                            option value=(option.name) selected[option.name == kind.name] { (option.title) }
                        }
                    } }
                    label.field { "Population " select name="population" {
                        @for population in page.populations {
                            option value=(population.name) selected[population.name == page.population] {
                                (population.name) " (" (population.neighbours.name()) " budget)"
                            }
                        }
                    } }
                    button type="submit" { "Show its fields" }
                }
            }
            section {
                h2 { (kind.title) }
                p.note {
                    "The fields of " code { "tally task create " (kind.command) } ", with its defaults. "
                    "Its guarantee is for " (kind.neighbours.name()) " neighbours"
                    @if kind.neighbours == tally_accounting::Neighbours::ReplaceOne {
                        ": it runs on a population whose budget is kept under replace-one neighbours"
                    }
                    "."
                }
                form #task-form method="post" action="/console/tasks/plan" {
                    (form_token(session))
                    input type="hidden" name="form_kind" value=(kind.name);
                    input type="hidden" name="population" value=(page.population);
                    @for (group, legend) in task_form::GROUPS {
                        fieldset {
                            legend { (legend) }
                            @if group == task_form::Group::Task {
                                p { "Population " strong { (page.population) } }
                            }
                            @for field in kind.all_fields().filter(|f| f.group == group) {
                                (form_field(&field, &value(&field), page.size.as_ref()))
                            }
                        }
                    }
                    button type="submit" { "Show the plan" }
                }
            }
            details open[page.spec.is_some()] {
                summary { "Advanced: the task as JSON" }
                p.note { "The task as the API takes it (POST /v1/tasks, as in docs/federated/protocol.md)." }
                form method="post" action="/console/tasks/plan" {
                    (form_token(session))
                    textarea name="spec" rows="16" { (page.spec.unwrap_or_default()) }
                    button type="submit" { "Show the plan" }
                }
            }
        },
    )
}

/// One field of the task form: its label, its input, its option of the command line and what
/// leaving it empty means.
fn form_field(field: &Field, value: &str, size: Option<&(u64, String)>) -> Markup {
    let hint = match (field.name, size) {
        ("expected_population", Some((_, known))) => known.clone(),
        ("expected_population", None) => {
            "not known to the server: the number of devices in the population".to_owned()
        }
        _ => field.hint.to_owned(),
    };
    html! {
        label.field {
            (field.label) " "
            @match field.input {
                Input::Flag => input type="checkbox" name=(field.name) value="on" checked[!value.is_empty()];,
                Input::Choice(names) => select name=(field.name) {
                    @for name in names {
                        option value=(name) selected[*name == value] { (name) }
                    }
                },
                Input::Composition => select name=(field.name) {
                    option value="" selected[value.is_empty()] { "default" }
                    @for composition in tally_accounting::composition::Composition::ALL {
                        option value=(composition.name()) selected[composition.name() == value] { (composition.name()) }
                    }
                },
                _ => input name=(field.name) value=(value) size="10" required[field.required];,
            }
            small { code { (field.flag) } @if !hint.is_empty() { " · " (hint) } }
        }
    }
}

/// What a task's rounds release: their release curves beside the noise-based selections, and
/// the counts each releases half the time and 95% of the time; or, for a task without
/// sample-and-threshold rounds, why no curve is drawn.
fn release_prediction(spec: &TaskSpec, curves: Option<&ReleaseCurves>) -> Markup {
    let Some(curves) = curves else {
        return html! { p.note #no-curve { (definition(&spec.kind).no_curve_reason()) } };
    };
    html! {
        @if curves.rounds > 1 {
            p {
                "Each of the task's " (curves.rounds) " levels is a sample-and-threshold round with the same parameters: "
                "the curve is one level's."
            }
        }
        @match curves.compared_at {
            Some((epsilon, delta)) if curves.rounds > 1 => p {
                "Laplace and Gaussian thresholding are calibrated for the level's share of the task's "
                "guarantee by basic composition, ε = " (self::epsilon(epsilon)) " and δ = " (self::delta(delta)) "."
            },
            Some((epsilon, delta)) => p {
                "Laplace and Gaussian thresholding are calibrated for the same ε = " (self::epsilon(epsilon)) " and δ = " (self::delta(delta)) "."
            },
            None => p #not-compared {
                "The task's guarantee is for replace-one neighbours; Laplace and Gaussian thresholding as calibrated here "
                "(one item per client, add/remove neighbours) would not be the same guarantee, so they are not drawn beside it."
            },
        }
        (charts::release_curves(curves))
        table #release-points {
            tr { th { "Key selection" } th { "Parameters" } th { "Released half the time at c =" } th { "95% of the time at c =" } }
            @for curve in &curves.curves {
                tr data-key=(curve.key) {
                    td { (curve.name()) }
                    td { (curve.parameters()) }
                    @for count in curve.marked {
                        td.n { @if let Some(count) = count { (count) } @else { "beyond 2^40" } }
                    }
                }
            }
        }
    }
}

/// The plan of a task and the form that confirms it.
pub(super) fn plan(
    session: &Session,
    spec: &TaskSpec,
    guarantee: &GuaranteeBody,
    curves: Option<&ReleaseCurves>,
    balance: Option<&LedgerBalance>,
    charge: (f64, f64),
) -> Markup {
    let text = spec_text(spec);
    layout(
        Some(session),
        "Plan",
        html! {
            section {
                h2 { "The guarantee the server fixes for this task" }
                (guarantee_table(guarantee))
                @if let Some(balance) = balance {
                    p {
                        "Population " strong { (balance.population) } " has ε = " (number(balance.remaining.epsilon, Rounding::Down))
                        " and δ = " (delta_number(balance.remaining.delta, Rounding::Down)) " left for tasks charged their own guarantee (basic composition)"
                        @if let Some(bound) = &balance.task_bound {
                            ", and " (bound.bound.rounds.saturating_sub(bound.rounds_used)) " of " (bound.bound.rounds)
                            " rounds within its declared pair (p_s ≤ " (number(bound.bound.sampling_rate, Rounding::Nearest)) ", τ ≥ " (bound.bound.threshold) ")"
                        }
                        "; the server admits the task if it fits what its kind draws on."
                    }
                    p {
                        "The task charges ε = " (epsilon(charge.0)) ", δ = " (delta(charge.1)) ": its guarantee under "
                        (balance.neighbours.name()) " neighbours, the relation the population's budget is kept under."
                    }
                }
                h2 { "What it releases: P[released | c] for an item held by c devices" }
                (release_prediction(spec, curves))
                h2 { "Parameters" }
                (spec_table(spec))
                form method="post" action="/console/tasks" {
                    (form_token(session))
                    input type="hidden" name="spec" value=(text);
                    button type="submit" #confirm { "Create the task" }
                }
                p { a href="/console/tasks/new" { "Back to the form" } }
            }
        },
    )
}

/// A document's field name as a heading: `per_round_guarantee` as "Per round guarantee".
fn heading(name: &str) -> String {
    let words = name.replace('_', " ");
    let mut chars = words.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guarantee(epsilon: f64) -> GuaranteeBody {
        serde_json::from_value(serde_json::json!({
            "epsilon": epsilon, "delta": 1e-8, "neighbours": "add-remove", "model": "central",
            "method": "tight", "trust_model": "single-party"
        }))
        .expect("a guarantee")
    }

    #[test]
    fn the_task_s_guarantee_is_shown_once() {
        let task = guarantee(1.0);
        let document = serde_json::json!({
            "mechanism": "triehh++",
            "guarantee": task,
            "per_round_guarantee": guarantee(0.5),
            "items": []
        })
        .to_string();
        let html = release_view(&document, &task, "/console/tasks/t", 1).into_string();
        // The task's guarantee is the page's table above the release; another one is shown.
        assert!(!html.contains("<h3>guarantee</h3>"), "{html}");
        assert!(!html.contains("<h3>Guarantee</h3>"), "{html}");
        assert!(html.contains("<h3>Per round guarantee</h3>"), "{html}");
        assert_eq!(html.matches("<th>Trust model</th>").count(), 1, "{html}");
    }

    #[test]
    fn released_items_are_text_in_the_table_and_the_chart() {
        let document = r#"{"mechanism":"sample-threshold","released_items":2,
            "items":[{"item":"<script>alert(1)</script>","count":30,"estimate":300.0},
                     {"item":"a&b\"c","count":10,"estimate":100.0}]}"#;
        let html = release_view(document, &guarantee(1.0), "/console/tasks/t", 1).into_string();
        assert!(!html.contains("<script"), "{html}");
        // Once in the table, once as the bar's label.
        assert_eq!(
            html.matches("&lt;script&gt;alert(1)&lt;/script&gt;")
                .count(),
            2,
            "{html}"
        );
        assert!(html.contains("a&amp;b&quot;c"), "{html}");
    }
}
