//! The operator's console at `/console`: server-rendered pages over the same runtime, roles and
//! refusals as the API, for a browser.
//!
//! A person signs in with an operator's or an analyst's token, which opens a session on the
//! server: a random id (256 bits from a CSPRNG; the database keeps only its SHA-256) that lives
//! in an `HttpOnly`, `SameSite=Strict` cookie (`Secure` over TLS) and never in a URL. The
//! cookie never holds the token, and its id is no credential of the API. A session ends when
//! it signs out, when it has been idle or alive longer than [`ConsoleSessions`] allows, and
//! when its credential is revoked (the revocation deletes it, and every request checks its
//! credential is live). Every page and action admits a session's credential as the API admits
//! a bearer token, for the roles the matching API call admits, and shows only what that call
//! shows the role. Defences:
//! every value is HTML-escaped (the templates escape whatever they interpolate); every form
//! that changes state carries a token derived from the session and is refused without it, and
//! every POST must come from the console's own origin; the pages forbid every outside load,
//! every script and every frame through `Content-Security-Policy`, and are never cached.

mod charts;
mod pages;
mod release_curve;
mod task_form;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Form, Path, Query, Request, State};
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, COOKIE, HOST, LOCATION, ORIGIN, REFERRER_POLICY,
    SET_COOKIE, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use hmac::{Hmac, Mac};
use rand::Rng;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tally_accounting::Neighbours;
use tally_messages::{
    Budget, CredentialSpec, ErrorCode, GuaranteeBody, PROTOCOL_VERSION, PopulationSpec, Role,
    TaskBound, TaskSpec, TrustModel,
};

use crate::auth::{self, Principal};
use crate::error::ApiError;
use crate::http::{HostPolicy, admit, authorize_token};
use crate::runtime::Runtime;
use crate::store::SessionCutoffs;

/// The cookie that holds the session's id.
const SESSION_COOKIE: &str = "tally_console";

/// What a page says when it has no session.
const SIGN_IN: &str = "sign in with an operator's or an analyst's token";

/// What a page says when its session is unknown or has ended.
const SESSION_ENDED: &str = "this sign-in has ended (signed out, idle or open too long, or its \
                             credential revoked): sign in again";

/// How long a console sign-in lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConsoleSessions {
    /// A session unused for this long ends.
    pub idle_timeout: Duration,
    /// A session ends this long after its sign-in, however recently it was used.
    pub lifetime: Duration,
}

impl Default for ConsoleSessions {
    /// 30 minutes idle, 12 hours in all.
    fn default() -> Self {
        Self {
            idle_timeout: Duration::from_secs(30 * 60),
            lifetime: Duration::from_secs(12 * 60 * 60),
        }
    }
}

impl ConsoleSessions {
    /// The instants before which a session's last use or its sign-in end it, `now` being
    /// milliseconds since the Unix epoch.
    pub(crate) fn cutoffs(&self, now: i64) -> SessionCutoffs {
        let millis = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        SessionCutoffs {
            last_seen: now.saturating_sub(millis(self.idle_timeout)),
            created_at: now.saturating_sub(millis(self.lifetime)),
        }
    }
}

/// Who may use the console at all: devices are refused, as the API refuses them everything
/// but rounds and task states.
const PEOPLE: [Role; 2] = [Role::Operator, Role::Analyst];

/// The console's state.
struct Console {
    runtime: Arc<Runtime>,
    hosts: Arc<HostPolicy>,
    /// The key of the forms' anti-forgery tokens, new at every start.
    form_key: [u8; 32],
    /// Whether the server runs TLS: the cookie is then `Secure`, and the origin `https`.
    tls: bool,
    /// When sessions end.
    sessions: ConsoleSessions,
    /// The `Content-Security-Policy` of every answer.
    policy: HeaderValue,
}

type App = State<Arc<Console>>;

/// What a handler answers: a page, or a refusal (also a page) as soon as one is due.
type Answer = Result<Response, Response>;

