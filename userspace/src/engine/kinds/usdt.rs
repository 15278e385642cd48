//! USDT probes: uprobes at their sites, arguments from their ELF notes.

pub mod attach;

use std::{collections::BTreeMap, sync::Arc};

use tracekit_common::engine::{Plan, operand};

use crate::{
    Error, Result,
    engine::{
        compile::{body::*, *},
        keys::{KeyColumn, KeyKind},
        kinds::{Kind, ProbeSpec, usdt::attach::Usdt},
        plan::{PlanBuilder, simple_operand},
        request::Request,
    },
    probe::{
        self,
        fields::{Fields, UsdtFields},
        functions,
        usdt::{self, UsdtTarget},
    },
};

/// `usdt:`/`U:`: USDT probes (`<sys/sdt.h>`), uprobes whose arguments the ELF notes describe.
#[derive(Debug)]
pub struct UsdtKind;

/// The kind's table entry.
pub static USDT: UsdtKind = UsdtKind;

impl Kind for UsdtKind {
    fn names(&self) -> &'static [&'static str] {
        &["usdt", "U"]
    }

    fn compile(&self, specs: &[ProbeSpec], request: &Request, _: &Events) -> Result<Compiled> {
        usdt_specs(&specs[0], request)
    }

    /// Each probe's arguments, once per distinct argument spec.
    fn fields(
        &self,
        spec: &ProbeSpec,
        pid: Option<u32>,
        _tracefs: &dyn Fn() -> Result<std::path::PathBuf>,
    ) -> Result<String> {
        let mut out = String::new();
        let target = UsdtTarget::parse(&spec.text, &spec.target)?;
        let binary = functions::resolve_binary_for("USDT", target.binary, pid)?;
        let mut seen: Vec<(String, String)> = Vec::new();
        for site in usdt::find(&binary, &target)? {
            let key = (site.qualified_name(), site.arg_specs.clone());
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            let fields = UsdtFields::of(
                format!("usdt:{}:{}", binary.display(), site.qualified_name()),
                &site,
            );
            out.push_str(&format!("{}: {}\n", fields.event_name(), fields.describe()));
        }
        Ok(out)
    }
}

/// USDT probes of one binary (`usdt:BINARY[:PROVIDER]:NAME`, wildcards allowed): a uprobe
/// at each site, `arg0..argN` read as each site's note says. Sites whose arguments are read
/// alike share an engine; sites whose argument specs differ (a probe the compiler inlined
/// with its arguments in other registers, or RIP-relative arguments, read at a distance
/// from each site's own address) get an engine each. Every site reports its
/// probe's index as the event, so the sites of one probe count as one event.
fn usdt_specs(spec: &ProbeSpec, request: &Request) -> Result<Compiled> {
    no_start(spec, request)?;
    let target = UsdtTarget::parse(&spec.text, &spec.target)?;
    for name in request.names() {
        if matches!(name.as_str(), "latency" | "retval") {
            return Err(Error::usage(format!(
                "probe `{}`: USDT probes have arguments (arg0..argN), not `{name}`",
                spec.text
            )));
        }
    }
    let binary = functions::resolve_binary_for("USDT", target.binary, request.target.pid)?;
    let sites = usdt::find(&binary, &target)?;
    let mut names: Vec<String> = Vec::new();
    let mut events = Vec::with_capacity(sites.len());
    for site in &sites {
        let name = site.qualified_name();
        let index = match names.iter().position(|n| *n == name) {
            Some(index) => index,
            None => {
                names.push(name);
                names.len() - 1
            }
        };
        events.push(index as u32);
    }
    // Arguments the request reads must be readable at every site.
    let used: Vec<String> = request
        .names()
        .into_iter()
        .filter(|n| probe::fields::parse_arg(n).is_some())
        .collect();
    for site in &sites {
        let fields = UsdtFields::of(format!("usdt:{}", site.qualified_name()), site);
        for name in &used {
            if fields.arg(name)?.is_none() {
                return Err(Error::usage(format!(
                    "{name}: USDT probe {} has {} argument{} ({})",
                    site.qualified_name(),
                    site.args.len(),
                    if site.args.len() == 1 { "" } else { "s" },
                    fields.describe()
                )));
            }
        }
    }
    let keyed = request.by_event || names.len() > 1;
    let mut groups: Vec<(Plan, Vec<usize>, Vec<Printed>)> = Vec::new();
    let mut columns = Vec::new();
    for (index, site) in sites.iter().enumerate() {
        let fields = UsdtFields::of(format!("usdt:{}", site.qualified_name()), site);
        let mut builder = PlanBuilder::new();
        let mut site_columns = Vec::new();
        if keyed {
            let event = builder.operand(simple_operand(operand::EVENT_INDEX))?;
            builder.key_part(event)?;
            site_columns.push(Column {
                column: KeyColumn {
                    name: "probe".into(),
                    kind: KeyKind::Event(
                        names
                            .iter()
                            .enumerate()
                            .map(|(i, n)| (i as u64, n.clone()))
                            .collect(),
                    ),
                },
                bound: Some(names.len() as u32),
            });
        }
        let (more, prints) = compile_body(&mut builder, &fields, request)?;
        site_columns.extend(more);
        finish_layout(&mut builder, &site_columns);
        let plan = builder.plan();
        if columns.is_empty() {
            columns = columns_of(site_columns);
        }
        match groups.iter_mut().find(|(p, ..)| *p == plan) {
            Some((_, members, _)) => members.push(index),
            None => groups.push((plan, vec![index], prints)),
        }
    }
    let event_names: BTreeMap<u32, String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (i as u32, format!("usdt:{n}")))
        .collect();
    let mut specs = Vec::new();
    let mut all_prints = Vec::new();
    for (plan, members, prints) in groups {
        let attach = Usdt {
            sites: members.iter().map(|&i| sites[i].clone()).collect(),
            events: members.iter().map(|&i| events[i]).collect(),
            pid: request.target.pid,
        };
        specs.push(spec_of(plan, Arc::new(attach), None, request));
        all_prints.push(prints);
    }
    let what = format!(
        "usdt:{}:{} ({} probe{}, {} site{})",
        binary.display(),
        target.pattern(),
        names.len(),
        if names.len() == 1 { "" } else { "s" },
        sites.len(),
        if sites.len() == 1 { "" } else { "s" }
    );
    Ok(Compiled {
        events: vec![EventNames::ByIndex(event_names); specs.len()],
        specs,
        columns,
        what,
        prints: all_prints,
    })
}
