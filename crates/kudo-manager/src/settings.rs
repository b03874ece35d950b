//! Manager-wide engine settings given as flags to `run` and `dev`:
//! default maintenance windows, the automatic suppression on failure and
//! recovery of drift.

use std::time::Duration;

use kudo_api::MaintenanceWindow;
use kudo_engine::EngineConfig;

use crate::{Error, Result};

/// Engine flags shared by `kudo-manager run` and `kudo-manager dev`.
#[derive(clap::Args, Debug, Clone)]
pub struct EngineFlags {
    /// Default maintenance window, intersected with each Instance's windows
    /// (repeatable; several are a union): `DAYS START-END [TZ]`, e.g.
    /// "Mon-Fri 22:00-04:00 Europe/Berlin", "Sat,Sun 00:00-24:00", "* 02:00-03:00 UTC".
    #[arg(long = "maintenance-window", value_name = "WINDOW", value_parser = parse_maintenance_window)]
    pub maintenance_windows: Vec<MaintenanceWindow>,
    /// Whether a plan ending in FATAL_ERROR suppresses further automatic plans.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub auto_suppress_on_failure: bool,
    /// How long an automatic suppression lasts (e.g. 30m, 2h, 1h30m); unset = until cleared.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub auto_suppression_duration: Option<Duration>,
    /// Whether objects deleted or changed behind the manager's back are
    /// re-applied by the `recovery` plan (each Instance can turn it off
    /// with `spec.recovery: Disabled`).
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub recovery: bool,
    /// A plan held by a maintenance window or a suppression for this long
    /// gets a `PlanBlockedTooLong` Warning Event and the condition
    /// `Blocked` naming what holds it (0 = never).
    #[arg(long, value_name = "DURATION", default_value = "4h", value_parser = parse_duration)]
    pub blocked_warning_after: Duration,
    /// Automatic plans of every Instance of a namespace hold while more
    /// than N of its Instances are automatically suppressed after failures
    /// (0: the first one holds the namespace; `off`: never). A Namespace's
    /// annotation kudo.dev/suppression-threshold overrides it.
    #[arg(long, value_name = "N|off", default_value = "3", value_parser = kudo_engine::namespace_hold::parse_threshold)]
    pub namespace_suppression_threshold: kudo_engine::namespace::Threshold,
}

impl EngineFlags {
    /// The engine configuration these flags describe; fails with a message
    /// naming the bad window when a window does not validate.
    pub fn engine_config(&self) -> Result<EngineConfig> {
        for w in &self.maintenance_windows {
            kudo_engine::windows::validate(std::slice::from_ref(w)).map_err(|e| {
                Error::Config(format!("--maintenance-window {:?}: {e}", display_window(w)))
            })?;
        }
        Ok(EngineConfig {
            default_maintenance_windows: self.maintenance_windows.clone(),
            auto_suppress_on_failure: self.auto_suppress_on_failure,
            auto_suppression_duration: self.auto_suppression_duration,
            recovery: self.recovery,
            blocked_warning_after: (!self.blocked_warning_after.is_zero())
                .then_some(self.blocked_warning_after),
            namespace_suppression_threshold: self.namespace_suppression_threshold,
            ..EngineConfig::default()
        })
    }
}

/// Render budgets, shared by `run` and `dev`: a template or step that
/// renders more fails its step (FATAL_ERROR) instead of growing the manager.
#[derive(clap::Args, Debug, Clone)]
pub struct RenderFlags {
    /// Most bytes one template may render (e.g. 4Mi).
    #[arg(long, value_name = "SIZE", default_value = "4Mi", value_parser = parse_size)]
    pub max_template_output: usize,
    /// Most bytes the templates of one task may render together.
    #[arg(long, value_name = "SIZE", default_value = "16Mi", value_parser = parse_size)]
    pub max_step_output: usize,
    /// Most bytes of strings, lists and maps template functions may build in one template.
    #[arg(long, value_name = "SIZE", default_value = "16Mi", value_parser = parse_size)]
    pub max_template_values: usize,
    /// Most steps one template may take: actions, range iterations, function
    /// calls and the list elements they walk, template calls.
    #[arg(long, value_name = "N", default_value_t = kudo_package::render::DEFAULT_MAX_TEMPLATE_STEPS)]
    pub max_template_steps: u64,
    /// Longest a task's render may take, in seconds, before its step fails;
    /// renders run beside the workers that answer the webhook, probes and
    /// the leader lease, so a slow one delays nothing else.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub render_deadline: u64,
}

impl RenderFlags {
    /// The limits these flags describe.
    pub fn limits(&self) -> kudo_package::render::RenderLimits {
        kudo_package::render::RenderLimits {
            max_template_output: self.max_template_output,
            max_step_output: self.max_step_output,
            max_template_values: self.max_template_values,
            max_template_steps: self.max_template_steps,
            max_step_steps: self.max_template_steps.saturating_mul(4),
        }
    }