/// A signed-in person.
pub(crate) struct Session {
    /// The credential.
    pub(crate) who: Principal,
    /// The anti-forgery token its forms carry.
    pub(crate) form_token: String,
}

/// The console's router: pages under `/console`, answering only the `hosts` the API answers.
/// Sessions end as `sessions` says.
pub(crate) fn router(
    runtime: Arc<Runtime>,
    hosts: Arc<HostPolicy>,
    tls: bool,
    sessions: ConsoleSessions,
) -> Router {
    let mut form_key = [0u8; 32];
    rand::rng().fill_bytes(&mut form_key);
    let style_hash =
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(pages::STYLE.as_bytes()));
    let policy = format!(
        "default-src 'none'; style-src 'sha256-{style_hash}'; \
         form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    );
    let console = Arc::new(Console {
        runtime,
        hosts,
        form_key,
        tls,
        sessions,
        // Unwrap safety: the policy is ASCII without control characters.
        policy: HeaderValue::from_str(&policy).expect("an ASCII header"),
    });
    Router::new()
        .route("/console", get(overview))
        .route("/console/login", get(login_page).post(login))
        .route("/console/logout", post(logout))
        .route("/console/ledger", get(ledger))
        .route(
            "/console/credentials",
            get(credentials).post(create_credential),
        )
        .route("/console/populations", post(create_population))
        .route("/console/tasks/new", get(new_task))
        .route("/console/tasks/plan", post(plan_task))
        .route("/console/tasks", post(create_task))
        .route("/console/tasks/{id}", get(task))
        .route("/console/tasks/{id}/cancel", post(cancel_task))
        .layer(middleware::from_fn_with_state(Arc::clone(&console), guard))
        .with_state(console)
}

/// Refuses a request to another `Host` than the server's, and a POST from another origin
/// (or without an `Origin`, which browsers send with every POST); sets the security headers
/// of every answer.
async fn guard(State(console): App, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = headers.get(HOST).and_then(|h| h.to_str().ok());
    let refusal = if !console.hosts.allows(host) {
        Some("this server does not answer to that Host")
    } else if request.method() == Method::POST && !console.same_origin(headers) {
        Some("a form of the console is sent from the console's own origin alone")
    } else {
        None
    };
    let mut response = match refusal {
        Some(message) => console.refuse(&ApiError::new(ErrorCode::Forbidden, message), None),
        None => next.run(request).await,
    };
    let headers = response.headers_mut();
    headers.insert(CONTENT_SECURITY_POLICY, console.policy.clone());
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    response
}

impl Console {
    /// Whether the request's `Origin` is this server's own, as reached through its `Host`.
    fn same_origin(&self, headers: &HeaderMap) -> bool {
        let scheme = if self.tls { "https" } else { "http" };
        match (headers.get(ORIGIN), headers.get(HOST)) {
            (Some(origin), Some(host)) => {
                origin
                    .to_str()
                    .ok()
                    .zip(host.to_str().ok())
                    .is_some_and(|(origin, host)| {
                        origin.eq_ignore_ascii_case(&format!("{scheme}://{host}"))
                    })
            }
            _ => false,
        }
    }

    /// The anti-forgery token of the session `id`: HMAC-SHA-256 under the console's key.
    fn form_token(&self, id: &str) -> String {
        // Unwrap safety: HMAC takes a key of any length.
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.form_key).expect("any key length");
        mac.update(id.as_bytes());
        mac.finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The session of a request whose credential has one of `roles`, used now: refused with
    /// 401 without a live session (none, unknown, ended, or its credential revoked) and, as
    /// the API refuses its credential, 403 for another role.
    async fn session(&self, headers: &HeaderMap, roles: &[Role]) -> Result<Session, Response> {
        let admitted = async {
            let id = session_id(headers)
                .ok_or_else(|| ApiError::new(ErrorCode::Unauthenticated, SIGN_IN))?;
            let ended = || ApiError::new(ErrorCode::Unauthenticated, SESSION_ENDED);
            // Only what has the shape of a session's id is looked up.
            if !auth::is_random_secret(id) {
                return Err(ended());
            }
            let who = self
                .runtime
                .session(id, &self.sessions)
                .await?
                .ok_or_else(ended)?;
            let who = admit(Some(who), self.runtime.rate_limit.as_ref(), roles)?;
            Ok(Session {
                who,
                form_token: self.form_token(id),
            })
        }
        .await;
        admitted.map_err(|error| self.refuse(&error, None))
    }

