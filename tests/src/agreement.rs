//! How two profilers agree on one workload: the real-program tests compare tracekit's
//! innermost runtime function per sample with the runtime's own profiler's (V8's
//! `--cpu-prof`, py-spy) as distributions, by 1 - TVD (total variation distance) over the
//! union of both profiles' top functions.

use std::{collections::HashMap, hash::Hash};

/// What folded stacks say of their samples that hold a runtime frame.
#[derive(Debug)]
pub struct Innermost<K> {
    /// Samples per innermost runtime function.
    pub functions: HashMap<K, f64>,
    /// Samples with a runtime frame.
    pub samples: u64,
    /// Of those, samples with an `[unknown]` frame inside their innermost runtime frame.
    pub unknown_below: u64,
}

/// The innermost runtime function of each of `folded`'s stacks (`function` says which
/// frames are the runtime's, and their key), summed over the samples.
pub fn innermost<K: Eq + Hash>(
    folded: &[(String, u64)],
    function: impl Fn(&str) -> Option<K>,
) -> Innermost<K> {
    let mut found = Innermost {
        functions: HashMap::new(),
        samples: 0,
        unknown_below: 0,
    };
    for (path, n) in folded {
        let frames: Vec<&str> = path.split(';').collect();
        let Some((at, key)) = frames
            .iter()
            .enumerate()
            .rev()
            .find_map(|(at, frame)| Some((at, function(frame)?)))
        else {
            continue;
        };
        found.samples += n;
        *found.functions.entry(key).or_default() += *n as f64;
        if frames[at + 1..].iter().any(|f| f.starts_with("[unknown]")) {
            found.unknown_below += n;
        }
    }
    found
}

/// The `n` largest entries of `of`, largest first (ties by key).
pub fn top<K: Clone + Ord + Hash>(of: &HashMap<K, f64>, n: usize) -> Vec<K> {
    let mut sorted: Vec<(&K, &f64)> = of.iter().collect();
    sorted.sort_by(|a, b| b.1.total_cmp(a.1).then(a.0.cmp(b.0)));
    sorted.into_iter().take(n).map(|(k, _)| k.clone()).collect()
}

/// 1 - TVD of the shares of `ours` and `theirs` (each a weight per key: samples or time)
/// over the union of their top `n` keys: 1 - half the sum of the shares' absolute
/// differences there. Also each such key's shares (theirs, ours), their largest first.
pub fn agreement<K: Clone + Ord + Hash>(
    ours: &HashMap<K, f64>,
    theirs: &HashMap<K, f64>,
    n: usize,
) -> (f64, Vec<(K, f64, f64)>) {
    let total = |of: &HashMap<K, f64>| of.values().sum::<f64>().max(1e-9);
    let (our_total, their_total) = (total(ours), total(theirs));
    let mut keys = top(theirs, n);
    for key in top(ours, n) {
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let shares: Vec<(K, f64, f64)> = keys
        .into_iter()
        .map(|key| {
            let their = theirs.get(&key).copied().unwrap_or(0.0) / their_total;
            let our = ours.get(&key).copied().unwrap_or(0.0) / our_total;
            (key, their, our)
        })
        .collect();
    let distance: f64 = shares
        .iter()
        .map(|(_, their, our)| (their - our).abs())
        .sum();
    (1.0 - distance / 2.0, shares)
}

/// The number before `what` in tracekit's `-v` report (`25 code objects could not be
/// read`), 0 when it says nothing of it.
pub fn counted(stderr: &str, what: &str) -> u64 {
    stderr
        .lines()
        .flat_map(|line| line.split([':', ',', ';']))
        .find_map(|part| part.split_once(what)?.0.trim().parse().ok())
        .unwrap_or(0)
}

/// One real program's comparison, as the real-program tests print and check it.
pub struct Program<'a> {
    /// The test's and the program's names, for the lines printed.
    pub test: &'a str,
    pub name: &'a str,
    /// The runtime's profiler (`py-spy`) and runtime (`Python`), for the lines printed.
    pub profiler: &'a str,
    pub runtime: &'a str,
    /// The innermost functions (name, file) of tracekit's samples and of the profiler's.
    pub ours: &'a Innermost<(String, String)>,
    pub theirs: &'a Innermost<(String, String)>,
    /// tracekit's `-v` report.
    pub stderr: &'a str,
    /// The fewest samples with a runtime frame asked of each side (ours, theirs).
    pub at_least: (u64, u64),
}

