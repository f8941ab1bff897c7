//! The bound on connections (`tally serve --max-connections N`): with N connections held open
//! the next one waits, unserved, until one of them closes, and is then served, while the
//! connections held keep being answered.

use std::net::SocketAddr;
use std::time::Duration;

use tally_server::{Limits, Server};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Far longer than any answer takes: only a failure waits this long.
const GUARD: Duration = Duration::from_secs(120);

/// How long a connection past the bound is watched for an answer it must not get.
const UNSERVED: Duration = Duration::from_millis(500);

/// Sends `GET /healthz` on `stream`, keeping the connection open.
async fn ask(stream: &mut TcpStream, address: SocketAddr) {
    let request = format!("GET /healthz HTTP/1.1\r\nHost: {address}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
}

/// Reads one whole answer (headers and a `Content-Length` body) from `stream` and returns it.
async fn answer(stream: &mut TcpStream) -> String {
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 1024];
    loop {
        let text = String::from_utf8_lossy(&bytes);
        if let Some(end) = text.find("\r\n\r\n") {
            let length: usize = text[..end]
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse().unwrap())
                })
                .unwrap_or(0);
            if bytes.len() >= end + 4 + length {
                return text.into_owned();
            }
        }
        let n = stream.read(&mut buffer).await.unwrap();
        assert!(n > 0, "the server closed the connection without an answer");
        bytes.extend_from_slice(&buffer[..n]);
    }
}

/// Asks `/healthz` on `stream` and checks that the answer is 200.
async fn healthy(stream: &mut TcpStream, address: SocketAddr) {
    ask(stream, address).await;
    let text = answer(stream).await;
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
}

/// Checks that `stream` gets no answer to the request it sent, for a while.
async fn unserved(stream: &mut TcpStream) {
    let mut buffer = [0u8; 64];
    match tokio::time::timeout(UNSERVED, stream.read(&mut buffer)).await {
        Err(_) => {}
        Ok(read) => panic!(
            "a connection past the bound was answered: {:?}",
            read.map(|n| String::from_utf8_lossy(&buffer[..n]).into_owned())
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_past_the_bound_waits_until_one_closes_and_is_then_served() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("tally.db").display());
    let limits = Limits {
        max_connections: 2,
        // Held connections are idle between their requests: keep them open.
        header_timeout: GUARD,
        shutdown_grace: Duration::from_secs(1),
        ..Limits::default()
    };
    let server = Server::start_with(&db, &limits).await.unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let listeners = tally_server::Listeners {
        api: listener,
        metrics: None,
        tls: None,
    };
    let serving = server.serve(listeners, &limits, async {
        stopped.await.ok();
    });
    let client = async {
        // Two connections, both served and held open.
        let mut first = TcpStream::connect(address).await.unwrap();
        healthy(&mut first, address).await;
        let mut second = TcpStream::connect(address).await.unwrap();
        healthy(&mut second, address).await;
        // A third connects (the kernel queues it) but its request is not served...
        let mut third = TcpStream::connect(address).await.unwrap();
        ask(&mut third, address).await;
        unserved(&mut third).await;
        // ...while the two held keep being answered.
        healthy(&mut first, address).await;
        healthy(&mut second, address).await;
        // Closing one lets the third in, and its waiting request is answered.
        drop(first);
        let text = answer(&mut third).await;
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        // The bound holds again with the new pair: a fourth waits until the second closes.
        let mut fourth = TcpStream::connect(address).await.unwrap();
        ask(&mut fourth, address).await;
        unserved(&mut fourth).await;
        healthy(&mut third, address).await;
        drop(second);
        let text = answer(&mut fourth).await;
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        healthy(&mut third, address).await;
        healthy(&mut fourth, address).await;
        stop.send(()).unwrap();
    };
    tokio::time::timeout(GUARD, async { tokio::join!(serving, client).0 })
        .await
        .expect("the bound stopped the server from answering")
        .unwrap();
    server.shutdown().await;
}
