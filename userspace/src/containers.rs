//! Containers and pods by name: the container ID and Kubernetes pod UID a cgroup v2 path
//! carries, and what a profile says of a process (its executable, `OTEL_SERVICE_NAME`).
//!
//! Container runtimes name the cgroup of each container after its ID, and the kubelet names
//! each pod's after its UID:
//!
//! | runtime | cgroup driver | path |
//! |---|---|---|
//! | containerd (CRI) | systemd | `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid, _ for ->.slice/cri-containerd-<id>.scope` |
//! | CRI-O | systemd | `.../kubepods-pod<uid>.slice/crio-<id>.scope` |
//! | Docker | systemd | `/system.slice/docker-<id>.scope` |
//! | Docker | cgroupfs | `/docker/<id>` |
//! | Podman | systemd | `/machine.slice/libpod-<id>.scope` |
//! | any (CRI) | cgroupfs | `/kubepods/burstable/pod<uid>/<id>` |
//!
//! The container ID is the innermost component that names one (64 hex digits, or at least
//! 12 behind a runtime's prefix); the pod UID the innermost `pod<uid>` component. Nested
//! cgroups below a container (systemd inside it, `init.scope`) keep the container's ID.

use std::path::Path;

/// The container and pod a cgroup belongs to, where its path names them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Workload {
    /// The container ID (lowercase hex, as the runtime gave it: 64 digits for containerd,
    /// CRI-O and Docker).
    pub container_id: Option<String>,
    /// The Kubernetes pod UID, with dashes (`0f3b5a1c-...`).
    pub pod_uid: Option<String>,
}

impl Workload {
    /// The container and pod of the cgroup v2 `path` (`/kubepods.slice/...`, as
    /// `/proc/PID/cgroup` shows it); empty when it names neither.
    pub fn from_cgroup(path: &str) -> Self {
        let mut workload = Self::default();
        let mut previous = "";
        for component in path.split('/').filter(|c| !c.is_empty()) {
            if let Some(id) = container_of(component, previous) {
                workload.container_id = Some(id);
            }
            if let Some(uid) = pod_of(component) {
                workload.pod_uid = Some(uid);
            }
            previous = component;
        }
        workload
    }

    /// Whether it names neither a container nor a pod.
    pub fn is_empty(&self) -> bool {
        self.container_id.is_none() && self.pod_uid.is_none()
    }

    /// Whether `id` names this workload: its pod UID (with dashes or `_`), or its container
    /// ID or a prefix of it of at least 12 digits (as `docker ps` and `crictl ps` show them).
    pub fn matches(&self, id: &str) -> bool {
        let id = id.trim().to_ascii_lowercase().replace('_', "-");
        if self.pod_uid.as_deref() == Some(id.as_str()) {
            return true;
        }
        id.len() >= 12
            && is_hex(&id)
            && self
                .container_id
                .as_deref()
                .is_some_and(|container| container.starts_with(&id))
    }
}

/// Whether `text` is a pod UID or a container ID (or a prefix of one, 12 digits or more),
/// as `--cgroup` takes them beside paths.
pub fn looks_like_id(text: &str) -> bool {
    let text = text.trim().to_ascii_lowercase().replace('_', "-");
    pod_uid(&text).is_some() || (text.len() >= 12 && text.len() <= 64 && is_hex(&text))
}

