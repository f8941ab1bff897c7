//! The operator's console at `/console`: it refuses whom the API refuses, shows each role
//! what the API shows it, escapes what users send, and guards its forms and pages.

mod common;

use axum::Router;
use axum::body::Body;
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, COOKIE, HOST, LOCATION, ORIGIN,
    SET_COOKIE, X_FRAME_OPTIONS,
};
use axum::http::{HeaderMap, Method, Request, StatusCode};
use tally_messages::Role;
use tally_protocol::shown::Rounding;
use tower::ServiceExt;

use common::{Credentials, POPULATION, credential, population, swapped};

common::postgres_half!();

const HOST_NAME: &str = "console.test:8080";
const OWN_ORIGIN: &str = "http://console.test:8080";

/// A browser's request: with the session cookie `session`, an `Origin`, and a form body.
async fn send(
    router: &Router,
    method: Method,
    path: &str,
    session: Option<&str>,
    origin: Option<&str>,
    form: Option<String>,
) -> (StatusCode, HeaderMap, String) {
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header(HOST, HOST_NAME);
    if let Some(session) = session {
        request = request.header(COOKIE, format!("other=1; tally_console={session}"));
    }
    if let Some(origin) = origin {
        request = request.header(ORIGIN, origin);
    }
    if form.is_some() {
        request = request.header(CONTENT_TYPE, "application/x-www-form-urlencoded");
    }
    let request = request
        .body(form.map_or_else(Body::empty, Body::from))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, headers, String::from_utf8(bytes.to_vec()).unwrap())
}

/// A form sent from the console's own origin.
async fn post(
    router: &Router,
    path: &str,
    session: Option<&str>,
    form: String,
) -> (StatusCode, HeaderMap, String) {
    send(
        router,
        Method::POST,
        path,
        session,
        Some(OWN_ORIGIN),
        Some(form),
    )
    .await
}

async fn page(router: &Router, path: &str, session: &str) -> String {
    let (status, _, body) = send(router, Method::GET, path, Some(session), None, None).await;
    assert_eq!(status, StatusCode::OK, "{path}: {body}");
    body
}

/// The session cookie an answer sets, if any.
fn session_cookie(headers: &HeaderMap) -> Option<String> {
    let cookie = headers.get(SET_COOKIE)?.to_str().unwrap();
    let (value, _) = cookie.strip_prefix("tally_console=")?.split_once(';')?;
    Some(value.to_owned())
}

/// Signs in with the credential `token`; returns the session id its cookie holds.
async fn sign_in(router: &Router, token: &str) -> String {
    let form = encode(&[("token", token)]);
    let (status, headers, body) = post(router, "/console/login", None, form).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    session_cookie(&headers).expect("a session cookie")
}

/// The anti-forgery token of the forms on a page.
fn form_token(html: &str) -> String {
    let (_, rest) = html
        .split_once(r#"name="form_token" value=""#)
        .expect("a form");
    rest.split('"').next().unwrap().to_owned()
}

fn encode(fields: &[(&str, &str)]) -> String {
    fields
        .iter()
        .map(|(k, v)| {
            let v: String = v
                .bytes()
                .map(|b| match b {
                    b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' => {
                        (b as char).to_string()
                    }
                    _ => format!("%{b:02X}"),
                })
                .collect();
            format!("{k}={v}")
        })
        .collect::<Vec<_>>()
        .join("&")
}

async fn console() -> (
    tally_server::Server,
    Router,
    Credentials,
    String,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("tally.db").display());
    population(&db, POPULATION, (10.0, 1e-5)).await;
    let credentials = common::credentials(&db).await;
    let server = tally_server::Server::start(&db).await.unwrap();
    let router = server.router();
    (server, router, credentials, db, dir)
}

