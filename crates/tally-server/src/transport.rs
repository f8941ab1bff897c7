//! The listeners: TLS, a bound on connections, a deadline on request headers (which also
//! closes a connection idle between requests), and a graceful shutdown that no slow client
//! can hold up.

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::timeout;
use tracing::{debug, warn};

use crate::tls::Tls;

/// The bounds of a listener.
#[derive(Clone, Debug)]
pub struct Limits {
    /// How long a client has to send a request's headers, counted from the connection's
    /// start or the end of its previous request: a connection that takes longer (a slowloris
    /// client, or one idle between requests) is closed.
    pub header_timeout: Duration,
    /// How long a client has to send a request's body once its headers arrived (`408`).
    pub body_timeout: Duration,
    /// The most connections served at once; more wait to be accepted.
    pub max_connections: usize,
    /// How long a shutdown waits for the requests in flight before it closes their
    /// connections.
    pub shutdown_grace: Duration,
    /// Requests per second each credential may send on average (`429` beyond, with
    /// `Retry-After`); `None` for no limit.
    pub requests_per_second: Option<u32>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            max_connections: 4096,
            shutdown_grace: Duration::from_secs(10),
            requests_per_second: None,
        }
    }
}

/// Serves `router` on `listener` (over TLS with `tls`) until `stop` turns true, then stops
/// accepting, lets the requests in flight finish for at most `limits.shutdown_grace` and
/// closes every connection.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    tls: Option<Tls>,
    limits: &Limits,
    mut stop: watch::Receiver<bool>,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = accept(&listener, &permits) => accepted,
            _ = stop.wait_for(|stop| *stop) => break,
        };
        let (stream, permit) = accepted;
        let (http, router, stop) = (http.clone(), router.clone(), stop.clone());
        let tls = tls.clone();
        let handshake_timeout = limits.header_timeout;
        connections.spawn(async move {
            let _permit = permit;
            match tls {
                None => run(&http, stream, router, stop).await,
                // The handshake counts against the header deadline: a slow one is dropped.
                Some(tls) => {
                    match timeout(handshake_timeout, tls.acceptor().accept(stream)).await {
                        Ok(Ok(stream)) => run(&http, stream, router, stop).await,
                        Ok(Err(error)) => debug!(%error, "a TLS handshake failed"),
                        Err(_) => debug!("a TLS handshake took too long"),
                    }
                }
            }
        });
        while connections.try_join_next().is_some() {}
    }
    drop(listener);
    let drained = async { while connections.join_next().await.is_some() {} };
    if timeout(limits.shutdown_grace, drained).await.is_err() {
        warn!(
            connections = connections.len(),
            "closing the connections still busy after the shutdown grace period"
        );
    }
    connections.abort_all();
}

/// Serves one connection until it ends, or, once `stop` turns true, until its request in
/// flight is answered (or its header deadline passes).
async fn run<I>(
    http: &hyper::server::conn::http1::Builder,
    io: I,
    router: Router,
    mut stop: watch::Receiver<bool>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let connection = http.serve_connection(TokioIo::new(io), TowerToHyperService::new(router));
    let mut connection = pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => return,
        _ = stop.wait_for(|stop| *stop) => connection.as_mut().graceful_shutdown(),
    }
    // An error here is the client's: its connection ends either way.
    let _ = connection.await;
}

/// The next connection, once one of the `permits` is free.
async fn accept(
    listener: &TcpListener,
    permits: &Arc<Semaphore>,
) -> (tokio::net::TcpStream, tokio::sync::OwnedSemaphorePermit) {
    // Unwrap safety: the semaphore is never closed.
    let permit = Arc::clone(permits)
        .acquire_owned()
        .await
        .expect("the connection semaphore is never closed");
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                // Small requests answer sooner without Nagle's delay; a failure only costs speed.
                stream.set_nodelay(true).ok();
                return (stream, permit);
            }
            // Out of file descriptors or a connection reset before it was accepted: wait a
            // little rather than spin.
            Err(error) => {
                warn!(%error, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}
