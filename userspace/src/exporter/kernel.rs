//! The exporter on the real kernel: [`KernelSources`] implements [`Sources`] with engine
//! requests and the CPU sampler, and [`run`] is the daemon (`tracekit exporter`).
//!
//! Each configured metric is an engine [`Request`]: a preset is its tool's own plan
//! ([`crate::jobs::tools`]) with the metric's labels, buckets and extra filter; an event
//! metric is the request `hist`/`count` would build. Every request is compiled when the
//! exporter starts (and by `--check`), loaded and attached for the whole machine, and its
//! kernel map is read on each scrape into a monotonic [`Series`]. CPU profiles (the
//! endpoint's, the pushes') are windows of the one [`SharedSampler`], loaded at the first.

use std::{
    collections::{BTreeMap, HashMap},
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::signal::unix::{SignalKind, signal};

use crate::{
    Error, Result, bpf, caps,
    engine::{
        Engine, EngineSpec, EngineStats, KeyColumn, Targets,
        compile::compile,
        keys::decode_key,
        request::{KeyField, Request, Shape},
    },
    exporter::{
        client::PushClient,
        config::{BucketSpec, Config, MetricConfig, MetricSource},
        otlp::{self, OtlpClient, OtlpStats, Queue},
        push::{self, Destinations, PushOptions, PushStats},
        sampler::SharedSampler,
        series::{Cell, Series, accounting},
        server::{self, CpuProfile, ProfileEndpoint, ServerOptions, Sources, StackWindow},
        web::WebConfig,
    },
    jobs::tools::{FlagValues, ToolPlan},
    output::{
        pprof::{self, PprofOptions, SampleKind},
        prometheus::{Labels, MetricFamily, Value, Values},
    },
    session,
};

/// The engine request of a configured metric.
///
/// A preset's request is its tool's plan with the flags' defaults ([`FlagValues::defaults`]);
/// its labels name fields by the names bcc's tools show ([`Metric::field`]: `syscall` is
/// the syscall number shown by name, `disk` is `dev` shown by name, `op` is `rwbs`); any
/// other label is a field of the same name.
///
/// # Errors
/// None today beyond the tools' own plans (a tool that prints events is no metric);
/// events, fields and filters are checked when the request compiles.
///
/// [`Metric::field`]: crate::jobs::tools::Metric::field
pub fn request(metric: &MetricConfig) -> Result<Request> {
    let mut request = match &metric.source {
        MetricSource::Preset(preset) => match (preset.0.plan)(&FlagValues::defaults(preset.0))? {
            ToolPlan::Aggregate(job) => job.request,
            ToolPlan::Events(_) | ToolPlan::Memleak(_) => {
                return Err(Error::usage(format!(
                    "preset \"{}\" prints events; it has no metric",
                    preset.name()
                )));
            }
        },
        MetricSource::Event { event, value } => Request {
            value: value.clone(),
            ..Request::probe(event.clone())
        },
    };
    request.by = metric
        .by
        .iter()
        .map(|label| {
            let field = match &metric.source {
                MetricSource::Preset(preset) => preset.metric().field(label),
                MetricSource::Event { .. } => label,
            };
            KeyField::labeled(label.clone(), field)
        })
        .collect();
    request.shape = match metric.buckets {
        None => Shape::Count,
        Some(BucketSpec::Log2 { .. }) => Shape::Log2,
        Some(BucketSpec::LogLinear { .. }) => Shape::LogLinear {
            precision: tracekit_common::engine::DEFAULT_PRECISION,
        },
        Some(BucketSpec::Linear { min, max, step }) => Shape::Linear { min, max, step },
    };
    // Buckets are of raw values; `MetricConfig::spec(1)` says so to the series.
    request.value_div = 1;
    request.filter = match (request.filter.take(), &metric.filter) {
        (Some(own), Some(extra)) => Some(format!("({own}) && ({extra})")),
        (own, extra) => own.or_else(|| extra.clone()),
    };
    Ok(request)
}

/// A metric's name as its config wrote it (without the namespace).
fn short_name<'a>(config: &Config, metric: &'a MetricConfig) -> &'a str {
    metric
        .name
        .strip_prefix(&config.namespace)
        .and_then(|rest| rest.strip_prefix('_'))
        .unwrap_or(&metric.name)
}

