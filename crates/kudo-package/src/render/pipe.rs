//! Pipe tasks (KUDO's task kind `Pipe`): a pod writes files into an emptyDir; the
//! executor copies them into Secrets or ConfigMaps named after the task.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use kudo_api::names;
use kudo_api::{OperatorVersion, PipeSpec};
use regex::Regex;
use serde_json::{Value, json};

use super::enhance::{EnhanceMode, enhance_object, object_field};
use super::{Discovery, RenderContext, RenderedTask, find_task};
use crate::RenderError;

/// Image of the container that keeps the pipe pod alive while files are
/// copied out.
pub const WAITER_IMAGE: &str = "busybox:1.36";

/// One file a Pipe task copies, with the artifact it becomes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipeFile {
    /// Path of a file copied whole.
    pub file: Option<String>,
    /// Path of a `KEY=value` file (its lines become ConfigMap/Secret keys).
    pub env_file: Option<String>,
    /// `Secret` or `ConfigMap`.
    pub kind: String,
    /// The pipe key (`.Pipes.<key>`).
    pub key: String,
    /// Name of the Secret/ConfigMap to create.
    pub artifact_name: String,
}

static KEY: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"^[a-zA-Z0-9_\-]+$").ok());
static FILE_NAME: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"^[-._a-zA-Z0-9]+$").ok());

fn matches(re: &LazyLock<Option<Regex>>, s: &str) -> bool {
    re.as_ref().is_some_and(|r| r.is_match(s))
}

/// One part of a pipe name: lower-cased, everything outside `[a-z0-9]` dropped.
pub fn pipe_name_part(s: &str) -> String {
    s.to_lowercase()
        .chars()
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        .collect()
}

/// `<instance>.<plan>.<phase>.<step>.<task>.<suffix>`, sanitized.
pub(crate) fn artifact_name(
    instance: &str,
    plan: &str,
    phase: &str,
    step: &str,
    task: &str,
    suffix: &str,
) -> String {
    [instance, plan, phase, step, task, suffix]
        .iter()
        .map(|p| pipe_name_part(p))
        .collect::<Vec<_>>()
        .join(".")
}

/// Checks the `pipe` list of a task; errors are plain messages.
pub(crate) fn validate_pipe_specs(pipes: &[PipeSpec]) -> Result<(), String> {
    if pipes.is_empty() {
        return Err("the pipe list is empty; list at least one file".into());
    }
    let mut keys = BTreeSet::new();
    for p in pipes {
        if !matches(&KEY, &p.key) {
            return Err(format!(
                "key {:?} is invalid; keys may contain only letters, digits, '_' and '-'",
                p.key
            ));
        }
        if !keys.insert(p.key.as_str()) {
            return Err(format!("key {:?} is used twice", p.key));
        }
        if p.kind != "Secret" && p.kind != "ConfigMap" {
            return Err(format!(
                "key {:?}: kind {:?} is invalid; use Secret or ConfigMap",
                p.key, p.kind
            ));
        }
        match (non_empty(&p.file), non_empty(&p.env_file)) {
            (Some(_), None) | (None, Some(_)) => {}
            _ => {
                return Err(format!(
                    "key {:?}: set exactly one of file and envFile",
                    p.key
                ));
            }
        }
    }
    Ok(())
}

fn non_empty(s: &Option<String>) -> Option<&str> {
    s.as_deref().filter(|s| !s.is_empty())
}