    /// The session of a form that changes state: [`Console::session`], and the form must
    /// carry the session's anti-forgery token.
    async fn act(
        &self,
        headers: &HeaderMap,
        roles: &[Role],
        form_token: &str,
    ) -> Result<Session, Response> {
        let session = self.session(headers, roles).await?;
        if bool::from(session.form_token.as_bytes().ct_eq(form_token.as_bytes())) {
            Ok(session)
        } else {
            let error = ApiError::new(
                ErrorCode::Forbidden,
                "the form does not carry this session's token: reload the page and send it again",
            );
            Err(self.refuse(&error, Some(&session)))
        }
    }

    /// A refusal as a page, with the status the API answers; counted as the API counts it.
    fn refuse(&self, error: &ApiError, session: Option<&Session>) -> Response {
        self.runtime.metrics.reject(error.code);
        let page = if error.code == ErrorCode::Unauthenticated {
            // A page asked without a session prompts to sign in; a token refused says why.
            pages::login(Some(error.message()).filter(|message| *message != SIGN_IN))
        } else {
            pages::refusal(session, error.message())
        };
        (error.status(), page).into_response()
    }
}

/// The session id in the request's cookie, if any.
fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value)
}

/// A `303 See Other` to `location`.
fn see_other(location: &str) -> Response {
    (StatusCode::SEE_OTHER, [(LOCATION, location.to_owned())]).into_response()
}

async fn login_page() -> Response {
    pages::login(None).into_response()
}

#[derive(Deserialize)]
struct LoginForm {
    token: String,
}

/// Signs in: if the token proves an operator's or an analyst's live credential, opens a
/// session of it and sets the session's id (not the token) as the cookie; refused as the API
/// refuses the token otherwise.
async fn login(State(console): App, Form(form): Form<LoginForm>) -> Response {
    let token = form.token.trim();
    let opened = async {
        let who = authorize_token(&console.runtime, Some(token), SIGN_IN, &PEOPLE).await?;
        console.runtime.open_session(&who, &console.sessions).await
    }
    .await;
    let id = match opened {
        Ok(id) => id,
        Err(error) => return console.refuse(&error, None),
    };
    let secure = if console.tls { "; Secure" } else { "" };
    let cookie = format!("{SESSION_COOKIE}={id}; Path=/console; HttpOnly; SameSite=Strict{secure}");
    let mut response = see_other("/console");
    // Unwrap safety: a session id is hex digits.
    let cookie = HeaderValue::from_str(&cookie).expect("a session id is a header value");
    response.headers_mut().insert(SET_COOKIE, cookie);
    response
}

#[derive(Deserialize)]
struct PlainForm {
    form_token: String,
}

/// Signs out: ends the session on the server, and drops its cookie.
async fn logout(State(console): App, headers: HeaderMap, Form(form): Form<PlainForm>) -> Response {
    if let Err(refused) = console.act(&headers, &PEOPLE, &form.form_token).await {
        return refused;
    }
    // Unwrap safety: `act` admitted the session of this cookie.
    let id = session_id(&headers).expect("an admitted session");
    if let Err(error) = console.runtime.close_session(id).await {
        return console.refuse(&error, None);
    }
    let mut response = see_other("/console/login");
    response.headers_mut().insert(
        SET_COOKIE,
        HeaderValue::from_static(
            "tally_console=; Path=/console; Max-Age=0; HttpOnly; SameSite=Strict",
        ),
    );
    response
}