/// `err` with `metric "NAME": ` in front, of the same kind (a usage error stays one).
fn in_metric(name: &str, err: Error) -> Error {
    match err {
        Error::Usage(message) => Error::Usage(format!("metric \"{name}\": {message}")),
        Error::Privilege(message) => Error::Privilege(message),
        Error::Runtime { what, source } => Error::Runtime {
            what: format!("metric \"{name}\": {what}"),
            source,
        },
    }
}

/// A metric compiled for the kernel, not yet loaded.
pub struct Compiled {
    /// Its config.
    pub config: MetricConfig,
    /// The engines to load.
    pub specs: Vec<EngineSpec>,
    /// Its group key's columns (the labels, in order).
    pub columns: Vec<KeyColumn>,
    /// What it traces (`rawtracepoint:sys_enter`), for the start line.
    pub what: String,
}

/// Compiles every metric of `config` against this kernel: unknown events, fields and bad
/// filters are usage errors naming `origin` (the file) and the metric.
pub fn compile_all(config: &Config, origin: &str) -> Result<Vec<Compiled>> {
    let in_file = |err| match err {
        Error::Usage(message) => Error::Usage(format!("{origin}: {message}")),
        other => other,
    };
    config
        .metrics
        .iter()
        .map(|metric| {
            let name = short_name(config, metric);
            let request = request(metric).map_err(|err| in_file(in_metric(name, err)))?;
            let compiled = compile(&request).map_err(|err| in_file(in_metric(name, err)))?;
            Ok(Compiled {
                config: metric.clone(),
                // Series by comm stay keyed by the string: by thread, a long-running
                // exporter's cells would grow with every thread, and it deletes idle
                // cells by their key.
                specs: compiled
                    .specs
                    .into_iter()
                    .map(|spec| EngineSpec {
                        names_by_task: false,
                        group_cache: false,
                        ..spec
                    })
                    .collect(),
                columns: compiled.columns,
                what: compiled.what,
            })
        })
        .collect()
}

/// One attached metric.
struct Attached {
    name: String,
    columns: Vec<KeyColumn>,
    engines: Vec<Engine>,
    series: Series,
    stats: EngineStats,
    /// The last reading of each label set and slot (summed over the kernel keys behind it).
    previous: HashMap<(Labels, u32), (u64, u64)>,
    /// Idle kernel entries deleted so far.
    removed: u64,
    /// Kernel entries the map held after the last reading's deletions.
    entries: usize,
}

/// The label set and slot a kernel entry counts under, and the entries behind each, per
/// engine.
type Reading = BTreeMap<(Labels, u32), ((u64, u64), Vec<(usize, Vec<u64>, u32)>)>;

impl Attached {
    /// Reads the kernel maps into the series, then deletes the entries that did not change
    /// since the previous reading (see [`idle_cells`]).
    fn read(&mut self) -> Result<()> {
        let mut stats = EngineStats::default();
        // Distinct kernel keys may show as the same labels (two dev_t of one name).
        let mut reading: Reading = BTreeMap::new();
        for (index, engine) in self.engines.iter().enumerate() {
            let aggregates = engine.read()?;
            stats.add(&aggregates.stats);
            for ((words, slot), value) in aggregates.cells {
                let labels = Labels(
                    decode_key(&self.columns, &words)
                        .iter()
                        .map(ToString::to_string)
                        .collect(),
                );
                let (cell, keys) = reading.entry((labels, slot)).or_default();
                cell.0 += value.count;
                cell.1 = cell.1.wrapping_add(value.sum);
                keys.push((index, words, slot));
            }
        }
        self.series.observe(
            reading
                .iter()
                .map(|((labels, slot), ((count, sum), _))| Cell {
                    labels: labels.clone(),
                    slot: *slot,
                    count: *count,
                    sum: *sum,
                }),
        );
        self.stats = stats;
        let removable: Vec<bool> = self.engines.iter().map(Engine::removes_cells).collect();
        let idle = idle_cells(&self.previous, &reading, &removable);
        for cell in &idle {
            let (_, keys) = &reading[cell];
            for (index, words, slot) in keys {
                self.removed += self.engines[*index]
                    .remove_cells([(words.as_slice(), *slot)])
                    .map_or(0, |n| n as u64);
            }
        }
        self.series
            .deleted(idle.iter().map(|(labels, slot)| (labels, *slot)));
        self.series.evict_idle(std::time::Instant::now());
        for cell in &idle {
            reading.remove(cell);
        }
        self.entries = reading.values().map(|(_, keys)| keys.len()).sum();
        self.previous = reading
            .into_iter()
            .map(|(cell, (value, _))| (cell, value))
            .collect();
        Ok(())
    }
}

