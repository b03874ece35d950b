use super::*;
use crate::index::IndexFile;
use crate::limits::Limits;

/// kafka: 1.x in stable up to 1.5.0, 2.0.0 in stable, a beta pre-release,
/// 1.6.0 only for Kubernetes 1.30+, 1.3.x recalled, 1.0.0 removed.
const INDEX: &str = r#"apiVersion: v1
annotations:
  recalls.kudo.dev/kafka: |
    >=1.3.0 <1.4.0: CVE-2026-1234
entries:
  kafka:
  - {operatorVersion: 1.0.0, urls: [a], removed: true}
  - {operatorVersion: 1.1.0, urls: [a]}
  - {operatorVersion: 1.2.0, urls: [a]}
  - {operatorVersion: 1.3.0, urls: [a]}
  - {operatorVersion: 1.3.1, urls: [a]}
  - {operatorVersion: 1.4.0, urls: [a], annotations: {kudo.dev/channels: "stable,beta"}}
  - {operatorVersion: 1.5.0-rc.1, urls: [a], annotations: {kudo.dev/channels: beta}}
  - {operatorVersion: 1.5.0, urls: [a], annotations: {kudo.dev/channels: "stable,beta"}}
  - {operatorVersion: 1.6.0, urls: [a], kubeVersion: ">=1.30.0"}
  - {operatorVersion: 2.0.0, urls: [a]}
"#;

fn index() -> IndexFile {
    IndexFile::parse(INDEX.as_bytes(), "r", &Limits::default()).unwrap()
}

struct Case<'a> {
    channel: &'a str,
    range: Option<&'a str>,
    installed: Option<&'a str>,
    allow_downgrade: bool,
    kubernetes: &'a str,
}

impl Default for Case<'_> {
    fn default() -> Self {
        Self {
            channel: "stable",
            range: None,
            installed: Some("1.2.0"),
            allow_downgrade: false,
            kubernetes: "1.28.3",
        }
    }
}

/// The decision as text: `move 1.5.0 (channel stable: 1.2.0 → 1.5.0)`,
/// `stay: ...`, `none: ...`; and the available version.
fn decide(index: &IndexFile, case: Case<'_>) -> (String, Option<String>) {
    let range = case.range.map(|r| Range::parse(r).unwrap());
    let kubernetes = crate::channels::kubernetes_release(case.kubernetes).unwrap();
    let track = Track {
        channel: case.channel,
        range: range.as_ref(),
        installed: case.installed,
        allow_downgrade: case.allow_downgrade,
        kubernetes: Some(&kubernetes),
    };
    let r = resolve(&index.entries["kafka"], &index.recalls("kafka"), &track);
    let text = match r.choice {
        Choice::Move { to, why } => format!(
            "move {} ({})",
            to.operator_version,
            why.describe(case.channel, &to.operator_version)
        ),
        Choice::Stay { note } => format!("stay: {note}"),
        Choice::NoVersion { message } => format!("none: {message}"),
    };
    (text, r.available.map(|a| a.operator_version.clone()))
}

fn decided(case: Case<'_>) -> String {
    decide(&index(), case).0
}

#[test]
fn the_newest_in_the_channel_of_the_installed_major_is_chosen() {
    let (text, available) = decide(&index(), Case::default());
    assert_eq!(text, "move 1.5.0 (channel stable: 1.2.0 → 1.5.0)");
    assert_eq!(available.as_deref(), Some("1.5.0"));
}

#[test]
fn without_an_install_the_newest_candidate_is_installed() {
    let text = decided(Case {
        installed: None,
        range: Some("^1"),
        ..Case::default()
    });
    assert_eq!(text, "move 1.5.0 (channel stable: install 1.5.0)");
}

#[test]
fn a_major_version_is_crossed_only_when_the_range_admits_it() {
    let text = decided(Case {
        range: Some(">=1.2"),
        kubernetes: "1.30.0",
        ..Case::default()
    });
    assert_eq!(text, "move 2.0.0 (channel stable: 1.2.0 → 2.0.0)");
    let text = decided(Case {
        range: Some(">=1.2 <2"),
        kubernetes: "1.30.0",
        ..Case::default()
    });
    assert_eq!(text, "move 1.6.0 (channel stable: 1.2.0 → 1.6.0)");
}

#[test]
fn the_range_and_the_channel_limit_the_candidates() {
    assert_eq!(
        decided(Case {
            range: Some("~1.2 || ~1.4"),
            ..Case::default()
        }),
        "move 1.4.0 (channel stable: 1.2.0 → 1.4.0)"
    );
    assert_eq!(
        decided(Case {
            channel: "beta",
            installed: Some("1.4.0"),
            ..Case::default()
        }),
        "move 1.5.0 (channel beta: 1.4.0 → 1.5.0)",
        "1.5.0 above its own pre-release"
    );
    assert_eq!(
        decided(Case {
            channel: "beta",
            installed: Some("1.4.0"),
            range: Some("<1.5.0"),
            ..Case::default()
        }),
        "move 1.5.0-rc.1 (channel beta: 1.4.0 → 1.5.0-rc.1)",
        "a channel that names a pre-release offers it"
    );
    assert_eq!(
        decided(Case {
            channel: "lts",
            ..Case::default()
        }),
        "stay: no version in channel lts matching 1.x qualifies; 1.2.0 stays"
    );
}

