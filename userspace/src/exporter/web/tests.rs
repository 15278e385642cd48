use super::*;

fn file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tk-web-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn bad_files_are_one_line() {
    let dir = scratch("bad");
    let hash = bcrypt::hash("secret", 4).unwrap();
    for (text, message) in [
        (
            "tls_server_config:\n  cert_file: nope.crt\n  key_file: nope.key\n",
            "tls_server_config.cert_file DIR/nope.crt: No such file or directory (os error 2)"
                .to_string(),
        ),
        (
            "basic_auth_users:\n  prometheus: plain\n",
            "basic_auth_users: prometheus: not a bcrypt hash".into(),
        ),
        (
            "tls_server_confg: {}\n",
            "unknown field `tls_server_confg`, expected `tls_server_config` or \
             `basic_auth_users`"
                .into(),
        ),
        (
            "tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: [x]\n",
            "tls_server_config: unknown field `cipher_suites`, expected one of `cert_file`, \
             `key_file`, `client_auth_type`, `client_ca_file`, `min_version`"
                .into(),
        ),
    ] {
        let path = file(&dir, "web.yml", text);
        let err = WebConfig::load(&path).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        let shown = err.to_string().replace(&dir.display().to_string(), "DIR");
        let message = format!("--web.config.file DIR/web.yml: {message}");
        assert!(
            shown.starts_with(&message),
            "{shown}\nexpected to start with\n{message}"
        );
        assert!(!shown.contains('\n'), "{shown}");
    }
    // Users alone: no TLS, basic auth.
    let path = file(
        &dir,
        "web.yml",
        &format!("basic_auth_users:\n  prometheus: {hash}\n"),
    );
    let web = WebConfig::load(&path).unwrap();
    assert!(web.tls.is_none());
    assert_eq!(web.users.len(), 1);
    // An empty file: neither.
    let path = file(&dir, "empty.yml", "");
    let web = WebConfig::load(&path).unwrap();
    assert!(web.tls.is_none() && web.users.is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn basic_auth_checks_user_and_password() {
    let hash = bcrypt::hash("secret", 4).unwrap();
    let web = WebConfig {
        tls: None,
        users: Arc::new(BTreeMap::from([("prometheus".to_string(), hash)])),
        verified: Arc::default(),
    };
    let header = |user_password: &str| {
        HeaderValue::from_str(&format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(user_password)
        ))
        .unwrap()
    };
    assert!(web.allows(Some(&header("prometheus:secret"))));
    // Again, from the cache.
    assert!(web.allows(Some(&header("prometheus:secret"))));
    assert!(!web.allows(Some(&header("prometheus:wrong"))));
    assert!(!web.allows(Some(&header("someone:secret"))));
    assert!(!web.allows(Some(&header("prometheus"))));
    assert!(!web.allows(Some(&HeaderValue::from_static("Bearer x"))));
    assert!(!web.allows(None));
}

/// A hash made by another implementation (libxcrypt's `$2b$`, as htpasswd and Python's
/// crypt write them) verifies.
#[test]
fn hashes_of_other_tools_verify() {
    let hash = "$2b$10$GpbSYRifgJ4ln8yLorN83uHCPOiPziRluQRujMm.53De.zziGFhLa";
    assert!(bcrypt::verify("tk-secret", hash).unwrap());
    assert!(!bcrypt::verify("tk-secre", hash).unwrap());
}