fn is_hex(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The container ID one component names: a runtime's `PREFIX-<id>.scope`, a bare 64-digit
/// ID (cgroupfs), or the component after `docker`.
fn container_of(component: &str, previous: &str) -> Option<String> {
    const PREFIXES: [&str; 5] = [
        "cri-containerd-",
        "crio-",
        "docker-",
        "libpod-",
        "containerd-",
    ];
    if let Some(scope) = component.strip_suffix(".scope") {
        for prefix in PREFIXES {
            if let Some(id) = scope.strip_prefix(prefix)
                && id.len() >= 12
                && is_hex(id)
            {
                return Some(id.to_ascii_lowercase());
            }
        }
        return None;
    }
    let bare = component.len() == 64 && is_hex(component);
    let under_docker = previous == "docker" && component.len() >= 12 && is_hex(component);
    (bare || under_docker).then(|| component.to_ascii_lowercase())
}

/// The pod UID of a `pod<uid>` component: cgroupfs's `pod<uid>`, or the systemd driver's
/// `kubepods[-QOS]-pod<uid with _>.slice`.
fn pod_of(component: &str) -> Option<String> {
    let name = component.strip_suffix(".slice").unwrap_or(component);
    let at = name.rfind("pod")?;
    if at > 0 && !name[..at].ends_with('-') {
        return None;
    }
    pod_uid(&name[at + 3..].replace('_', "-"))
}

/// `text` when it is a UID: 8-4-4-4-12 hex digits, lowercased.
fn pod_uid(text: &str) -> Option<String> {
    let parts: Vec<&str> = text.split('-').collect();
    let lengths = [8, 4, 4, 4, 12];
    (parts.len() == 5
        && parts
            .iter()
            .zip(lengths)
            .all(|(part, len)| part.len() == len && is_hex(part)))
    .then(|| text.to_ascii_lowercase())
}

/// The cgroup directory under `root` (the cgroup2 mount) that `id` names: the pod's own
/// directory for a pod UID (the pod slice every container of it is under), the container's
/// for a container ID; `None` when no cgroup names it.
pub fn find_cgroup(root: &Path, id: &str) -> Option<std::path::PathBuf> {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let parent = dir.file_name().map(|n| n.to_string_lossy().into_owned());
            let own = Workload {
                container_id: container_of(&name, parent.as_deref().unwrap_or("")),
                pod_uid: pod_of(&name),
            };
            if own.matches(id) {
                return Some(path);
            }
            stack.push(path);
        }
    }
    None
}

/// This machine's name (`/proc/sys/kernel/hostname`, as `hostname` prints it).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .unwrap_or_default()
}

/// What a profile says of a process beside its pid and threads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcessInfo {
    /// The executable's file name (`/proc/PID/exe`), else the process's comm.
    pub executable: Option<String>,
    /// `OTEL_SERVICE_NAME` from its environment.
    pub service: Option<String>,
    /// Its cgroup v2 path.
    pub cgroup: Option<String>,
}

impl ProcessInfo {
    /// Reads `/proc/PID`; what cannot be read (an exited process, another user's
    /// environment without privileges) is `None`.
    pub fn read(pid: u32) -> Self {
        let executable = std::fs::read_link(format!("/proc/{pid}/exe"))
            .ok()
            .and_then(|exe| {
                let name = exe.file_name()?.to_string_lossy().into_owned();
                Some(name.strip_suffix(" (deleted)").unwrap_or(&name).to_string())
            })
            .or_else(|| {
                std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .ok()
                    .map(|comm| comm.trim_end().to_string())
            });
        let service = std::fs::read(format!("/proc/{pid}/environ"))
            .ok()
            .and_then(|environ| service_name(&environ));
        Self {
            executable,
            service,
            cgroup: crate::mappings::read_cgroup(pid),
        }
    }
}

