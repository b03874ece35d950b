//! `suppress` and `suppress clear`.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kudo_api::{PlanAction, PlanOperation, Suppression};

use super::{new_id, read_modify_write};
use crate::cli::{GlobalArgs, SuppressAction, SuppressArgs, parse_duration};
use crate::context::connect;
use crate::error::{CliError, Result};
use crate::patch;
use crate::plan_tree::format_time;

/// `--until`: an RFC 3339 time, or a duration from `now`.
pub fn parse_until(raw: &str, now: Timestamp) -> Result<Timestamp> {
    if let Ok(ts) = raw.parse::<Timestamp>() {
        if ts <= now {
            return Err(CliError::Usage(format!(
                "--until {raw} is in the past; give a later time or a duration such as 2h"
            )));
        }
        return Ok(ts);
    }
    let duration = parse_duration(raw).map_err(|_| {
        CliError::Usage(format!(
            "--until {raw:?} is neither an RFC 3339 time (2026-11-24T06:00:00Z) nor a duration (2h, 30m)"
        ))
    })?;
    let span = jiff::SignedDuration::try_from(duration)
        .map_err(|e| CliError::Usage(format!("--until {raw:?} is too long: {e}")))?;
    now.checked_add(span)
        .map_err(|e| CliError::Usage(format!("--until {raw:?} is too far in the future: {e}")))
}

/// Runs `suppress` or `suppress clear`.
pub async fn run(global: &GlobalArgs, args: SuppressArgs) -> Result<()> {
    if let Some(SuppressAction::Clear(clear)) = args.action {
        let ctx = connect(global).await?;
        let current = super::get_instance(&ctx, &clear.instance).await?;
        let automatic = current
            .status
            .as_ref()
            .and_then(|s| s.auto_suppression.as_ref())
            .is_some();
        if current.spec.suppressions.is_empty() && !automatic {
            outln!(
                "instance {}/{} is not suppressed; nothing to clear",
                ctx.namespace,
                clear.instance
            );
            return Ok(());
        }
        let operation = PlanOperation {
            id: new_id(),
            action: PlanAction::ClearSuppression,
            reason: clear.reason.clone(),
            requested_by: ctx.user.clone(),
            ..PlanOperation::default()
        };
        let mut removed = 0;
        read_modify_write(&ctx, &clear.instance, "clearing suppressions", |current| {
            removed = current.spec.suppressions.len();
            let rv = current.resource_version().unwrap_or_default();
            Ok(patch::clear_suppressions(
                &rv,
                &current.spec.plan_operations,
                operation.clone(),
            ))
        })
        .await?;
        let mut cleared = Vec::new();
        if removed > 0 {
            cleared.push(format!(
                "{removed} manual suppression{} removed",
                if removed == 1 { "" } else { "s" }
            ));
        }
        if automatic {
            cleared.push(format!(
                "the automatic suppression is cleared by operation {}",
                operation.id
            ));
        }
        outln!(
            "suppressions of instance {}/{} cleared: {}",
            ctx.namespace,
            clear.instance,
            cleared.join("; ")
        );
        return Ok(());
    }

    let instance = args.instance.ok_or_else(|| {
        CliError::Usage(
            "suppress needs --instance NAME (or use `suppress clear --instance NAME`)".into(),
        )
    })?;
    let reason = args
        .reason
        .filter(|r| !r.trim().is_empty())
        .ok_or_else(|| {
            CliError::Usage("suppress needs --reason TEXT: everyone sees why plans are held".into())
        })?;
    let until = args
        .until
        .as_deref()
        .map(|raw| parse_until(raw, Timestamp::now()))
        .transpose()?;
    let ctx = connect(global).await?;
    let suppression = Suppression {
        from: None,
        until: until.map(Time),
        reason: reason.clone(),
        by: ctx.user.clone(),
    };
    read_modify_write(&ctx, &instance, "adding a suppression", |current| {
        let rv = current.resource_version().unwrap_or_default();
        Ok(patch::add_suppression(
            &rv,
            &current.spec.suppressions,
            suppression.clone(),
        ))
    })
    .await?;
    let until_text = until.map_or_else(
        || "until cleared".to_string(),
        |u| format!("until {} UTC", format_time(&Time(u))),
    );
    outln!(
        "instance {}/{instance} suppressed {until_text}: {reason}",
        ctx.namespace
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2026-11-21T12:00:00Z".parse().unwrap()
    }

    #[test]
    fn until_accepts_times_and_durations() {
        assert_eq!(
            parse_until("2026-11-22T06:00:00Z", now()).unwrap(),
            "2026-11-22T06:00:00Z".parse::<Timestamp>().unwrap()
        );
        assert_eq!(
            parse_until("2h", now()).unwrap(),
            "2026-11-21T14:00:00Z".parse::<Timestamp>().unwrap()
        );
    }

    #[test]
    fn until_in_the_past_or_garbage_is_a_usage_error() {
        assert_eq!(
            parse_until("2026-11-20T00:00:00Z", now())
                .unwrap_err()
                .exit_code(),
            2
        );
        assert_eq!(parse_until("tomorrow", now()).unwrap_err().exit_code(), 2);
    }
}