#[test]
fn a_version_for_a_newer_kubernetes_is_never_chosen_and_the_reason_is_told() {
    let text = decided(Case {
        installed: Some("1.5.0"),
        ..Case::default()
    });
    assert_eq!(
        text,
        "stay: 1.5.0 is the newest in channel stable matching 1.x; \
         1.6.0 needs Kubernetes >=1.30.0, the cluster runs 1.28.3"
    );
    let text = decided(Case {
        installed: Some("1.5.0"),
        kubernetes: "v1.30.1-eks-1",
        ..Case::default()
    });
    assert_eq!(text, "move 1.6.0 (channel stable: 1.5.0 → 1.6.0)");
}

#[test]
fn never_a_silent_downgrade() {
    let (text, available) = decide(
        &index(),
        Case {
            installed: Some("1.5.0"),
            range: Some("<1.5"),
            ..Case::default()
        },
    );
    assert_eq!(
        text,
        "stay: 1.5.0 is newer than 1.4.0, the newest in channel stable matching <1.5; \
         moving back would be a downgrade"
    );
    assert_eq!(available.as_deref(), Some("1.4.0"));
    let text = decided(Case {
        installed: Some("1.5.0"),
        range: Some("<1.5"),
        allow_downgrade: true,
        ..Case::default()
    });
    assert!(
        text.starts_with("stay:"),
        "allowDowngrade is for recalls only: {text}"
    );
}

#[test]
fn a_recalled_version_is_never_chosen() {
    let text = decided(Case {
        installed: Some("1.2.0"),
        range: Some("<1.4"),
        ..Case::default()
    });
    assert_eq!(
        text,
        "stay: 1.2.0 is the newest in channel stable matching <1.4; 1.3.1 recalled \
         (CVE-2026-1234); 1.3.0 recalled (CVE-2026-1234)"
    );
    let removed = decided(Case {
        installed: None,
        range: Some("1.0.0"),
        ..Case::default()
    });
    assert_eq!(
        removed,
        "none: no version in channel stable matching 1.0.0 qualifies"
    );
}

#[test]
fn a_recalled_install_rolls_forward_first() {
    let text = decided(Case {
        installed: Some("1.3.0"),
        ..Case::default()
    });
    assert_eq!(
        text,
        "move 1.5.0 (recall of 1.3.0: CVE-2026-1234 (→ 1.5.0))"
    );
    let text = decided(Case {
        installed: Some("1.3.0"),
        allow_downgrade: true,
        ..Case::default()
    });
    assert_eq!(
        text, "move 1.5.0 (recall of 1.3.0: CVE-2026-1234 (→ 1.5.0))",
        "forward even when back is allowed"
    );
}

#[test]
fn a_recalled_install_goes_back_only_with_allow_downgrade() {
    let held = decided(Case {
        installed: Some("1.3.0"),
        range: Some("<1.4"),
        ..Case::default()
    });
    assert_eq!(
        held,
        "none: 1.3.0 is recalled (CVE-2026-1234) and no newer version in channel stable \
         matching <1.4 qualifies; 1.3.1 recalled (CVE-2026-1234); 1.2.0 is older: set \
         allowDowngrade to move back to it"
    );
    let back = decided(Case {
        installed: Some("1.3.0"),
        range: Some("<1.4"),
        allow_downgrade: true,
        ..Case::default()
    });
    assert_eq!(
        back,
        "move 1.2.0 (recall of 1.3.0: CVE-2026-1234 (→ 1.2.0))"
    );
    let nothing = decided(Case {
        installed: Some("1.3.0"),
        range: Some("~1.3"),
        allow_downgrade: true,
        ..Case::default()
    });
    assert_eq!(
        nothing,
        "none: 1.3.0 is recalled (CVE-2026-1234) and no other version in channel stable \
         matching ~1.3 qualifies; 1.3.1 recalled (CVE-2026-1234)"
    );
}

#[test]
fn an_installed_version_that_is_no_version_is_said_so() {
    let text = decided(Case {
        installed: Some("latest"),
        ..Case::default()
    });
    assert!(text.starts_with("none: the installed version \"latest\" is not a semantic version"));
}

#[test]
fn an_unknown_cluster_version_excludes_versions_that_name_one() {
    let index = index();
    let kafka = &index.entries["kafka"];
    let track = Track {
        channel: "stable",
        range: None,
        installed: Some("1.5.0"),
        allow_downgrade: false,
        kubernetes: None,
    };
    let r = resolve(kafka, &[], &track);
    assert!(matches!(r.choice, Choice::Stay { .. }), "{r:?}");
}
