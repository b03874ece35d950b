use super::*;

fn options() -> InitOptions {
    InitOptions {
        namespace: "kudo-system".into(),
        image: "kudo-rs/kudo-manager:test".into(),
        image_pull_policy: "IfNotPresent".into(),
        broad_rbac: false,
        crd_only: false,
        default_service_account: None,
        manager_writes_as_itself: false,
    }
}

fn self_managed() -> CertMode {
    let ca = CertificateAuthority::generate().unwrap();
    let serving = ca.issue(&["kudo".to_string()]).unwrap();
    CertMode::SelfManaged(Tls {
        ca,
        serving: Some(serving),
    })
}

fn kinds(objects: &[Value]) -> Vec<String> {
    objects
        .iter()
        .map(|o| o["kind"].as_str().unwrap_or("?").to_string())
        .collect()
}

#[test]
fn self_managed_install_has_every_piece_in_apply_order() {
    let objects = manifests(&options(), &self_managed());
    assert_eq!(
        kinds(&objects),
        vec![
            "CustomResourceDefinition",
            "CustomResourceDefinition",
            "CustomResourceDefinition",
            "CustomResourceDefinition",
            "CustomResourceDefinition",
            "ClusterRole",
            "Namespace",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "Secret",
            "Secret",
            "Service",
            "Deployment",
            "ValidatingWebhookConfiguration",
        ]
    );
    for object in &objects {
        let api_version = object["apiVersion"].as_str().unwrap();
        let kind = object["kind"].as_str().unwrap();
        assert!(
            resource_of(api_version, kind).is_some(),
            "{api_version} {kind}"
        );
    }
}

#[test]
fn webhook_trusts_the_generated_ca() {
    let mode = self_managed();
    let CertMode::SelfManaged(tls) = &mode else {
        panic!("self-managed mode expected")
    };
    let objects = manifests(&options(), &mode);
    let webhook = objects.last().unwrap();
    let bundle: k8s_openapi::ByteString =
        serde_json::from_value(webhook["webhooks"][0]["clientConfig"]["caBundle"].clone()).unwrap();
    assert_eq!(String::from_utf8(bundle.0).unwrap(), tls.ca.cert_pem());
}

fn role_rules(opts: &InitOptions) -> Vec<Value> {
    let objects = manifests(opts, &self_managed());
    let role = objects
        .iter()
        .find(|o| o["kind"] == "ClusterRole" && o["metadata"]["name"] == MANAGER_NAME)
        .unwrap();
    role["rules"].as_array().unwrap().clone()
}

/// Whether a rule grants `verb` on `resource` of `group`.
fn grants(rules: &[Value], group: &str, resource: &str, verb: &str) -> bool {
    let has = |rule: &Value, field: &str, want: &str| {
        rule[field]
            .as_array()
            .is_some_and(|a| a.iter().any(|v| v == want || v == "*"))
    };
    rules.iter().any(|r| {
        has(r, "apiGroups", group) && has(r, "resources", resource) && has(r, "verbs", verb)
    })
}

#[test]
fn with_a_default_service_account_the_manager_cannot_write_workloads_secrets_or_rbac() {
    let mut opts = options();
    opts.default_service_account = Some("kudo-deployer".into());
    let rules = role_rules(&opts);
    let rbac = "rbac.authorization.k8s.io";
    for (group, resource, verb) in [
        ("", "secrets", "get"),
        ("", "secrets", "create"),
        ("", "configmaps", "patch"),
        ("", "pods/exec", "create"),
        ("", "pods", "delete"),
        ("apps", "deployments", "patch"),
        (rbac, "rolebindings", "create"),
        (rbac, "clusterrolebindings", "create"),
    ] {
        assert!(
            !grants(&rules, group, resource, verb),
            "{verb} {group}/{resource}"
        );
    }
    assert!(grants(&rules, "", "serviceaccounts", "impersonate"));
    assert!(grants(&rules, "kudo.dev", "instances/status", "patch"));
    assert!(
        grants(&rules, "apps", "deployments", "watch"),
        "health needs watches"
    );
    let deployment = manifests(&opts, &self_managed())
        .into_iter()
        .find(|o| o["kind"] == "Deployment")
        .unwrap();
    let args = deployment["spec"]["template"]["spec"]["containers"][0]["args"].clone();
    assert!(
        args.as_array()
            .unwrap()
            .contains(&json!("--default-service-account=kudo-deployer")),
        "{args}"
    );
}

