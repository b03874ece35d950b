//! Tests of RBAC for impersonated callers.

use serde_json::json;

use super::*;

fn state() -> State {
    State::new(1000)
}

fn put(s: &mut State, plural: &str, ns: &str, body: Value) {
    let group = if plural == "namespaces" {
        ""
    } else {
        RBAC_GROUP
    };
    let r = s
        .registry
        .find(group, "v1", plural)
        .cloned()
        .unwrap_or_else(|| panic!("{plural} is served"));
    let planned = s
        .plan_create(&r, "v1", ns, body, "admin")
        .unwrap_or_else(|e| panic!("{e}"));
    s.commit(planned, false).unwrap_or_else(|e| panic!("{e:?}"));
}

fn deployer() -> Caller {
    let mut headers = HeaderMap::new();
    headers.insert(
        "impersonate-user",
        "system:serviceaccount:team:deployer".parse().unwrap(),
    );
    Caller::from_headers(&headers).unwrap()
}

/// team's deployer may manage ConfigMaps and Roles/RoleBindings in team.
fn team_state() -> State {
    let mut s = state();
    put(
        &mut s,
        "namespaces",
        "",
        json!({"metadata": {"name": "team"}}),
    );
    put(
        &mut s,
        "roles",
        "team",
        json!({"metadata": {"name": "deploy"}, "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create", "patch"]},
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"], "verbs": ["create", "patch"]},
        ]}),
    );
    put(
        &mut s,
        "rolebindings",
        "team",
        json!({"metadata": {"name": "deploy"},
               "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": "deploy"},
               "subjects": [{"kind": "ServiceAccount", "name": "deployer", "namespace": "team"}]}),
    );
    s
}

fn attrs<'a>(verb: &'a str, group: &'a str, resource: &'a str, ns: &'a str) -> Attributes<'a> {
    Attributes {
        verb,
        group,
        resource,
        subresource: None,
        namespace: ns,
        name: Some("x"),
    }
}

#[test]
fn a_service_account_user_gets_its_groups_like_the_api_server_adds_them() {
    assert_eq!(
        deployer().groups,
        vec![
            "system:serviceaccounts",
            "system:serviceaccounts:team",
            "system:authenticated"
        ]
    );
    assert!(Caller::from_headers(&HeaderMap::new()).is_none());
}

#[test]
fn a_role_binding_allows_its_verbs_in_its_namespace_only() {
    let s = team_state();
    let me = deployer();
    assert!(authorize(&s, &me, &attrs("create", "", "configmaps", "team")).is_ok());
    assert!(authorize(&s, &me, &attrs("delete", "", "configmaps", "team")).is_err());
    let e = authorize(&s, &me, &attrs("create", "", "configmaps", "other")).unwrap_err();
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        "configmaps \"x\" is forbidden: User \"system:serviceaccount:team:deployer\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"other\""
    );
}

#[test]
fn cluster_scoped_writes_need_a_cluster_role_binding() {
    let s = team_state();
    let e = authorize(
        &s,
        &deployer(),
        &attrs("patch", RBAC_GROUP, "clusterrolebindings", ""),
    )
    .unwrap_err();
    assert!(e.message.contains("at the cluster scope"), "{}", e.message);
}

#[test]
fn binding_a_role_with_more_rights_than_the_caller_holds_is_an_escalation() {
    let mut s = team_state();
    put(
        &mut s,
        "clusterroles",
        "",
        json!({"metadata": {"name": "admin-ish"}, "rules": [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}),
    );
    let binding = json!({"metadata": {"name": "grab"},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "admin-ish"},
        "subjects": [{"kind": "ServiceAccount", "name": "deployer", "namespace": "team"}]});
    let e = check_escalation(&s, &deployer(), "rolebindings", "team", &binding).unwrap_err();
    assert!(
        e.message
            .contains("attempting to grant RBAC permissions not currently held"),
        "{}",
        e.message
    );
    // A role within the caller's own rights may be bound.
    let own = json!({"metadata": {"name": "ok"},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": "deploy"},
        "subjects": [{"kind": "ServiceAccount", "name": "other", "namespace": "team"}]});
    assert!(check_escalation(&s, &deployer(), "rolebindings", "team", &own).is_ok());
}

