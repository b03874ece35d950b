//! `init`: install, upgrade or remove kudo-rs in the cluster.

use std::time::Instant;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
    PostParams,
};
use kube::{Api, ResourceExt};
use kudo_api::Instance;
use kudo_certs::{
    self as certs, CA_SECRET_NAME, CertificateAuthority, MANAGER_POD_LABELS, SERVICE_NAME,
};
use serde_json::Value;

use super::FIELD_MANAGER;
use crate::cli::{GlobalArgs, InitArgs};
use crate::context::{KubeContext, connect};
use crate::error::{CliError, Result, status_code};
use crate::init::{CertMode, InitOptions, MANAGER_NAME, Tls, manifests, resource_of};
use crate::manager_pods::stuck_reason;
use crate::output::{DataFormat, format_data, list_of};
use crate::wait::{POLL_INTERVAL, ProgressView};

fn options(global: &GlobalArgs, args: &InitArgs) -> InitOptions {
    InitOptions {
        namespace: global
            .namespace
            .clone()
            .unwrap_or_else(|| certs::DEFAULT_NAMESPACE.to_string()),
        image: args.image.clone(),
        image_pull_policy: args.image_pull_policy.clone(),
        broad_rbac: args.broad_rbac,
        crd_only: args.crd_only,
        default_service_account: args.default_service_account.clone(),
        manager_writes_as_itself: args.manager_writes_as_itself,
    }
}

fn generate_ca() -> Result<CertificateAuthority> {
    CertificateAuthority::generate()
        .map_err(|e| CliError::Other(format!("cannot create the webhook CA: {e}")))
}

/// A serving certificate for the manager Service, signed by `ca`.
fn issue(ca: CertificateAuthority, namespace: &str) -> Result<Tls> {
    let serving = ca
        .issue(&certs::service_sans(SERVICE_NAME, namespace))
        .map_err(|e| CliError::Other(format!("cannot create the webhook certificate: {e}")))?;
    Ok(Tls {
        ca,
        serving: Some(serving),
    })
}

/// Prints the objects of `init --dry-run`: multi-document YAML or a JSON List.
pub fn dry_run_text(objects: &[Value], format: DataFormat) -> Result<String> {
    match format {
        DataFormat::Json => format_data(&list_of(objects)?, DataFormat::Json),
        DataFormat::Yaml => {
            let mut out = String::new();
            for object in objects {
                out.push_str("---\n");
                out.push_str(&format_data(object, DataFormat::Yaml)?);
            }
            Ok(out)
        }
    }
}

/// Runs `init`.
pub async fn run(global: &GlobalArgs, args: &InitArgs) -> Result<()> {
    let opts = options(global, args);
    let format = super::data_format(global, "init --dry-run")?;
    if format.is_some() && !args.dry_run {
        return Err(CliError::Usage(
            "-o/--output is only used with --dry-run".into(),
        ));
    }
    if args.dry_run {
        if args.uninstall {
            return Err(CliError::Usage(
                "--dry-run cannot be combined with --uninstall".into(),
            ));
        }
        let mode = if args.cert_manager {
            CertMode::CertManager
        } else {
            CertMode::SelfManaged(issue(generate_ca()?, &opts.namespace)?)
        };
        let format = format.unwrap_or(DataFormat::Yaml);
        out!("{}", dry_run_text(&manifests(&opts, &mode), format)?);
        return Ok(());
    }
    let ctx = connect(global).await?;
    let local = super::init_local::local_manager(&ctx).await?;
    if args.uninstall {
        return uninstall(&ctx, &opts, args, local.as_ref()).await;
    }
    if let Some(local) = local.filter(|_| !opts.crd_only) {
        return Err(super::init_local::refusal(&local));
    }
    let mode = if args.cert_manager {
        CertMode::CertManager
    } else {
        CertMode::SelfManaged(tls_for_install(&ctx, &opts.namespace, args.upgrade).await?)
    };
    let objects = manifests(&opts, &mode);
    let crds: Vec<String> = objects
        .iter()
        .filter(|o| o["kind"] == "CustomResourceDefinition")
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    for object in objects {
        write_object(&ctx, object, args.upgrade).await?;
    }
    // A command run right after init (install) needs the kinds served.
    super::init_crds::wait_established(&ctx, &crds).await?;
    if let CertMode::SelfManaged(Tls { serving: None, .. }) = &mode {
        outln!("webhook certificate kept (use --upgrade to issue a new one from the same CA)");
    }
    if args.wait && !opts.crd_only {
        wait_for_manager(&ctx, &opts.namespace, &opts.image, args.wait_timeout).await?;
    }
    Ok(())
}

