//! The HTTP client: one connection pool, every endpoint of the protocol, and retries with
//! exponential backoff and jitter in one place.

use std::sync::Arc;
use std::time::Duration;

use rand::{Rng, RngExt};
use reqwest::Method;
use reqwest::header::CONTENT_TYPE;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tally_messages::{
    API_PREFIX, CheckIn, CheckInGrant, CredentialInfo, CredentialSpec, DeviceEnrollment,
    EnrolledDevices, ErrorBody, IssuedCredential, LedgerBalance, PROTOCOL_VERSION, PopulationInfo,
    PopulationSpec, RelayReceipt, RelayedBatch, RoundQuery, SealedUpload, TaskInfo, TaskResult,
    TaskSpec, Upload, UploadReceipt,
};

use crate::error::ClientError;

/// How long one request may take, retries not included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How much longer a relayed batch may take for each of its messages, which the aggregator
/// opens before it answers: ten times its measured cost on one core (about 0.1 ms), so that a
/// loaded aggregator still answers in time.
const RELAYED_MESSAGE_TIMEOUT: Duration = Duration::from_millis(1);
/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long an unused pooled connection is kept: below the server's default idle deadline of
/// 10 s.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(5);
/// How much of an unexpected body an error quotes.
const QUOTED_BODY_CHARS: usize = 200;

/// When and how often a failed request is tried again.
///
/// A request is retried after a connection error, a timeout or a 5xx status, never after a
/// 4xx other than 429 (the request itself is wrong). The wait before retry `k` (from 1) is
/// drawn uniformly from `[d/2, d]` with `d = min(initial · 2^(k−1), max)`, so that devices that
/// failed together do not retry together.
///
/// A 429 (the server's request-rate limit, `tally serve --rate-limit`) is answered before the
/// request is acted on, so every request, a task's creation included, is sent again after
/// it: once the `Retry-After` the server named has passed, plus the jittered backoff above.
/// Those refusals have a budget of their own (`rate_limited_attempts` refusals and
/// `rate_limited_wait` of waiting in all), after which the request fails with
/// [`ClientError::RateLimited`](crate::ClientError::RateLimited).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries in all after failures other than 429, the first included (0 counts as 1).
    pub attempts: u32,
    /// The wait before the first retry, before jitter.
    pub initial: Duration,
    /// The longest wait, before jitter.
    pub max: Duration,
    /// The most 429 refusals one request waits out (0 gives up at the first).
    pub rate_limited_attempts: u32,
    /// The longest time one request spends waiting out 429 refusals, in all: a refusal whose
    /// wait would go past it ends the request at once.
    pub rate_limited_wait: Duration,
}

impl Default for RetryPolicy {
    /// Ten tries, waiting 100 ms, doubling up to 4 s: a request that keeps failing waits
    /// between 9.15 s and 18.3 s in all before it gives up (besides its tries' own time), so
    /// that devices ride out a server's restart of several seconds. Up to 30 rate-limit
    /// refusals waited out within 2 minutes.
    fn default() -> Self {
        Self {
            attempts: 10,
            initial: Duration::from_millis(100),
            max: Duration::from_secs(4),
            rate_limited_attempts: 30,
            rate_limited_wait: Duration::from_secs(120),
        }
    }
}

impl RetryPolicy {
    /// One try, no retry, not even after a 429.
    pub const NONE: Self = Self {
        attempts: 1,
        initial: Duration::ZERO,
        max: Duration::ZERO,
        rate_limited_attempts: 0,
        rate_limited_wait: Duration::ZERO,
    };

    /// The wait before retry number `retry` (from 1), jittered with `rng`.
    pub fn delay<R: Rng + ?Sized>(&self, retry: u32, rng: &mut R) -> Duration {
        let doubling = 2u32.saturating_pow(retry.saturating_sub(1));
        let ceiling = self.initial.saturating_mul(doubling).min(self.max);
        let floor = ceiling / 2;
        if ceiling.is_zero() {
            return Duration::ZERO;
        }
        floor + ceiling.mul_f64(rng.random::<f64>() / 2.0)
    }
}