/// Populations with their budgets over time, and tasks with their rounds.
async fn overview(State(console): App, headers: HeaderMap) -> Answer {
    let session = console.session(&headers, &PEOPLE).await?;
    let runtime = &console.runtime;
    let result = async {
        let populations = runtime.populations(&session.who).await?;
        let ledger = runtime.ledger(&session.who).await?;
        let tasks = runtime.tasks(&session.who).await?;
        // Only an operator reads open rounds (`GET /v1/rounds`) among the console's roles.
        let rounds = if session.who.role == Role::Operator {
            runtime.open_round_progress()
        } else {
            Vec::new()
        };
        Ok::<_, ApiError>(pages::overview(
            &session,
            &populations,
            &ledger,
            &tasks,
            &rounds,
        ))
    }
    .await;
    Ok(console.page(result, &session))
}

impl Console {
    /// A page, or the refusal of what built it.
    fn page(&self, result: Result<maud::Markup, ApiError>, session: &Session) -> Response {
        match result {
            Ok(page) => page.into_response(),
            Err(error) => self.refuse(&error, Some(session)),
        }
    }
}

async fn ledger(State(console): App, headers: HeaderMap) -> Answer {
    let session = console.session(&headers, &PEOPLE).await?;
    let result = console
        .runtime
        .ledger(&session.who)
        .await
        .map(|ledger| pages::ledger(&session, &ledger));
    Ok(console.page(result, &session))
}

#[derive(Deserialize)]
struct TaskPageQuery {
    /// The page of the release's lists to show, from 1.
    #[serde(default)]
    page: Option<usize>,
}

/// A task, its round, and (for its analyst, as `GET /v1/tasks/{id}/result`) its release, its
/// lists a page at a time.
async fn task(
    State(console): App,
    Path(id): Path<String>,
    Query(query): Query<TaskPageQuery>,
    headers: HeaderMap,
) -> Answer {
    let session = console.session(&headers, &PEOPLE).await?;
    let runtime = &console.runtime;
    let result = async {
        let info = runtime.task(&id, &session.who).await?;
        let release = if session.who.role == Role::Analyst {
            match runtime.result(&id, &session.who).await {
                Ok(document) => Some(document),
                Err(error) if error.code == ErrorCode::NoResult => None,
                Err(error) => return Err(error),
            }
        } else {
            None
        };
        let round = if session.who.role == Role::Operator {
            runtime
                .open_round_progress()
                .into_iter()
                .find(|(query, _)| query.task_id == id)
        } else {
            None
        };
        Ok(pages::task(
            &session,
            &info,
            round.as_ref(),
            release.as_deref(),
            query.page.unwrap_or(1),
        ))
    }
    .await;
    Ok(console.page(result, &session))
}

async fn cancel_task(
    State(console): App,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(form): Form<PlainForm>,
) -> Answer {
    let session = console.act(&headers, &PEOPLE, &form.form_token).await?;
    Ok(match console.runtime.cancel(&id, &session.who).await {
        Ok(info) => see_other(&format!("/console/tasks/{}", info.id)),
        Err(error) => console.refuse(&error, Some(&session)),
    })
}

#[derive(Deserialize)]
struct PopulationForm {
    form_token: String,
    name: String,
    epsilon: String,
    delta: String,
    min_cohort: String,
    max_task_epsilon: String,
    /// `single-party` or `split`; `single-party` when left out.
    #[serde(default)]
    trust: String,
    /// `on` when the operator allows device-side sampling (an unchecked box is left out).
    #[serde(default)]
    allow_device_sampling: Option<String>,
    /// `add-remove` or `replace-one`; `add-remove` when left out.
    #[serde(default)]
    neighbours: String,
    /// The declared pair's largest sampling rate; none when empty.
    #[serde(default)]
    bound_rate: String,
    /// The declared pair's smallest threshold.
    #[serde(default)]
    bound_threshold: String,
    /// The declared pair's share of ε; the whole budget when empty.
    #[serde(default)]
    bound_epsilon: String,
    /// The declared pair's share of δ; the whole budget when empty.
    #[serde(default)]
    bound_delta: String,
    /// The fraction of devices that may collude with the analyst; 0 when empty.
    #[serde(default)]
    colluding_fraction: String,
}