#[test]
fn by_default_the_manager_makes_instance_accounts_and_writes_no_objects_itself() {
    let opts = options();
    let rules = role_rules(&opts);
    let rbac = "rbac.authorization.k8s.io";
    assert!(grants(&rules, "", "serviceaccounts", "impersonate"));
    assert!(grants(&rules, "", "serviceaccounts", "create"));
    assert!(grants(&rules, rbac, "rolebindings", "create"));
    let bind = rules
        .iter()
        .find(|r| r["verbs"] == json!(["bind", "get"]))
        .expect("bind on the kudo-instance ClusterRole");
    assert_eq!(bind["resourceNames"], json!(["kudo-instance"]));
    for (group, resource, verb) in [
        ("", "secrets", "get"),
        ("", "configmaps", "patch"),
        ("apps", "deployments", "patch"),
        (rbac, "roles", "create"),
        (rbac, "clusterrolebindings", "create"),
    ] {
        assert!(
            !grants(&rules, group, resource, verb),
            "{verb} {group}/{resource}"
        );
    }
    let objects = manifests(&opts, &self_managed());
    let role = objects
        .iter()
        .find(|o| o["kind"] == "ClusterRole" && o["metadata"]["name"] == "kudo-instance")
        .expect("the kudo-instance ClusterRole");
    assert_eq!(role["rules"], kudo_api::rbac::instance_rules());
    let key = objects
        .iter()
        .find(|o| o["kind"] == "Role")
        .expect("the render key Role");
    assert_eq!(key["metadata"]["namespace"], "kudo-system");
    assert_eq!(key["rules"][1]["resourceNames"], json!([RENDER_KEY_SECRET]));
}

#[test]
fn writing_as_itself_grants_the_common_kinds_and_says_so_to_the_manager() {
    let mut opts = options();
    opts.manager_writes_as_itself = true;
    let rules = role_rules(&opts);
    assert!(grants(&rules, "apps", "deployments", "patch"));
    // Pipe tasks exec into their pod: a websocket GET, then create.
    assert!(grants(&rules, "", "pods/exec", "get"));
    assert!(grants(&rules, "", "pods/exec", "create"));
    assert!(grants(
        &rules,
        "autoscaling",
        "horizontalpodautoscalers",
        "patch"
    ));
    assert!(!grants(
        &rules,
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        "create"
    ));
    let deployment = manifests(&opts, &self_managed())
        .into_iter()
        .find(|o| o["kind"] == "Deployment")
        .unwrap();
    let args = &deployment["spec"]["template"]["spec"]["containers"][0]["args"];
    assert!(
        args.as_array()
            .unwrap()
            .contains(&json!("--manager-writes-as-itself")),
        "{args}"
    );
}

#[test]
fn least_privilege_role_has_no_wildcards_and_broad_role_does() {
    let narrow = Value::Array(role_rules(&options())).to_string();
    assert!(!narrow.contains("\"*\""), "{narrow}");
    let mut opts = options();
    opts.broad_rbac = true;
    let objects = manifests(&opts, &self_managed());
    let role = objects
        .iter()
        .find(|o| o["kind"] == "ClusterRole" && o["metadata"]["name"] == MANAGER_NAME)
        .unwrap();
    assert_eq!(role["rules"][0]["verbs"], json!(["*"]));
}

#[test]
fn cert_manager_mode_uses_a_certificate_and_ca_injection() {
    let objects = manifests(&options(), &CertMode::CertManager);
    let kinds = kinds(&objects);
    assert!(kinds.contains(&"Certificate".to_string()) && !kinds.contains(&"Secret".to_string()));
    let webhook = objects.last().unwrap();
    assert_eq!(
        webhook["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
        json!(format!("kudo-system/{}", certs::CERTIFICATE_NAME))
    );
    assert!(
        webhook["webhooks"][0]["clientConfig"]
            .get("caBundle")
            .is_none()
    );
}

#[test]
fn crd_only_installs_just_the_crds_and_the_instance_role() {
    let mut opts = options();
    opts.crd_only = true;
    let crds = manifests(&opts, &self_managed());
    let names: Vec<&str> = crds
        .iter()
        .map(|crd| crd["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "operators.kudo.dev",
            "operatorversions.kudo.dev",
            "instances.kudo.dev",
            "maintenanceschedules.kudo.dev",
            "operatorrepositories.kudo.dev",
            "kudo-instance"
        ]
    );
}

#[test]
fn node_maintenance_rights_are_granted_with_and_without_a_default_service_account() {
    let mut with_default = options();
    with_default.default_service_account = Some("kudo-deployer".into());
    for opts in [options(), with_default] {
        let rules = role_rules(&opts);
        for (group, resource, verb) in [
            ("kudo.dev", "maintenanceschedules", "watch"),
            ("kudo.dev", "maintenanceschedules", "patch"),
            ("kudo.dev", "maintenanceschedules/status", "patch"),
            ("kudo.dev", "maintenanceschedules/finalizers", "update"),
            ("", "nodes", "list"),
            ("", "nodes", "patch"),
            ("", "pods", "list"),
            ("", "pods/eviction", "create"),
            ("policy", "poddisruptionbudgets", "list"),
            ("apps", "replicasets", "get"),
        ] {
            assert!(
                grants(&rules, group, resource, verb),
                "{verb} {group}/{resource} ({:?})",
                opts.default_service_account
            );
        }
    }
    // The manager never writes schedules: the person does, through the CLI.
    let rules = role_rules(&options());
    for verb in ["create", "delete"] {
        assert!(!grants(&rules, "kudo.dev", "maintenanceschedules", verb));
    }
}
