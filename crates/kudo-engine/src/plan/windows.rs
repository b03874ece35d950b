//! Weekly maintenance windows (Apollo): when may a new step or plan start?
//!
//! A window opens on each selected day at `start` local time in its time
//! zone and closes at `end`; an `end` at or before `start` closes on the
//! next day (a window crossing midnight). Local times are resolved with
//! jiff's bundled tz database, so DST is handled: a start that falls into a
//! spring-forward gap opens at the first valid instant after it, and the
//! window's length in absolute time shrinks or grows across a DST change.
//!
//! A list of windows is their union; the Instance's list and the manager's
//! default list are intersected (an empty list means "always open").

use jiff::civil::{Date, Weekday};
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};
use kudo_api::{MaintenanceWindow, WindowKind};

use crate::model::error::EngineError;

/// How far ahead the next opening is searched.
const HORIZON_DAYS: i64 = 15;

/// Whether steps may start now, and until or from when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowState {
    /// Inside the windows (or no windows set).
    Open {
        /// When the current window closes (`None`: never).
        closes_at: Option<Timestamp>,
    },
    /// Outside every window.
    Closed {
        /// Next opening, if one exists within the next two weeks.
        opens_at: Option<Timestamp>,
    },
}

impl WindowState {
    /// Whether steps may start.
    pub fn is_open(self) -> bool {
        matches!(self, Self::Open { .. })
    }
}

/// A window with its fields parsed.
#[derive(Debug, Clone)]
struct ParsedWindow {
    days: [bool; 7],
    start: (i8, i8),
    end: (i8, i8),
    tz: TimeZone,
}

/// Checks every window of `windows` (the webhook uses this to refuse bad ones).
pub fn validate(windows: &[MaintenanceWindow]) -> Result<(), EngineError> {
    windows
        .iter()
        .enumerate()
        .try_for_each(|(i, w)| parse(i, w).map(|_| ()))
}

/// The window states of one pass: for plans that keep the service up,
/// and for plans that declare downtime (Apollo's two kinds of window).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Windows {
    /// Inside the no-downtime windows (unset kind) of the Instance and of
    /// the manager's defaults.
    pub no_downtime: Result<WindowState, EngineError>,
    /// Inside those and the downtime windows too; `None` when no window is
    /// of kind `Downtime` (then downtime plans wait as the others do).
    pub downtime: Option<Result<WindowState, EngineError>>,
}

impl Windows {
    /// The states at `now` of the Instance's windows intersected with the
    /// manager's defaults. A plan that declares downtime needs a downtime
    /// window open as well as a no-downtime one (when windows of that kind
    /// are set at all); every other plan needs a no-downtime window.
    pub fn at(
        instance: &[MaintenanceWindow],
        defaults: &[MaintenanceWindow],
        now: Timestamp,
    ) -> Self {
        let is_downtime = |w: &&MaintenanceWindow| w.kind == Some(WindowKind::Downtime);
        let any_downtime = instance.iter().chain(defaults).any(|w| is_downtime(&w));
        let whole = state(instance, defaults, now);
        if !any_downtime || whole.is_err() {
            // An invalid window names its index in the Instance's list.
            return Self {
                downtime: any_downtime.then(|| whole.clone()),
                no_downtime: whole,
            };
        }
        let split = |list: &[MaintenanceWindow], down: bool| -> Vec<MaintenanceWindow> {
            list.iter()
                .filter(|w| is_downtime(w) == down)
                .cloned()
                .collect()
        };
        let (inst_up, defaults_up) = (split(instance, false), split(defaults, false));
        let (inst_down, defaults_down) = (split(instance, true), split(defaults, true));
        let lists: [&[MaintenanceWindow]; 2] = [&inst_up, &defaults_up];
        let all: [&[MaintenanceWindow]; 4] = [&inst_up, &defaults_up, &inst_down, &defaults_down];
        Self {
            no_downtime: state_of(&lists, now),
            downtime: Some(state_of(&all, now)),
        }
    }

