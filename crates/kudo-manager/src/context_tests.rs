use super::*;

#[tokio::test]
async fn forgetting_an_instance_drops_its_notes_and_last_write() {
    // Nothing listens there: the test never sends a request.
    let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
    let ctx = Context::for_tests(Client::try_from(config).unwrap());
    let mut inst = Instance::new("zk", Default::default());
    inst.metadata.namespace = Some("team".into());
    inst.metadata.uid = Some("u1".into());
    let mut other = inst.clone();
    other.metadata.name = Some("kafka".into());
    other.metadata.uid = Some("u2".into());
    for i in [&inst, &other] {
        let copy = (vec!["1".to_string()], Arc::new(i.clone()));
        ctx.written
            .lock()
            .unwrap()
            .insert(ObjectRef::from_obj(i), copy);
        let uid = i.metadata.uid.clone().unwrap();
        ctx.said.lock().unwrap().insert(uid, vec!["note".into()]);
    }
    ctx.forget_instance(&inst);
    let written = ctx.written.lock().unwrap();
    assert!(!written.contains_key(&ObjectRef::from_obj(&inst)));
    assert!(
        written.contains_key(&ObjectRef::from_obj(&other)),
        "others stay"
    );
    let said = ctx.said.lock().unwrap();
    assert!(!said.contains_key("u1"));
    assert!(said.contains_key("u2"), "others stay");
}