/// The cells of `reading` to delete from the kernel: those whose count and sum did not
/// change since `previous` (idle for a whole scrape interval: a process gone, a disk
/// unused) and whose every kernel entry is in an engine that can delete (`removable`, per
/// engine index). The series keeps their totals; deleting makes room in the kernel map for
/// new label sets (exited pids and comms would otherwise fill it, and then nothing new is
/// counted), and bounds the kernel map and the exporter's last readings by the label sets
/// active within a scrape interval.
fn idle_cells(
    previous: &HashMap<(Labels, u32), (u64, u64)>,
    reading: &Reading,
    removable: &[bool],
) -> Vec<(Labels, u32)> {
    reading
        .iter()
        .filter(|(cell, (value, keys))| {
            previous.get(*cell) == Some(value)
                && keys
                    .iter()
                    .all(|(index, _, _)| removable.get(*index).copied().unwrap_or(false))
        })
        .map(|(cell, _)| cell.clone())
        .collect()
}

/// The exporter's sources on the real kernel: the configured metrics, attached, and the
/// CPU sampler for profiles.
pub struct KernelSources {
    namespace: String,
    metrics: Mutex<Vec<Attached>>,
    /// Why the last scrape could not read a metric, if it could not.
    unhealthy: Mutex<Option<String>>,
    frequency_hz: u64,
    /// The CPU sampler, loaded at the first profile.
    sampler: Arc<SharedSampler>,
    /// Pushes made and failed, with `--push`.
    push: Option<Arc<PushStats>>,
    /// What the OTLP push did, with `--otlp-endpoint`.
    otlp: Option<Arc<OtlpStats>>,
}

impl KernelSources {
    /// Loads and attaches every compiled metric for the whole machine (the exporter's own
    /// events left out).
    pub fn attach(config: &Config, compiled: Vec<Compiled>) -> Result<Self> {
        let targets = Targets {
            pids: None,
            follow_children: false,
            exclude_self: true,
            cgroup: None,
        };
        let mut metrics = Vec::with_capacity(compiled.len());
        for metric in compiled {
            let name = short_name(config, &metric.config).to_string();
            let mut engines = Vec::with_capacity(metric.specs.len());
            for spec in &metric.specs {
                let mut engine =
                    Engine::load(spec, &targets).map_err(|err| in_metric(&name, err))?;
                engine.attach(spec).map_err(|err| in_metric(&name, err))?;
                for note in engine.notes() {
                    log::info!("metric \"{name}\": attached {note}");
                }
                engines.push(engine);
            }
            metrics.push(Attached {
                name,
                columns: metric.columns,
                engines,
                series: Series::new(metric.config.spec(1)).with_idle_eviction(
                    (config.idle_series_seconds > 0)
                        .then(|| Duration::from_secs(config.idle_series_seconds)),
                ),
                stats: EngineStats::default(),
                previous: HashMap::new(),
                removed: 0,
                entries: 0,
            });
        }
        if !config.profile.interpreters {
            crate::unwind::interp::disable();
        }
        Ok(Self {
            namespace: config.namespace.clone(),
            metrics: Mutex::new(metrics),
            unhealthy: Mutex::new(None),
            frequency_hz: config.profile.frequency_hz,
            sampler: Arc::new(SharedSampler::new(
                config.profile.frequency_hz,
                Duration::from_secs(config.profile.idle_seconds),
                config.profile.inlined,
            )),
            push: None,
            otlp: None,
        })
    }

    /// Shows `stats` in the metrics (`--otlp-endpoint`).
    pub fn with_otlp_stats(mut self, stats: Arc<OtlpStats>) -> Self {
        self.otlp = Some(stats);
        self
    }

    /// Shows `stats` in the metrics (`--push`).
    pub fn with_push_stats(mut self, stats: Arc<PushStats>) -> Self {
        self.push = Some(stats);
        self
    }