#[tokio::test]
async fn pages_refuse_whom_the_api_refuses() {
    let (server, router, credentials, db, _dir) = console().await;
    let revoked = credential(&db, Role::Operator, "gone", &[]).await;
    let revoked_id = revoked.split('_').nth(1).unwrap().to_owned();
    tally_server::revoke_credential(&db, &revoked_id)
        .await
        .unwrap();
    // Past the credentials' staleness bound, the running server has seen the revocation.
    tokio::time::sleep(std::time::Duration::from_millis(1300)).await;
    let unknown = format!("tally_{}_{}", "0".repeat(16), "0".repeat(64));
    let pages = [
        "/console",
        "/console/ledger",
        "/console/tasks/new",
        "/console/tasks/new?kind=heavy-hitters",
        "/console/credentials",
    ];
    // No cookie, or one that is not a session's id (a credential's token among them), is
    // refused as no credential is.
    let unknown_session = "0".repeat(64);
    for path in pages {
        for cookie in [
            None,
            Some("garbage"),
            Some(unknown_session.as_str()),
            Some(unknown.as_str()),
            Some(revoked.as_str()),
            Some(credentials.device.as_str()),
            Some(credentials.operator.as_str()),
            Some(credentials.analyst.as_str()),
        ] {
            let (got, _, body) = send(&router, Method::GET, path, cookie, None, None).await;
            assert_eq!(
                got,
                StatusCode::UNAUTHORIZED,
                "{path} with {cookie:?}: {body}"
            );
            assert!(!body.contains(POPULATION), "{path} with {cookie:?}: {body}");
        }
    }
    // Each role's pages are those its API calls admit.
    let analyst = sign_in(&router, &credentials.analyst).await;
    let (status, _, _) = send(
        &router,
        Method::GET,
        "/console/credentials",
        Some(&analyst),
        None,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let operator = sign_in(&router, &credentials.operator).await;
    let (status, _, _) = send(
        &router,
        Method::GET,
        "/console/tasks/new",
        Some(&operator),
        None,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // A device or unknown token does not sign in; an operator's does, into a strict cookie.
    for (token, status) in [
        (credentials.device.as_str(), StatusCode::FORBIDDEN),
        (unknown.as_str(), StatusCode::UNAUTHORIZED),
        (revoked.as_str(), StatusCode::UNAUTHORIZED),
    ] {
        let form = encode(&[("token", token)]);
        let (got, headers, _) = post(&router, "/console/login", None, form).await;
        assert_eq!(got, status);
        assert!(headers.get(SET_COOKIE).is_none());
    }
    let form = encode(&[("token", &credentials.operator)]);
    let (status, headers, _) = post(&router, "/console/login", None, form).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(headers[LOCATION], "/console");
    // The cookie holds a new session's id: 256 random bits, not the token.
    let session = session_cookie(&headers).unwrap();
    assert_eq!(
        headers[SET_COOKIE].to_str().unwrap(),
        format!("tally_console={session}; Path=/console; HttpOnly; SameSite=Strict")
    );
    assert!(session.len() == 64 && session.bytes().all(|b| b.is_ascii_hexdigit()));
    assert!(!credentials.operator.contains(&session) && session != operator);
    server.shutdown().await;
}

#[tokio::test]
async fn forms_need_the_sessions_token_and_the_consoles_origin() {
    let (server, router, credentials, _db, _dir) = console().await;
    let operator = &sign_in(&router, &credentials.operator).await;
    let analyst = &sign_in(&router, &credentials.analyst).await;
    let token = form_token(&page(&router, "/console", operator).await);
    let fields = |name: &'static str, form_token: String| {
        move || {
            encode(&[
                ("form_token", &form_token),
                ("name", name),
                ("epsilon", "2"),
                ("delta", "1e-6"),
                ("min_cohort", "10"),
                ("max_task_epsilon", ""),
            ])
        }
    };
    let forged = fields("forged", "0".repeat(64));
    let genuine = fields("genuine", token.clone());
    let refusals = [
        (Some(OWN_ORIGIN), forged()),
        (None, genuine()),
        (Some("http://elsewhere.test"), genuine()),
        (Some("https://console.test:8080"), genuine()),
    ];
    for (origin, form) in refusals {
        let (status, _, body) = send(
            &router,
            Method::POST,
            "/console/populations",
            Some(operator),
            origin,
            Some(form),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{origin:?}: {body}");
    }
    // The analyst's own form token does not make it an operator.
    let analyst_token = form_token(&page(&router, "/console", analyst).await);
    let analysts = fields("analysts", analyst_token)();
    let (status, _, _) = post(&router, "/console/populations", Some(analyst), analysts).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let overview = page(&router, "/console", operator).await;
    for refused in ["forged", "analysts", "genuine"] {
        assert!(
            !overview.contains(&format!("<h2>{refused}</h2>")),
            "{refused}"
        );
    }
    let (status, _, body) = post(&router, "/console/populations", Some(operator), genuine()).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    assert!(
        page(&router, "/console", operator)
            .await
            .contains("<h2>genuine</h2>")
    );
    // The analyst sees its own population only, as in the API.
    let analysts_view = page(&router, "/console", analyst).await;
    assert!(analysts_view.contains("<h2>test</h2>"));
    assert!(!analysts_view.contains("genuine"));
    server.shutdown().await;
}

#[tokio::test]
async fn every_answer_forbids_outside_loads_scripts_frames_and_caching() {
    let (server, router, credentials, _db, _dir) = console().await;
    let operator = sign_in(&router, &credentials.operator).await;
    let requests = [
        ("/console", Some(operator.as_str())),
        ("/console/login", None),
        ("/console", None),
        ("/console/ledger", Some(credentials.device.as_str())),
    ];
    for (path, token) in requests {
        let (_, headers, body) = send(&router, Method::GET, path, token, None, None).await;
        let policy = headers[CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(policy.starts_with("default-src 'none';"), "{policy}");
        assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
        assert!(
            !policy.contains("unsafe-inline") && !policy.contains("script-src"),
            "{policy}"
        );
        assert_eq!(headers[X_FRAME_OPTIONS], "DENY");
        assert_eq!(headers[CACHE_CONTROL], "no-store");
        // Nothing on the page loads from elsewhere, and it runs no script.
        for outside in ["http://", "https://", "<script", " src="] {
            assert!(!body.contains(outside), "{path}: {outside}");
        }
    }
    server.shutdown().await;
}

#[tokio::test]
async fn names_from_users_are_text() {
    let (server, router, credentials, db, _dir) = console().await;
    credential(
        &db,
        Role::Analyst,
        "<script>alert(1)</script>",
        &[POPULATION],
    )
    .await;
    // The credentials in memory take it in within a poll.
    tokio::time::sleep(std::time::Duration::from_millis(1300)).await;
    let operator = sign_in(&router, &credentials.operator).await;
    let html = page(&router, "/console/credentials", &operator).await;
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{html}"
    );
    assert!(!html.contains("<script>"));
    server.shutdown().await;
}

#[tokio::test]
async fn a_task_is_planned_then_created_only_when_confirmed() {
    let (server, router, credentials, _db, _dir) = console().await;
    let analyst = &sign_in(&router, &credentials.analyst).await;
    let new = page(&router, "/console/tasks/new", analyst).await;
    let token = form_token(&new);
    let spec = r#"{"version":1,"population":"test","expected_population":1000,
        "privacy":{"epsilon":1.0,"delta":1e-6},
        "kind":{"type":"histogram","mechanism":"sample-threshold"},
        "rounds":{"min_cohort":10,"deadline_secs":600,"max_attempts":3,"max_report_bytes":256}}"#;
    let form = encode(&[("form_token", &token), ("spec", spec)]);
    let (status, _, plan) = post(&router, "/console/tasks/plan", Some(analyst), form).await;
    assert_eq!(status, StatusCode::OK, "{plan}");
    assert!(
        plan.contains("add-remove") && plan.contains("Create the task"),
        "{plan}"
    );
    // Planning created nothing.
    assert!(
        page(&router, "/console", analyst)
            .await
            .contains("No task yet.")
    );
    let form = encode(&[("form_token", &token), ("spec", spec)]);
    let (status, headers, body) = post(&router, "/console/tasks", Some(analyst), form).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    let task_page = headers[LOCATION].to_str().unwrap().to_owned();
    assert!(
        page(&router, &task_page, analyst)
            .await
            .contains("Not released yet.")
    );
    // An operator reads the task and its round, never a release.
    let operator = sign_in(&router, &credentials.operator).await;
    let operators = page(&router, &task_page, &operator).await;
    assert!(operators.contains("0 of 1000"), "{operators}");
    assert!(operators.contains("An operator reads no release"));
    server.shutdown().await;
}

/// A task over the test population at `(epsilon, 1e-6)` of the kind `kind` (a JSON object).
fn task_spec(epsilon: f64, kind: &str) -> String {
    format!(
        r#"{{"version":1,"population":"test","expected_population":1000,
        "privacy":{{"epsilon":{epsilon},"delta":1e-6}},"kind":{kind},
        "rounds":{{"min_cohort":10,"deadline_secs":600,"max_attempts":3,"max_report_bytes":256}}}}"#
    )
}

