use super::*;

fn fallback(name: &str) -> ProcessFallbacks {
    vec![(
        name.to_string(),
        "no functions in its unwind information".to_string(),
    )]
}

/// After N published processes exit, none of them is live (the kernel entries of all N
/// are to be removed); the fallbacks of the last EXITED_KEPT stay for the report.
#[test]
fn exited_processes_leave_the_published_set() {
    let mut published = Published::default();
    for pid in 1..=1000 {
        published.insert(pid, fallback(&format!("/tmp/lib{pid}.so")));
    }
    published.insert(5000, Vec::new());
    let mut gone = published.forget_exited(|pid| pid != 5000);
    gone.sort_unstable();
    assert_eq!(gone, (1..=1000).collect::<Vec<u32>>());
    assert_eq!(published.len(), 1);
    assert_eq!(published.live.len(), 1);
    assert_eq!(published.exited.len(), Published::EXITED_KEPT);
    // A second pass finds nothing more to remove.
    assert!(published.forget_exited(|pid| pid != 5000).is_empty());
    // The kept are the last exited: one of them is named, an early one is not.
    let kept = published.exited.back().map(|(pid, _)| *pid).unwrap();
    assert_eq!(
        published.fallbacks_of(kept),
        Some(&fallback(&format!("/tmp/lib{kept}.so")))
    );
    let first_dropped = published.exited.front().map(|(pid, _)| *pid).unwrap();
    let dropped = (1..=1000)
        .find(|pid| *pid != first_dropped && !published.exited.iter().any(|(p, _)| p == pid));
    assert_eq!(published.fallbacks_of(dropped.unwrap()), None);
    assert_eq!(published.fallbacks_of(5000), Some(&Vec::new()));
    assert_eq!(published.pids().count(), 1 + Published::EXITED_KEPT);
}

/// A process loaded again (after an exec) says what fell back in its new image only.
#[test]
fn a_reload_replaces_the_fallbacks() {
    let mut published = Published::default();
    published.insert(7, fallback("/old"));
    published.insert(7, fallback("/new"));
    assert_eq!(published.fallbacks_of(7), Some(&fallback("/new")));
    assert_eq!(published.len(), 1);
}
