//! The exporter's own cost, as metrics: CPU time and resident memory (the standard
//! `process_*` names client libraries use), and what scrapes cost.

use std::{
    sync::Mutex,
    time::{Duration, Instant},
};

use crate::output::prometheus::{BaseUnit, Labels, MetricFamily, Value, Values};

/// Scrape accounting, shared by the HTTP handlers.
#[derive(Debug, Default)]
pub struct OwnMetrics {
    inner: Mutex<Scrapes>,
}

#[derive(Debug, Default)]
struct Scrapes {
    count: u64,
    total: Duration,
    last: Duration,
}

impl OwnMetrics {
    /// Records that a scrape took `elapsed` (collecting and encoding).
    pub fn scraped(&self, elapsed: Duration) {
        let mut scrapes = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        scrapes.count += 1;
        scrapes.total += elapsed;
        scrapes.last = elapsed;
    }

    /// The exporter's own families under `namespace`: process CPU and RSS, scrapes served
    /// and their time (up to the scrape before this one).
    pub fn families(&self, namespace: &str) -> Vec<MetricFamily> {
        let scrapes = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (user, system) = cpu_time();
        let mut families = vec![
            MetricFamily {
                name: "process_cpu".into(),
                help: "Total user and system CPU time spent in seconds.".into(),
                unit: Some(BaseUnit::Seconds),
                label_names: vec![],
                values: Values::Counter(vec![(
                    Labels::default(),
                    Value::Float((user + system).as_secs_f64()),
                )]),
            },
            MetricFamily {
                name: format!("{namespace}_exporter_scrapes"),
                help: "Scrapes of /metrics answered.".into(),
                unit: None,
                label_names: vec![],
                values: Values::Counter(vec![(Labels::default(), Value::Int(scrapes.count))]),
            },
            MetricFamily {
                name: format!("{namespace}_exporter_scrape_time"),
                help: "Time spent answering scrapes of /metrics (reading the kernel maps and \
                       encoding), up to the previous scrape."
                    .into(),
                unit: Some(BaseUnit::Seconds),
                label_names: vec![],
                values: Values::Counter(vec![(
                    Labels::default(),
                    Value::Float(scrapes.total.as_secs_f64()),
                )]),
            },
            MetricFamily {
                name: format!("{namespace}_exporter_last_scrape_duration"),
                help: "How long the previous scrape of /metrics took.".into(),
                unit: Some(BaseUnit::Seconds),
                label_names: vec![],
                values: Values::Gauge(vec![(
                    Labels::default(),
                    Value::Float(scrapes.last.as_secs_f64()),
                )]),
            },
        ];
        if let Some(rss) = resident_bytes() {
            families.insert(
                1,
                MetricFamily {
                    name: "process_resident_memory".into(),
                    help: "Resident memory size in bytes.".into(),
                    unit: Some(BaseUnit::Bytes),
                    label_names: vec![],
                    values: Values::Gauge(vec![(Labels::default(), Value::Int(rss))]),
                },
            );
        }
        families
    }
}

/// This process's user and system CPU time.
pub fn cpu_time() -> (Duration, Duration) {
    // SAFETY: getrusage(2) fills the struct it is given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let time = |tv: libc::timeval| {
        Duration::from_secs(tv.tv_sec as u64) + Duration::from_micros(tv.tv_usec as u64)
    };
    (time(usage.ru_utime), time(usage.ru_stime))
}

/// This process's resident memory (`/proc/self/statm`'s second field, in pages).
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf(3) has no preconditions.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page_size).ok()?)
}

/// Times a scrape: `let _timer = ScrapeTimer::start(&own);` records on drop.
pub struct ScrapeTimer<'a> {
    own: &'a OwnMetrics,
    started: Instant,
}

impl<'a> ScrapeTimer<'a> {
    /// Starts timing a scrape.
    pub fn start(own: &'a OwnMetrics) -> Self {
        Self {
            own,
            started: Instant::now(),
        }
    }
}

impl Drop for ScrapeTimer<'_> {
    fn drop(&mut self) {
        self.own.scraped(self.started.elapsed());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::prometheus::encode;

    #[test]
    fn reports_cpu_rss_and_scrapes() {
        let own = OwnMetrics::default();
        own.scraped(Duration::from_millis(3));
        own.scraped(Duration::from_millis(5));
        let text = encode(&own.families("tracekit"));
        assert!(
            text.contains("# TYPE process_cpu_seconds counter\n"),
            "{text}"
        );
        assert!(text.contains("process_cpu_seconds_total "), "{text}");
        let rss: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("process_resident_memory_bytes "))
            .unwrap()
            .parse()
            .unwrap();
        assert!(rss > 1e6, "{rss}");
        assert!(
            text.contains("tracekit_exporter_scrapes_total 2\n"),
            "{text}"
        );
        assert!(
            text.contains("tracekit_exporter_scrape_time_seconds_total 0.008\n"),
            "{text}"
        );
        assert!(
            text.contains("tracekit_exporter_last_scrape_duration_seconds 0.005\n"),
            "{text}"
        );
        {
            let _timer = ScrapeTimer::start(&own);
        }
        assert!(encode(&own.families("t")).contains("t_exporter_scrapes_total 3\n"));
    }
}