/// Whether a request may be sent again when its outcome is unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Repeat {
    /// Reading, checking in (a spare token is harmless) or uploading (a token is good for one
    /// upload, so a repeated upload is refused, never counted twice).
    Safe,
    /// Creating a task: retried only when the request cannot have reached the server.
    OnlyUnsent,
}

/// How long the request of a relayed batch of `messages` messages may take.
fn relay_timeout(messages: usize) -> Duration {
    let messages = u32::try_from(messages).unwrap_or(u32::MAX);
    REQUEST_TIMEOUT + RELAYED_MESSAGE_TIMEOUT * messages
}

/// A connection to one tally server: a base URL, a credential and a shared connection pool.
/// Cheap to clone (clones share the pool).
#[derive(Clone)]
pub struct Client {
    base: Arc<str>,
    http: reqwest::Client,
    retry: RetryPolicy,
    token: Option<Arc<str>>,
    /// How long one request may take, retries not included.
    timeout: Duration,
}

impl std::fmt::Debug for Client {
    /// Never shows the credential.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.base)
            .field("retry", &self.retry)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client of the server at `base_url` (`http://host:port` or `https://…`, without the
    /// `/v1` prefix), retrying with [`RetryPolicy::default`].
    ///
    /// # Errors
    ///
    /// [`ClientError::InvalidUrl`] if the URL is not an absolute `http` or `https` URL.
    pub fn new(base_url: &str) -> Result<Self, ClientError> {
        Self::build(base_url, None)
    }

    /// A client of the server at `base_url` that trusts only the CA certificates in
    /// `ca_pem` (PEM, one or more) for `https` URLs: a server with a self-signed or private
    /// certificate.
    ///
    /// # Errors
    ///
    /// [`ClientError::InvalidUrl`] as [`Client::new`]; [`ClientError::InvalidCertificate`] if
    /// `ca_pem` holds no PEM certificate.
    pub fn with_ca_cert(base_url: &str, ca_pem: &[u8]) -> Result<Self, ClientError> {
        Self::build(base_url, Some(ca_pem))
    }

    fn build(base_url: &str, ca_pem: Option<&[u8]>) -> Result<Self, ClientError> {
        let invalid = |reason: &str| ClientError::InvalidUrl {
            url: base_url.to_owned(),
            reason: reason.to_owned(),
        };
        let trimmed = base_url.trim_end_matches('/');
        let rest = trimmed
            .strip_prefix("http://")
            .or_else(|| trimmed.strip_prefix("https://"))
            .ok_or_else(|| invalid("expected http://HOST:PORT or https://HOST:PORT"))?;
        if rest.is_empty() || rest.starts_with('/') {
            return Err(invalid("the host is missing, e.g. http://127.0.0.1:8080"));
        }
        if rest.contains(['?', '#']) {
            return Err(invalid(
                "give the server's base URL, without a query or fragment",
            ));
        }
        // TLS through rustls with the ring provider; an error means a provider is installed
        // already, which then serves.
        rustls::crypto::ring::default_provider()
            .install_default()
            .ok();
        let mut builder = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            // Below the server's idle deadline, so that a pooled connection is not reused
            // just as the server closes it.
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .tcp_nodelay(true);
        if let Some(pem) = ca_pem {
            let certificates = reqwest::Certificate::from_pem_bundle(pem)
                .ok()
                .filter(|c| !c.is_empty())
                .ok_or_else(|| ClientError::InvalidCertificate {
                    reason: "no PEM certificate (-----BEGIN CERTIFICATE-----) in the CA file"
                        .into(),
                })?;
            builder = builder.tls_certs_only(certificates);
        }
        let http = builder.build().map_err(|e| invalid(&error_chain(&e)))?;
        Ok(Self {
            base: Arc::from(trimmed),
            http,
            retry: RetryPolicy::default(),
            token: None,
            timeout: REQUEST_TIMEOUT,
        })
    }

    /// The same client sending `token` (`Authorization: Bearer TOKEN`) with every request:
    /// an operator's, an analyst's or a device's credential, as the endpoints need.
    pub fn with_token(mut self, token: &str) -> Self {
        self.token = Some(Arc::from(token.trim()));
        self
    }

    /// The same client with another retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The server's base URL.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// `GET /v1/rounds`: the open rounds.
    ///
    /// # Errors
    ///
    /// [`ClientError`] if the request fails on every attempt or is refused.
    pub async fn open_rounds(&self) -> Result<Vec<RoundQuery>, ClientError> {
        self.json(Method::GET, "/rounds", None, Repeat::Safe).await
    }

    /// `POST /v1/rounds/{id}/check-in`: single-use upload tokens for `devices` devices.
    ///
    /// # Errors
    ///
    /// [`ClientError`]; [`ClientError::round_is_over`] tells a closed round.
    pub async fn check_in(
        &self,
        round_id: &str,
        devices: u32,
    ) -> Result<CheckInGrant, ClientError> {
        let body = CheckIn {
            version: PROTOCOL_VERSION,
            devices,
        };
        let path = format!("/rounds/{round_id}/check-in");
        self.json(Method::POST, &path, Some(encode(&body)), Repeat::Safe)
            .await
    }

    /// `POST /v1/rounds/{id}/uploads`: one report or abstention per token.
    ///
    /// # Errors
    ///
    /// [`ClientError`]; [`ClientError::round_is_over`] tells a closed round.
    pub async fn upload(
        &self,
        round_id: &str,
        uploads: &[Upload],
    ) -> Result<UploadReceipt, ClientError> {
        self.post_uploads(&format!("/rounds/{round_id}/uploads"), uploads)
            .await
    }

    /// `POST /v1/rounds/{id}/sealed-uploads` (to a split-trust population's relay): one
    /// upload per token, its messages each sealed to the aggregator's key.
    ///
    /// # Errors
    ///
    /// [`ClientError`]; [`ClientError::round_is_over`] tells a closed round.
    pub async fn upload_sealed(
        &self,
        round_id: &str,
        uploads: &[SealedUpload],
    ) -> Result<UploadReceipt, ClientError> {
        self.post_uploads(&format!("/rounds/{round_id}/sealed-uploads"), uploads)
            .await
    }

    /// Posts a batch of `uploads` ([`tally_messages::UploadBatch`] or
    /// [`tally_messages::SealedUploadBatch`], borrowing its uploads) to `path`.
    async fn post_uploads<T: Serialize>(
        &self,
        path: &str,
        uploads: &[T],
    ) -> Result<UploadReceipt, ClientError> {
        #[derive(Serialize)]
        struct Batch<'a, T> {
            version: u32,
            uploads: &'a [T],
        }
        let body = Batch {
            version: PROTOCOL_VERSION,
            uploads,
        };
        self.json(Method::POST, path, Some(encode(&body)), Repeat::Safe)
            .await
    }