/// `OTEL_SERVICE_NAME` in a `/proc/PID/environ` block (NUL-separated), if set and not empty.
pub fn service_name(environ: &[u8]) -> Option<String> {
    environ
        .split(|&b| b == 0)
        .find_map(|entry| entry.strip_prefix(b"OTEL_SERVICE_NAME="))
        .map(|value| String::from_utf8_lossy(value).into_owned())
        .filter(|value| !value.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "4f9c2a1b8e7d6c5b4a3928171615141312111009080706050403020100aabbcc";
    const UID: &str = "0f3b5a1c-2d4e-4f60-8a9b-1c2d3e4f5a6b";

    fn workload(container: Option<&str>, pod: Option<&str>) -> Workload {
        Workload {
            container_id: container.map(str::to_string),
            pod_uid: pod.map(str::to_string),
        }
    }

    #[test]
    fn every_naming_scheme() {
        let cases = [
            // containerd, systemd driver, a burstable pod.
            (
                format!(
                    "/kubepods.slice/kubepods-burstable.slice/\
                     kubepods-burstable-pod0f3b5a1c_2d4e_4f60_8a9b_1c2d3e4f5a6b.slice/\
                     cri-containerd-{ID}.scope"
                ),
                workload(Some(ID), Some(UID)),
            ),
            // A guaranteed pod (no QoS slice), CRI-O.
            (
                format!(
                    "/kubepods.slice/kubepods-pod0f3b5a1c_2d4e_4f60_8a9b_1c2d3e4f5a6b.slice/\
                     crio-{ID}.scope"
                ),
                workload(Some(ID), Some(UID)),
            ),
            // The pod's slice alone: a pod, no container.
            (
                "/kubepods.slice/kubepods-besteffort.slice/\
                 kubepods-besteffort-pod0f3b5a1c_2d4e_4f60_8a9b_1c2d3e4f5a6b.slice"
                    .to_string(),
                workload(None, Some(UID)),
            ),
            // cgroupfs driver.
            (
                format!("/kubepods/burstable/pod{UID}/{ID}"),
                workload(Some(ID), Some(UID)),
            ),
            // Docker, systemd and cgroupfs drivers; a short ID under /docker.
            (
                format!("/system.slice/docker-{ID}.scope"),
                workload(Some(ID), None),
            ),
            (format!("/docker/{ID}"), workload(Some(ID), None)),
            (
                "/docker/4f9c2a1b8e7d".to_string(),
                workload(Some("4f9c2a1b8e7d"), None),
            ),
            // Podman; systemd running inside a container keeps the container's ID.
            (
                format!("/machine.slice/libpod-{ID}.scope/init.scope"),
                workload(Some(ID), None),
            ),
            // Not containers.
            (
                "/system.slice/nginx.service".to_string(),
                workload(None, None),
            ),
            (
                "/user.slice/user-1000.slice/session-2.scope".to_string(),
                workload(None, None),
            ),
            (
                "/system.slice/docker.service".to_string(),
                workload(None, None),
            ),
            ("/".to_string(), workload(None, None)),
            // A pod-like name that is not a UID.
            (
                "/kubepods.slice/kubepods-podxyz.slice".to_string(),
                workload(None, None),
            ),
            (
                "/system.slice/ipod-sync.service".to_string(),
                workload(None, None),
            ),
        ];
        for (path, expected) in cases {
            assert_eq!(Workload::from_cgroup(&path), expected, "{path}");
        }
    }

    #[test]
    fn ids_match_their_workload() {
        let both = workload(Some(ID), Some(UID));
        assert!(both.matches(UID));
        assert!(both.matches(&UID.replace('-', "_")));
        assert!(both.matches(&UID.to_ascii_uppercase()));
        assert!(both.matches(ID));
        assert!(both.matches(&ID[..12]));
        assert!(!both.matches(&ID[..11]), "too short a prefix");
        assert!(!both.matches("0f3b5a1c-2d4e-4f60-8a9b-000000000000"));
        assert!(!Workload::default().matches(ID));
        assert!(looks_like_id(UID));
        assert!(looks_like_id(&ID[..12]));
        assert!(!looks_like_id("/system.slice"));
        assert!(!looks_like_id("abc"));
    }

    #[test]
    fn service_names_from_the_environment() {
        assert_eq!(
            service_name(b"PATH=/bin\0OTEL_SERVICE_NAME=checkout\0HOME=/\0").as_deref(),
            Some("checkout")
        );
        assert_eq!(service_name(b"OTEL_SERVICE_NAME=\0"), None);
        assert_eq!(service_name(b"XOTEL_SERVICE_NAME=a\0"), None);
        assert_eq!(service_name(b""), None);
    }

    #[test]
    fn cgroups_found_by_id() {
        let root = std::env::temp_dir().join(format!("tk-workload-{}", std::process::id()));
        let pod = root.join(format!(
            "kubepods.slice/kubepods-pod{}.slice",
            UID.replace('-', "_")
        ));
        let container = pod.join(format!("cri-containerd-{ID}.scope"));
        std::fs::create_dir_all(&container).unwrap();
        assert_eq!(find_cgroup(&root, UID), Some(pod.clone()));
        assert_eq!(find_cgroup(&root, &ID[..12]), Some(container.clone()));
        assert_eq!(
            find_cgroup(&root, "0f3b5a1c-2d4e-4f60-8a9b-000000000000"),
            None
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
