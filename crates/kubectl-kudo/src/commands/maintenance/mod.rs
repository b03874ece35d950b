//! `maintenance schedule|status|down|up|cancel` (Mesos' maintenance
//! primitives): the CLI edits the spec of the one cluster-scoped
//! `MaintenanceSchedule` (named `default`) by read-modify-write with its
//! resourceVersion, after checking the result as the webhook checks it; the
//! manager taints, cordons, drains and uncordons from that spec and reports
//! in status, which `status` and `down --wait` read.

mod edit;
mod render;

use jiff::Timestamp;
use kube::Api;
use kube::api::PostParams;
use kudo_api::maintenance::SCHEDULE_NAME;
use kudo_api::{
    Machine, MaintenanceSchedule, MaintenanceScheduleSpec as Spec,
    MaintenanceScheduleStatus as Status,
};
use kudo_engine::maintenance::{describe, duration, same_machine};

use super::{CONFLICT_RETRIES, FIELD_MANAGER};
use crate::cli::{GlobalArgs, MaintenanceCommand, MaintenanceDownArgs, MaintenanceScheduleArgs};
use crate::context::{KubeContext, connect};
use crate::error::{CliError, Result, status_code};
use crate::output::{DataFormat, format_data};
use crate::wait::{POLL_INTERVAL, ProgressView};

/// Runs a `maintenance` command.
pub async fn run(global: &GlobalArgs, cmd: MaintenanceCommand) -> Result<()> {
    let format = match cmd {
        MaintenanceCommand::Status => super::data_format(global, "maintenance status")?,
        _ => {
            super::no_output(global, "this maintenance command")?;
            None
        }
    };
    let ctx = connect(global).await?;
    match cmd {
        MaintenanceCommand::Schedule(args) => schedule(&ctx, &args).await,
        MaintenanceCommand::Status => status(&ctx, format).await,
        MaintenanceCommand::Down(args) => down(&ctx, &args).await,
        MaintenanceCommand::Up(args) => up(&ctx, &args.nodes).await,
        MaintenanceCommand::Cancel(args) => cancel(&ctx, &args.nodes).await,
    }
}

fn schedules(ctx: &KubeContext) -> Api<MaintenanceSchedule> {
    Api::all(ctx.client.clone())
}

async fn read(ctx: &KubeContext) -> Result<Option<MaintenanceSchedule>> {
    schedules(ctx)
        .get_opt(SCHEDULE_NAME)
        .await
        .map_err(|e| CliError::api(format!("reading MaintenanceSchedule {SCHEDULE_NAME}"), e))
}

/// A schedule the CLI will not write, with the check's own message.
fn refused(message: String) -> CliError {
    CliError::Usage(format!("maintenance schedule not changed: {message}"))
}

/// `n1, host-a (10.0.0.7)`.
fn list(nodes: &[Machine]) -> String {
    nodes
        .iter()
        .map(Machine::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn noun(nodes: &[Machine]) -> &'static str {
    if nodes.len() == 1 { "node" } else { "nodes" }
}

/// Reads the schedule (an absent one is empty), lets `edit` compute the new
/// spec and writes it with the resourceVersion read, again from a fresh read
/// on 409. An unchanged spec is not written; an empty one is not created.
/// Returns the schedule as written (or as read, if unchanged).
async fn modify<T, F>(
    ctx: &KubeContext,
    action: &str,
    mut edit: F,
) -> Result<(Option<MaintenanceSchedule>, T)>
where
    F: FnMut(&Spec, Option<&Status>) -> Result<(Spec, T)>,
{
    let api = schedules(ctx);
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..PostParams::default()
    };
    let mut attempt = 0;
    loop {
        let current = read(ctx).await?;
        let spec = current.as_ref().map(|s| s.spec.clone()).unwrap_or_default();
        let (next, value) = edit(&spec, current.as_ref().and_then(|s| s.status.as_ref()))?;
        let written = match current {
            Some(object) if object.spec == next => return Ok((Some(object), value)),
            None if next == Spec::default() => return Ok((None, value)),
            Some(mut object) => {
                object.spec = next;
                object.metadata.managed_fields = None;
                api.replace(SCHEDULE_NAME, &params, &object).await
            }
            None => {
                api.create(&params, &MaintenanceSchedule::new(SCHEDULE_NAME, next))
                    .await
            }
        };
        match written {
            Ok(object) => return Ok((Some(object), value)),
            Err(e) if status_code(&e) == Some(409) && attempt + 1 < CONFLICT_RETRIES => {
                attempt += 1;
                tracing::info!(
                    attempt,
                    "MaintenanceSchedule changed concurrently; retrying"
                );
                let pause = u64::try_from(attempt).unwrap_or(1).saturating_mul(20);
                tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
            }
            Err(e) if status_code(&e) == Some(404) => {
                return Err(CliError::NotFound(format!(
                    "{action}: the cluster does not know MaintenanceSchedules; install or update \
                     kudo-rs's CRDs with `kubectl kudo init --upgrade` (or `init --crd-only`)"
                )));
            }
            Err(e) => {
                return Err(CliError::api(
                    format!("{action} (MaintenanceSchedule {SCHEDULE_NAME})"),
                    e,
                ));
            }
        }
    }
}

