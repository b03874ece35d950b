use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher::{self, Event};
use kudo_sandbox::Sandbox;

use crate::{configmap, start};

#[tokio::test]
async fn watcher_sees_changes_after_initial_list() {
    let (_sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &configmap("before", "1"))
        .await
        .unwrap();
    let mut stream = watcher::watcher(api.clone(), watcher::Config::default()).boxed();
    let mut init_names = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(5), stream.try_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
        {
            Event::InitApply(cm) => init_names.push(cm.name_any()),
            Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(init_names, vec!["before"]);
    api.create(&PostParams::default(), &configmap("after", "1"))
        .await
        .unwrap();
    api.delete("before", &Default::default()).await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        match tokio::time::timeout(Duration::from_secs(5), stream.try_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
        {
            Event::Apply(cm) => seen.push(format!("apply {}", cm.name_any())),
            Event::Delete(cm) => seen.push(format!("delete {}", cm.name_any())),
            _ => {}
        }
    }
    assert_eq!(seen, vec!["apply after", "delete before"]);
}

#[tokio::test]
async fn streaming_list_sends_initial_events_then_changes() {
    let (_sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap();
    let mut stream = watcher::watcher(api.clone(), watcher::Config::default().streaming_lists())
        .applied_objects()
        .boxed();
    let first = tokio::time::timeout(Duration::from_secs(5), stream.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(first.name_any(), "a");
    api.create(&PostParams::default(), &configmap("b", "1"))
        .await
        .unwrap();
    let second = tokio::time::timeout(Duration::from_secs(5), stream.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(second.name_any(), "b");
}

#[tokio::test]
async fn watch_resumes_from_resource_version() {
    let (_sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let a = api
        .create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap();
    api.create(&PostParams::default(), &configmap("b", "1"))
        .await
        .unwrap();
    api.create(&PostParams::default(), &configmap("c", "1"))
        .await
        .unwrap();
    let rv = a.resource_version().unwrap();
    let mut stream = api
        .watch(&WatchParams::default().timeout(2), &rv)
        .await
        .unwrap()
        .boxed();
    let mut names = Vec::new();
    while let Some(ev) = stream.try_next().await.unwrap() {
        if let WatchEvent::Added(cm) = ev {
            names.push(cm.name_any());
        }
    }
    assert_eq!(names, vec!["b", "c"]);
}

#[tokio::test]
async fn expired_resource_version_gets_410() {
    let sb = Sandbox::builder()
        .event_log_capacity(3)
        .start()
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client().unwrap());
    let first = api
        .create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap();
    for i in 0..6 {
        api.create(&PostParams::default(), &configmap(&format!("x{i}"), "1"))
            .await
            .unwrap();
    }
    let mut stream = api
        .watch(
            &WatchParams::default().timeout(2),
            &first.resource_version().unwrap(),
        )
        .await
        .unwrap()
        .boxed();
    match stream.try_next().await.unwrap() {
        Some(WatchEvent::Error(e)) => assert_eq!(e.code, 410),
        other => panic!("expected a 410 error event, got {other:?}"),
    }
}

#[tokio::test]
async fn bookmarks_arrive_when_requested() {
    let sb = Sandbox::builder()
        .bookmark_interval(Duration::from_millis(50))
        .start()
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client().unwrap());
    let mut stream = api
        .watch(
            &WatchParams {
                bookmarks: true,
                ..Default::default()
            }
            .timeout(5),
            "0",
        )
        .await
        .unwrap()
        .boxed();
    api.create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap();
    let mut saw_added = false;
    loop {
        match tokio::time::timeout(Duration::from_secs(3), stream.try_next())
            .await
            .unwrap()
            .unwrap()
        {
            Some(WatchEvent::Added(_)) => saw_added = true,
            Some(WatchEvent::Bookmark(b)) => {
                let rv: u64 = b.metadata.resource_version.parse().unwrap();
                if saw_added {
                    assert!(rv >= sb.resource_version() - 1);
                    break;
                }
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[tokio::test]
async fn controller_reconciles_every_object() {
    let (_sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    let controller = Controller::new(api.clone(), watcher::Config::default()).run(
        |cm: Arc<ConfigMap>, seen: Arc<AtomicUsize>| async move {
            if cm.name_any().starts_with("c") {
                seen.fetch_add(1, Ordering::SeqCst);
            }
            Ok::<_, kube::Error>(Action::await_change())
        },
        |_, _, _| Action::requeue(Duration::from_secs(1)),
        seen,
    );
    let handle = tokio::spawn(controller.for_each(|_| async {}));
    for i in 0..20 {
        api.create(&PostParams::default(), &configmap(&format!("c{i}"), "1"))
            .await
            .unwrap();
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while count.load(Ordering::SeqCst) < 20 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    handle.abort();
    assert!(count.load(Ordering::SeqCst) >= 20);
}

#[tokio::test]
async fn label_change_turns_into_added_and_deleted_for_selector_watches() {
    let (_sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let created = api
        .create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap();
    let mut stream = api
        .watch(
            &WatchParams::default().labels("app=web").timeout(3),
            &created.resource_version().unwrap(),
        )
        .await
        .unwrap()
        .boxed();
    let mut labeled = created.clone();
    labeled.labels_mut().insert("app".into(), "web".into());
    let labeled = api
        .replace("a", &PostParams::default(), &labeled)
        .await
        .unwrap();
    let mut unlabeled = labeled.clone();
    unlabeled.labels_mut().clear();
    api.replace("a", &PostParams::default(), &unlabeled)
        .await
        .unwrap();
    let mut kinds = Vec::new();
    while let Some(ev) = stream.try_next().await.unwrap() {
        kinds.push(match ev {
            WatchEvent::Added(_) => "added",
            WatchEvent::Deleted(_) => "deleted",
            WatchEvent::Modified(_) => "modified",
            WatchEvent::Bookmark(_) => continue,
            WatchEvent::Error(_) => "error",
        });
    }
    assert_eq!(kinds, vec!["added", "deleted"], "events: {kinds:?}");
}
