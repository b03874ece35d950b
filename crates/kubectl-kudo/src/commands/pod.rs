//! `pod restart` and `pod replace` (DC/OS): a plan operation naming the pod
//! and its uid; the manager deletes that pod once (and, for a replace, its
//! StatefulSet volume claims) and shows it in the recovery plan until it
//! is ready again.

use std::io::{BufRead, IsTerminal, Write};

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kudo_api::{PlanAction, PlanOperation};
use kudo_engine::recovery_pods::check_belongs;

use super::{append_operation, get_instance, new_id};
use crate::cli::PodCommand;
use crate::context::KubeContext;
use crate::error::{CliError, Result, status_code};

/// Runs `pod restart` or `pod replace`.
pub async fn run(ctx: &KubeContext, cmd: PodCommand) -> Result<()> {
    let (action, args, yes) = match cmd {
        PodCommand::Restart(args) => (PlanAction::RestartPod, args, false),
        PodCommand::Replace(replace) => (PlanAction::ReplacePod, replace.pod, replace.yes),
    };
    get_instance(ctx, &args.instance).await?;
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let pod = match pods.get(&args.pod).await {
        Ok(pod) => pod,
        Err(e) if status_code(&e) == Some(404) => {
            return Err(CliError::NotFound(format!(
                "pod {} not found in namespace {}",
                args.pod, ctx.namespace
            )));
        }
        Err(e) => return Err(CliError::api(format!("reading pod {}", args.pod), e)),
    };
    check_belongs(&pod, &args.instance).map_err(CliError::Usage)?;
    if action == PlanAction::ReplacePod && !yes && !confirm(&args.pod)? {
        errln!("nothing done");
        return Ok(());
    }
    let operation = PlanOperation {
        id: new_id(),
        action,
        reason: args.reason.clone(),
        requested_by: ctx.user.clone(),
        pod: Some(args.pod.clone()),
        pod_uid: pod.metadata.uid.clone(),
        ..PlanOperation::default()
    };
    append_operation(ctx, &args.instance, &operation).await?;
    let verb = kudo_engine::recovery_pods::step_name(action);
    outln!(
        "{verb} of pod {} requested; follow it with `{}`",
        args.pod,
        kudo_api::hint::KudoCommand::new("plan status", &args.instance).namespace(&ctx.namespace)
    );
    Ok(())
}

/// Asks before volumes are deleted; without a terminal, `--yes` is needed.
fn confirm(pod: &str) -> Result<bool> {
    if !std::io::stdin().is_terminal() {
        return Err(CliError::Usage(format!(
            "replacing pod {pod} deletes its volume claims and their data; pass --yes to confirm"
        )));
    }
    crate::output::write_stderr(format_args!(
        "Replace pod {pod}? Its StatefulSet volume claims and their data are deleted. [y/N] "
    ));
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| CliError::Other(format!("reading the answer: {e}")))?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "YES"))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command, PodCommand};

    #[test]
    fn pod_commands_take_the_instance_the_pod_and_for_replace_yes() {
        let cli = Cli::try_parse_from([
            "kubectl-kudo",
            "pod",
            "replace",
            "--instance",
            "zk",
            "zk-1",
            "--yes",
            "--reason",
            "disk",
        ])
        .unwrap();
        let Command::Pod(PodCommand::Replace(replace)) = cli.command else {
            panic!("not a pod replace");
        };
        let args = &replace.pod;
        assert_eq!(
            (args.instance.as_str(), args.pod.as_str(), replace.yes),
            ("zk", "zk-1", true)
        );
        assert_eq!(args.reason.as_deref(), Some("disk"));
        assert!(
            Cli::try_parse_from(["kubectl-kudo", "pod", "restart", "zk-1"]).is_err(),
            "--instance is required"
        );
    }

    #[test]
    fn restart_deletes_no_volume_so_it_takes_no_yes() {
        let parsed = Cli::try_parse_from([
            "kubectl-kudo",
            "pod",
            "restart",
            "--instance",
            "zk",
            "zk-1",
            "--yes",
        ]);
        assert!(parsed.is_err());
    }
}