impl Program<'_> {
    /// Prints the ten largest shares and what was counted, checks that each side has its
    /// samples, that fewer than 1% of tracekit's have an `[unknown]` frame inside their
    /// innermost runtime frame (`unknown` says which, on failure) and that fewer than 1% of
    /// the runtime frames recorded were code objects that could not be read; returns
    /// 1 - TVD over the top 30 functions.
    pub fn check(&self, unknown: impl Fn() -> String) -> f64 {
        let (test, name) = (self.test, self.name);
        let (ours, theirs) = (self.ours, self.theirs);
        let (score, shares) = agreement(&ours.functions, &theirs.functions, 30);
        for ((function, file), their, our) in shares.iter().take(10) {
            let file = file.rsplit('/').next().unwrap_or(file);
            eprintln!(
                "{test}: {name}: {:5.1}% {}, {:5.1}% tracekit: {function} ({file})",
                their * 100.0,
                self.profiler,
                our * 100.0
            );
        }
        let inside = ours.unknown_below as f64 / ours.samples.max(1) as f64;
        let unread = counted(self.stderr, "code objects could not be read");
        let frames = counted(self.stderr, "interpreter frames recorded");
        eprintln!(
            "{test}: {name}: {} samples with a {} frame ({} {}'s), {:.2}% with [unknown] \
             inside the innermost; {unread} code objects not read of {frames} frames; \
             1 - TVD over the top 30 functions {score:.3}",
            ours.samples,
            self.runtime,
            theirs.samples,
            self.profiler,
            inside * 100.0
        );
        assert!(
            ours.samples >= self.at_least.0 && theirs.samples >= self.at_least.1,
            "{test}: {name}: {} and {} samples: {}",
            ours.samples,
            theirs.samples,
            self.stderr
        );
        assert!(
            inside < 0.01,
            "{test}: {name}: {:.1}% with [unknown] inside: {}",
            inside * 100.0,
            unknown()
        );
        assert!(
            frames > 0 && (unread as f64) < 0.01 * frames as f64,
            "{test}: {name}: {}",
            self.stderr
        );
        score
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_is_one_minus_half_the_share_differences() {
        let ours = HashMap::from([("a", 6.0), ("b", 4.0)]);
        let theirs = HashMap::from([("a", 30.0), ("b", 50.0), ("c", 20.0)]);
        let (score, shares) = agreement(&ours, &theirs, 30);
        // |0.3 - 0.6| + |0.5 - 0.4| + |0.2 - 0| = 0.6
        assert!((score - 0.7).abs() < 1e-9, "{score}");
        assert_eq!(shares[0].0, "b");
        assert_eq!(top(&theirs, 1), vec!["b"]);
        let (score, _) = agreement(&ours, &theirs, 1);
        // Over b and a only: |0.5 - 0.4| + |0.3 - 0.6| = 0.4
        assert!((score - 0.8).abs() < 1e-9, "{score}");
    }

    #[test]
    fn innermost_takes_the_last_runtime_frame_and_counts_unknown_below_it() {
        let folded = [
            (
                "p;main;outer (a.py:1);leaf (a.py:7);PyNumber_Add".to_string(),
                5,
            ),
            ("p;main;outer (a.py:1);[unknown];read".to_string(), 2),
            ("p;main;native".to_string(), 9),
        ];
        let found = innermost(&folded, |frame| {
            frame.split_once(" (").map(|(name, _)| name.to_string())
        });
        assert_eq!(found.samples, 7);
        assert_eq!(found.unknown_below, 2);
        assert_eq!(found.functions["leaf"], 5.0);
        assert_eq!(found.functions["outer"], 2.0);
    }

    #[test]
    fn counted_reads_the_number_before_the_words() {
        let stderr = "tracekit: interpreters: CPython 3.11 in 1 process; 2906 eval-loop frames \
                      met, 6234 interpreter frames recorded, 1 kept native\n\
                      tracekit: interpreters: 25 code objects could not be read (the process)";
        assert_eq!(counted(stderr, "interpreter frames recorded"), 6234);
        assert_eq!(counted(stderr, "code objects could not be read"), 25);
        assert_eq!(counted(stderr, "stacks cut"), 0);
    }
}
