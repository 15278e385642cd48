//! The HTTP client of the pushes (OTLP, Pyroscope): TLS trust, authentication and headers
//! from the config's `[otlp]` and `[pyroscope]` tables, read and checked at start.

use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderName, HeaderValue};

use crate::{Error, Result, exporter::config::ClientConfig};

/// A client and what it adds to every request.
#[derive(Clone, Debug)]
pub struct PushClient {
    client: reqwest::Client,
    credentials: Credentials,
}

/// What a push authenticates with, read from the files named at start.
#[derive(Clone, Debug, Default)]
pub enum Credentials {
    /// Nothing.
    #[default]
    None,
    /// `Authorization: Basic`, of this user and password.
    Basic(String, String),
    /// `Authorization: Bearer`, of this token.
    Bearer(String),
}

impl Credentials {
    /// The credentials `config` gives, for `table` (named in errors).
    ///
    /// # Errors
    /// A usage error when a token or password file cannot be read.
    pub fn read(table: &str, config: &ClientConfig) -> Result<Self> {
        if let Some(token) = &config.bearer_token {
            return Ok(Self::Bearer(token.clone()));
        }
        if let Some(path) = &config.bearer_token_file {
            return Ok(Self::Bearer(read_secret(
                path,
                &format!("[{table}] bearer_token_file"),
            )?));
        }
        let Some(basic) = &config.basic_auth else {
            return Ok(Self::None);
        };
        let password = match (&basic.password, &basic.password_file) {
            (Some(password), _) => password.clone(),
            (None, Some(path)) => {
                read_secret(path, &format!("[{table}] basic_auth.password_file"))?
            }
            (None, None) => String::new(),
        };
        Ok(Self::Basic(basic.username.clone(), password))
    }

    /// The `Authorization` header's value, if any.
    pub fn header(&self) -> Option<String> {
        use base64::Engine as _;
        match self {
            Self::None => None,
            Self::Basic(user, password) => Some(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
            )),
            Self::Bearer(token) => Some(format!("Bearer {token}")),
        }
    }
}

/// The PEM bundle of `config`'s `tls.ca_file`, checked to hold a certificate.
///
/// # Errors
/// A usage error when the file cannot be read or holds no PEM certificate.
pub fn read_ca(table: &str, config: &ClientConfig) -> Result<Option<Vec<u8>>> {
    let Some(path) = &config.tls.ca_file else {
        return Ok(None);
    };
    let shown = crate::error::quote(&path.to_string_lossy());
    let pem = std::fs::read(path)
        .map_err(|err| Error::usage(format!("[{table}] tls.ca_file {shown}: {err}")))?;
    if reqwest::Certificate::from_pem_bundle(&pem)
        .is_ok_and(|certificates| !certificates.is_empty())
    {
        Ok(Some(pem))
    } else {
        Err(Error::usage(format!(
            "[{table}] tls.ca_file {shown}: no PEM certificate in it"
        )))
    }
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
        if let Some(pem) = read_ca(table, config)? {
            let certificates = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|err| Error::usage(format!("[{table}] tls.ca_file: {err}")))?;
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
        let credentials = Credentials::read(table, config)?;
        let client = builder.build().map_err(|err| Error::Runtime {
            what: format!("building the [{table}] HTTP client"),
            source: Some(Box::new(err)),
        })?;
        Ok(Self {
            client,
            credentials,
        })
    }

    /// A POST to `url` with the client's authentication.
    pub fn post(&self, url: reqwest::Url) -> reqwest::RequestBuilder {
        let request = self.client.post(url);
        match &self.credentials {
            Credentials::None => request,
            Credentials::Basic(user, password) => request.basic_auth(user, Some(password)),
            Credentials::Bearer(token) => request.bearer_auth(token),
        }
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

/// How long a server asks a client to wait before trying again, from its `Retry-After`
/// header (RFC 9110 10.2.3): a number of seconds, or an HTTP-date (a date already past:
/// no wait); `None` without the header or with one that says neither.
pub fn retry_after(headers: &reqwest::header::HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_takes_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let with = |value: &str| {
            let mut headers = reqwest::header::HeaderMap::new();
            headers.insert(
                reqwest::header::RETRY_AFTER,
                HeaderValue::from_str(value).unwrap(),
            );
            retry_after(&headers, now)
        };
        assert_eq!(with("7"), Some(Duration::from_secs(7)));
        assert_eq!(with(" 120 "), Some(Duration::from_secs(120)));
        // 1_700_000_000 is Tue, 14 Nov 2023 22:13:20 GMT.
        assert_eq!(
            with("Tue, 14 Nov 2023 22:13:50 GMT"),
            Some(Duration::from_secs(30))
        );
        assert_eq!(with("Tue, 14 Nov 2023 22:00:00 GMT"), Some(Duration::ZERO));
        assert_eq!(with("soon"), None);
        assert_eq!(with("-1"), None);
        assert_eq!(retry_after(&reqwest::header::HeaderMap::new(), now), None);
    }
}