impl PopulationForm {
    /// The declared pair the form asks, if any.
    fn task_bound(&self) -> Result<Option<TaskBound>, ApiError> {
        let optional = |field: &str, value: &str| -> Result<Option<f64>, ApiError> {
            match value.trim() {
                "" => Ok(None),
                given => number(field, given).map(Some),
            }
        };
        let rate = optional("bound_rate", &self.bound_rate)?;
        let threshold = self.bound_threshold.trim();
        let share = (
            optional("bound_epsilon", &self.bound_epsilon)?,
            optional("bound_delta", &self.bound_delta)?,
        );
        match (rate, threshold) {
            (None, "") if share == (None, None) => Ok(None),
            (Some(sampling_rate), threshold) if !threshold.is_empty() => Ok(Some(TaskBound {
                sampling_rate,
                threshold: number("bound_threshold", threshold)?,
                share: match share {
                    (None, None) => None,
                    (Some(epsilon), Some(delta)) => Some(Budget { epsilon, delta }),
                    _ => {
                        return Err(ApiError::new(
                            ErrorCode::Malformed,
                            "the declared pair's share: give both ε and δ, or neither (the whole \
                             budget)",
                        ));
                    }
                },
            })),
            _ => Err(ApiError::new(
                ErrorCode::Malformed,
                "the declared pair: give both its sampling rate and its threshold, or neither",
            )),
        }
    }
}

/// A number from a form field, or why not.
fn number<T: std::str::FromStr>(field: &str, value: &str) -> Result<T, ApiError> {
    value
        .trim()
        .parse()
        .map_err(|_| ApiError::new(ErrorCode::Malformed, format!("{field}: not a number")))
}

/// Provisions a population (an operator's, as `POST /v1/populations`).
async fn create_population(
    State(console): App,
    headers: HeaderMap,
    Form(form): Form<PopulationForm>,
) -> Answer {
    let session = console
        .act(&headers, &[Role::Operator], &form.form_token)
        .await?;
    let result = async {
        let spec = PopulationSpec {
            version: PROTOCOL_VERSION,
            name: form.name.trim().to_owned(),
            budget: Budget {
                epsilon: number("epsilon", &form.epsilon)?,
                delta: number("delta", &form.delta)?,
            },
            min_cohort: number("min_cohort", &form.min_cohort)?,
            max_task_epsilon: match form.max_task_epsilon.trim() {
                "" => None,
                cap => Some(number("max_task_epsilon", cap)?),
            },
            trust: match form.trust.trim() {
                "" => TrustModel::SingleParty,
                name => TrustModel::from_name(name).ok_or_else(|| {
                    ApiError::new(
                        ErrorCode::Malformed,
                        format!("trust {name:?}: single-party or split"),
                    )
                })?,
            },
            allow_device_sampling: form.allow_device_sampling.is_some(),
            task_bound: form.task_bound()?,
            colluding_fraction: match form.colluding_fraction.trim() {
                "" => 0.0,
                given => number("colluding_fraction", given)?,
            },
            neighbours: match form.neighbours.trim() {
                "" => Neighbours::AddRemove,
                name => name.parse().map_err(|e: tally_accounting::Error| {
                    ApiError::new(ErrorCode::Malformed, e.to_string())
                })?,
            },
        };
        console.runtime.create_population(&spec).await
    }
    .await;
    Ok(match result {
        Ok(_) => see_other("/console"),
        Err(error) => console.refuse(&error, Some(&session)),
    })
}

/// Every credential (an operator's, as `GET /v1/credentials`).
async fn credentials(State(console): App, headers: HeaderMap) -> Answer {
    let session = console.session(&headers, &[Role::Operator]).await?;
    let result = console
        .runtime
        .credentials()
        .await
        .map(|list| pages::credentials(&session, &list, None));
    Ok(console.page(result, &session))
}

#[derive(Deserialize)]
struct CredentialForm {
    form_token: String,
    name: String,
    role: String,
    populations: String,
}

