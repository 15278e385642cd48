//! The config's push tables: `[otlp]` (OTLP profiles) and `[pyroscope]` (the `--push`
//! client), with what an HTTP client of a hosted backend needs: TLS, basic auth, a bearer
//! token, extra headers (a tenant's `X-Scope-OrgID`).
//!
//! ```toml
//! [otlp]
//! endpoint = "https://otel-collector:4318"   # POSTs to ENDPOINT/v1development/profiles
//! protocol = "http/protobuf"                 # or "grpc" (endpoint http(s)://HOST:4317)
//! queue_size = 64                            # profiles held while the receiver is away
//! headers = { "X-Scope-OrgID" = "tenant1" }
//! bearer_token_file = "/etc/tracekit/token"  # or bearer_token = "..."
//! basic_auth = { username = "u", password_file = "/etc/tracekit/pw" }
//! tls = { ca_file = "/etc/tracekit/ca.pem", insecure_skip_verify = false }
//!
//! [pyroscope]                                # the same client keys, for --push
//! headers = { "X-Scope-OrgID" = "tenant1" }
//! ```

use std::{collections::BTreeMap, path::PathBuf};

use serde::Deserialize;

/// `basic_auth = { username, password | password_file }`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BasicAuth {
    /// The user.
    pub username: String,
    /// The password, as written.
    #[serde(default)]
    pub password: Option<String>,
    /// A file holding the password (its trailing newline dropped).
    #[serde(default)]
    pub password_file: Option<PathBuf>,
}

/// `tls = { ca_file, insecure_skip_verify }`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClientTls {
    /// PEM certificates to trust beside the system's (a private CA).
    pub ca_file: Option<PathBuf>,
    /// Accept any server certificate (tests only: anyone on the path can read the pushes).
    pub insecure_skip_verify: bool,
}

/// How a push client authenticates and what it adds to each request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClientConfig {
    /// Headers added to every request (`X-Scope-OrgID` for a Grafana or Mimir tenant).
    pub headers: BTreeMap<String, String>,
    /// `Authorization: Bearer TOKEN`.
    pub bearer_token: Option<String>,
    /// A file holding the bearer token (read at start).
    pub bearer_token_file: Option<PathBuf>,
    /// `Authorization: Basic`.
    pub basic_auth: Option<BasicAuth>,
    /// Server certificate checks.
    pub tls: ClientTls,
}

/// How OTLP profiles travel, named as the OpenTelemetry SDKs' `OTEL_EXPORTER_OTLP_PROTOCOL`
/// names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub enum OtlpProtocol {
    /// OTLP/HTTP: a POST of the protobuf (the receivers' port 4318).
    #[default]
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
    /// OTLP/gRPC: a unary `ProfilesService/Export` call over HTTP/2 (port 4317).
    #[serde(rename = "grpc")]
    Grpc,
}

impl OtlpProtocol {
    /// Every protocol, by [`name`](Self::name).
    pub const ALL: [OtlpProtocol; 2] = [OtlpProtocol::Grpc, OtlpProtocol::HttpProtobuf];

    /// The name `--otlp-protocol` and `[otlp] protocol` take.
    pub fn name(self) -> &'static str {
        match self {
            OtlpProtocol::HttpProtobuf => "http/protobuf",
            OtlpProtocol::Grpc => "grpc",
        }
    }

    /// The protocol named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// The `[otlp]` table.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OtlpConfig {
    /// The receiver's base URL (`http://collector:4318`), as `--otlp-endpoint` gives it;
    /// `None`: no OTLP push unless the flag asks.
    pub endpoint: Option<String>,
    /// How they travel, unless `--otlp-protocol` says.
    pub protocol: OtlpProtocol,
    /// Profiles (one per interval) held while the receiver cannot take them; the oldest
    /// is dropped (and counted) beyond it. Default 64.
    pub queue_size: usize,
    /// As [`ClientConfig::headers`] (the client's keys are the table's own).
    pub headers: BTreeMap<String, String>,
    /// As [`ClientConfig::bearer_token`].
    pub bearer_token: Option<String>,
    /// As [`ClientConfig::bearer_token_file`].
    pub bearer_token_file: Option<PathBuf>,
    /// As [`ClientConfig::basic_auth`].
    pub basic_auth: Option<BasicAuth>,
    /// As [`ClientConfig::tls`].
    pub tls: ClientTls,
}

/// The default `[otlp] queue_size`.
pub const DEFAULT_QUEUE_SIZE: usize = 64;

impl Default for OtlpConfig {
    fn default() -> Self {
        Self {
            endpoint: None,
            protocol: OtlpProtocol::HttpProtobuf,
            queue_size: DEFAULT_QUEUE_SIZE,
            headers: BTreeMap::new(),
            bearer_token: None,
            bearer_token_file: None,
            basic_auth: None,
            tls: ClientTls::default(),
        }
    }
}

impl OtlpConfig {
    /// The client's part of the table.
    pub fn client(&self) -> ClientConfig {
        ClientConfig {
            headers: self.headers.clone(),
            bearer_token: self.bearer_token.clone(),
            bearer_token_file: self.bearer_token_file.clone(),
            basic_auth: self.basic_auth.clone(),
            tls: self.tls.clone(),
        }
    }
}

impl ClientConfig {
    /// Checks what goes together, without reading files; `table` names the table in the
    /// error.
    pub fn check(&self, table: &str) -> std::result::Result<(), String> {
        if self.bearer_token.is_some() && self.bearer_token_file.is_some() {
            return Err(format!(
                "[{table}]: bearer_token and bearer_token_file: give one"
            ));
        }
        let bearer = self.bearer_token.is_some() || self.bearer_token_file.is_some();
        if let Some(basic) = &self.basic_auth {
            if bearer {
                return Err(format!(
                    "[{table}]: basic_auth and a bearer token: give one"
                ));
            }
            if basic.password.is_some() == basic.password_file.is_some() {
                return Err(format!(
                    "[{table}]: basic_auth needs one of password and password_file"
                ));
            }
        }
        for name in self.headers.keys() {
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
            {
                return Err(format!("[{table}]: header \"{name}\": not a header name"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_goes_together() {
        let ok = ClientConfig {
            headers: BTreeMap::from([("X-Scope-OrgID".into(), "t1".into())]),
            bearer_token: Some("x".into()),
            ..ClientConfig::default()
        };
        assert_eq!(ok.check("otlp"), Ok(()));
        let both = ClientConfig {
            bearer_token: Some("x".into()),
            basic_auth: Some(BasicAuth {
                username: "u".into(),
                password: Some("p".into()),
                password_file: None,
            }),
            ..ClientConfig::default()
        };
        assert_eq!(
            both.check("otlp").unwrap_err(),
            "[otlp]: basic_auth and a bearer token: give one"
        );
        let no_password = ClientConfig {
            basic_auth: Some(BasicAuth {
                username: "u".into(),
                ..BasicAuth::default()
            }),
            ..ClientConfig::default()
        };
        assert_eq!(
            no_password.check("pyroscope").unwrap_err(),
            "[pyroscope]: basic_auth needs one of password and password_file"
        );
        let bad_header = ClientConfig {
            headers: BTreeMap::from([("a b".into(), "t1".into())]),
            ..ClientConfig::default()
        };
        assert_eq!(
            bad_header.check("otlp").unwrap_err(),
            "[otlp]: header \"a b\": not a header name"
        );
    }
}