/// The plan page of `spec`, planned by the analyst's session.
async fn plan_page(router: &Router, analyst: &str, spec: &str) -> String {
    let token = form_token(&page(router, "/console/tasks/new", analyst).await);
    let form = encode(&[("form_token", &token), ("spec", spec)]);
    let (status, _, plan) = post(router, "/console/tasks/plan", Some(analyst), form).await;
    assert_eq!(status, StatusCode::OK, "{plan}");
    plan
}

/// The text after `marker` on `html`, up to the next `end`.
fn after<'a>(html: &'a str, marker: &str, end: char) -> &'a str {
    let (_, rest) = html
        .split_once(marker)
        .unwrap_or_else(|| panic!("no {marker} in {html}"));
    rest.split(end).next().unwrap()
}

/// The points `(c, 1 − P)` of the curve of the selection `key` on a plan page.
fn curve_points(html: &str, key: &str) -> Vec<(u64, f64)> {
    let marker = format!(r#"<polyline data-key="{key}" points=""#);
    after(html, &marker, '"')
        .split(' ')
        .map(|point| {
            let (count, complement) = point.split_once(',').unwrap();
            (count.parse().unwrap(), complement.parse().unwrap())
        })
        .collect()
}

/// The counts a plan page says the selection `key` releases half and 95% of the time.
fn marked_counts(html: &str, key: &str) -> Vec<u64> {
    let row = after(html, &format!(r#"<tr data-key="{key}">"#), '\n');
    let row = row.split("</tr>").next().unwrap();
    row.split(r#"<td class="n">"#)
        .skip(1)
        .map(|cell| cell.split('<').next().unwrap().parse().unwrap())
        .collect()
}

#[tokio::test]
async fn the_plan_shows_the_release_curve_of_the_calibrated_round() {
    use tally_accounting::Neighbours;
    use tally_accounting::key_selection::{KeySelection, gaussian_threshold, laplace_threshold};
    use tally_accounting::sample_threshold::{Analysis, PlanTarget, plan};

    let (server, router, credentials, _db, _dir) = console().await;
    let analyst = &sign_in(&router, &credentials.analyst).await;
    let spec = task_spec(
        1.0,
        r#"{"type":"histogram","mechanism":"sample-threshold"}"#,
    );
    let html = plan_page(&router, analyst, &spec).await;
    // The round the server calibrates, planned here by the accountant itself.
    let params = plan(
        1.0,
        1e-6,
        PlanTarget::MinReleasedCount,
        Analysis::Tight,
        Neighbours::AddRemove,
    )
    .unwrap()
    .params;
    let expected = [
        ("sample-threshold", KeySelection::SampleThreshold(params)),
        (
            "laplace",
            KeySelection::Laplace(laplace_threshold(1.0, 1e-6).unwrap()),
        ),
        (
            "gaussian",
            KeySelection::Gaussian(gaussian_threshold(1.0, 1e-6).unwrap()),
        ),
    ];
    for (key, selection) in expected {
        let marks: Vec<u64> = [0.5, 0.95]
            .map(|p| selection.release_point(p).unwrap())
            .to_vec();
        assert_eq!(marked_counts(&html, key), marks, "{key}");
        let points = curve_points(&html, key);
        assert!(points.len() > 100, "{key}: {points:?}");
        for (count, complement) in points {
            let probability = selection.release_probability(count);
            assert!(
                (1.0 - complement - probability).abs() <= 5e-5,
                "{key} at c = {count}: drawn {}, computed {probability}",
                1.0 - complement
            );
        }
    }
    // The marks on the chart are sample-and-threshold's.
    let st50 = expected[0].1.release_point(0.5).unwrap();
    assert!(html.contains(&format!("50%: c = {st50}")), "{html}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_multi_round_plan_shows_one_levels_curve_and_a_domain_plan_its_guarantee() {
    let (server, router, credentials, db, _dir) = console().await;
    let analyst = &sign_in(&router, &credentials.analyst).await;
    let spec = task_spec(
        2.0,
        r#"{"type":"heavy-hitters","algorithm":"triehh++","levels":4,"segment":1,"restricted":true}"#,
    );
    let html = plan_page(&router, analyst, &spec).await;
    assert!(html.contains("Each of the task's 4 levels"), "{html}");
    assert!(html.contains("ε = 0.5 and δ = 2.500e-7"), "{html}");
    assert!(!curve_points(&html, "sample-threshold").is_empty());
    assert!(!html.contains("no-curve"));
    // OUE's guarantee is under replace-one neighbours: it runs on a replace-one population.
    let swapped_analyst = sign_in(&router, &swapped(&db, (10.0, 1e-5)).await).await;
    let spec = task_spec(
        1.0,
        r#"{"type":"domain-histogram","mechanism":"oue","domain":{"integers":16}}"#,
    )
    .replace(r#""population":"test""#, r#""population":"swapped""#);
    let html = plan_page(&router, &swapped_analyst, &spec).await;
    assert!(html.contains(r#"id="no-curve""#), "{html}");
    assert!(!html.contains("<polyline"), "{html}");
    assert!(html.contains("Create the task"), "{html}");
    server.shutdown().await;
}

/// A sample-and-threshold task under replace-one neighbours has its release curve too, at the
/// rate and threshold the server calibrated for it, alone: the noise-based selections drawn
/// beside add/remove tasks are calibrated for add/remove neighbours.
#[tokio::test]
async fn a_replace_one_plan_shows_its_curve_without_the_add_remove_comparisons() {
    use tally_accounting::Neighbours;
    use tally_accounting::key_selection::KeySelection;
    use tally_accounting::sample_threshold::{Analysis, PlanTarget, plan};

    let (server, router, _, db, _dir) = console().await;
    let analyst = sign_in(&router, &swapped(&db, (10.0, 1e-5)).await).await;
    let spec = task_spec(
        1.0,
        r#"{"type":"histogram","mechanism":"sample-threshold"}"#,
    )
    .replace(
        r#""delta":1e-6}"#,
        r#""delta":1e-6,"neighbours":"replace-one"}"#,
    )
    .replace(r#""population":"test""#, r#""population":"swapped""#);
    let html = plan_page(&router, &analyst, &spec).await;
    assert!(html.contains("replace-one"), "{html}");
    assert!(!html.contains("no-curve"), "{html}");
    assert!(html.contains(r#"id="not-compared""#), "{html}");
    let params = plan(
        1.0,
        1e-6,
        PlanTarget::MinReleasedCount,
        Analysis::Tight,
        Neighbours::ReplaceOne,
    )
    .unwrap()
    .params;
    let selection = KeySelection::SampleThreshold(params);
    let marks: Vec<u64> = [0.5, 0.95]
        .map(|p| selection.release_point(p).unwrap())
        .to_vec();
    assert_eq!(marked_counts(&html, "sample-threshold"), marks);
    assert!(!curve_points(&html, "sample-threshold").is_empty());
    for key in ["laplace", "gaussian"] {
        assert!(!html.contains(&format!(r#"data-key="{key}""#)), "{html}");
    }
    server.shutdown().await;
}

/// HTML text unescaped.
fn unescape(text: &str) -> String {
    text.replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// The value of the attribute `name` in the tag `tag` (its text between `<` and `>`).
fn attribute(tag: &str, name: &str) -> Option<String> {
    let marker = format!(r#" {name}=""#);
    let (_, rest) = tag.split_once(&marker)?;
    Some(unescape(rest.split('"').next().unwrap()))
}

/// The fields of the form `#id` on `html` with the values a browser would send: every input
/// but an unchecked box, every select's selected option (its first without one).
fn form_fields(html: &str, id: &str) -> Vec<(String, String)> {
    let form = after(html, &format!(r#"<form id="{id}""#), '\u{0}');
    let form = form.split("</form>").next().unwrap();
    let mut fields = Vec::new();
    for (at, _) in form.match_indices('<') {
        let tag = form[at..].split('>').next().unwrap();
        if tag.starts_with("<input") {
            let Some(name) = attribute(tag, "name") else {
                continue;
            };
            let checkbox = tag.contains(r#"type="checkbox""#);
            if checkbox && !tag.contains(" checked") {
                continue;
            }
            fields.push((name, attribute(tag, "value").unwrap_or_default()));
        } else if tag.starts_with("<select") {
            let name = attribute(tag, "name").unwrap();
            let options = form[at..].split("</select>").next().unwrap();
            let chosen = options
                .split("<option")
                .skip(1)
                .find(|option| option.split('>').next().unwrap().contains(" selected"))
                .or_else(|| options.split("<option").nth(1))
                .unwrap();
            let value = attribute(&format!(" {}", chosen.split('>').next().unwrap()), "value");
            fields.push((name, value.unwrap()));
        }
    }
    fields
}

/// `fields` with `changes` made (a field set to its new value, or added).
fn with(mut fields: Vec<(String, String)>, changes: &[(&str, &str)]) -> Vec<(String, String)> {
    for (name, value) in changes {
        match fields.iter_mut().find(|(n, _)| n == name) {
            Some(field) => field.1 = (*value).to_owned(),
            None => fields.push(((*name).to_owned(), (*value).to_owned())),
        }
    }
    fields
}

/// Sends the task form `fields` to the plan page as the analyst's session.
async fn plan_form(
    router: &Router,
    analyst: &str,
    fields: &[(String, String)],
) -> (StatusCode, String) {
    let pairs: Vec<(&str, &str)> = fields
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let (status, _, html) =
        post(router, "/console/tasks/plan", Some(analyst), encode(&pairs)).await;
    (status, html)
}

/// The spec a plan page confirms, as its hidden field carries it.
fn planned_spec(plan: &str) -> tally_messages::TaskSpec {
    let tag = after(plan, r#"<input type="hidden" name="spec""#, '>');
    serde_json::from_str(&attribute(tag, "value").unwrap()).unwrap()
}

/// The kinds the task form offers, by their names in its address.
fn offered_kinds(html: &str) -> Vec<String> {
    let select = after(html, r#"<select name="kind">"#, '\u{0}');
    let select = select.split("</select>").next().unwrap();
    select
        .split(r#"<option value=""#)
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().to_owned())
        .collect()
}

/// What each kind's form needs beyond its defaults, and the spec the API reads for the same
/// task (the command line's `tally task create` with the same options), where the test
/// compares them.
fn form_case(kind: &str) -> (Vec<(&'static str, &'static str)>, Option<String>) {
    let privacy = [
        ("expected_population", "1000"),
        ("privacy.epsilon", "1"),
        ("privacy.delta", "1e-6"),
    ];
    let rounds = r#""rounds":{"min_cohort":100,"deadline_secs":600,"max_attempts":3,"max_report_bytes":256},"sampling":"aggregator""#;
    let add_remove =
        r#""privacy":{"epsilon":1.0,"delta":1e-6,"neighbours":"add-remove","analysis":"tight"}"#;
    let replace_one =
        r#""privacy":{"epsilon":1.0,"delta":1e-6,"neighbours":"replace-one","analysis":"tight"}"#;
    let spec = |population: &str, privacy: &str, kind: &str, rounds: &str| {
        format!(
            r#"{{"version":1,"population":"{population}","expected_population":1000,{privacy},"kind":{kind},{rounds}}}"#
        )
    };
    let mut fields = privacy.to_vec();
    let expected = match kind {
        "histogram" => Some(spec(
            "test",
            add_remove,
            r#"{"type":"histogram","mechanism":"sample-threshold"}"#,
            rounds,
        )),
        "heavy-hitters" => Some(spec(
            "test",
            add_remove,
            r#"{"type":"heavy-hitters","algorithm":"triehh++","levels":10,"segment":1,"restricted":true,"composition":"tight"}"#,
            rounds,
        )),
        "quantiles" => {
            fields.extend([
                ("kind.range.0", "0"),
                ("kind.range.1", "100"),
                ("kind.levels", "3"),
            ]);
            Some(spec(
                "test",
                add_remove,
                r#"{"type":"quantiles","method":"hierarchical","quantiles":[0.1,0.5,0.9],"levels":3,"consistent":false,"composition":"tight","range":[0,100]}"#,
                rounds,
            ))
        }
        "range" => {
            fields.extend([
                ("kind.lo", "10"),
                ("kind.hi", "50"),
                ("kind.range.0", "0"),
                ("kind.range.1", "100"),
                ("kind.levels", "3"),
            ]);
            Some(spec(
                "test",
                add_remove,
                r#"{"type":"range","lo":10,"hi":50,"levels":3,"consistent":false,"composition":"tight","range":[0,100]}"#,
                rounds,
            ))
        }
        "domain-histogram" => {
            // A shuffle mechanism: its minimum cohort is the expected population.
            fields.extend([
                ("kind.mechanism", "balcer-cheu"),
                ("kind.domain.integers", "16"),
            ]);
            Some(spec(
                "swapped",
                replace_one,
                r#"{"type":"domain-histogram","mechanism":"balcer-cheu","domain":{"integers":16}}"#,
                &rounds.replace(r#""min_cohort":100"#, r#""min_cohort":1000"#),
            ))
        }
        "central-domain-histogram" => {
            fields.push(("kind.domain.integers", "16"));
            None
        }
        "triehh" => {
            fields.push(("kind.levels", "4"));
            None
        }
        "count-min-prefix-tree" => {
            // The weak parameters under which a shuffled tree's reports fit (as the CLI's tests).
            fields.extend([
                ("kind.domain_bits", "2"),
                ("kind.threshold", "160"),
                ("expected_population", "3000"),
                ("privacy.epsilon", "3"),
                ("rounds.max_report_bytes", "32768"),
            ]);
            None
        }
        "opt-prefix-tree" => {
            // A report over the default domain cap does not fit the default report size.
            fields.push(("kind.domain_cap", "512"));
            None
        }
        _ => None,
    };
    (fields, expected)
}

#[tokio::test]
async fn every_kind_the_form_offers_plans_and_creates_the_task_its_json_gives() {
    let (server, router, _, db, _dir) = console().await;
    // One analyst over both populations: each kind's form opens on the population whose budget
    // is kept under the kind's relation.
    swapped(&db, (10.0, 1e-5)).await;
    let analyst = credential(&db, Role::Analyst, "both", &[POPULATION, "swapped"]).await;
    let analyst = sign_in(&router, &analyst).await;
    let form = page(&router, "/console/tasks/new", &analyst).await;
    let kinds = offered_kinds(&form);
    assert_eq!(kinds.len(), 10, "{form}");
    let mut compared = 0;
    for kind in &kinds {
        let html = page(
            &router,
            &format!("/console/tasks/new?kind={kind}"),
            &analyst,
        )
        .await;
        let defaults = form_fields(&html, "task-form");
        let (changes, expected) = form_case(kind);
        let fields = with(defaults, &changes);
        let (status, plan) = plan_form(&router, &analyst, &fields).await;
        assert_eq!(status, StatusCode::OK, "{kind}: {plan}");
        let spec = planned_spec(&plan);
        if let Some(expected) = expected {
            let expected: tally_messages::TaskSpec = serde_json::from_str(&expected).unwrap();
            assert_eq!(spec, expected, "{kind}");
            // The same JSON through the advanced form plans the same task.
            let json = serde_json::to_string(&expected).unwrap();
            let token = form_token(&html);
            let sent = encode(&[("form_token", &token), ("spec", &json)]);
            let (status, _, by_json) =
                post(&router, "/console/tasks/plan", Some(&analyst), sent).await;
            assert_eq!(status, StatusCode::OK, "{kind}: {by_json}");
            assert_eq!(planned_spec(&by_json), spec, "{kind}");
            compared += 1;
        }
        let token = form_token(&plan);
        let sent = encode(&[
            ("form_token", &token),
            ("spec", &serde_json::to_string(&spec).unwrap()),
        ]);
        let (status, headers, body) = post(&router, "/console/tasks", Some(&analyst), sent).await;
        assert_eq!(status, StatusCode::SEE_OTHER, "{kind}: {body}");
        let task = page(&router, headers[LOCATION].to_str().unwrap(), &analyst).await;
        assert!(task.contains("running"), "{kind}: {task}");
    }
    assert_eq!(compared, 5);
    let (status, _, _) = send(
        &router,
        Method::GET,
        "/console/tasks/new?kind=nonsense",
        Some(&analyst),
        None,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    server.shutdown().await;
}

#[tokio::test]
async fn the_form_opens_on_a_population_that_fits_and_names_a_bad_field() {
    let (server, router, credentials, db, _dir) = console().await;
    swapped(&db, (10.0, 1e-5)).await;
    let analyst = credential(&db, Role::Analyst, "both", &[POPULATION, "swapped"]).await;
    let analyst = sign_in(&router, &analyst).await;
    // Seven devices enrolled in the test population besides the tests' own: the operator's
    // to know, never shown to an analyst, whose API calls do not show it.
    let operator = common::signed_in(router.clone(), &credentials);
    common::enroll(&operator, POPULATION, 7).await;
    let population = |html: &str| {
        form_fields(html, "task-form")
            .into_iter()
            .find(|(name, _)| name == "population")
            .unwrap()
            .1
    };
    let histogram = page(&router, "/console/tasks/new?kind=histogram", &analyst).await;
    assert_eq!(population(&histogram), POPULATION);
    let fields = form_fields(&histogram, "task-form");
    assert!(
        !fields.contains(&("expected_population".into(), "8".into())),
        "{fields:?}"
    );
    assert!(!histogram.contains("devices enrolled"), "{histogram}");
    for kind in [
        "triehh",
        "opt-prefix-tree",
        "domain-histogram",
        "count-min-prefix-tree",
    ] {
        let html = page(
            &router,
            &format!("/console/tasks/new?kind={kind}"),
            &analyst,
        )
        .await;
        assert_eq!(population(&html), "swapped", "{kind}");
        let neighbours = form_fields(&html, "task-form")
            .into_iter()
            .find(|(name, _)| name == "privacy.neighbours")
            .unwrap()
            .1;
        assert_eq!(neighbours, "replace-one", "{kind}");
    }
    // Nothing known of the swapped population: the field is empty and required.
    let triehh = page(&router, "/console/tasks/new?kind=triehh", &analyst).await;
    assert!(triehh.contains("not known to the server"), "{triehh}");
    // A bad field comes back with the form, its values kept, and a message naming it.
    let heavy = page(&router, "/console/tasks/new?kind=heavy-hitters", &analyst).await;
    let base = with(
        form_fields(&heavy, "task-form"),
        &[
            ("privacy.epsilon", "1"),
            ("privacy.delta", "1e-6"),
            ("expected_population", "1000"),
        ],
    );
    let cases = [
        (vec![("kind.levels", "ten")], "kind.levels"),
        (vec![("privacy.epsilon", "")], "privacy.epsilon"),
        (vec![("kind.sampling_rate", "2")], "sampling"),
        (vec![("rounds.deadline_secs", "-1")], "rounds.deadline_secs"),
    ];
    for (changes, named) in cases {
        let (status, html) = plan_form(&router, &analyst, &with(base.clone(), &changes)).await;
        assert!(status.is_client_error(), "{changes:?}: {html}");
        let refusal = after(&html, r#"<p class="error" id="refusal">"#, '<');
        assert!(refusal.contains(named), "{changes:?}: {refusal}");
        let kept = form_fields(&html, "task-form");
        for (name, value) in &changes {
            assert!(
                kept.contains(&((*name).into(), (*value).into())),
                "{name}: {kept:?}"
            );
        }
    }
    let quantiles = page(&router, "/console/tasks/new?kind=quantiles", &analyst).await;
    let half_range = with(
        form_fields(&quantiles, "task-form"),
        &[
            ("privacy.epsilon", "1"),
            ("privacy.delta", "1e-6"),
            ("kind.range.0", "0"),
        ],
    );
    let (status, html) = plan_form(&router, &analyst, &half_range).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(html.contains("kind.range.1"), "{html}");
    server.shutdown().await;
}

/// The numbers written with a decimal point on `html` (plain or in scientific notation) that
/// have more than six significant digits: a number for people has at most four (six for a
/// whole estimate).
fn long_numbers(html: &str) -> Vec<String> {
    let bytes = html.as_bytes();
    let mut long = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if !bytes[at].is_ascii_digit() {
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len() && (bytes[at].is_ascii_digit() || bytes[at] == b'.') {
            at += 1;
        }
        let number = &html[start..at];
        let digits = number
            .trim_start_matches(['0', '.'])
            .chars()
            .filter(char::is_ascii_digit)
            .count();
        if number.contains('.') && digits > 6 {
            long.push(number.to_owned());
        }
    }
    long
}

#[test]
fn long_numbers_are_found() {
    let html = "ε = 0.9999502514237878, δ = 9.99999999999998e-9; 1.000e-8, 0.5234, 27763.7";
    assert_eq!(
        long_numbers(html),
        ["0.9999502514237878", "9.99999999999998"]
    );
}

/// Whether `html` holds the text of a JSON object (escaped as the templates escape it).
fn holds_json_object(html: &str) -> bool {
    ["{\"", "{&quot;", "&quot;:", "\":"]
        .iter()
        .any(|marker| html.contains(marker))
}

/// The `ε` of the finished task: 2.001 rounded up to four significant digits, 2 to the nearest.
const TASK_EPSILON: f64 = 2.000_123_4;

/// A finished sample-and-threshold histogram task of the test population: `items` items, each
/// held (and uploaded, the devices sampling) by `holders` devices, at a sampling rate of 0.5.
async fn finished_histogram(router: &Router, credentials: &Credentials, items: usize) -> String {
    use tally_messages::{RoundPolicy, TaskInfo, UploadReceipt};
    let holders = 40;
    let api = common::signed_in(router.clone(), credentials);
    let devices = u32::try_from(items * holders).unwrap();
    let policy = RoundPolicy {
        min_cohort: 1,
        cohort_target: Some(u64::from(devices)),
        ..RoundPolicy::default()
    };
    let mut spec = common::spec(common::histogram(0.5), TASK_EPSILON, policy);
    spec.expected_population = u64::from(devices);
    let task: TaskInfo = common::post(&api, "/v1/tasks", &spec).await;
    let round = common::open_round(&api, &task.id).await;
    let tokens = common::tokens(&api, &round.round_id, devices).await;
    let reports: Vec<String> = (0..items)
        .flat_map(|item| std::iter::repeat_n(format!("item-{item:03}"), holders))
        .collect();
    let uploads = tokens
        .into_iter()
        .zip(&reports)
        .map(|(token, report)| (token, Some(report.as_str())))
        .collect();
    let receipt: UploadReceipt = common::post(
        &api,
        &format!("/v1/rounds/{}/uploads", round.round_id),
        &common::batch(uploads),
    )
    .await;
    assert!(receipt.rejected.is_empty(), "{receipt:?}");
    let released = common::released(&api, &task.id).await;
    let release: tally_messages::TaskResult = serde_json::from_str(&released).unwrap();
    let tally_messages::TaskResult::Histogram(release) = release else {
        panic!("a histogram: {released}");
    };
    assert_eq!(release.released_items, items, "{released}");
    task.id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_task_shows_rounded_numbers_and_its_release_a_page_at_a_time() {
    let (server, router, credentials, _db, _dir) = console().await;
    let id = finished_histogram(&router, &credentials, 60).await;
    let analyst = credentials.analyst.as_str();
    let session = &sign_in(&router, analyst).await;
    let path = format!("/console/tasks/{id}");
    let first = page(&router, &path, session).await;
    let second = page(&router, &format!("{path}?page=2"), session).await;
    let ledger = page(&router, "/console/ledger", session).await;
    let overview = page(&router, "/console", session).await;
    for (name, html) in [
        ("first page", &first),
        ("second page", &second),
        ("ledger", &ledger),
        ("overview", &overview),
    ] {
        assert!(
            long_numbers(html).is_empty(),
            "{name}: {:?}",
            long_numbers(html)
        );
        assert!(!holds_json_object(html), "{name}: {html}");
    }
    // The guarantee as the accountant computed it, rounded up.
    let info: tally_messages::TaskInfo = serde_json::from_str(
        &common::call_with(
            &router,
            analyst,
            Method::GET,
            &format!("/v1/tasks/{id}"),
            None,
        )
        .await
        .1,
    )
    .unwrap();
    assert_eq!(info.guarantee.epsilon.to_bits(), TASK_EPSILON.to_bits());
    assert!(
        first.contains(r#"<th>ε</th><td class="n">2.001</td>"#),
        "{first}"
    );
    let delta = tally_protocol::shown::delta_number(info.guarantee.delta, Rounding::Up);
    assert!(
        first.contains(&format!(r#"<th>δ</th><td class="n">{delta}</td>"#)),
        "{first}"
    );
    assert!(ledger.contains(r#"<td class="n">2.001</td>"#), "{ledger}");
    // The task's guarantee is shown once: the release's own is the same.
    assert_eq!(first.matches("<th>Trust model</th>").count(), 1, "{first}");
    // Sixty items: fifty on the first page, ten on the second, each linking to the other.
    let items = |html: &str| html.matches("<td>item-").count();
    assert_eq!((items(&first), items(&second)), (50, 10));
    assert!(first.contains("<td>item-000</td>") && !first.contains("<td>item-050</td>"));
    assert!(second.contains("<td>item-050</td>") && second.contains("<td>item-059</td>"));
    assert!(
        first.contains(&format!(r#"href="{path}?page=2""#)),
        "{first}"
    );
    assert!(!first.contains(r#"rel="prev""#));
    assert!(
        second.contains(&format!(r#"href="{path}?page=1""#)),
        "{second}"
    );
    assert!(!second.contains(r#"rel="next""#));
    // A page past the last shows the last; the API keeps the whole release.
    let past = page(&router, &format!("{path}?page=9"), session).await;
    assert_eq!(items(&past), 10);
    let (status, whole) = common::call_with(
        &router,
        analyst,
        Method::GET,
        &format!("/v1/tasks/{id}/result"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(whole.matches(r#""item":"#).count(), 60);
    server.shutdown().await;
}

#[tokio::test]
async fn the_sign_in_page_prompts_and_a_refused_token_is_an_error() {
    let (server, router, _, _db, _dir) = console().await;
    for path in ["/console/login", "/console"] {
        let (_, _, html) = send(&router, Method::GET, path, None, None, None).await;
        assert!(html.contains(r#"<p class="prompt">"#), "{path}: {html}");
        assert!(!html.contains(r#"class="error""#), "{path}: {html}");
    }
    let (status, _, html) = send(
        &router,
        Method::GET,
        "/console",
        Some("garbage"),
        None,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(html.contains(r#"<p class="error">"#), "{html}");
    assert!(!html.contains(r#"class="prompt""#), "{html}");
    server.shutdown().await;
}

/// The session `session`'s overview: its status, and whether it is the sign-in page.
async fn overview_status(router: &Router, session: &str) -> (StatusCode, bool) {
    let (status, _, html) = send(router, Method::GET, "/console", Some(session), None, None).await;
    (status, html.contains(r#"name="token""#))
}

/// The console sessions stored in the database at `db`.
async fn stored_sessions(db: &str) -> i64 {
    use sqlx::{Connection, Row};
    sqlx::any::install_default_drivers();
    let mut connection = sqlx::AnyConnection::connect(db).await.unwrap();
    let row = sqlx::query("SELECT COUNT(*) AS n FROM console_sessions")
        .fetch_one(&mut connection)
        .await
        .unwrap();
    row.try_get("n").unwrap()
}

/// A session's id is no credential of the API, and a session ends on the server: at sign-out
/// (its cookie, sent again, gets the sign-in page with 401), when its credential is revoked
/// through the API or beside the server, and once idle or open too long. On SQLite and
/// PostgreSQL.
#[tokio::test]
async fn a_session_is_no_credential_and_ends_on_the_server() {
    use std::time::Duration;
    for db in common::databases().await {
        let url = db.url.as_str();
        population(url, POPULATION, (10.0, 1e-5)).await;
        let credentials = common::credentials(url).await;
        let server = tally_server::Server::start(url)
            .await
            .unwrap()
            .with_console_sessions(tally_server::ConsoleSessions {
                idle_timeout: Duration::from_millis(1500),
                lifetime: Duration::from_millis(3000),
            });
        let router = server.router();
        let ended = (StatusCode::UNAUTHORIZED, true);

        // The session's id, as a bearer token, is refused by the API.
        let operator = sign_in(&router, &credentials.operator).await;
        for path in ["/v1/credentials", "/v1/ledger"] {
            let (status, body) =
                common::call_with(&router, &operator, Method::GET, path, None).await;
            assert_eq!(
                status,
                StatusCode::UNAUTHORIZED,
                "{}: {path}: {body}",
                db.name
            );
        }
        assert_eq!(stored_sessions(url).await, 1, "{}", db.name);

        // Signing out ends the session on the server, not only in the browser.
        let token = form_token(&page(&router, "/console", &operator).await);
        let form = encode(&[("form_token", &token)]);
        let (status, headers, _) = post(&router, "/console/logout", Some(&operator), form).await;
        assert_eq!(status, StatusCode::SEE_OTHER, "{}", db.name);
        assert_eq!(session_cookie(&headers).as_deref(), Some(""), "{}", db.name);
        assert_eq!(
            overview_status(&router, &operator).await,
            ended,
            "{}",
            db.name
        );
        let form = encode(&[("form_token", &token)]);
        let (status, _, _) = post(&router, "/console/logout", Some(&operator), form).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{}", db.name);
        assert_eq!(stored_sessions(url).await, 0, "{}", db.name);

        // Revoking a credential, through the API or beside the server, ends its sessions.
        let api = common::signed_in(router.clone(), &credentials);
        for beside in [false, true] {
            let token = credential(url, Role::Analyst, "revoked", &[POPULATION]).await;
            let id = token.split('_').nth(1).unwrap().to_owned();
            let session = sign_in(&router, &token).await;
            assert_eq!(overview_status(&router, &session).await.0, StatusCode::OK);
            if beside {
                tally_server::revoke_credential(url, &id).await.unwrap();
            } else {
                let path = format!("/v1/credentials/{id}/revoke");
                let (status, body) = common::call(&api, Method::POST, &path, None).await;
                assert_eq!(status, StatusCode::OK, "{body}");
            }
            assert_eq!(
                overview_status(&router, &session).await,
                ended,
                "{}",
                db.name
            );
            assert_eq!(stored_sessions(url).await, 0, "{}: {beside}", db.name);
        }

        // A credential revoked without its sessions deleted (an older server's revocation)
        // ends them too: every request checks the session's credential.
        let token = credential(url, Role::Analyst, "revoked-alone", &[POPULATION]).await;
        let id = token.split('_').nth(1).unwrap().to_owned();
        let session = sign_in(&router, &token).await;
        {
            use sqlx::Connection;
            let mut connection = sqlx::AnyConnection::connect(url).await.unwrap();
            sqlx::query("UPDATE credentials SET revoked_at = 1 WHERE id = $1")
                .bind(&id)
                .execute(&mut connection)
                .await
                .unwrap();
            sqlx::query("UPDATE credential_changes SET generation = generation + 1")
                .execute(&mut connection)
                .await
                .unwrap();
        }
        assert_eq!(stored_sessions(url).await, 1, "{}", db.name);
        // Past the credentials' staleness bound, the running server has seen the revocation.
        tokio::time::sleep(Duration::from_millis(1300)).await;
        assert_eq!(
            overview_status(&router, &session).await,
            ended,
            "{}",
            db.name
        );

        // A session used within its idle timeout lives on, up to its lifetime; one left idle
        // ends.
        let used = sign_in(&router, &credentials.analyst).await;
        let idle = sign_in(&router, &credentials.analyst).await;
        let step = Duration::from_millis(800);
        for _ in 0..3 {
            tokio::time::sleep(step).await;
            assert_eq!(overview_status(&router, &used).await.0, StatusCode::OK);
        }
        assert_eq!(overview_status(&router, &idle).await, ended, "{}", db.name);
        tokio::time::sleep(step).await;
        assert_eq!(overview_status(&router, &used).await, ended, "{}", db.name);
        server.shutdown().await;
    }
}