    /// How long a render may take.
    pub fn deadline(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.render_deadline.max(1))
    }
}

/// Parses a byte size: a number with an optional `Ki`, `Mi` or `Gi` suffix.
pub fn parse_size(s: &str) -> std::result::Result<usize, String> {
    let t = s.trim();
    let (digits, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t, ""),
    };
    let factor: usize = match unit {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        _ => return Err(format!("size {s:?}: unit {unit:?} is not Ki, Mi or Gi")),
    };
    let n: usize = digits.parse().map_err(|_| {
        format!("size {s:?}: expected a number of bytes with Ki, Mi or Gi, e.g. 4Mi")
    })?;
    match n.checked_mul(factor) {
        Some(0) => Err(format!("size {s:?}: must be larger than zero")),
        Some(bytes) => Ok(bytes),
        None => Err(format!("size {s:?}: too large")),
    }
}

fn display_window(w: &MaintenanceWindow) -> String {
    match &w.time_zone {
        Some(tz) => format!("{} {}-{} {tz}", w.days, w.start, w.end),
        None => format!("{} {}-{}", w.days, w.start, w.end),
    }
}

/// Parses `DAYS START-END [TZ]` into a [`MaintenanceWindow`]; field values
/// are checked by [`EngineFlags::engine_config`] with the engine's validation.
pub fn parse_maintenance_window(s: &str) -> std::result::Result<MaintenanceWindow, String> {
    const FORMAT: &str = "expected DAYS START-END [TZ], e.g. \"Mon-Fri 22:00-04:00 Europe/Berlin\"";
    let fields: Vec<&str> = s.split_whitespace().collect();
    let (days, times, tz) = match fields.as_slice() {
        [days, times] => (*days, *times, None),
        [days, times, tz] => (*days, *times, Some((*tz).to_string())),
        _ => {
            return Err(format!(
                "maintenance window {s:?}: {} fields, {FORMAT}",
                fields.len()
            ));
        }
    };
    let Some((start, end)) = times.split_once('-') else {
        return Err(format!(
            "maintenance window {s:?}: times {times:?} are not START-END, {FORMAT}"
        ));
    };
    if start.is_empty() || end.is_empty() {
        return Err(format!(
            "maintenance window {s:?}: times {times:?} are not START-END, {FORMAT}"
        ));
    }
    let window = MaintenanceWindow {
        days: days.to_string(),
        start: start.to_string(),
        end: end.to_string(),
        time_zone: tz,
        kind: None,
    };
    kudo_engine::windows::validate(std::slice::from_ref(&window)).map_err(|e| match e {
        kudo_engine::EngineError::InvalidWindow {
            field,
            value,
            reason,
            ..
        } => format!("maintenance window {s:?}: {field} {value:?}: {reason}"),
        other => format!("maintenance window {s:?}: {other}"),
    })?;
    Ok(window)
}