/// Makes a credential (an operator's, as `POST /v1/credentials`) and shows its token once.
async fn create_credential(
    State(console): App,
    headers: HeaderMap,
    Form(form): Form<CredentialForm>,
) -> Answer {
    let session = console
        .act(&headers, &[Role::Operator], &form.form_token)
        .await?;
    let runtime = &console.runtime;
    let result = async {
        let role = Role::from_name(form.role.trim()).ok_or_else(|| {
            ApiError::new(ErrorCode::Malformed, "role: operator, analyst or device")
        })?;
        let spec = CredentialSpec {
            version: PROTOCOL_VERSION,
            role,
            name: form.name.trim().to_owned(),
            populations: form
                .populations
                .split([',', ' '])
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect(),
        };
        let issued = runtime.create_credential(&spec).await?;
        let list = runtime.credentials().await?;
        Ok(pages::credentials(&session, &list, Some(&issued)))
    }
    .await;
    Ok(console.page(result, &session))
}

#[derive(Deserialize)]
struct NewTaskQuery {
    /// The kind whose form to show ([`task_form::KINDS`]; the first by default).
    #[serde(default)]
    kind: Option<String>,
    /// The population the task runs over; by default the analyst's first whose budget is kept
    /// under the kind's neighbour relation.
    #[serde(default)]
    population: Option<String>,
}

/// The task form (an analyst's, as `POST /v1/tasks`) of the kind and population the query
/// names.
async fn new_task(
    State(console): App,
    headers: HeaderMap,
    Query(query): Query<NewTaskQuery>,
) -> Answer {
    let session = console.session(&headers, &[Role::Analyst]).await?;
    let kind = query.kind.as_deref().unwrap_or(task_form::KINDS[0].name);
    let result = async {
        let kind = task_form::kind(kind).ok_or_else(|| {
            let names: Vec<&str> = task_form::KINDS.iter().map(|k| k.name).collect();
            ApiError::new(
                ErrorCode::Malformed,
                format!("kind {kind:?}: no such form; one of {}", names.join(", ")),
            )
        })?;
        let populations = console.runtime.populations(&session.who).await?;
        let population = match &query.population {
            Some(name) if populations.iter().any(|p| &p.name == name) => name.clone(),
            Some(name) => {
                return Err(ApiError::new(
                    ErrorCode::Malformed,
                    format!("population {name:?}: not one of this analyst's"),
                ));
            }
            None => populations
                .iter()
                .find(|p| p.neighbours == kind.neighbours)
                .or(populations.first())
                .map(|p| p.name.clone())
                .unwrap_or_default(),
        };
        Ok(console
            .task_form(&session, kind, &populations, &population, None, None, None)
            .await)
    }
    .await;
    Ok(console.page(result, &session))
}

impl Console {
    /// The task form of `kind` over `population`, with the values sent (or the defaults) and
    /// why the last plan was refused.
    #[allow(clippy::too_many_arguments)]
    async fn task_form(
        &self,
        session: &Session,
        kind: &'static task_form::FormKind,
        populations: &[tally_messages::PopulationInfo],
        population: &str,
        values: Option<&HashMap<String, String>>,
        spec: Option<&str>,
        refusal: Option<&str>,
    ) -> maud::Markup {
        let size = self.population_size(&session.who, population).await;
        pages::new_task(
            session,
            &pages::TaskFormPage {
                kind,
                populations,
                population,
                size,
                values,
                spec,
                refusal,
            },
        )
    }

    /// The number of devices in `population` as the analyst `who` last gave it, and where it
    /// comes from: the expected population of its latest task over it. (Not the devices
    /// enrolled: the credential list is the operator's, and an analyst's API calls never show
    /// it.)
    async fn population_size(&self, who: &Principal, population: &str) -> Option<(u64, String)> {
        let tasks = self.runtime.tasks(who).await;
        // Only a hint for the form: a failure to read the tasks (logged) leaves it out.
        tasks
            .map_err(|e| tracing::warn!(code = ?e.code, "could not read the tasks for the form"))
            .ok()?
            .into_iter()
            .filter(|task| task.spec.population == population)
            .max_by_key(|task| task.created_at)
            .map(|task| {
                (
                    task.spec.expected_population,
                    format!(
                        "the expected population of task {}, the latest over {population}",
                        task.id
                    ),
                )
            })
    }
}