    /// `POST /v1/rounds/{id}/relayed` at the aggregator, with a relay's credential: the one
    /// batch of a round's sealed messages. Sent again when its outcome is unknown: the
    /// aggregator takes one batch per round and refuses a second
    /// ([`ErrorCode::AlreadyRelayed`](tally_messages::ErrorCode)), so nothing is counted twice.
    /// The aggregator opens every message before it answers: the request may take 30 s and
    /// 1 ms more per message.
    ///
    /// # Errors
    ///
    /// [`ClientError`]: the aggregator's refusal, or a failure on every attempt.
    pub async fn relay(
        &self,
        round_id: &str,
        batch: &RelayedBatch,
    ) -> Result<RelayReceipt, ClientError> {
        let path = format!("/rounds/{round_id}/relayed");
        let opening = Self {
            timeout: relay_timeout(batch.messages.len()),
            ..self.clone()
        };
        opening
            .json(Method::POST, &path, Some(encode(batch)), Repeat::Safe)
            .await
    }

    /// `GET /v1/hpke-keys` (of the aggregator): its key configurations, RFC 9458's
    /// `application/ohttp-keys` body, the current key first. Fetch them from the aggregator
    /// itself ([`crate::AggregatorKey::fetch`] checks it), never through a relay.
    ///
    /// # Errors
    ///
    /// [`ClientError`] if the request fails; [`ClientError::AggregatorKey`] if the body holds
    /// no configuration of tally-seal's suite.
    pub async fn hpke_keys(&self) -> Result<Vec<tally_seal::KeyConfig>, ClientError> {
        let body = self
            .send(Method::GET, "/hpke-keys", None, Repeat::Safe)
            .await?;
        tally_seal::decode_key_configs(&body).map_err(|e| ClientError::AggregatorKey {
            reason: format!("{}{API_PREFIX}/hpke-keys: {e}", self.base),
        })
    }

