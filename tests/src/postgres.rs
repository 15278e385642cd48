//! A private PostgreSQL cluster for tests: Debian's PostgreSQL 15 (installed if missing),
//! initialised in a temporary directory and listening on a free loopback port, with
//! autovacuum and the logical replication launcher off (so only clients do work) and fsync
//! off. Stopped and removed when dropped.

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use crate::{Output, ensure_package, run};

/// Where Debian's PostgreSQL 15 keeps its programs.
pub const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

const TIMEOUT: Duration = Duration::from_secs(120);

/// A running cluster.
pub struct Cluster {
    dir: PathBuf,
    data: String,
    /// The TCP port it listens on, on 127.0.0.1.
    pub port: String,
    /// Its server log.
    pub log: PathBuf,
}

/// Runs `program` of [`PG_BIN`] as the postgres user (`runuser`), to completion.
pub fn as_postgres(program: &str, args: &[&str]) -> Output {
    let mut command = Command::new("runuser");
    command
        .args(["-u", "postgres", "--"])
        .arg(Path::new(PG_BIN).join(program))
        .args(args)
        .current_dir("/tmp");
    run(command, TIMEOUT)
}

impl Cluster {
    /// Installs PostgreSQL and pgbench if missing and starts a cluster; `None` (with the
    /// reason printed) when they cannot be installed.
    pub fn start(test: &str) -> Option<Cluster> {
        if !ensure_package(test, "postgresql-15", || Self::postgres().is_file())
            || !ensure_package(test, "postgresql-contrib", || {
                Path::new(PG_BIN).join("pgbench").is_file()
            })
        {
            return None;
        }
        let dir = std::env::temp_dir().join(format!("tk-pg-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut chown = Command::new("chown");
        chown.arg("postgres:postgres").arg(&dir);
        run(chown, TIMEOUT).assert_code(0);
        let data = dir.join("data").to_str().unwrap().to_string();
        as_postgres(
            "initdb",
            &["-D", &data, "-A", "trust", "-U", "postgres", "--no-sync"],
        )
        .assert_code(0);
        let port = {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port().to_string()
        };
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {port} -k {} -c fsync=off -c autovacuum=off \
             -c max_logical_replication_workers=0",
            dir.display()
        );
        let log = dir.join("log");
        as_postgres(
            "pg_ctl",
            &[
                "-D",
                &data,
                "-o",
                &options,
                "-l",
                log.to_str().unwrap(),
                "-w",
                "start",
            ],
        )
        .assert_code(0);
        Some(Cluster {
            dir,
            data,
            port,
            log,
        })
    }

    /// The server binary.
    pub fn postgres() -> PathBuf {
        Path::new(PG_BIN).join("postgres")
    }

    /// `pgbench ARGS` against the cluster's `postgres` database, to completion.
    pub fn pgbench(&self, args: &[&str]) -> Output {
        let mut all = vec!["-h", "127.0.0.1", "-p", &self.port, "-U", "postgres"];
        all.extend_from_slice(args);
        all.push("postgres");
        as_postgres("pgbench", &all)
    }

    /// `psql -At -c SQL` through a new connection, to completion.
    pub fn psql(&self, sql: &str) -> Output {
        as_postgres(
            "psql",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &self.port,
                "-U",
                "postgres",
                "-d",
                "postgres",
                "-Atc",
                sql,
            ],
        )
    }

    /// The number `sql` selects.
    pub fn psql_number(&self, sql: &str) -> u64 {
        let out = self.psql(sql);
        out.assert_code(0);
        out.stdout
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{out:#?}"))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = as_postgres("pg_ctl", &["-D", &self.data, "-m", "immediate", "stop"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