    /// Detaches every program (the CPU sampler's too) and ends CPU profiles under way; the
    /// metrics' maps stay readable.
    pub fn detach(&self) {
        self.sampler.finish();
        let mut metrics = self.metrics.lock().unwrap_or_else(|e| e.into_inner());
        for metric in metrics.iter_mut() {
            for engine in &mut metric.engines {
                engine.detach();
            }
        }
    }

    /// Ends CPU profiles under way early (each answers with what it sampled so far).
    pub fn stop_profiles(&self) {
        self.sampler.stop();
    }

    /// Events the kernel could not count, per metric and reason.
    fn lost(&self, metrics: &[Attached]) -> MetricFamily {
        let mut values = Vec::new();
        for metric in metrics {
            for (reason, count) in [
                ("map_full", metric.stats.map_full),
                ("start_map_full", metric.stats.start_map_full),
                ("read_errors", metric.stats.read_errors),
            ] {
                values.push((
                    Labels(vec![metric.series.spec().name.clone(), reason.into()]),
                    Value::Int(count),
                ));
            }
        }
        MetricFamily {
            name: format!("{}_exporter_events_lost", self.namespace),
            help: "Events the kernel programs could not count: map_full (a metric's map had \
                   no room for a new label set), start_map_full (no room for a start of a \
                   latency), read_errors (fields that could not be read)."
                .into(),
            unit: None,
            label_names: vec!["metric".into(), "reason".into()],
            values: Values::Counter(values),
        }
    }
}

impl Sources for KernelSources {
    fn metrics(&self) -> Vec<MetricFamily> {
        let mut metrics = self.metrics.lock().unwrap_or_else(|e| e.into_inner());
        let mut failed = None;
        for metric in metrics.iter_mut() {
            if let Err(err) = metric.read() {
                log::warn!("metric \"{}\": {err}", metric.name);
                failed = Some(format!("reading metric \"{}\": {err}", metric.name));
            }
        }
        *self.unhealthy.lock().unwrap_or_else(|e| e.into_inner()) = failed;
        let mut families: Vec<MetricFamily> = Vec::new();
        for metric in metrics.iter() {
            families.push(metric.series.family());
            families.extend(metric.series.quantiles());
        }
        families.extend(accounting(
            &self.namespace,
            metrics.iter().map(|m| &m.series),
        ));
        families.push(self.lost(&metrics));
        families.push(MetricFamily {
            name: format!("{}_exporter_idle_entries_deleted", self.namespace),
            help: "Kernel map entries deleted because they did not change for a scrape \
                   interval (their totals stay in the metric; an event counted between the \
                   reading and the deletion is lost)."
                .into(),
            unit: None,
            label_names: vec!["metric".into()],
            values: Values::Counter(
                metrics
                    .iter()
                    .map(|m| {
                        (
                            Labels(vec![m.series.spec().name.clone()]),
                            Value::Int(m.removed),
                        )
                    })
                    .collect(),
            ),
        });
        families.push(MetricFamily {
            name: format!("{}_exporter_map_entries", self.namespace),
            help: "Entries a metric's kernel map holds after the last scrape deleted the idle \
                   ones."
                .into(),
            unit: None,
            label_names: vec!["metric".into()],
            values: Values::Gauge(
                metrics
                    .iter()
                    .map(|m| {
                        (
                            Labels(vec![m.series.spec().name.clone()]),
                            Value::Int(m.entries as u64),
                        )
                    })
                    .collect(),
            ),
        });
        families.push(MetricFamily {
            name: format!("{}_exporter_cpu_samplers_loaded", self.namespace),
            help: "CPU samplers loaded with their unwind tables: 1 from the first CPU profile \
                   (requested or pushed) on; every later profile shares it."
                .into(),
            unit: None,
            label_names: vec![],
            values: Values::Counter(vec![(Labels::default(), Value::Int(self.sampler.loads()))]),
        });
        if let Some(push) = &self.push {
            families.extend(push.families(&self.namespace));
        }
        if let Some(otlp) = &self.otlp {
            families.extend(otlp.families(&self.namespace));
        }
        families
    }

    fn health(&self) -> std::result::Result<(), String> {
        match self
            .unhealthy
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }

    async fn profile(&self, duration: Duration) -> Result<CpuProfile> {
        let hz = self.frequency_hz;
        let window = self.window(duration).await?;
        tokio::task::spawn_blocking(move || {
            let pprof = encode(hz, &window);
            // The window's stacks were freed on this blocking thread, in its own arena: glibc
            // keeps it (26 to 88 MiB in ten minutes of the exporter bench before this).
            crate::symbolize::release_freed_memory();
            CpuProfile {
                pprof,
                start: window.start,
                duration: window.duration,
            }
        })
        .await
        .map_err(|err| Error::runtime(format!("the CPU profile task failed: {err}")))
    }

    async fn window(&self, duration: Duration) -> Result<StackWindow> {
        let inlined = self.sampler.inlined();
        let sampler = Arc::clone(&self.sampler);
        // The first profile loads the sampler (and starts building the tables): blocking.
        let window = tokio::task::spawn_blocking(move || sampler.open(duration))
            .await
            .map_err(|err| Error::runtime(format!("the CPU profile task failed: {err}")))??;
        let window = window
            .await
            .map_err(|_| Error::runtime("the CPU sampler stopped before the profile ended"))?;
        Ok(StackWindow {
            stacks: window.stacks,
            start: window.start,
            duration: window.elapsed,
            inlined,
            processes: window.processes,
        })
    }
}

/// A window's stacks as a gzipped pprof CPU profile at `hz`, with pid, comm and cgroup
/// labels (and, where the cgroup names them, `container_id` and `pod_uid`).
pub fn encode(hz: u64, window: &StackWindow) -> Vec<u8> {
    let cgroup = |pid| window.process(pid).cgroup;
    let options = PprofOptions {
        cgroup: &cgroup,
        comments: vec![format!(
            "tracekit exporter: on-CPU stacks of all processes at {hz} Hz"
        )],
        inline_frames: window.inlined,
        ..PprofOptions::new(SampleKind::Cpu { hz }, window.start, window.duration)
    };
    pprof::encode(&pprof::build(&window.stacks, &options))
}