/// Parses a duration such as `90s`, `30m`, `2h`, `1d` or `1h30m`.
pub fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    const FORMAT: &str = "expected a number with a unit s, m, h or d, e.g. 30m, 2h, 1h30m";
    let mut total: u64 = 0;
    let mut digits = String::new();
    let mut parts = 0;
    for c in s.trim().chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit: u64 = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return Err(format!("duration {s:?}: unexpected {c:?}, {FORMAT}")),
        };
        let n: u64 = digits
            .parse()
            .map_err(|_| format!("duration {s:?}: a unit without a number, {FORMAT}"))?;
        total = n
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(|| format!("duration {s:?}: too long"))?;
        digits.clear();
        parts += 1;
    }
    if !digits.is_empty() {
        return Err(format!("duration {s:?}: {digits} has no unit, {FORMAT}"));
    }
    if parts == 0 {
        return Err(format!("duration {s:?}: empty, {FORMAT}"));
    }
    if total == 0 {
        return Err(format!("duration {s:?}: must be longer than zero"));
    }
    Ok(Duration::from_secs(total))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn window(days: &str, start: &str, end: &str, tz: Option<&str>) -> MaintenanceWindow {
        MaintenanceWindow {
            days: days.into(),
            start: start.into(),
            end: end.into(),
            time_zone: tz.map(String::from),
            kind: None,
        }
    }

    #[test]
    fn window_with_time_zone_parses_into_all_fields() {
        assert_eq!(
            parse_maintenance_window("Mon-Fri 22:00-04:00 Europe/Berlin").unwrap(),
            window("Mon-Fri", "22:00", "04:00", Some("Europe/Berlin"))
        );
    }

    #[test]
    fn window_without_time_zone_leaves_it_unset() {
        assert_eq!(
            parse_maintenance_window("Sat,Sun 00:00-24:00").unwrap(),
            window("Sat,Sun", "00:00", "24:00", None)
        );
        assert_eq!(
            parse_maintenance_window("  *   02:00-03:00   UTC ").unwrap(),
            window("*", "02:00", "03:00", Some("UTC"))
        );
    }

    #[test]
    fn window_with_wrong_field_count_is_refused_with_the_format() {
        let e = parse_maintenance_window("Mon-Fri").unwrap_err();
        assert!(e.contains("\"Mon-Fri\": 1 fields"), "{e}");
        assert!(e.contains("DAYS START-END [TZ]"), "{e}");
        let e = parse_maintenance_window("Mon 01:00-02:00 UTC extra").unwrap_err();
        assert!(e.contains("4 fields"), "{e}");
    }

    #[test]
    fn window_without_a_dash_between_times_is_refused() {
        let e = parse_maintenance_window("Mon 01:00 UTC").unwrap_err();
        assert!(e.contains("times \"01:00\" are not START-END"), "{e}");
        let e = parse_maintenance_window("Mon 01:00- UTC").unwrap_err();
        assert!(e.contains("are not START-END"), "{e}");
    }

    #[test]
    fn window_with_bad_day_time_or_zone_names_the_field() {
        let e = parse_maintenance_window("Funday 01:00-02:00").unwrap_err();
        assert!(e.contains("days \"Funday\""), "{e}");
        let e = parse_maintenance_window("Mon 25:00-02:00").unwrap_err();
        assert!(e.contains("start \"25:00\""), "{e}");
        let e = parse_maintenance_window("Mon 01:00-02:00 Mars/Olympus").unwrap_err();
        assert!(e.contains("timeZone \"Mars/Olympus\""), "{e}");
    }

    #[test]
    fn durations_with_units_parse() {
        assert_eq!(parse_duration("30m").unwrap(), Duration::from_secs(1800));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1d").unwrap(), Duration::from_secs(86_400));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
    }

    #[test]
    fn durations_without_unit_or_with_unknown_unit_are_refused() {
        let e = parse_duration("30").unwrap_err();
        assert!(e.contains("30 has no unit"), "{e}");
        let e = parse_duration("3w").unwrap_err();
        assert!(e.contains("unexpected 'w'"), "{e}");
        let e = parse_duration("").unwrap_err();
        assert!(e.contains("empty"), "{e}");
        let e = parse_duration("0m").unwrap_err();
        assert!(e.contains("longer than zero"), "{e}");
        let e = parse_duration("h").unwrap_err();
        assert!(e.contains("a unit without a number"), "{e}");
    }

    #[test]
    fn sizes_parse_with_binary_units_and_refuse_the_rest() {
        assert_eq!(parse_size("4Mi").unwrap(), 4 << 20);
        assert_eq!(parse_size("512Ki").unwrap(), 512 << 10);
        assert_eq!(parse_size("1Gi").unwrap(), 1 << 30);
        assert_eq!(parse_size("1000").unwrap(), 1000);
        assert!(parse_size("4MB").unwrap_err().contains("not Ki, Mi or Gi"));
        assert!(parse_size("Mi").unwrap_err().contains("expected a number"));
        assert!(parse_size("0").unwrap_err().contains("larger than zero"));
        assert!(parse_size("99999999999999999999Gi").is_err());
    }

    #[test]
    fn flags_become_the_engine_config() {
        let flags = EngineFlags {
            maintenance_windows: vec![window("*", "01:00", "02:00", None)],
            auto_suppress_on_failure: false,
            auto_suppression_duration: Some(Duration::from_secs(60)),
            recovery: false,
            blocked_warning_after: Duration::from_secs(3600),
            namespace_suppression_threshold: kudo_engine::namespace::Threshold::Off,
        };
        let c = flags.engine_config().unwrap();
        assert!(!c.recovery);
        assert_eq!(c.blocked_warning_after, Some(Duration::from_secs(3600)));
        let off = EngineFlags {
            blocked_warning_after: Duration::ZERO,
            ..flags.clone()
        };
        assert_eq!(off.engine_config().unwrap().blocked_warning_after, None);
        assert_eq!(c.default_maintenance_windows, flags.maintenance_windows);
        assert!(!c.auto_suppress_on_failure);
        assert_eq!(c.auto_suppression_duration, Some(Duration::from_secs(60)));
        assert_eq!(
            c.namespace_suppression_threshold,
            kudo_engine::namespace::Threshold::Off
        );
    }

    #[test]
    fn an_invalid_window_in_the_flags_is_a_config_error_naming_it() {
        let flags = EngineFlags {
            maintenance_windows: vec![window("Mon", "01:00", "99:00", None)],
            auto_suppress_on_failure: true,
            auto_suppression_duration: None,
            recovery: true,
            blocked_warning_after: Duration::from_secs(4 * 3600),
            namespace_suppression_threshold: kudo_engine::namespace::Threshold::MoreThan(3),
        };
        let e = flags.engine_config().unwrap_err().to_string();
        assert!(
            e.contains("--maintenance-window \"Mon 01:00-99:00\""),
            "{e}"
        );
        assert!(e.contains("end \"99:00\""), "{e}");
    }
}