/// The CA kept in its Secret is reused, so `caBundle` stays valid; a new
/// serving certificate is issued on first install and on `--upgrade`.
async fn tls_for_install(ctx: &KubeContext, namespace: &str, upgrade: bool) -> Result<Tls> {
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), namespace);
    let existing = secrets
        .get_opt(CA_SECRET_NAME)
        .await
        .map_err(|e| CliError::api(format!("reading Secret {namespace}/{CA_SECRET_NAME}"), e))?;
    let stored = existing.and_then(|secret| {
        let data = secret.data?;
        let text = |key: &str| {
            data.get(key)
                .map(|b| String::from_utf8_lossy(&b.0).into_owned())
        };
        Some((text("ca.crt")?, text("ca.key")?))
    });
    let Some((cert, key)) = stored else {
        return issue(generate_ca()?, namespace);
    };
    let ca = CertificateAuthority::from_pem(&cert, &key).map_err(|e| {
        CliError::Other(format!(
            "Secret {namespace}/{CA_SECRET_NAME} does not hold a usable CA ({e}); delete it and run `kubectl kudo init --upgrade`"
        ))
    })?;
    if upgrade {
        issue(ca, namespace)
    } else {
        Ok(Tls { ca, serving: None })
    }
}

fn dynamic_api(ctx: &KubeContext, object: &Value) -> Result<(Api<DynamicObject>, String, String)> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let Some((plural, namespaced)) = resource_of(api_version, kind) else {
        return Err(CliError::Other(format!(
            "init does not know how to write {api_version} {kind}"
        )));
    };
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let resource =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    let api = if namespaced {
        let ns = object["metadata"]["namespace"].as_str().unwrap_or_default();
        Api::namespaced_with(ctx.client.clone(), ns, &resource)
    } else {
        Api::all_with(ctx.client.clone(), &resource)
    };
    let label = match object["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{} {ns}/{name}", kind.to_lowercase()),
        None => format!("{} {name}", kind.to_lowercase()),
    };
    Ok((api, name, label))
}

async fn write_object(ctx: &KubeContext, object: Value, upgrade: bool) -> Result<()> {
    let (api, name, label) = dynamic_api(ctx, &object)?;
    let typed: DynamicObject = serde_json::from_value(object)
        .map_err(|e| CliError::Other(format!("cannot build {label}: {e}")))?;
    if upgrade {
        api.patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&typed),
        )
        .await
        .map_err(|e| CliError::api(format!("applying {label}"), e))?;
        outln!("{label} applied");
        return Ok(());
    }
    match api.create(&PostParams::default(), &typed).await {
        Ok(_) => outln!("{label} created"),
        Err(e) if status_code(&e) == Some(409) => {
            outln!("{label} already exists, not changed (use --upgrade to update)");
        }
        Err(e) => return Err(CliError::api(format!("creating {label}"), e)),
    }
    Ok(())
}

/// How long a pod problem (an image that cannot be pulled, a crash loop)
/// must last before `--wait` gives up on it: pulls are retried, and a
/// registry can be briefly unavailable.
const STUCK_FOR: std::time::Duration = std::time::Duration::from_secs(20);