/// Runs the exporter: checks privileges, compiles and attaches every metric of `config`
/// (read from `origin`), serves on `listen` (else the config's address) and pushes CPU
/// profiles as `push` asks until SIGINT or SIGTERM, then detaches.
///
/// # Errors
/// Usage errors for bad metrics (naming the metric), a bad `[profile]` frequency, and
/// `--push` with profiles disabled; privilege errors; run-time errors when the address
/// cannot be bound or a program cannot attach. A failed push is not an error (see
/// [`push`]).
pub fn run(
    config: Config,
    origin: &str,
    listen: Option<SocketAddr>,
    push: Option<PushOptions>,
    web: Option<WebConfig>,
) -> Result<()> {
    if push.is_some() && !config.profile.enabled {
        return Err(Error::usage(format!(
            "--push and --otlp-endpoint need CPU profiles, and {origin} has [profile] \
             enabled = false"
        )));
    }
    // Files the clients read (CA, tokens) are read now: a bad one is an error at start.
    let timeout = push.as_ref().map_or(Duration::from_secs(5), |p| {
        p.interval
            .clamp(Duration::from_secs(5), Duration::from_secs(30))
    });
    let pyroscope = match push.as_ref().and_then(|p| p.target.clone()) {
        Some(target) => Some((
            target,
            PushClient::new("pyroscope", &config.pyroscope, timeout)?,
            Arc::new(PushStats::default()),
        )),
        None => None,
    };
    let otlp_push = match push.as_ref().and_then(|p| p.otlp.clone()) {
        Some(endpoint) => {
            let stats = Arc::new(OtlpStats::default());
            let queue = Arc::new(Queue::new(config.otlp.queue_size, Arc::clone(&stats)));
            let client = OtlpClient::new(&endpoint, &config.otlp.client(), timeout)?;
            Some((endpoint, client, stats, queue))
        }
        None => None,
    };
    caps::require_tracing("exporter")?;
    if config.profile.enabled {
        bpf::check_frequency(config.profile.frequency_hz).map_err(|err| {
            Error::usage(format!(
                "[profile] frequency_hz {}: {}",
                config.profile.frequency_hz,
                err.to_string()
                    .split_once(": ")
                    .map_or(err.to_string(), |(_, why)| why.to_string())
            ))
        })?;
    }
    let compiled = compile_all(&config, origin)?;
    let addr = listen.unwrap_or(config.listen);
    let runtime = session::runtime()?;
    runtime.block_on(async {
        let mut interrupt = signal(SignalKind::interrupt())
            .map_err(|err| Error::runtime(format!("handling SIGINT: {err}")))?;
        let mut terminate = signal(SignalKind::terminate())
            .map_err(|err| Error::runtime(format!("handling SIGTERM: {err}")))?;
        let listener = server::bind(addr).await?;
        let bound = listener.local_addr().unwrap_or(addr);
        let what: Vec<String> = compiled
            .iter()
            .map(|m| format!("{} ({})", m.config.name, m.what))
            .collect();
        let count = compiled.len();
        let mut sources = KernelSources::attach(&config, compiled)?;
        // Loading the metrics freed heap (7.4 MiB for the built-in set) that glibc keeps.
        crate::symbolize::release_freed_memory();
        if let Some((_, _, stats)) = &pyroscope {
            sources = sources.with_push_stats(Arc::clone(stats));
        }
        if let Some((_, _, stats, _)) = &otlp_push {
            sources = sources.with_otlp_stats(Arc::clone(stats));
        }
        let sources = Arc::new(sources);
        for line in &what {
            log::info!("serving {line}");
        }
        let scheme = match web.as_ref().and_then(|web| web.tls.as_ref()) {
            Some(_) => "https",
            None => "http",
        };
        eprintln!(
            "tracekit exporter: serving {count} metric{} on {scheme}://{bound}/metrics{}{}{}; \
             SIGINT or SIGTERM to stop.",
            if count == 1 { "" } else { "s" },
            if config.profile.enabled {
                format!(", CPU profiles on {scheme}://{bound}/debug/pprof/profile")
            } else {
                String::new()
            },
            match &push {
                Some(push) => {
                    let mut to = Vec::new();
                    if let Some(target) = &push.target {
                        to.push(format!("{} as {}", target.shown(), target.name()));
                    }
                    if let Some(endpoint) = &push.otlp {
                        to.push(endpoint.described());
                    }
                    format!(
                        ", pushing them to {} every {} s",
                        to.join(" and "),
                        push.interval.as_secs()
                    )
                }
                None => String::new(),
            },
            match &web {
                Some(web) if !web.users.is_empty() => " (basic auth)",
                _ => "",
            }
        );
        let (stop_pushes, pushes_stopped) = tokio::sync::watch::channel(false);
        let stop_pushes = Arc::new(stop_pushes);
        let sending = otlp_push.as_ref().map(|(endpoint, client, stats, queue)| {
            tokio::spawn(otlp::sender(
                Arc::clone(queue),
                client.clone(),
                endpoint.clone(),
                Arc::clone(stats),
                pushes_stopped.clone(),
            ))
        });
        let pushing = push.map(|push| {
            tokio::spawn(push::run(
                Arc::clone(&sources),
                Destinations {
                    pyroscope,
                    otlp: otlp_push.map(|(_, _, _, queue)| queue),
                },
                push.interval,
                config.profile.frequency_hz,
                pushes_stopped,
            ))
        });
        let options = ServerOptions {
            namespace: config.namespace.clone(),
            profile: config.profile.enabled.then_some(ProfileEndpoint {
                default_seconds: 30,
                max_seconds: config.profile.max_seconds,
            }),
        };
        let (received_tx, received_rx) = tokio::sync::oneshot::channel();
        let stopper = Arc::clone(&sources);
        let pushes_stopper = Arc::clone(&stop_pushes);
        let shutdown = async move {
            let name = tokio::select! {
                _ = interrupt.recv() => "SIGINT",
                _ = terminate.recv() => "SIGTERM",
            };
            // Profiles under way answer with what they have, so serving can end; pushes
            // stop (one in flight gets a moment to finish).
            stopper.stop_profiles();
            let _ = pushes_stopper.send(true);
            let _ = received_tx.send(name);
        };
        let served = server::serve(listener, Arc::clone(&sources), options, web, shutdown).await;
        // Also when serving failed without a signal.
        let _ = stop_pushes.send(true);
        if let Some(pushing) = pushing {
            let _ = pushing.await;
        }
        if let Some(sending) = sending {
            let _ = sending.await;
        }
        sources.detach();
        served?;
        let name = received_rx.await.unwrap_or("a signal");
        eprintln!("tracekit exporter: {name} received; every program detached.");
        Ok(())
    })
}

#[cfg(test)]
mod tests;
