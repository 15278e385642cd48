//! The exporter behind its web config (exporter-toolkit's format): TLS with a certificate
//! of a CA made here with openssl, basic auth with a bcrypt hash; scraped by a real
//! Prometheus from its own `tls_config` and `basic_auth`.

use std::{
    net::{SocketAddr, TcpStream},
    path::Path,
    process::{Command, Stdio},
};

use tracekit_tests::{require_root, scratch, tracekit};

use super::{
    free_port, get, histograms::prometheus_or_skip, histograms::prometheus_value, settle,
    start_exporter_with, stop_exporter,
};

/// bcrypt (cost 10) of `tk-secret`, made by libxcrypt (`crypt.crypt` with METHOD_BLOWFISH):
/// another implementation than the exporter's.
const HASH: &str = "$2b$10$GpbSYRifgJ4ln8yLorN83uHCPOiPziRluQRujMm.53De.zziGFhLa";

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("running openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA (`NAME.crt`, `NAME.key`) in `dir`.
pub(super) fn ca(dir: &Path, name: &str) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            &format!("/CN={name}"),
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.crt"),
        ],
    );
}

/// `server.crt` and `server.key` in `dir`, for 127.0.0.1, signed by the CA `ca` (see
/// [`ca`]).
pub(super) fn server_certificate(dir: &Path) {
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ],
    );
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            "server.ext",
            "-out",
            "server.crt",
        ],
    );
}

/// `curl` of `url`: the HTTP status (0 when the connection or TLS failed).
fn curl(dir: &Path, url: &str, extra: &[&str]) -> u16 {
    let out = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--max-time",
            "30",
        ])
        .args(extra)
        .arg(url)
        .current_dir(dir)
        .output()
        .expect("running curl");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

/// Over TLS with basic auth: a scrape and a pprof profile with the CA and the password get
/// 200, without the password 401 (a wrong one too), with another CA nothing (the
/// certificate is refused); Prometheus with `tls_config` and `basic_auth` scrapes it (up 1),
/// without `basic_auth` or with the wrong CA it does not (up 0). A bad web config is one
/// line at start, exit 2.
#[test]
fn exporter_serves_tls_with_basic_auth() {
    require_root();
    let test = "exporter_serves_tls_with_basic_auth";
    let Some(prometheus_bin) = prometheus_or_skip(test) else {
        return;
    };
    let dir = scratch(test);
    ca(&dir, "ca");
    ca(&dir, "other");
    server_certificate(&dir);
    let web = dir.join("web.yml");
    std::fs::write(
        &web,
        format!(
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n\
             basic_auth_users:\n  prometheus: {HASH}\n"
        ),
    )
    .unwrap();
    let config = dir.join("exporter.toml");
    std::fs::write(&config, "metrics = [\"runqlat\"]\n").unwrap();

    // A bad file: one line, exit 2, before anything is attached.
    let bad = dir.join("bad.yml");
    std::fs::write(
        &bad,
        "tls_server_config:\n  cert_file: missing.crt\n  key_file: k\n",
    )
    .unwrap();
    let out = tracekit(
        [
            "exporter".as_ref(),
            "--web.config.file".as_ref(),
            bad.as_os_str(),
        ],
        std::time::Duration::from_secs(30),
    );
    let stderr = &out.stderr;
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("tls_server_config.cert_file") && stderr.contains("missing.crt"),
        "{stderr}"
    );

    let (exporter, addr) = start_exporter_with(&[
        "--config".as_ref(),
        config.as_os_str(),
        "--web.config.file".as_ref(),
        web.as_os_str(),
    ]);
    let url = |path: &str| format!("https://{addr}{path}");
    let ok = ["--cacert", "ca.crt", "-u", "prometheus:tk-secret"];
    assert_eq!(curl(&dir, &url("/metrics"), &ok), 200);
    assert_eq!(curl(&dir, &url("/metrics"), &["--cacert", "ca.crt"]), 401);
    assert_eq!(
        curl(
            &dir,
            &url("/metrics"),
            &["--cacert", "ca.crt", "-u", "prometheus:wrong"]
        ),
        401
    );
    assert_eq!(curl(&dir, &url("/metrics"), &["--cacert", "other.crt"]), 0);
    assert_eq!(curl(&dir, &url("/debug/pprof/profile?seconds=1"), &ok), 200);
    assert_eq!(
        curl(
            &dir,
            &url("/debug/pprof/profile?seconds=1"),
            &["--cacert", "ca.crt"]
        ),
        401
    );
    // Plain HTTP is not served.
    assert_eq!(curl(&dir, &format!("http://{addr}/metrics"), &[]), 0);

    let prometheus_addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let job = |name: &str, ca: &str, auth: bool| {
        format!(
            "  - job_name: {name}\n    scheme: https\n    tls_config:\n      ca_file: {}\n{}    \
             static_configs:\n      - targets: ['{addr}']\n",
            dir.join(ca).display(),
            if auth {
                "    basic_auth:\n      username: prometheus\n      password: tk-secret\n"
            } else {
                ""
            }
        )
    };
    let prometheus_config = dir.join("prometheus.yml");
    std::fs::write(
        &prometheus_config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n{}{}{}",
            job("tracekit", "ca.crt", true),
            job("no_auth", "ca.crt", false),
            job("wrong_ca", "other.crt", true)
        ),
    )
    .unwrap();
    let mut prometheus = Command::new(prometheus_bin)
        .arg(format!("--config.file={}", prometheus_config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={prometheus_addr}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting prometheus");
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        settle(
            "Prometheus ready",
            || match TcpStream::connect(prometheus_addr) {
                Ok(_) => f64::from(get(prometheus_addr, "/-/ready").0),
                Err(_) => 0.0,
            },
            |status| status == 200.0,
        );
        settle(
            "the exporter up over TLS with basic auth",
            || prometheus_value(prometheus_addr, "up{job=\"tracekit\"}"),
            |v| v == 1.0,
        );
        settle(
            "every job scraped",
            || prometheus_value(prometheus_addr, "count(up)"),
            |v| v == 3.0,
        );
        // A few scrapes more: the failing jobs stay down.
        std::thread::sleep(std::time::Duration::from_secs(3));
        assert_eq!(
            prometheus_value(prometheus_addr, "up{job=\"no_auth\"}"),
            0.0
        );
        assert_eq!(
            prometheus_value(prometheus_addr, "up{job=\"wrong_ca\"}"),
            0.0
        );
        assert_eq!(
            prometheus_value(prometheus_addr, "up{job=\"tracekit\"}"),
            1.0
        );
        // The metrics came through.
        assert!(
            prometheus_value(
                prometheus_addr,
                "count(tracekit_runq_latency_seconds_bucket)"
            ) > 0.0
        );
    }));
    let _ = prometheus.kill();
    let _ = prometheus.wait();
    stop_exporter(exporter);
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}
