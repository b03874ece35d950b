#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Peak memory of renders that would build gigabytes without budgets stays
//! within a small multiple of the budgets. Measured as the growth of the
//! process's peak resident memory (Linux `VmHWM`, reset through
//! `/proc/self/clear_refs`), so this file holds a single test.
#![cfg(target_os = "linux")]

use kudo_template::{ErrorKind, Limits, Template};
use serde_json::json;

/// Resident memory now and at its peak since the last reset, in bytes.
fn resident() -> (usize, usize) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let field = |name: &str| -> usize {
        let line = status.lines().find(|l| l.starts_with(name)).unwrap();
        let kb: usize = line
            .trim_start_matches(name)
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .unwrap();
        kb * 1024
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// How much the peak resident memory grew while rendering `text`, and the
/// error kind the render ended with.
fn peak_of(text: &str, limits: Limits) -> (usize, Option<ErrorKind>) {
    let template = Template::parse("templates/t.yaml", text).unwrap();
    let data = json!({"Params": {}});
    // "5" resets the peak to the current resident size.
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let (before, _) = resident();
    let result = template.render_with(&data, &limits);
    let (_, peak) = resident();
    (peak.saturating_sub(before), result.err().map(|e| e.kind))
}

#[test]
fn renders_that_would_take_gigabytes_peak_within_a_small_multiple_of_the_budgets() {
    let limits = Limits::default();
    let budgets = limits.max_output + limits.max_values;

    // The case: 500 MB of output from nested ranges.
    let (peak, kind) = peak_of(
        "{{ range until 1000 }}{{ range until 1000 }}{{ repeat 500 \"x\" }}{{ end }}{{ end }}",
        limits,
    );
    assert_eq!(kind, Some(ErrorKind::OutputBudget));
    assert!(peak < 2 * limits.max_output, "peak {peak}");

    // A list grown in a loop: each append copies it.
    let (peak, kind) = peak_of(
        "{{ $l := list }}{{ range until 100000 }}{{ $l = append $l (repeat 100 \"x\") }}{{ end }}",
        limits,
    );
    assert_eq!(kind, Some(ErrorKind::ValueBudget));
    assert!(peak < 2 * budgets, "peak {peak}");

    // Big strings kept in a map.
    let (peak, kind) = peak_of(
        "{{ $d := dict }}{{ range until 1000 }}{{ $_ := set $d (toString .) (repeat 1000000 \"x\") }}{{ end }}",
        limits,
    );
    assert_eq!(kind, Some(ErrorKind::ValueBudget));
    assert!(peak < 2 * budgets, "peak {peak}");

    // A shared string written out many times.
    let (peak, kind) = peak_of(
        "{{ $l := list (list (repeat 1000000 \"x\")) }}\
         {{ range until 30 }}{{ $l = list $l $l }}{{ end }}{{ toJson $l }}",
        limits,
    );
    assert_eq!(kind, Some(ErrorKind::ValueBudget));
    assert!(peak < 2 * budgets, "peak {peak}");
}