    /// The state a plan waits for, and which kind of window that is.
    pub fn for_plan(&self, downtime: bool) -> (WindowKind, &Result<WindowState, EngineError>) {
        match (&self.downtime, downtime) {
            (Some(d), true) => (WindowKind::Downtime, d),
            _ => (WindowKind::NoDowntime, &self.no_downtime),
        }
    }
}

/// The state at `now` of the intersection of `instance` and `defaults`
/// (every window counted, whatever its kind).
pub fn state(
    instance: &[MaintenanceWindow],
    defaults: &[MaintenanceWindow],
    now: Timestamp,
) -> Result<WindowState, EngineError> {
    state_of(&[instance, defaults], now)
}

/// The state at `now` of the intersection of the lists (an empty list is
/// always open).
fn state_of(lists_in: &[&[MaintenanceWindow]], now: Timestamp) -> Result<WindowState, EngineError> {
    let mut lists = Vec::new();
    for list in lists_in {
        if !list.is_empty() {
            lists.push(intervals(list, now)?);
        }
    }
    let Some(first) = lists.first().cloned() else {
        return Ok(WindowState::Open { closes_at: None });
    };
    let merged = lists
        .iter()
        .skip(1)
        .fold(first, |acc, l| intersect(&acc, l));
    Ok(match merged.iter().find(|(_, end)| *end > now) {
        Some((start, end)) if *start <= now => WindowState::Open {
            closes_at: Some(*end),
        },
        Some((start, _)) => WindowState::Closed {
            opens_at: Some(*start),
        },
        None => WindowState::Closed { opens_at: None },
    })
}

fn parse(index: usize, w: &MaintenanceWindow) -> Result<ParsedWindow, EngineError> {
    let err = |field: &'static str, value: &str, reason: String| EngineError::InvalidWindow {
        index,
        field,
        value: value.to_string(),
        reason,
    };
    let days = parse_days(&w.days).map_err(|r| err("days", &w.days, r))?;
    let start = parse_time(&w.start, false).map_err(|r| err("start", &w.start, r))?;
    let end = parse_time(&w.end, true).map_err(|r| err("end", &w.end, r))?;
    let tz_name = w.time_zone.as_deref().unwrap_or("UTC");
    let tz = TimeZone::get(tz_name).map_err(|e| {
        err(
            "timeZone",
            tz_name,
            format!("not an IANA time zone such as Europe/Berlin ({e})"),
        )
    })?;
    Ok(ParsedWindow {
        days,
        start,
        end,
        tz,
    })
}

fn weekday(name: &str) -> Option<Weekday> {
    let lower = name.trim().to_ascii_lowercase();
    let all = [
        ("mon", "monday", Weekday::Monday),
        ("tue", "tuesday", Weekday::Tuesday),
        ("wed", "wednesday", Weekday::Wednesday),
        ("thu", "thursday", Weekday::Thursday),
        ("fri", "friday", Weekday::Friday),
        ("sat", "saturday", Weekday::Saturday),
        ("sun", "sunday", Weekday::Sunday),
    ];
    all.into_iter()
        .find(|(short, long, _)| lower == *short || lower == *long)
        .map(|(_, _, d)| d)
}

fn day_index(d: Weekday) -> usize {
    usize::try_from(d.to_monday_zero_offset()).unwrap_or(0)
}

fn parse_days(raw: &str) -> Result<[bool; 7], String> {
    let expected =
        "expected `*`, day names (Mon, Tue, ...) separated by commas, or ranges such as Mon-Fri";
    let mut days = [false; 7];
    if raw.trim() == "*" {
        return Ok([true; 7]);
    }
    for part in raw.split(',').map(str::trim) {
        let unknown = |d: &str| format!("unknown day {d:?}; {expected}");
        match part.split_once('-') {
            Some((a, b)) => {
                let from = weekday(a).ok_or_else(|| unknown(a))?;
                let to = weekday(b).ok_or_else(|| unknown(b))?;
                let (mut i, last) = (day_index(from), day_index(to));
                loop {
                    days[i] = true;
                    if i == last {
                        break;
                    }
                    i = (i + 1) % 7;
                }
            }
            None => days[day_index(weekday(part).ok_or_else(|| unknown(part))?)] = true,
        }
    }
    Ok(days)
}