#[test]
fn the_bind_verb_exempts_a_binding_from_the_escalation_check() {
    let mut s = team_state();
    put(
        &mut s,
        "clusterroles",
        "",
        json!({"metadata": {"name": "big"}, "rules": [
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["*"]}]}),
    );
    put(
        &mut s,
        "roles",
        "team",
        json!({"metadata": {"name": "binder"}, "rules": [
            {"apiGroups": [RBAC_GROUP], "resources": ["clusterroles"], "verbs": ["bind"], "resourceNames": ["big"]}]}),
    );
    put(
        &mut s,
        "rolebindings",
        "team",
        json!({"metadata": {"name": "binder"},
               "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": "binder"},
               "subjects": [{"kind": "ServiceAccount", "name": "deployer"}]}),
    );
    let binding = json!({"metadata": {"name": "b"},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "big"},
        "subjects": [{"kind": "ServiceAccount", "name": "x", "namespace": "team"}]});
    assert!(check_escalation(&s, &deployer(), "rolebindings", "team", &binding).is_ok());
}

#[test]
fn a_role_granting_more_than_the_caller_holds_is_refused() {
    let s = team_state();
    let role = json!({"metadata": {"name": "more"}, "rules": [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]});
    assert!(check_escalation(&s, &deployer(), "roles", "team", &role).is_err());
    let within = json!({"metadata": {"name": "less"}, "rules": [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]});
    assert!(check_escalation(&s, &deployer(), "roles", "team", &within).is_ok());
}

#[test]
fn resource_names_limit_a_rule_to_those_objects() {
    let mut s = team_state();
    put(
        &mut s,
        "roles",
        "team",
        json!({"metadata": {"name": "one-secret"}, "rules": [
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["x"]}]}),
    );
    put(
        &mut s,
        "rolebindings",
        "team",
        json!({"metadata": {"name": "one-secret"},
               "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": "one-secret"},
               "subjects": [{"kind": "Group", "name": "system:serviceaccounts:team"}]}),
    );
    let me = deployer();
    assert!(authorize(&s, &me, &attrs("get", "", "secrets", "team")).is_ok());
    let other = Attributes {
        name: Some("y"),
        ..attrs("get", "", "secrets", "team")
    };
    assert!(authorize(&s, &me, &other).is_err());
}

#[test]
fn rbac_changes_take_effect_on_the_next_request_despite_the_rule_cache() {
    let mut s = team_state();
    let me = deployer();
    let create_cm = attrs("create", "", "configmaps", "team");
    assert!(authorize(&s, &me, &create_cm).is_ok());
    // The Role loses the verb: refused at once.
    put_again(
        &mut s,
        "roles",
        "team",
        json!({"metadata": {"name": "deploy", "namespace": "team"}, "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
    );
    assert!(authorize(&s, &me, &create_cm).is_err());
    assert!(authorize(&s, &me, &attrs("get", "", "configmaps", "team")).is_ok());
    // The binding goes: nothing is left.
    s.store.remove(RBAC_GROUP, "rolebindings", "team", "deploy");
    assert!(authorize(&s, &me, &attrs("get", "", "configmaps", "team")).is_err());
    // A ClusterRole bound to the caller's group grants it everywhere.
    put(
        &mut s,
        "clusterroles",
        "",
        json!({"metadata": {"name": "cm-writer"}, "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}]}),
    );
    assert!(authorize(&s, &me, &create_cm).is_err(), "not bound yet");
    put(
        &mut s,
        "clusterrolebindings",
        "",
        json!({"metadata": {"name": "cm-writer"},
               "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "cm-writer"},
               "subjects": [{"kind": "Group", "name": "system:serviceaccounts"}]}),
    );
    assert!(authorize(&s, &me, &create_cm).is_ok());
    assert!(authorize(&s, &me, &attrs("create", "", "configmaps", "other")).is_ok());
}

/// Replaces a stored RBAC object as an update would.
fn put_again(s: &mut State, plural: &str, ns: &str, body: Value) {
    let name = body["metadata"]["name"].as_str().unwrap().to_string();
    let owners = s
        .store
        .get(RBAC_GROUP, plural, ns, &name)
        .unwrap()
        .owners
        .clone();
    let mut old = (*s.store.get(RBAC_GROUP, plural, ns, &name).unwrap().value).clone();
    old["rules"] = body["rules"].clone();
    s.store.put(RBAC_GROUP, plural, old, owners);
}
