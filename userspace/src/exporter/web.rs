//! `--web.config.file FILE`: TLS and basic authentication for the exporter's server, in the
//! file format of Prometheus' exporter-toolkit (`web-configuration.md` in
//! prometheus/exporter-toolkit), so the same file serves node_exporter and tracekit:
//!
//! ```yaml
//! tls_server_config:
//!   cert_file: /etc/tracekit/server.crt     # PEM, the chain: server first
//!   key_file: /etc/tracekit/server.key      # PEM (PKCS#8, PKCS#1 or SEC1)
//!   client_auth_type: RequireAndVerifyClientCert   # default NoClientCert
//!   client_ca_file: /etc/tracekit/clients-ca.crt
//!   min_version: TLS12                      # TLS12 (default) or TLS13
//! basic_auth_users:                         # user: bcrypt hash (htpasswd -nBC 10 "" | tr -d ':')
//!   prometheus: $2y$10$...
//! ```
//!
//! Of exporter-toolkit's keys, `client_auth_type` takes `NoClientCert`,
//! `VerifyClientCertIfGiven` and `RequireAndVerifyClientCert` (client certificates checked
//! against `client_ca_file`); `cipher_suites`, `curve_preferences`, `max_version`,
//! `client_allowed_sans` and `http_server_config` are refused by name rather than ignored
//! (rustls' defaults hold: TLS 1.2 and 1.3, its safe suites). Every request, TLS or not,
//! then needs a user and password of `basic_auth_users` when any is set: 401 with
//! `WWW-Authenticate: Basic` otherwise. A file that does not parse, names a file that
//! cannot be read, holds no certificate or key, or a hash that is not bcrypt is one line at
//! start (exit 2).

use std::{
    collections::{BTreeMap, HashSet},
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    extract::Request,
    http::{HeaderValue, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use base64::Engine as _;
use rustls::{
    RootCertStore, ServerConfig,
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
    server::WebPkiClientVerifier,
};
use serde::Deserialize;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::{TlsAcceptor, server::TlsStream};

use crate::{Error, Result};

/// How long a client may take over its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    tls_server_config: Option<TlsFile>,
    #[serde(default)]
    basic_auth_users: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TlsFile {
    cert_file: PathBuf,
    key_file: PathBuf,
    client_auth_type: Option<String>,
    client_ca_file: Option<PathBuf>,
    min_version: Option<String>,
}

/// A checked web config: the TLS acceptor, if any, and the users.
#[derive(Clone)]
pub struct WebConfig {
    /// TLS, when `tls_server_config` is set.
    pub tls: Option<TlsAcceptor>,
    /// Basic auth: user to bcrypt hash; empty: no authentication.
    pub users: Arc<BTreeMap<String, String>>,
    /// Passwords already verified (user, password): bcrypt costs ~50 ms a check, and a
    /// scraper sends the same pair every scrape.
    verified: Arc<Mutex<HashSet<(String, String)>>>,
}

impl std::fmt::Debug for WebConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebConfig")
            .field("tls", &self.tls.is_some())
            .field("users", &self.users.keys().collect::<Vec<_>>())
            .finish()
    }
}

fn read(path: &Path, what: &str) -> std::result::Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|err| format!("{what} {}: {err}", path.display()))
}

impl WebConfig {
    /// Reads and checks the web config file at `path`.
    ///
    /// # Errors
    /// A usage error, one line naming the file and the bad part.
    pub fn load(path: &Path) -> Result<Self> {
        let shown = path.display().to_string();
        Self::load_inner(path).map_err(|why| {
            Error::usage(format!(
                "--web.config.file {}: {why}",
                crate::error::quote(&shown)
            ))
        })
    }

    fn load_inner(path: &Path) -> std::result::Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|err| err.to_string())?;
        let text = if text.trim().is_empty() { "{}" } else { &text };
        let file: File = serde_yaml_ng::from_str(text).map_err(|err| {
            let message = err.to_string();
            message.lines().next().unwrap_or("").to_string()
        })?;
        // Relative paths are relative to the file, as exporter-toolkit takes them.
        let base = path.parent().unwrap_or(Path::new("."));
        let tls = match file.tls_server_config {
            Some(tls) => Some(acceptor(&tls, base)?),
            None => None,
        };
        for (user, hash) in &file.basic_auth_users {
            if !matches!(hash.get(..4), Some("$2a$" | "$2b$" | "$2x$" | "$2y$"))
                || hash.parse::<bcrypt::HashParts>().is_err()
            {
                return Err(format!("basic_auth_users: {user}: not a bcrypt hash"));
            }
        }
        Ok(Self {
            tls,
            users: Arc::new(file.basic_auth_users),
            verified: Arc::default(),
        })
    }

    /// Whether `authorization` (the header's value) names a user of the file with the right
    /// password.
    fn allows(&self, authorization: Option<&HeaderValue>) -> bool {
        let Some(credentials) = authorization
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Basic "))
            .and_then(|b64| {
                base64::engine::general_purpose::STANDARD
                    .decode(b64.trim())
                    .ok()
            })
            .and_then(|raw| String::from_utf8(raw).ok())
        else {
            return false;
        };
        let Some((user, password)) = credentials.split_once(':') else {
            return false;
        };
        let Some(hash) = self.users.get(user) else {
            return false;
        };
        let key = (user.to_string(), password.to_string());
        let mut verified = self.verified.lock().unwrap_or_else(|e| e.into_inner());
        if verified.contains(&key) {
            return true;
        }
        let ok = bcrypt::verify(password, hash).unwrap_or(false);
        if ok {
            verified.insert(key);
        }
        ok
    }
}

