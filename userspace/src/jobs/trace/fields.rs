//! One printed field of a traced event as text (and JSON): integers in the hint's form
//! (addresses named, IPs, ports, TCP states), strings quoted as `perf trace` does, `comm`.

use tracekit_common::engine::operand;

use super::TraceEvent;

use crate::{
    engine::compile::Printed,
    probe::fields::{Hint, ValueType},
};

/// One printed field: as text, and as JSON.
pub(crate) fn field_text(
    record: &TraceEvent<'_>,
    printed: &Printed,
) -> (String, serde_json::Value) {
    let mut text = String::new();
    let json = write_field(&mut text, record, printed, true);
    (text, json)
}

/// Appends one printed field's text to `out`; with `json`, also returns its JSON value
/// (`Null` without). Text lines take this path alone: a line per event costs no JSON value
/// and no string of its own per field.
pub(super) fn write_field(
    out: &mut String,
    record: &TraceEvent<'_>,
    printed: &Printed,
    json: bool,
) -> serde_json::Value {
    use std::fmt::Write as _;
    let string = |out: &mut String, text: &str, quoted: bool| {
        if quoted {
            let _ = write!(out, "{text:?}");
        } else {
            out.push_str(text);
        }
        if json {
            serde_json::Value::String(text.to_string())
        } else {
            serde_json::Value::Null
        }
    };
    if printed.operand == tracekit_common::engine::NO_OPERAND {
        let id = match printed.string_slot {
            operand::COMM => return string(out, &comm_str(&record.comm), true),
            operand::TID => record.tid,
            _ => record.pid,
        };
        let _ = write!(out, "{id}");
        return if json {
            id.into()
        } else {
            serde_json::Value::Null
        };
    }
    let int = record.ints[printed.operand as usize % record.ints.len()];
    match printed.hint {
        Hint::Ip => {
            let bytes = &record.strings[printed.string_slot as usize % record.strings.len()];
            return string(out, &crate::engine::addr::ip_text(&bytes[..16]), false);
        }
        Hint::Ipv4 => return string(out, &crate::engine::addr::ipv4_text(int), false),
        Hint::TcpState => return string(out, &crate::engine::addr::tcp_state_name(int), false),
        Hint::NetPort => {
            let port = u16::from_be(int as u16);
            let _ = write!(out, "{port}");
            return if json {
                port.into()
            } else {
                serde_json::Value::Null
            };
        }
        _ => {}
    }
    match printed.ty {
        ValueType::Str => string(out, &record.string(printed.string_slot), true),
        ValueType::Int { signed: true } => {
            let _ = write!(out, "{}", int as i64);
            if json {
                (int as i64).into()
            } else {
                serde_json::Value::Null
            }
        }
        ValueType::Int { signed: false } => {
            let _ = write!(out, "{int}");
            if json {
                int.into()
            } else {
                serde_json::Value::Null
            }
        }
    }
}

/// A `comm` as text, up to its first NUL, borrowed when it is UTF-8.
pub(super) fn comm_str(comm: &[u8]) -> std::borrow::Cow<'_, str> {
    let end = comm.iter().position(|&b| b == 0).unwrap_or(comm.len());
    String::from_utf8_lossy(&comm[..end])
}