async fn wait_for_manager(
    ctx: &KubeContext,
    namespace: &str,
    image: &str,
    timeout: std::time::Duration,
) -> Result<()> {
    let api: Api<Deployment> = Api::namespaced(ctx.client.clone(), namespace);
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    let selector = MANAGER_POD_LABELS
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let mut view = ProgressView::new();
    let mut stuck_since: Option<Instant> = None;
    loop {
        let deployment = api.get(MANAGER_NAME).await.map_err(|e| {
            CliError::api(format!("reading Deployment {namespace}/{MANAGER_NAME}"), e)
        })?;
        let available = deployment
            .status
            .as_ref()
            .and_then(|s| s.available_replicas)
            .unwrap_or(0);
        if available > 0 {
            view.finish();
            errln!(
                "kudo-manager is available after {}s",
                view.elapsed().as_secs()
            );
            return Ok(());
        }
        // Reading pods is a hint only: without the permission, just wait.
        let listed = pods.list(&ListParams::default().labels(&selector)).await;
        let stuck = listed
            .ok()
            .and_then(|list| stuck_reason(&list.items, image, namespace));
        match (&stuck, stuck_since) {
            (Some(reason), Some(since)) if since.elapsed() >= STUCK_FOR => {
                view.finish();
                return Err(CliError::Other(format!(
                    "Deployment {namespace}/{MANAGER_NAME} does not become available: {reason}"
                )));
            }
            (Some(_), None) => stuck_since = Some(Instant::now()),
            (None, _) => stuck_since = None,
            (Some(_), Some(_)) => {}
        }
        let waiting = match &stuck {
            Some(reason) => format!("waiting for Deployment {namespace}/{MANAGER_NAME}: {reason}"),
            None => {
                format!("waiting for Deployment {namespace}/{MANAGER_NAME} to become available")
            }
        };
        view.update(&waiting);
        if view.elapsed() >= timeout {
            view.finish();
            return Err(CliError::Timeout(format!(
                "timed out after {}s waiting for Deployment {namespace}/{MANAGER_NAME}; check `kubectl -n {namespace} describe deployment {MANAGER_NAME}`",
                timeout.as_secs()
            )));
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// Instances still present anywhere (none when the CRD is gone).
async fn remaining_instances(ctx: &KubeContext) -> Result<Vec<String>> {
    let api: Api<Instance> = Api::all(ctx.client.clone());
    match api.list(&ListParams::default()).await {
        Ok(list) => Ok(list
            .items
            .iter()
            .map(|i| format!("{}/{}", i.namespace().unwrap_or_default(), i.name_any()))
            .collect()),
        Err(e) if status_code(&e) == Some(404) => Ok(Vec::new()),
        Err(e) => Err(CliError::api("listing Instances", e)),
    }
}

/// MaintenanceSchedules still present (none when the CRD is gone): each
/// holds a finalizer only the running manager removes, once it has
/// released the Nodes the schedule cordoned or tainted.
async fn remaining_schedules(ctx: &KubeContext) -> Result<Vec<String>> {
    let api: Api<kudo_api::MaintenanceSchedule> = Api::all(ctx.client.clone());
    match api.list_metadata(&ListParams::default()).await {
        Ok(list) => Ok(list.items.iter().map(ResourceExt::name_any).collect()),
        Err(e) if status_code(&e) == Some(404) => Ok(Vec::new()),
        Err(e) => Err(CliError::api("listing MaintenanceSchedules", e)),
    }
}

/// Deletes the `kudo-instance` ServiceAccounts and RoleBindings the manager
/// made in Instances' namespaces (those it made carry its label).
async fn remove_instance_accounts(ctx: &KubeContext) -> Result<()> {
    use k8s_openapi::api::core::v1::ServiceAccount;
    use k8s_openapi::api::rbac::v1::RoleBinding;
    let made = kube::api::ListParams::default().labels("app.kubernetes.io/managed-by=kudo-manager");
    let name = kudo_api::names::INSTANCE_ACCOUNT;
    let bindings: Api<RoleBinding> = Api::all(ctx.client.clone());
    let list = bindings
        .list_metadata(&made)
        .await
        .map_err(|e| CliError::api("listing the Instances' RoleBindings", e))?;
    for b in list
        .items
        .iter()
        .filter(|b| b.metadata.name.as_deref() == Some(name))
    {
        let ns = b.metadata.namespace.clone().unwrap_or_default();
        let api: Api<RoleBinding> = Api::namespaced(ctx.client.clone(), &ns);
        match api.delete(name, &DeleteParams::background()).await {
            Ok(_) => outln!("rolebinding {ns}/{name} deleted"),
            Err(e) if status_code(&e) == Some(404) => {}
            Err(e) => {
                return Err(CliError::api(
                    format!("deleting rolebinding {ns}/{name}"),
                    e,
                ));
            }
        }
    }
    let accounts: Api<ServiceAccount> = Api::all(ctx.client.clone());
    let list = accounts
        .list_metadata(&made)
        .await
        .map_err(|e| CliError::api("listing the Instances' ServiceAccounts", e))?;
    for a in list
        .items
        .iter()
        .filter(|a| a.metadata.name.as_deref() == Some(name))
    {
        let ns = a.metadata.namespace.clone().unwrap_or_default();
        let api: Api<ServiceAccount> = Api::namespaced(ctx.client.clone(), &ns);
        match api.delete(name, &DeleteParams::background()).await {
            Ok(_) => outln!("serviceaccount {ns}/{name} deleted"),
            Err(e) if status_code(&e) == Some(404) => {}
            Err(e) => {
                return Err(CliError::api(
                    format!("deleting serviceaccount {ns}/{name}"),
                    e,
                ));
            }
        }
    }
    Ok(())
}

async fn uninstall(
    ctx: &KubeContext,
    opts: &InitOptions,
    args: &InitArgs,
    local: Option<&super::init_local::LocalManager>,
) -> Result<()> {
    let left = remaining_instances(ctx).await?;
    // A local manager runs the Instances: what init installed goes, the
    // CRDs it uses stay.
    let keep_crds = local.is_some();
    if !left.is_empty() && !keep_crds {
        return Err(CliError::Other(format!(
            "{} instance(s) still exist: {}; remove them first with `kubectl kudo uninstall --instance NAME -n NAMESPACE`",
            left.len(),
            left.join(", ")
        )));
    }
    let schedules = if keep_crds {
        Vec::new()
    } else {
        remaining_schedules(ctx).await?
    };
    if !schedules.is_empty() {
        return Err(CliError::Other(format!(
            "{} MaintenanceSchedule(s) still exist: {}; delete them first with `kubectl delete \
             maintenanceschedules --all` while the manager runs (it releases the Nodes they \
             cordoned or tainted, then lets them go); without the manager they could never be \
             deleted",
            schedules.len(),
            schedules.join(", ")
        )));
    }
    // Webhook first (so nothing is refused half-way), CRDs last.
    let mut objects = manifests(opts, &CertMode::CertManager);
    let self_managed = CertMode::SelfManaged(issue(generate_ca()?, &opts.namespace)?);
    objects.extend(manifests(opts, &self_managed));
    let mut seen = std::collections::BTreeSet::new();
    objects.retain(|o| seen.insert((o["kind"].to_string(), o["metadata"]["name"].to_string())));
    if keep_crds {
        let crd_only = InitOptions {
            crd_only: true,
            ..opts.clone()
        };
        let kept: Vec<(String, String)> = manifests(&crd_only, &CertMode::CertManager)
            .iter()
            .map(|o| (o["kind"].to_string(), o["metadata"]["name"].to_string()))
            .collect();
        objects.retain(|o| {
            !kept.contains(&(o["kind"].to_string(), o["metadata"]["name"].to_string()))
        });
    }
    objects.sort_by_key(|o| delete_rank(o["kind"].as_str().unwrap_or_default()));
    let started = Instant::now();
    for object in &objects {
        let (api, name, label) = dynamic_api(ctx, object)?;
        match api.delete(&name, &DeleteParams::background()).await {
            Ok(_) => outln!("{label} deleted"),
            Err(e) if status_code(&e) == Some(404) => {}
            // cert-manager kinds are absent when cert-manager is not installed.
            Err(e)
                if object["apiVersion"]
                    .as_str()
                    .is_some_and(|v| v.starts_with("cert-manager.io")) =>
            {
                tracing::debug!("skipping {label}: {e}");
            }
            Err(e) => return Err(CliError::api(format!("deleting {label}"), e)),
        }
    }
    if keep_crds {
        outln!(
            "a kudo-manager serving from outside the cluster runs the Instances here: the CRDs \
             and the kudo-instance ClusterRole stay, with the Instances and their accounts"
        );
    } else {
        remove_instance_accounts(ctx).await?;
    }
    if args.wait {
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(ctx.client.clone());
        let mut view = ProgressView::new();
        while namespaces
            .get_opt(&opts.namespace)
            .await
            .map_err(|e| CliError::api("reading namespace", e))?
            .is_some()
        {
            view.update(&format!(
                "waiting for namespace {} to be deleted",
                opts.namespace
            ));
            if started.elapsed() >= args.wait_timeout {
                view.finish();
                return Err(CliError::Timeout(format!(
                    "timed out after {}s waiting for namespace {} to be deleted",
                    args.wait_timeout.as_secs(),
                    opts.namespace
                )));
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
        view.finish();
    }
    Ok(())
}

/// Deletion order: the webhook before the manager, the CRDs last.
fn delete_rank(kind: &str) -> u8 {
    match kind {
        "ValidatingWebhookConfiguration" => 0,
        "Deployment" => 1,
        "Service" => 2,
        "Certificate" | "Issuer" | "Secret" => 3,
        "ClusterRoleBinding" => 4,
        "ClusterRole" => 5,
        "ServiceAccount" => 6,
        "Namespace" => 7,
        _ => 8,
    }
}
