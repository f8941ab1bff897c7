//! TLS for the listeners: a certificate chain and its private key, read from PEM files and
//! served with rustls (TLS 1.2 and 1.3, the ring provider's safe defaults).

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

use crate::ServerError;

/// A server certificate and key, ready to accept TLS connections.
#[derive(Clone)]
pub struct Tls {
    acceptor: TlsAcceptor,
    /// The certificate chain, which the other replicas of a server present too: what this
    /// one trusts when it forwards them a round's requests.
    chain: Vec<CertificateDer<'static>>,
}

impl std::fmt::Debug for Tls {
    /// Never shows the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").finish_non_exhaustive()
    }
}

impl Tls {
    /// Reads the certificate chain (the server's certificate first) from `cert` and its
    /// private key from `key`, both PEM.
    ///
    /// # Errors
    ///
    /// [`ServerError::Invalid`] if a file cannot be read or parsed, or the key does not fit
    /// the certificate.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<Self, ServerError> {
        let invalid = |what: &Path, e: &dyn std::fmt::Display| {
            ServerError::Invalid(format!("{}: {e}", what.display()))
        };
        let chain = CertificateDer::pem_file_iter(cert)
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|e| invalid(cert, &e))?;
        if chain.is_empty() {
            return Err(invalid(cert, &"no certificate in the file"));
        }
        let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| invalid(key, &e))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .and_then(|builder| {
                builder
                    .with_no_client_auth()
                    .with_single_cert(chain.clone(), key_der)
            })
            .map_err(|e| invalid(key, &e))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            chain,
        })
    }

    /// The certificate chain served.
    pub fn chain(&self) -> &[CertificateDer<'static>] {
        &self.chain
    }

    pub(crate) fn acceptor(&self) -> &TlsAcceptor {
        &self.acceptor
    }
}
