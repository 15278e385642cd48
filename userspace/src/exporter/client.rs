//! The HTTP client of the pushes (OTLP, Pyroscope): TLS trust, authentication and headers
//! from the config's `[otlp]` and `[pyroscope]` tables, read and checked at start.

use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};

use crate::{Error, Result, exporter::config::ClientConfig};

/// A client and what it adds to every request.
#[derive(Clone, Debug)]
pub struct PushClient {
    client: reqwest::Client,
    basic: Option<(String, String)>,
    bearer: Option<String>,
}

fn read_secret(path: &std::path::Path, what: &str) -> Result<String> {
    std::fs::read_to_string(path)
        .map(|text| text.trim_end_matches(['\n', '\r']).to_string())
        .map_err(|err| {
            Error::usage(format!(
                "{what} {}: {err}",
                crate::error::quote(&path.to_string_lossy())
            ))
        })
}

impl PushClient {
    /// A client for `table` (`otlp`, `pyroscope`: named in errors) with `config`'s settings;
    /// each request may take `timeout`.
    ///
    /// # Errors
    /// A usage error when a file named (CA, token, password) cannot be read or holds no
    /// certificate, or a header value is not one.
    pub fn new(table: &str, config: &ClientConfig, timeout: Duration) -> Result<Self> {
        let mut builder = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .user_agent(concat!("tracekit/", env!("CARGO_PKG_VERSION")));
        if let Some(path) = &config.tls.ca_file {
            let pem = std::fs::read(path).map_err(|err| {
                Error::usage(format!(
                    "[{table}] tls.ca_file {}: {err}",
                    crate::error::quote(&path.to_string_lossy())
                ))
            })?;
            let certificates = reqwest::Certificate::from_pem_bundle(&pem)
                .ok()
                .filter(|certificates| !certificates.is_empty())
                .ok_or_else(|| {
                    Error::usage(format!(
                        "[{table}] tls.ca_file {}: no PEM certificate in it",
                        crate::error::quote(&path.to_string_lossy())
                    ))
                })?;
            for certificate in certificates {
                builder = builder.add_root_certificate(certificate);
            }
        }
        if config.tls.insecure_skip_verify {
            builder = builder.danger_accept_invalid_certs(true);
        }
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in &config.headers {
            let bad = || Error::usage(format!("[{table}] headers: \"{name}\": not a valid header"));
            headers.insert(
                HeaderName::try_from(name.as_str()).map_err(|_| bad())?,
                HeaderValue::try_from(value.as_str()).map_err(|_| bad())?,
            );
        }
        builder = builder.default_headers(headers);
        let bearer = match (&config.bearer_token, &config.bearer_token_file) {
            (Some(token), _) => Some(token.clone()),
            (None, Some(path)) => Some(read_secret(path, &format!("[{table}] bearer_token_file"))?),
            (None, None) => None,
        };
        let basic = match &config.basic_auth {
            Some(basic) => {
                let password = match (&basic.password, &basic.password_file) {
                    (Some(password), _) => password.clone(),
                    (None, Some(path)) => {
                        read_secret(path, &format!("[{table}] basic_auth.password_file"))?
                    }
                    (None, None) => String::new(),
                };
                Some((basic.username.clone(), password))
            }
            None => None,
        };
        let client = builder.build().map_err(|err| Error::Runtime {
            what: format!("building the [{table}] HTTP client"),
            source: Some(Box::new(err)),
        })?;
        Ok(Self {
            client,
            basic,
            bearer,
        })
    }

    /// A POST to `url` with the client's authentication.
    pub fn post(&self, url: reqwest::Url) -> reqwest::RequestBuilder {
        let mut request = self.client.post(url);
        if let Some((user, password)) = &self.basic {
            request = request.basic_auth(user, Some(password));
        }
        if let Some(token) = &self.bearer {
            request = request.bearer_auth(token);
        }
        request
    }
}

/// The failure of a request as one line: the status and the start of the answer, or the
/// error.
pub async fn failure(answer: reqwest::Response) -> String {
    let status = answer.status();
    let body = answer.text().await.unwrap_or_default();
    let first = body.lines().next().unwrap_or("").trim();
    if first.is_empty() {
        format!("HTTP {status}")
    } else {
        // Enough to say why (servers answer one line), not a whole error page.
        let start: String = first.chars().take(200).collect();
        format!("HTTP {status}: {start}")
    }
}