/// The task a form asks for, as JSON, or why it cannot be read.
fn read_spec(text: &str) -> Result<TaskSpec, ApiError> {
    serde_json::from_str(text).map_err(|e| ApiError::new(ErrorCode::Malformed, e.to_string()))
}

/// A form that sends a task: its anti-forgery token and its fields, either the kind's form
/// (`form_kind`, `population` and the kind's fields) or the task as JSON (`spec`).
type TaskForm = HashMap<String, String>;

/// The anti-forgery token a form carries (empty without one, which is refused).
fn token_of(form: &TaskForm) -> &str {
    form.get("form_token").map_or("", String::as_str)
}

/// Shows the plan of a task: the guarantee and parameters the server would fix for it,
/// calibrated by the task creation's own planning, what its rounds release (their release
/// curve, where they are sample-and-threshold rounds), and a form to confirm it.
async fn plan_task(State(console): App, headers: HeaderMap, Form(form): Form<TaskForm>) -> Answer {
    let session = console
        .act(&headers, &[Role::Analyst], token_of(&form))
        .await?;
    let runtime = &console.runtime;
    let kind = form.get("form_kind").and_then(|name| task_form::kind(name));
    let population = form.get("population").cloned().unwrap_or_default();
    let planned = async {
        let spec = match (form.get("spec"), kind) {
            (Some(text), _) => read_spec(text)?,
            (None, Some(kind)) => kind.spec(&population, &form)?,
            (None, None) => {
                return Err(ApiError::new(
                    ErrorCode::Malformed,
                    "the form names no task kind: open the new-task page again",
                ));
            }
        };
        let (engine, guarantee, collusion, charge) = runtime.plan_task(&spec, &session.who).await?;
        let curves = engine
            .threshold_rounds()
            .map(|rounds| release_curve::release_curves(&rounds, &guarantee));
        let balance = runtime
            .ledger(&session.who)
            .await?
            .into_iter()
            .find(|b| b.population == spec.population);
        let guarantee = GuaranteeBody::with_collusion(&guarantee, collusion.as_ref());
        Ok::<_, ApiError>((spec, guarantee, curves, balance, charge))
    }
    .await;
    Ok(match planned {
        Ok((spec, guarantee, curves, balance, charge)) => pages::plan(
            &session,
            &spec,
            &guarantee,
            curves.as_ref(),
            balance.as_ref(),
            charge,
        )
        .into_response(),
        // The form again, with the reason, so that the task can be corrected.
        Err(error) => {
            runtime.metrics.reject(error.code);
            let populations = runtime.populations(&session.who).await.unwrap_or_default();
            let spec = form.get("spec").map(String::as_str);
            let page = console
                .task_form(
                    &session,
                    kind.unwrap_or(&task_form::KINDS[0]),
                    &populations,
                    &population,
                    spec.is_none().then_some(&form),
                    spec,
                    Some(error.message()),
                )
                .await;
            (error.status(), page).into_response()
        }
    })
}

/// Creates a confirmed task (an analyst's, as `POST /v1/tasks`).
async fn create_task(
    State(console): App,
    headers: HeaderMap,
    Form(form): Form<TaskForm>,
) -> Answer {
    let session = console
        .act(&headers, &[Role::Analyst], token_of(&form))
        .await?;
    let result = async {
        let spec = read_spec(form.get("spec").map_or("", String::as_str))?;
        console.runtime.create_task(spec, &session.who).await
    }
    .await;
    Ok(match result {
        Ok(info) => see_other(&format!("/console/tasks/{}", info.id)),
        Err(error) => console.refuse(&error, Some(&session)),
    })
}