fn parse_time(raw: &str, is_end: bool) -> Result<(i8, i8), String> {
    let bad = || format!("expected a 24-hour time HH:MM such as 22:00, got {raw:?}");
    let (h, m) = raw.trim().split_once(':').ok_or_else(bad)?;
    let h: i8 = h.parse().map_err(|_| bad())?;
    let m: i8 = m.parse().map_err(|_| bad())?;
    if is_end && h == 24 && m == 0 {
        return Ok((0, 0));
    }
    if !(0..24).contains(&h) || !(0..60).contains(&m) {
        return Err(bad());
    }
    Ok((h, m))
}

type Interval = (Timestamp, Timestamp);

/// Union of the openings of `list` around `now`, sorted and merged.
fn intervals(list: &[MaintenanceWindow], now: Timestamp) -> Result<Vec<Interval>, EngineError> {
    let mut out = Vec::new();
    for (i, w) in list.iter().enumerate() {
        let p = parse(i, w)?;
        let today = now.to_zoned(p.tz.clone()).date();
        for offset in -1..HORIZON_DAYS {
            let Ok(day) = today.checked_add(offset.days()) else {
                continue;
            };
            if !p.days[day_index(day.weekday())] {
                continue;
            }
            let end_day = if p.end <= p.start {
                day.tomorrow().ok()
            } else {
                Some(day)
            };
            let (Some(start), Some(end)) = (
                instant(&p.tz, day, p.start),
                end_day.and_then(|d| instant(&p.tz, d, p.end)),
            ) else {
                continue;
            };
            if end > start {
                out.push((start, end));
            }
        }
    }
    out.sort();
    Ok(merge(out))
}

fn instant(tz: &TimeZone, day: Date, (h, m): (i8, i8)) -> Option<Timestamp> {
    day.at(h, m, 0, 0)
        .to_zoned(tz.clone())
        .ok()
        .map(|z| z.timestamp())
}