    /// `POST /v1/tasks`: creates a task.
    ///
    /// # Errors
    ///
    /// [`ClientError`]: the server's `invalid_task` or `budget_exceeded` say why it refused.
    pub async fn create_task(&self, spec: &TaskSpec) -> Result<TaskInfo, ClientError> {
        self.json(
            Method::POST,
            "/tasks",
            Some(encode(spec)),
            Repeat::OnlyUnsent,
        )
        .await
    }

    /// `GET /v1/tasks`: every task.
    ///
    /// # Errors
    ///
    /// [`ClientError`] if the request fails on every attempt or is refused.
    pub async fn tasks(&self) -> Result<Vec<TaskInfo>, ClientError> {
        self.json(Method::GET, "/tasks", None, Repeat::Safe).await
    }

    /// `GET /v1/tasks/{id}`: one task.
    ///
    /// # Errors
    ///
    /// [`ClientError`]; the server's `unknown_task` for an id it does not know.
    pub async fn task(&self, id: &str) -> Result<TaskInfo, ClientError> {
        self.json(Method::GET, &format!("/tasks/{id}"), None, Repeat::Safe)
            .await
    }

    /// `POST /v1/tasks/{id}/cancel`: cancels a task (cancelling twice is harmless).
    ///
    /// # Errors
    ///
    /// [`ClientError`]; the server's `unknown_task` for an id it does not know.
    pub async fn cancel_task(&self, id: &str) -> Result<TaskInfo, ClientError> {
        let path = format!("/tasks/{id}/cancel");
        self.json(Method::POST, &path, None, Repeat::Safe).await
    }

    /// `GET /v1/tasks/{id}/result`: the released document exactly as the server stored it.
    ///
    /// # Errors
    ///
    /// [`ClientError`]; the server's `no_result` while the task runs or when it ended
    /// without a release.
    pub async fn result_text(&self, id: &str) -> Result<String, ClientError> {
        let path = format!("/tasks/{id}/result");
        self.text(Method::GET, &path, None, Repeat::Safe).await
    }

    /// `GET /v1/tasks/{id}/result`, parsed.
    ///
    /// # Errors
    ///
    /// As [`Client::result_text`], and [`ClientError::Decode`] if it does not parse.
    pub async fn result(&self, id: &str) -> Result<TaskResult, ClientError> {
        let path = format!("/tasks/{id}/result");
        self.json(Method::GET, &path, None, Repeat::Safe).await
    }

    /// `GET /v1/ledger`: every population's budget, spending and what is left.
    ///
    /// # Errors
    ///
    /// [`ClientError`] if the request fails on every attempt or is refused.
    pub async fn ledger(&self) -> Result<Vec<LedgerBalance>, ClientError> {
        self.json(Method::GET, "/ledger", None, Repeat::Safe).await
    }

    /// `POST /v1/populations`: provisions a population (operator only).
    ///
    /// # Errors
    ///
    /// [`ClientError`]: the server's `population_exists` for a name taken.
    pub async fn create_population(
        &self,
        spec: &PopulationSpec,
    ) -> Result<PopulationInfo, ClientError> {
        self.json(
            Method::POST,
            "/populations",
            Some(encode(spec)),
            Repeat::OnlyUnsent,
        )
        .await
    }