pub(crate) fn render_pipe(
    ov: &OperatorVersion,
    task_name: &str,
    ctx: &RenderContext,
    discovery: &dyn Discovery,
    budget: &mut super::StepBudget,
) -> Result<RenderedTask, RenderError> {
    let err = |detail: String| RenderError::Pipe {
        task: task_name.to_string(),
        detail,
    };
    let task = find_task(ov, task_name)?;
    let pod_template = task
        .spec
        .pod
        .as_deref()
        .filter(|p| !p.is_empty())
        .ok_or_else(|| err("no `pod` template given".into()))?;
    validate_pipe_specs(&task.spec.pipe).map_err(err)?;
    // Not `render_resources`: KUDO names the pipe pod itself, so packages
    // (cowsay, for one) leave metadata.name out of the template.
    let text = budget.render_template(
        ov,
        task_name,
        pod_template,
        &ctx.template_data(),
        super::injection::Shape::Objects,
    )?;
    let mut objects = crate::yaml::parse_documents(&text).map_err(|detail| RenderError::Yaml {
        task: task_name.to_string(),
        template: pod_template.to_string(),
        detail,
    })?;
    if objects.len() != 1 || objects[0].get("kind").and_then(Value::as_str) != Some("Pod") {
        return Err(err(format!(
            "template {pod_template} must render exactly one Pod"
        )));
    }
    let mut pod = objects.remove(0);
    let mount_path = validate_pod(&pod).map_err(err)?;
    for p in &task.spec.pipe {
        let path = non_empty(&p.file).or(non_empty(&p.env_file)).unwrap_or("");
        check_file_path(path, &mount_path).map_err(|d| err(format!("key {:?}: {d}", p.key)))?;
    }
    let files = task
        .spec
        .pipe
        .iter()
        .map(|p| PipeFile {
            file: non_empty(&p.file).map(str::to_string),
            env_file: non_empty(&p.env_file).map(str::to_string),
            kind: p.kind.clone(),
            key: p.key.clone(),
            artifact_name: artifact_name(
                &ctx.instance_name,
                &ctx.plan,
                &ctx.phase,
                &ctx.step,
                task_name,
                &p.key,
            ),
        })
        .collect();
    prepare_pod(&mut pod, ctx, task_name, &mount_path);
    let namespaced = discovery.is_namespaced("v1", "Pod").unwrap_or(true);
    enhance_object(&mut pod, ctx, namespaced, EnhanceMode::Apply);
    Ok(RenderedTask::Pipe { pod, files })
}