fn acceptor(tls: &TlsFile, base: &Path) -> std::result::Result<TlsAcceptor, String> {
    let resolve = |p: &Path| {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            base.join(p)
        }
    };
    let cert_file = resolve(&tls.cert_file);
    let key_file = resolve(&tls.key_file);
    let pem = read(&cert_file, "tls_server_config.cert_file")?;
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
        .collect::<std::result::Result<_, _>>()
        .map_err(|err| format!("tls_server_config.cert_file {}: {err}", cert_file.display()))?;
    if chain.is_empty() {
        return Err(format!(
            "tls_server_config.cert_file {}: no PEM certificate in it",
            cert_file.display()
        ));
    }
    let pem = read(&key_file, "tls_server_config.key_file")?;
    let key = PrivateKeyDer::from_pem_slice(&pem).map_err(|err| {
        format!(
            "tls_server_config.key_file {}: no PEM private key in it ({err})",
            key_file.display()
        )
    })?;
    let versions: &[&rustls::SupportedProtocolVersion] = match tls.min_version.as_deref() {
        None | Some("TLS12") => rustls::ALL_VERSIONS,
        Some("TLS13") => &[&rustls::version::TLS13],
        Some(other) => {
            return Err(format!(
                "tls_server_config.min_version {other}: expected TLS12 or TLS13"
            ));
        }
    };
    let builder = ServerConfig::builder_with_protocol_versions(versions);
    let auth = tls.client_auth_type.as_deref().unwrap_or("NoClientCert");
    let builder = match auth {
        "NoClientCert" | "" => builder.with_no_client_auth(),
        "VerifyClientCertIfGiven" | "RequireAndVerifyClientCert" => {
            let Some(ca_file) = &tls.client_ca_file else {
                return Err(format!(
                    "tls_server_config.client_auth_type {auth} needs client_ca_file"
                ));
            };
            let ca_file = resolve(ca_file);
            let pem = read(&ca_file, "tls_server_config.client_ca_file")?;
            let mut roots = RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|err| {
                    format!(
                        "tls_server_config.client_ca_file {}: {err}",
                        ca_file.display()
                    )
                })?;
                roots.add(cert).map_err(|err| {
                    format!(
                        "tls_server_config.client_ca_file {}: {err}",
                        ca_file.display()
                    )
                })?;
            }
            if roots.is_empty() {
                return Err(format!(
                    "tls_server_config.client_ca_file {}: no PEM certificate in it",
                    ca_file.display()
                ));
            }
            let verifier = WebPkiClientVerifier::builder(Arc::new(roots));
            let verifier = if auth == "VerifyClientCertIfGiven" {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            builder.with_client_cert_verifier(verifier.build().map_err(|err| {
                format!(
                    "tls_server_config.client_ca_file {}: {err}",
                    ca_file.display()
                )
            })?)
        }
        other => {
            return Err(format!(
                "tls_server_config.client_auth_type {other}: expected NoClientCert, \
                 VerifyClientCertIfGiven or RequireAndVerifyClientCert"
            ));
        }
    };
    let mut config = builder.with_single_cert(chain, key).map_err(|err| {
        format!(
            "tls_server_config: {} and {} do not make a certificate and key: {err}",
            cert_file.display(),
            key_file.display()
        )
    })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// The middleware that asks for basic auth when the web config has users.
pub async fn authenticate(
    axum::extract::State(web): axum::extract::State<WebConfig>,
    request: Request,
    next: Next,
) -> Response {
    if web.users.is_empty() {
        return next.run(request).await;
    }
    let authorization = request.headers().get(header::AUTHORIZATION).cloned();
    let check = web.clone();
    let allowed = tokio::task::spawn_blocking(move || check.allows(authorization.as_ref()))
        .await
        .unwrap_or(false);
    if allowed {
        return next.run(request).await;
    }
    (
        StatusCode::UNAUTHORIZED,
        [
            (header::WWW_AUTHENTICATE, "Basic"),
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
        ],
        "Unauthorized\n",
    )
        .into_response()
}

/// A TLS listener for `axum::serve`: TCP connections accepted and their handshakes run on
/// tasks of their own (a slow client does not hold up the others), failed handshakes logged
/// at debug level.
pub struct TlsListener {
    connections: tokio::sync::mpsc::Receiver<(TlsStream<TcpStream>, std::net::SocketAddr)>,
    local: std::net::SocketAddr,
    accepting: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    /// Serves TLS with `acceptor` on `listener`.
    pub fn new(listener: TcpListener, acceptor: TlsAcceptor) -> std::io::Result<Self> {
        let local = listener.local_addr()?;
        let (sender, connections) = tokio::sync::mpsc::channel(64);
        let accepting = tokio::spawn(async move {
            loop {
                let (stream, peer) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(err) => {
                        log::debug!("accepting a connection: {err}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let (acceptor, sender) = (acceptor.clone(), sender.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = sender.send((tls, peer)).await;
                        }
                        Ok(Err(err)) => log::debug!("TLS handshake with {peer}: {err}"),
                        Err(_) => log::debug!("TLS handshake with {peer}: timed out"),
                    }
                });
            }
        });
        Ok(Self {
            connections,
            local,
            accepting,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.connections.recv().await {
            Some(connection) => connection,
            // The accepting task never ends while the listener lives.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests;