    /// `POST /v1/populations/{name}/devices`: enrolls `count` devices of `population`
    /// (operator only, at most 10 000 per request), one device credential each. The answer
    /// holds their tokens, shown this once.
    ///
    /// # Errors
    ///
    /// [`ClientError`]: the server's `unknown_population` for a population nobody
    /// provisioned.
    pub async fn enroll_devices(
        &self,
        population: &str,
        count: u32,
    ) -> Result<EnrolledDevices, ClientError> {
        let body = DeviceEnrollment {
            version: PROTOCOL_VERSION,
            count,
        };
        let path = format!("/populations/{population}/devices");
        self.json(Method::POST, &path, Some(encode(&body)), Repeat::OnlyUnsent)
            .await
    }

    /// `GET /v1/populations`: the populations the credential acts on (all for an operator).
    ///
    /// # Errors
    ///
    /// [`ClientError`] if the request fails on every attempt or is refused.
    pub async fn populations(&self) -> Result<Vec<PopulationInfo>, ClientError> {
        self.json(Method::GET, "/populations", None, Repeat::Safe)
            .await
    }

    /// `POST /v1/credentials`: creates a credential (operator only). The answer holds its
    /// token, shown this once.
    ///
    /// # Errors
    ///
    /// [`ClientError`]: the server's `forbidden` for a credential that is not an operator's.
    pub async fn create_credential(
        &self,
        spec: &CredentialSpec,
    ) -> Result<IssuedCredential, ClientError> {
        self.json(
            Method::POST,
            "/credentials",
            Some(encode(spec)),
            Repeat::OnlyUnsent,
        )
        .await
    }

    /// `GET /v1/credentials`: every credential, never a secret (operator only).
    ///
    /// # Errors
    ///
    /// [`ClientError`] if the request fails on every attempt or is refused.
    pub async fn credentials(&self) -> Result<Vec<CredentialInfo>, ClientError> {
        self.json(Method::GET, "/credentials", None, Repeat::Safe)
            .await
    }

    /// `POST /v1/credentials/{id}/revoke`: revokes a credential (operator only; revoking twice
    /// is harmless).
    ///
    /// # Errors
    ///
    /// [`ClientError`]; the server's `unknown_credential` for an id it does not know.
    pub async fn revoke_credential(&self, id: &str) -> Result<CredentialInfo, ClientError> {
        let path = format!("/credentials/{id}/revoke");
        self.json(Method::POST, &path, None, Repeat::Safe).await
    }

    async fn json<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        repeat: Repeat,
    ) -> Result<T, ClientError> {
        let text = self.text(method.clone(), path, body, repeat).await?;
        serde_json::from_str(&text).map_err(|source| ClientError::Decode {
            request: format!("{method} {API_PREFIX}{path}"),
            source,
        })
    }

    /// Sends a request, retrying as the policy says, and returns the body of its success as
    /// text.
    async fn text(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        repeat: Repeat,
    ) -> Result<String, ClientError> {
        let bytes = self.send(method, path, body, repeat).await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Sends a request, retrying as the policy says, and returns the body of its success.
    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        repeat: Repeat,
    ) -> Result<Vec<u8>, ClientError> {
        let url = format!("{}{API_PREFIX}{path}", self.base);
        let request = || format!("{method} {API_PREFIX}{path}");
        let mut attempt = 0;
        let mut refusals = 0;
        let mut waited = Duration::ZERO;
        loop {
            attempt += 1;
            let mut builder = self
                .http
                .request(method.clone(), &url)
                .timeout(self.timeout);
            if let Some(token) = &self.token {
                builder = builder.bearer_auth(token);
            }
            if let Some(body) = &body {
                builder = builder
                    .header(CONTENT_TYPE, "application/json")
                    .body(body.clone());
            }
            let (error, retryable) = match builder.send().await {
                Ok(response) if response.status() == reqwest::StatusCode::TOO_MANY_REQUESTS => {
                    refusals += 1;
                    let retry_after = retry_after(&response);
                    let wait = retry_after.unwrap_or_default()
                        + self.retry.delay(refusals, &mut rand::rng());
                    if refusals > self.retry.rate_limited_attempts
                        || waited + wait > self.retry.rate_limited_wait
                    {
                        return Err(ClientError::RateLimited {
                            request: request(),
                            refusals,
                            waited,
                            retry_after,
                        });
                    }
                    tracing::debug!(request = %request(), refusals, ?wait, "rate limited; waiting");
                    tokio::time::sleep(wait).await;
                    waited += wait;
                    // A refusal does not count against the attempts of other failures.
                    attempt -= 1;
                    continue;
                }
                Ok(response) => {
                    let status = response.status();
                    match response.bytes().await {
                        Ok(bytes) if status.is_success() => return Ok(bytes.to_vec()),
                        Ok(bytes) => (
                            status_error(
                                request(),
                                status.as_u16(),
                                String::from_utf8_lossy(&bytes).into_owned(),
                            ),
                            status.is_server_error(),
                        ),
                        Err(e) => (transport(request(), attempt, &e), repeat == Repeat::Safe),
                    }
                }
                Err(e) => {
                    let unsent = e.is_connect();
                    (
                        transport(request(), attempt, &e),
                        repeat == Repeat::Safe || unsent,
                    )
                }
            };
            if !retryable || attempt >= self.retry.attempts {
                return Err(error);
            }
            let delay = self.retry.delay(attempt, &mut rand::rng());
            tracing::debug!(request = %request(), attempt, ?delay, %error, "retrying");
            tokio::time::sleep(delay).await;
        }
    }
}

