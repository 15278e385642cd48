//! OTLP/gRPC: each profile as a unary `ProfilesService/Export` call (tonic: HTTP/2 in the
//! clear for an `http` endpoint, TLS with ALPN h2 for `https`), gzipped
//! (`grpc-encoding: gzip`), with the `[otlp]` table's headers and credentials as metadata.
//! The call's status decides, as the OTLP specification's "Failures" section says, whether
//! the profile is retried (`CANCELLED`, `DEADLINE_EXCEEDED`, `ABORTED`, `OUT_OF_RANGE`,
//! `UNAVAILABLE`, `DATA_LOSS`, and `RESOURCE_EXHAUSTED` when the server gives a retry delay)
//! or dropped (every other status).

use std::{io::Read as _, str::FromStr as _, sync::Arc, time::Duration};

use flate2::read::GzDecoder;
use opentelemetry_proto::tonic::collector::profiles::v1development::{
    ExportProfilesServiceRequest, profiles_service_client::ProfilesServiceClient,
};
use prost::Message as _;
use reqwest::Url;
use tokio_rustls::rustls::{
    self, DigitallySignedStruct, SignatureScheme,
    client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier},
    pki_types::{CertificateDer, ServerName, UnixTime},
};
use tonic::{
    Code, Status,
    codec::CompressionEncoding,
    metadata::{AsciiMetadataKey, AsciiMetadataValue},
    transport::{Certificate, Channel, ClientTlsConfig, Endpoint},
};
use tonic_types::StatusExt as _;

use super::{Batch, Sent, partial_rejection};
use crate::{
    Error, Result,
    exporter::{
        client::{Credentials, read_ca},
        config::ClientConfig,
    },
};

/// The call's path, as the service's definition names it.
pub const EXPORT_PATH: &str =
    "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export";

/// A gRPC client of one endpoint: where, how (TLS, timeouts) and what each call carries.
#[derive(Clone, Debug)]
pub struct GrpcClient {
    endpoint: Endpoint,
    metadata: Vec<(AsciiMetadataKey, AsciiMetadataValue)>,
}

impl GrpcClient {
    /// A client of `url` (`http://collector:4317`, or `https` for TLS, with the system's
    /// roots and `config`'s CA) with `config`'s headers and credentials; a call may take
    /// `timeout`.
    ///
    /// # Errors
    /// A usage error when a file named cannot be read, or a header is not valid gRPC
    /// metadata.
    pub fn new(url: &Url, config: &ClientConfig, timeout: Duration) -> Result<Self> {
        let runtime = |what: &str, err: tonic::transport::Error| Error::Runtime {
            what: format!("[otlp] {what}"),
            source: Some(Box::new(err)),
        };
        let mut endpoint = Endpoint::from_shared(url.as_str().trim_end_matches('/').to_string())
            .map_err(|err| runtime("endpoint", err))?
            .user_agent(concat!("tracekit/", env!("CARGO_PKG_VERSION")))
            .map_err(|err| runtime("user agent", err))?
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(5)));
        if url.scheme() == "https" {
            let mut tls = ClientTlsConfig::new().assume_http2(true);
            endpoint = if config.tls.insecure_skip_verify {
                endpoint.tls_config_with_verifier(tls, Arc::new(AnyCertificate::new()))
            } else {
                tls = tls.with_webpki_roots();
                if let Some(pem) = read_ca("otlp", config)? {
                    tls = tls.ca_certificate(Certificate::from_pem(pem));
                }
                endpoint.tls_config(tls)
            }
            .map_err(|err| runtime("TLS", err))?;
        }
        let mut metadata = Vec::new();
        for (name, value) in &config.headers {
            let bad = || {
                Error::usage(format!(
                    "[otlp] headers: \"{name}\": not valid gRPC metadata"
                ))
            };
            metadata.push((
                AsciiMetadataKey::from_str(name).map_err(|_| bad())?,
                AsciiMetadataValue::try_from(value.as_str()).map_err(|_| bad())?,
            ));
        }
        if let Some(authorization) = Credentials::read("otlp", config)?.header() {
            let value = AsciiMetadataValue::try_from(authorization)
                .map_err(|_| Error::usage("[otlp]: the credentials are not valid gRPC metadata"))?;
            metadata.push((AsciiMetadataKey::from_static("authorization"), value));
        }
        Ok(Self { endpoint, metadata })
    }

    /// The client with its channel, which connects at the first call and again after a
    /// failure. Needs the tokio runtime (the channel's worker is a task).
    pub fn connect(self) -> Connected {
        let channel = self.endpoint.connect_lazy();
        Connected {
            channel,
            metadata: self.metadata,
        }
    }
}

/// A [`GrpcClient`] with its channel.
pub struct Connected {
    channel: Channel,
    metadata: Vec<(AsciiMetadataKey, AsciiMetadataValue)>,
}