/// Checks KUDO's pipe pod rules; returns the mount path of the shared volume.
fn validate_pod(pod: &Value) -> Result<String, String> {
    let spec = pod.get("spec").cloned().unwrap_or(json!({}));
    let list = |field: &str| -> Vec<Value> {
        spec.get(field)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    if !list("containers").is_empty() {
        return Err(
            "the pod must have no containers, only one initContainer that writes the files".into(),
        );
    }
    let init = list("initContainers");
    if init.len() != 1 {
        return Err(format!(
            "the pod must have exactly one initContainer, found {}",
            init.len()
        ));
    }
    let volumes: Vec<Value> = list("volumes")
        .into_iter()
        .filter(|v| v.get("emptyDir").is_some())
        .collect();
    if volumes.len() != 1 {
        return Err(format!(
            "the pod must have exactly one emptyDir volume, found {}",
            volumes.len()
        ));
    }
    let volume = volumes[0].get("name").and_then(Value::as_str).unwrap_or("");
    match spec.get("restartPolicy").and_then(Value::as_str) {
        None | Some("") | Some("OnFailure") => {}
        Some(other) => {
            return Err(format!(
                "restartPolicy {other:?} is not allowed; leave it empty or use OnFailure"
            ));
        }
    }
    init[0]
        .get("volumeMounts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|m| m.get("name").and_then(Value::as_str) == Some(volume))
        .and_then(|m| m.get("mountPath").and_then(Value::as_str))
        .map(str::to_string)
        .ok_or_else(|| format!("the initContainer must mount the emptyDir volume {volume:?}"))
}

fn check_file_path(path: &str, mount_path: &str) -> Result<(), String> {
    let dir = mount_path.trim_end_matches('/');
    let Some(rest) = path.strip_prefix(dir).and_then(|r| r.strip_prefix('/')) else {
        return Err(format!(
            "file {path:?} is not under the shared volume's mount path {mount_path:?}"
        ));
    };
    let name = rest.rsplit('/').next().unwrap_or("");
    if !matches(&FILE_NAME, name) {
        return Err(format!(
            "file name {name:?} is invalid; use only letters, digits, '-', '_' and '.'"
        ));
    }
    Ok(())
}

fn prepare_pod(pod: &mut Value, ctx: &RenderContext, task: &str, mount_path: &str) {
    let Some(root) = pod.as_object_mut() else {
        return;
    };
    let name = artifact_name(
        &ctx.instance_name,
        &ctx.plan,
        &ctx.phase,
        &ctx.step,
        task,
        "pipepod",
    );
    let metadata = object_field(root, "metadata");
    metadata.insert("name".into(), json!(name));
    object_field(metadata, "annotations").insert(names::PIPE_POD_ANNOTATION.into(), json!("true"));
    let spec = object_field(root, "spec");
    spec.insert("restartPolicy".into(), json!("OnFailure"));
    let volume = spec
        .get("volumes")
        .and_then(Value::as_array)
        .and_then(|vs| vs.iter().find(|v| v.get("emptyDir").is_some()))
        .and_then(|v| v.get("name").cloned())
        .unwrap_or(json!(""));
    spec.insert(
        "containers".into(),
        json!([{
            "name": "waiter",
            "image": WAITER_IMAGE,
            "command": ["sh", "-c", "trap 'exit 0' TERM; sleep infinity & wait"],
            "volumeMounts": [{"name": volume, "mountPath": mount_path}],
        }]),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(key: &str, file: Option<&str>, env: Option<&str>, kind: &str) -> PipeSpec {
        PipeSpec {
            file: file.map(str::to_string),
            env_file: env.map(str::to_string),
            kind: kind.into(),
            key: key.into(),
        }
    }

    #[test]
    fn artifact_names_are_sanitized_and_dotted() {
        assert_eq!(
            artifact_name("My-Inst", "deploy", "main", "gen_step", "gen", "indexHtml"),
            "myinst.deploy.main.genstep.gen.indexhtml"
        );
    }

    #[test]
    fn pipe_specs_need_valid_unique_keys_and_one_source() {
        assert!(validate_pipe_specs(&[spec("a", Some("/x/a"), None, "Secret")]).is_ok());
        let cases = [
            (vec![], "empty"),
            (vec![spec("a b", Some("/x"), None, "Secret")], "invalid"),
            (
                vec![
                    spec("a", Some("/x"), None, "Secret"),
                    spec("a", Some("/y"), None, "Secret"),
                ],
                "twice",
            ),
            (vec![spec("a", Some("/x"), None, "Pod")], "kind"),
            (
                vec![spec("a", Some("/x"), Some("/y"), "Secret")],
                "exactly one",
            ),
            (vec![spec("a", None, None, "Secret")], "exactly one"),
        ];
        for (pipes, want) in cases {
            let err = validate_pipe_specs(&pipes).unwrap_err();
            assert!(err.contains(want), "{err} should mention {want}");
        }
    }

    #[test]
    fn pod_rules_are_checked() {
        let good = json!({"spec": {"initContainers": [{"name": "i", "volumeMounts": [{"name": "v", "mountPath": "/out"}]}],
            "volumes": [{"name": "v", "emptyDir": {}}]}});
        assert_eq!(validate_pod(&good).unwrap(), "/out");
        let mut with_container = good.clone();
        with_container["spec"]["containers"] = json!([{"name": "c"}]);
        assert!(
            validate_pod(&with_container)
                .unwrap_err()
                .contains("no containers")
        );
        let mut always = good.clone();
        always["spec"]["restartPolicy"] = json!("Always");
        assert!(validate_pod(&always).unwrap_err().contains("restartPolicy"));
        let mut unmounted = good;
        unmounted["spec"]["initContainers"][0]["volumeMounts"] = json!([]);
        assert!(validate_pod(&unmounted).unwrap_err().contains("must mount"));
    }

    #[test]
    fn files_must_live_under_the_mount_path() {
        assert!(check_file_path("/out/index.html", "/out").is_ok());
        assert!(check_file_path("/etc/passwd", "/out").is_err());
        assert!(check_file_path("/out/bad name", "/out").is_err());
    }
}