fn merge(sorted: Vec<Interval>) -> Vec<Interval> {
    let mut out: Vec<Interval> = Vec::new();
    for (s, e) in sorted {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn intersect(a: &[Interval], b: &[Interval]) -> Vec<Interval> {
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let s = a[i].0.max(b[j].0);
        let e = a[i].1.min(b[j].1);
        if s < e {
            out.push((s, e));
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn win(days: &str, start: &str, end: &str, tz: &str) -> MaintenanceWindow {
        MaintenanceWindow {
            days: days.into(),
            start: start.into(),
            end: end.into(),
            time_zone: Some(tz.into()),
            kind: None,
        }
    }

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn no_windows_means_always_open() {
        assert_eq!(
            state(&[], &[], ts("2026-11-21T12:00:00Z")).unwrap(),
            WindowState::Open { closes_at: None }
        );
    }

    #[test]
    fn window_crossing_midnight_is_open_after_midnight_and_closed_in_the_afternoon() {
        // Mon-Fri 22:00-04:00 UTC. 2026-11-24 is a Tuesday.
        let w = [win("Mon-Fri", "22:00", "04:00", "UTC")];
        let open = state(&w, &[], ts("2026-11-24T02:30:00Z")).unwrap();
        assert_eq!(
            open,
            WindowState::Open {
                closes_at: Some(ts("2026-11-24T04:00:00Z"))
            }
        );
        let closed = state(&w, &[], ts("2026-11-24T15:00:00Z")).unwrap();
        assert_eq!(
            closed,
            WindowState::Closed {
                opens_at: Some(ts("2026-11-24T22:00:00Z"))
            }
        );
    }

    #[test]
    fn friday_night_window_still_open_early_saturday_but_not_on_saturday_night() {
        let w = [win("Mon-Fri", "22:00", "04:00", "UTC")];
        // Saturday 2026-11-28 01:00 belongs to Friday's window.
        assert!(
            state(&w, &[], ts("2026-11-28T01:00:00Z"))
                .unwrap()
                .is_open()
        );
        // Saturday 23:00: closed until Monday 22:00.
        assert_eq!(
            state(&w, &[], ts("2026-11-28T23:00:00Z")).unwrap(),
            WindowState::Closed {
                opens_at: Some(ts("2026-11-30T22:00:00Z"))
            }
        );
    }

    #[test]
    fn instance_and_default_windows_intersect() {
        let inst = [win("*", "20:00", "23:00", "UTC")];
        let defaults = [win("*", "22:00", "02:00", "UTC")];
        // 21:00 is inside the instance window but not the default one.
        assert_eq!(
            state(&inst, &defaults, ts("2026-11-24T21:00:00Z")).unwrap(),
            WindowState::Closed {
                opens_at: Some(ts("2026-11-24T22:00:00Z"))
            }
        );
        assert_eq!(
            state(&inst, &defaults, ts("2026-11-24T22:30:00Z")).unwrap(),
            WindowState::Open {
                closes_at: Some(ts("2026-11-24T23:00:00Z"))
            }
        );
    }

    #[test]
    fn disjoint_windows_never_open() {
        let inst = [win("*", "01:00", "02:00", "UTC")];
        let defaults = [win("*", "03:00", "04:00", "UTC")];
        assert_eq!(
            state(&inst, &defaults, ts("2026-11-24T21:00:00Z")).unwrap(),
            WindowState::Closed { opens_at: None }
        );
    }

    #[test]
    fn berlin_window_follows_dst_start_in_march() {
        // Last Sunday of March 2026 is the 29th: clocks go 02:00 -> 03:00.
        let w = [win("Sun", "01:00", "05:00", "Europe/Berlin")];
        // 01:00 CET = 00:00Z; 05:00 CEST = 03:00Z: only 3 hours long.
        assert_eq!(
            state(&w, &[], ts("2026-03-29T00:30:00Z")).unwrap(),
            WindowState::Open {
                closes_at: Some(ts("2026-03-29T03:00:00Z"))
            }
        );
        // A window starting inside the gap opens at 03:00 CEST.
        let gap = [win("Sun", "02:30", "04:00", "Europe/Berlin")];
        assert_eq!(
            state(&gap, &[], ts("2026-03-28T12:00:00Z")).unwrap(),
            WindowState::Closed {
                opens_at: Some(ts("2026-03-29T01:30:00Z"))
            }
        );
    }

    #[test]
    fn berlin_window_follows_dst_end_in_october() {
        // Last Sunday of October 2026 is the 25th: 03:00 CEST -> 02:00 CET.
        let w = [win("Sun", "01:00", "05:00", "Europe/Berlin")];
        // 01:00 CEST = 23:00Z (Sat); 05:00 CET = 04:00Z: five hours long.
        assert_eq!(
            state(&w, &[], ts("2026-10-24T23:30:00Z")).unwrap(),
            WindowState::Open {
                closes_at: Some(ts("2026-10-25T04:00:00Z"))
            }
        );
        // The week after, 22:00 Berlin is 21:00Z again (CET).
        let evening = [win("Sun", "22:00", "23:00", "Europe/Berlin")];
        assert_eq!(
            state(&evening, &[], ts("2026-10-25T12:00:00Z")).unwrap(),
            WindowState::Closed {
                opens_at: Some(ts("2026-10-25T21:00:00Z"))
            }
        );
    }

    #[test]
    fn rejects_bad_days_times_and_zones_naming_the_field() {
        let bad_day = validate(&[win("Mon-Funday", "22:00", "04:00", "UTC")]).unwrap_err();
        assert!(bad_day.to_string().contains("Funday"), "{bad_day}");
        let bad_time = validate(&[win("*", "25:00", "04:00", "UTC")]).unwrap_err();
        assert!(bad_time.to_string().contains("start"), "{bad_time}");
        let bad_tz = validate(&[win("*", "22:00", "04:00", "Mars/Olympus")]).unwrap_err();
        assert!(bad_tz.to_string().contains("Mars/Olympus"), "{bad_tz}");
        assert!(validate(&[win("Sat,Sun", "00:00", "24:00", "Europe/Berlin")]).is_ok());
    }
}
