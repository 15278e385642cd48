//! The names a tracepoint's own print format gives a field's values: its
//! `__print_symbolic(REC->FIELD, { 3, "NO_SOCKET" }, ...)` (`skb:kfree_skb`'s drop
//! `reason`), read once per event from its tracefs `format` file, for the event tools'
//! `symbol(FIELD)` view ([`crate::jobs::events`]). The kernel writes the table for the
//! running kernel, so values that differ between versions are named right.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Mutex, OnceLock},
};

/// Value → name of each `__print_symbolic(REC->field, ...)` in a format file's
/// `print fmt:` line, by field.
pub fn parse(format: &str) -> BTreeMap<String, BTreeMap<i64, String>> {
    let mut tables = BTreeMap::new();
    let Some(print) = format
        .lines()
        .find_map(|l| l.trim().strip_prefix("print fmt:"))
    else {
        return tables;
    };
    for part in print.split("__print_symbolic(REC->").skip(1) {
        let Some((field, rest)) = part.split_once(',') else {
            continue;
        };
        let mut table = BTreeMap::new();
        // `{ 3, "NO_SOCKET" }` pairs, up to the call's closing parenthesis.
        let mut rest = rest.trim_start();
        while let Some(pair) = rest.strip_prefix('{') {
            let Some((inside, after)) = pair.split_once('}') else {
                break;
            };
            if let Some((value, name)) = inside.split_once(',') {
                let name = name.trim().trim_matches('"');
                let value = value.trim();
                let number = match value.strip_prefix("0x") {
                    Some(hex) => i64::from_str_radix(hex, 16).ok(),
                    None => value.parse().ok(),
                };
                if let Some(number) = number {
                    table.insert(number, name.to_string());
                }
            }
            rest = after.trim_start().trim_start_matches(',').trim_start();
        }
        tables.insert(field.trim().to_string(), table);
    }
    tables
}

type Tables = HashMap<String, BTreeMap<String, BTreeMap<i64, String>>>;

/// The name `event`'s (`skb:kfree_skb`) print format gives `value` of `field`, or `None`
/// (no such table, or no name for the value).
pub fn name(event: &str, field: &str, value: i64) -> Option<String> {
    static TABLES: OnceLock<Mutex<Tables>> = OnceLock::new();
    let mut tables = TABLES.get_or_init(Default::default).lock().ok()?;
    if !tables.contains_key(event) {
        let (system, name) = event.split_once(':')?;
        let format = crate::probe::tracefs::root()
            .ok()
            .and_then(|root| {
                std::fs::read_to_string(root.join("events").join(system).join(name).join("format"))
                    .ok()
            })
            .unwrap_or_default();
        tables.insert(event.to_string(), parse(&format));
    }
    tables.get(event)?.get(field)?.get(&value).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbolic_tables_of_a_print_format() {
        let format = "name: kfree_skb\nprint fmt: \"skbaddr=%p reason: %s\", REC->skbaddr, \
                      __print_symbolic(REC->reason, { 2, \"NOT_SPECIFIED\" }, { 3, \"NO_SOCKET\" }, \
                      { 0x10, \"HEX\" }), __print_symbolic(REC->op, { 1, \"ONE\" })\n";
        let tables = parse(format);
        assert_eq!(tables["reason"][&3], "NO_SOCKET");
        assert_eq!(tables["reason"][&16], "HEX");
        assert_eq!(tables["reason"].len(), 3);
        assert_eq!(tables["op"][&1], "ONE");
    }
}