/// `maintenance schedule`.
async fn schedule(ctx: &KubeContext, args: &MaintenanceScheduleArgs) -> Result<()> {
    let nodes = edit::machines(&args.nodes, &args.hostname);
    let start = edit::parse_start(&args.start, Timestamp::now()).map_err(CliError::Usage)?;
    let (_, index) = modify(ctx, "adding a maintenance window", |spec, _| {
        let next = edit::add_window(spec, nodes.clone(), start, &args.duration, Timestamp::now())
            .map_err(refused)?;
        let index = next.windows.len().saturating_sub(1);
        Ok((next, index))
    })
    .await?;
    let names: Vec<String> = nodes.iter().map(Machine::to_string).collect();
    let end = kudo_api::Unavailability {
        start: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(start),
        duration: args.duration.trim().to_string(),
    };
    let end = duration(&end)
        .ok()
        .and_then(|d| start.checked_add(d).ok())
        .unwrap_or(start);
    outln!(
        "{} (MaintenanceSchedule {SCHEDULE_NAME}, spec.windows[{index}])",
        describe(&names, start, end)
    );
    outln!(
        "New pods avoid {} from now on and the Instances with pods there are told; follow with \
         `kubectl kudo maintenance status`, drain with `kubectl kudo maintenance down {}`",
        if nodes.len() == 1 { "it" } else { "them" },
        names.join(" ")
    );
    Ok(())
}

/// `maintenance status`.
async fn status(ctx: &KubeContext, format: Option<DataFormat>) -> Result<()> {
    let schedule = read(ctx).await?;
    match (schedule, format) {
        (None, None) => out!("{}", render::NO_SCHEDULE),
        (None, Some(_)) => {
            return Err(CliError::NotFound(format!(
                "MaintenanceSchedule {SCHEDULE_NAME} not found: no node is scheduled for maintenance"
            )));
        }
        (Some(schedule), Some(format)) => out!("{}", format_data(&schedule, format)?),
        (Some(schedule), None) => out!("{}", render::render(&schedule)),
    }
    Ok(())
}

/// `maintenance down`.
async fn down(ctx: &KubeContext, args: &MaintenanceDownArgs) -> Result<()> {
    let (written, change) = modify(ctx, "bringing nodes down", |spec, status| {
        let change = edit::down(spec, status, &args.nodes.nodes).map_err(refused)?;
        Ok((change.spec.clone(), change))
    })
    .await?;
    for machine in &change.already {
        errln!("note: node {machine} is Down already");
    }
    outln!(
        "{} {} going down: the manager cordons {} and evicts {} pods through the Eviction API, \
         respecting PodDisruptionBudgets; follow with `kubectl kudo maintenance status`",
        noun(&change.nodes),
        list(&change.nodes),
        if change.nodes.len() == 1 {
            "it"
        } else {
            "them"
        },
        if change.nodes.len() == 1 {
            "its"
        } else {
            "their"
        },
    );
    if args.wait {
        let generation = written.and_then(|w| w.metadata.generation);
        wait_drained(ctx, &change.nodes, generation, args.wait_timeout).await?;
    }
    Ok(())
}

/// Polls the schedule until every node in `nodes` is Down and drained.
async fn wait_drained(
    ctx: &KubeContext,
    nodes: &[Machine],
    generation: Option<i64>,
    timeout: std::time::Duration,
) -> Result<()> {
    let mut view = ProgressView::new();
    let result = loop {
        let Some(schedule) = read(ctx).await? else {
            break Err(CliError::NotFound(format!(
                "MaintenanceSchedule {SCHEDULE_NAME} was deleted while waiting for the drain"
            )));
        };
        if let Some(gone) = nodes
            .iter()
            .find(|m| !schedule.spec.down.iter().any(|d| same_machine(d, m)))
        {
            break Err(CliError::Other(format!(
                "node {gone} is no longer Down in the schedule (brought up or cancelled) while \
                 waiting for it to drain"
            )));
        }
        let (done, text) = render::drain_progress(&schedule, nodes, generation);
        if done {
            view.finish();
            errln!("{text} after {}s", view.elapsed().as_secs());
            break Ok(());
        }
        view.update(&text);
        if view.elapsed() >= timeout {
            break Err(CliError::Timeout(format!(
                "timed out after {}s waiting for {} {} to drain: {text}\nsee `kubectl kudo maintenance status`",
                timeout.as_secs(),
                noun(nodes),
                list(nodes)
            )));
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    };
    view.finish();
    result
}

/// `maintenance up`.
async fn up(ctx: &KubeContext, args: &[String]) -> Result<()> {
    let (_, nodes) = modify(ctx, "bringing nodes up", |spec, status| {
        edit::up(spec, status, args).map_err(refused)
    })
    .await?;
    outln!(
        "{} {} up: out of the maintenance schedule; the manager uncordons {} and removes the \
         maintenance taints",
        noun(&nodes),
        list(&nodes),
        if nodes.len() == 1 { "it" } else { "them" }
    );
    Ok(())
}

/// `maintenance cancel`.
async fn cancel(ctx: &KubeContext, args: &[String]) -> Result<()> {
    let (_, change) = modify(ctx, "cancelling maintenance", |spec, status| {
        let change = edit::cancel(spec, status, args).map_err(refused)?;
        Ok((change.spec.clone(), change))
    })
    .await?;
    if change.removed.is_empty() {
        outln!("nothing to cancel: no node is scheduled for maintenance that is not Down");
    } else {
        outln!(
            "maintenance of {} {} cancelled: out of the schedule; the manager removes the \
             maintenance taints",
            noun(&change.removed),
            list(&change.removed)
        );
    }
    if !change.kept_down.is_empty() {
        let names: Vec<String> = change.kept_down.iter().map(Machine::to_string).collect();
        outln!(
            "{} {} {} Down and {} in the schedule; bring {} back with `kubectl kudo maintenance up {}`",
            noun(&change.kept_down),
            names.join(", "),
            if names.len() == 1 { "is" } else { "are" },
            if names.len() == 1 { "stays" } else { "stay" },
            if names.len() == 1 { "it" } else { "them" },
            names.join(" ")
        );
    }
    Ok(())
}