/// The wait a 429 answer's `Retry-After` asks for, when it gives whole seconds (the form
/// tally's server sends; an HTTP date is ignored).
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let value = response.headers().get(reqwest::header::RETRY_AFTER)?;
    let seconds: u64 = value.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(seconds))
}

fn encode<T: Serialize + ?Sized>(body: &T) -> Vec<u8> {
    // Unwrap safety: the protocol's types serialize to JSON infallibly (no maps with
    // non-string keys, no failing serializers).
    serde_json::to_vec(body).expect("protocol bodies serialize")
}

fn status_error(request: String, status: u16, text: String) -> ClientError {
    match serde_json::from_str::<ErrorBody>(&text) {
        Ok(body) => ClientError::Server {
            request,
            status,
            body,
        },
        Err(_) => ClientError::Status {
            request,
            status,
            text: text.chars().take(QUOTED_BODY_CHARS).collect(),
        },
    }
}

fn transport(request: String, attempts: u32, error: &reqwest::Error) -> ClientError {
    ClientError::Transport {
        request,
        attempts,
        detail: error_chain(error),
    }
}

/// An error and its causes on one line.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap_with_jitter_in_the_upper_half() {
        let policy = RetryPolicy::default();
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let ceilings = [100, 200, 400, 800, 1600, 3200, 4000, 4000, 4000];
        for (retry, ceiling) in (1..).zip(ceilings) {
            let ceiling = Duration::from_millis(ceiling);
            for _ in 0..200 {
                let delay = policy.delay(retry, &mut rng);
                assert!(
                    delay >= ceiling / 2 && delay <= ceiling,
                    "retry {retry}: {delay:?} outside [{:?}, {ceiling:?}]",
                    ceiling / 2
                );
            }
        }
        assert_eq!(RetryPolicy::NONE.delay(1, &mut rng), Duration::ZERO);
        // A request that keeps failing waits between half of the ceilings' sum and all of it
        // over its retries, as the default's documentation says.
        assert_eq!(ceilings.len() + 1, policy.attempts as usize);
        assert_eq!(ceilings.iter().sum::<u64>(), 18_300);
    }

    #[test]
    fn base_urls_are_checked() {
        for bad in [
            "127.0.0.1:8080",
            "ftp://host",
            "http://",
            "http:///v1",
            "http://h?x=1",
        ] {
            let error = Client::new(bad).unwrap_err();
            assert!(
                matches!(error, ClientError::InvalidUrl { .. }),
                "{bad}: {error}"
            );
        }
        let client = Client::new("http://127.0.0.1:8080/").unwrap();
        assert_eq!(client.base_url(), "http://127.0.0.1:8080");
    }
}