impl Connected {
    /// One attempt at exporting `batch`.
    pub(super) async fn send(&self, batch: &Batch) -> Sent {
        // The queue keeps the gzipped bytes OTLP/HTTP posts; tonic encodes and gzips the
        // message itself.
        let mut bytes = Vec::new();
        let request = match GzDecoder::new(batch.body.as_slice())
            .read_to_end(&mut bytes)
            .map_err(|err| err.to_string())
            .and_then(|_| {
                ExportProfilesServiceRequest::decode(bytes.as_slice())
                    .map_err(|err| err.to_string())
            }) {
            Ok(request) => request,
            Err(err) => {
                return Sent::Rejected(format!("the queued profile does not decode: {err}"));
            }
        };
        let mut request = tonic::Request::new(request);
        for (key, value) in &self.metadata {
            request.metadata_mut().insert(key.clone(), value.clone());
        }
        let mut client = ProfilesServiceClient::new(self.channel.clone())
            .send_compressed(CompressionEncoding::Gzip)
            .accept_compressed(CompressionEncoding::Gzip);
        match client.export(request).await {
            Ok(response) => match partial_rejection(response.get_ref()) {
                Some(why) => Sent::Rejected(why),
                None => Sent::Accepted,
            },
            Err(status) => classify(&status),
        }
    }
}

/// Retry or drop, for a call that ended in `status`.
fn classify(status: &Status) -> Sent {
    let code = status.code();
    let message = status.message().lines().next().unwrap_or("").trim();
    let why = if message.is_empty() {
        format!("gRPC {code:?}")
    } else {
        let start: String = message.chars().take(200).collect();
        format!("gRPC {code:?}: {start}")
    };
    let delay = status
        .get_details_retry_info()
        .and_then(|info| info.retry_delay);
    match code {
        Code::Cancelled
        | Code::DeadlineExceeded
        | Code::Aborted
        | Code::OutOfRange
        | Code::Unavailable
        | Code::DataLoss => Sent::Retry(why, delay),
        // Only a server that says when to come back expects the retry.
        Code::ResourceExhausted if delay.is_some() => Sent::Retry(why, delay),
        _ => Sent::Rejected(why),
    }
}

/// `tls.insecure_skip_verify`: any server certificate is taken; the handshake's
/// signatures are still checked (with ring's algorithms, as the rest of the TLS).
#[derive(Debug)]
struct AnyCertificate(rustls::crypto::WebPkiSupportedAlgorithms);

impl AnyCertificate {
    fn new() -> Self {
        Self(rustls::crypto::ring::default_provider().signature_verification_algorithms)
    }
}

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use tonic_types::{ErrorDetails, StatusExt as _};

    use super::*;

    /// The OTLP specification's table: these codes are retried, `RESOURCE_EXHAUSTED` only
    /// with a retry delay (which the retry then waits), every other code drops.
    #[test]
    fn statuses_retry_or_drop_as_otlp_says() {
        for code in [
            Code::Cancelled,
            Code::DeadlineExceeded,
            Code::Aborted,
            Code::OutOfRange,
            Code::Unavailable,
            Code::DataLoss,
        ] {
            assert!(
                matches!(classify(&Status::new(code, "x")), Sent::Retry(_, None)),
                "{code:?}"
            );
        }
        for code in [
            Code::Unknown,
            Code::InvalidArgument,
            Code::NotFound,
            Code::AlreadyExists,
            Code::PermissionDenied,
            Code::ResourceExhausted,
            Code::FailedPrecondition,
            Code::Unimplemented,
            Code::Internal,
            Code::Unauthenticated,
        ] {
            assert!(
                matches!(classify(&Status::new(code, "x")), Sent::Rejected(_)),
                "{code:?}"
            );
        }
        let throttled = Status::with_error_details(
            Code::ResourceExhausted,
            "slow down\nmore",
            ErrorDetails::with_retry_info(Some(Duration::from_millis(2500))),
        );
        assert_eq!(
            classify(&throttled),
            Sent::Retry(
                "gRPC ResourceExhausted: slow down".into(),
                Some(Duration::from_millis(2500))
            )
        );
        assert_eq!(
            classify(&Status::new(Code::Unauthenticated, "")),
            Sent::Rejected("gRPC Unauthenticated".into())
        );
    }

    /// Headers and credentials become metadata; one that cannot is a usage error at start.
    #[test]
    fn metadata_from_the_table() {
        let url = Url::parse("http://collector:4317").unwrap();
        let config = ClientConfig {
            headers: [("X-Scope-OrgID".to_string(), "tenant1".to_string())].into(),
            bearer_token: Some("t0k".into()),
            ..ClientConfig::default()
        };
        let client = GrpcClient::new(&url, &config, Duration::from_secs(5)).unwrap();
        let metadata: Vec<(&str, &str)> = client
            .metadata
            .iter()
            .map(|(k, v)| (k.as_str(), v.to_str().unwrap()))
            .collect();
        assert_eq!(
            metadata,
            [
                ("x-scope-orgid", "tenant1"),
                ("authorization", "Bearer t0k")
            ]
        );
        let bad = ClientConfig {
            headers: [("X-Tenant".to_string(), "a\u{7f}b".to_string())].into(),
            ..ClientConfig::default()
        };
        let err = GrpcClient::new(&url, &bad, Duration::from_secs(5)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "[otlp] headers: \"X-Tenant\": not valid gRPC metadata"
        );
        assert_eq!(err.exit_code(), 2);
    }
}
