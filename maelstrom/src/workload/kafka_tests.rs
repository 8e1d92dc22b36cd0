use super::super::testing::*;
use super::*;

fn client(c: u32, of: u32) -> KafkaClient {
    KafkaClient::new(Who::new(7, &nodes(2), c, of))
}

/// Answer a client's requests as a single correct log would, for `n` requests.
fn run(
    c: &mut KafkaClient,
    n: usize,
    logs: &mut BTreeMap<String, Vec<i64>>,
    committed: &mut BTreeMap<String, i64>,
) -> Vec<(Request, Completion)> {
    let mut out = Vec::new();
    for _ in 0..n {
        let r = c.next_request();
        let body = match r.body.kind.as_str() {
            "send" => {
                let k = r.body.get("key").unwrap().as_str().unwrap().to_string();
                let log = logs.entry(k).or_default();
                log.push(r.body.get("msg").unwrap().as_i64().unwrap());
                reply("send_ok", json!({"offset": log.len() - 1}))
            }
            "poll" => {
                let mut msgs = Map::new();
                for (k, from) in r.body.get("offsets").unwrap().as_object().unwrap() {
                    let from = from.as_i64().unwrap();
                    let log = logs.get(k).cloned().unwrap_or_default();
                    let pairs: Vec<Value> = (from..log.len() as i64)
                        .take(3)
                        .map(|o| json!([o, log[o as usize]]))
                        .collect();
                    msgs.insert(k.clone(), json!(pairs));
                }
                reply("poll_ok", json!({"msgs": msgs}))
            }
            "commit_offsets" => {
                for (k, o) in r.body.get("offsets").unwrap().as_object().unwrap() {
                    let o = o.as_i64().unwrap();
                    let c = committed.entry(k.clone()).or_insert(o);
                    *c = (*c).max(o);
                }
                reply("commit_offsets_ok", json!({}))
            }
            _ => reply("list_committed_offsets_ok", json!({"offsets": committed})),
        };
        let done = c.complete(&r, Reply::Body(&body));
        out.push((r, done));
    }
    out
}

#[test]
fn clients_send_poll_commit_and_reassign() {
    let (mut logs, mut committed) = (BTreeMap::new(), BTreeMap::new());
    let mut c = client(0, 1);
    let done = run(&mut c, 300, &mut logs, &mut committed);
    for f in &OPERATIONS[..4] {
        assert!(done.iter().any(|(r, _)| r.f == *f), "no {f}");
    }
    assert!(done.iter().all(|(_, d)| d.kind == EventType::Ok));
    // The first request that is not a send assigns keys.
    let first = done.iter().find(|(r, _)| r.f != "send").unwrap();
    assert_eq!(first.0.f, "list_committed_offsets");
    let send = done.iter().find(|(r, _)| r.f == "send").unwrap();
    assert!(send.1.value["offset"].as_i64().is_some_and(|o| o >= 0));
    assert!(send.1.value.get("msg").is_some() && send.1.value.get("key").is_some());
    let poll = done
        .iter()
        .find(|(r, d)| r.f == "poll" && d.value["msgs"].as_object().is_some_and(|m| !m.is_empty()))
        .unwrap();
    assert!(poll.1.value["offsets"].is_object());
}

#[test]
fn polls_continue_where_the_last_one_ended() {
    let (mut logs, mut committed) = (BTreeMap::new(), BTreeMap::new());
    let mut c = client(0, 1);
    let done = run(&mut c, 400, &mut logs, &mut committed);
    let mut next: BTreeMap<String, i64> = BTreeMap::new();
    let mut assigned: Vec<String> = Vec::new();
    for (r, d) in &done {
        match r.f {
            "list_committed_offsets" => {
                let keys: Vec<String> = r.value["keys"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|k| k.as_str().unwrap().to_string())
                    .collect();
                next.retain(|k, _| keys.contains(k));
                assigned = keys;
            }
            "poll" => {
                for (k, from) in r.value["offsets"].as_object().unwrap() {
                    assert!(assigned.contains(k));
                    if let Some(n) = next.get(k) {
                        assert_eq!(from.as_i64(), Some(*n), "{k}");
                    }
                    let last = last_offset(&d.value["msgs"][k]);
                    next.insert(k.clone(), last.map_or(from.as_i64().unwrap(), |l| l + 1));
                }
            }
            _ => {}
        }
    }
}

#[test]
fn only_owners_commit_and_their_commits_only_advance() {
    let (mut logs, mut committed) = (BTreeMap::new(), BTreeMap::new());
    let mut clients: Vec<KafkaClient> = (0..3).map(|i| client(i, 3)).collect();
    let mut last: BTreeMap<String, i64> = BTreeMap::new();
    for round in 0..100 {
        let c = &mut clients[round % 3];
        let me = c.who.client;
        for (r, _) in run(c, 5, &mut logs, &mut committed) {
            if r.f != "commit_offsets" {
                continue;
            }
            for (k, o) in r.value["offsets"].as_object().unwrap() {
                let i: u32 = k[1..].parse().unwrap();
                assert_eq!(i % 3, me, "client {me} committed {k}");
                let o = o.as_i64().unwrap();
                assert!(last.get(k).is_none_or(|l| o >= *l), "{k} went back to {o}");
                last.insert(k.clone(), o);
            }
        }
    }
    assert!(!last.is_empty());
}

#[test]
fn a_new_assignment_starts_after_the_committed_offset() {
    let mut c = client(0, 1);
    let r = c.assign();
    let keys: Vec<String> = r.value["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    let committed = json!({ keys[0].clone(): 4 });
    let done = c.complete(
        &r,
        Reply::Body(&reply(
            "list_committed_offsets_ok",
            json!({"offsets": committed}),
        )),
    );
    assert_eq!(done.value["offsets"], committed);
    assert_eq!(c.positions[&keys[0]], 5);
    assert_eq!(c.positions[&keys[1]], 0);
    // A failed listing still assigns, from 0 where nothing is known.
    let r2 = c.assign();
    let d2 = c.complete(&r2, Reply::Timeout);
    assert_eq!(d2.kind, EventType::Fail);
    assert_eq!(c.positions.len(), ASSIGNED_KEYS);
}

#[test]
fn malformed_replies_are_recorded_as_such() {
    let mut c = client(0, 1);
    let send = c.send();
    let bad = c.complete(
        &send,
        Reply::Body(&reply("send_ok", json!({"offset": "3"}))),
    );
    assert_eq!((bad.kind, &bad.value), (EventType::Info, &send.value));
    c.positions.insert("k1".into(), 0);
    let poll = c.poll();
    for msgs in [
        json!({"k1": [[0]]}),
        json!({"k1": [["0", 1]]}),
        json!([1]),
        json!({"k1": 5}),
    ] {
        let d = c.complete(&poll, Reply::Body(&reply("poll_ok", json!({"msgs": msgs}))));
        assert_eq!(d.kind, EventType::Fail, "{msgs}");
    }
    let list = c.assign();
    let d = c.complete(
        &list,
        Reply::Body(&reply(
            "list_committed_offsets_ok",
            json!({"offsets": {"k1": null}}),
        )),
    );
    assert_eq!(d.kind, EventType::Fail);
}

#[test]
fn the_drain_reads_every_key_to_its_end() {
    let log: Vec<i64> = (0..7).map(|i| i * 10).collect();
    let mut d = Drain::new(&nodes(2), vec!["a".into(), "b".into()]);
    let mut polls = Vec::new();
    while let Some(r) = d.next_request() {
        let (k, from) = r.value["offsets"]
            .as_object()
            .unwrap()
            .iter()
            .next()
            .map(|(k, v)| (k.clone(), v.as_i64().unwrap()))
            .unwrap();
        polls.push((k.clone(), from));
        let pairs: Vec<Value> = if k == "a" {
            (from..7)
                .take(3)
                .map(|o| json!([o, log[o as usize]]))
                .collect()
        } else {
            vec![]
        };
        let done = d.complete(
            &r,
            Reply::Body(&reply("poll_ok", json!({"msgs": {k: pairs}}))),
        );
        assert_eq!((r.f, done.kind), ("final-poll", EventType::Ok));
    }
    let want: Vec<(String, i64)> = [("a", 0), ("a", 3), ("a", 6), ("a", 7), ("b", 0)]
        .iter()
        .map(|(k, o)| (k.to_string(), *o))
        .collect();
    assert_eq!(polls, want);
}

#[test]
fn the_drain_moves_on_from_a_key_it_cannot_read() {
    let mut d = Drain::new(&nodes(2), vec!["a".into(), "b".into()]);
    let mut dests = Vec::new();
    for _ in 0..DRAIN_ATTEMPTS {
        let r = d.next_request().unwrap();
        dests.push(r.dest.clone());
        assert_eq!(d.complete(&r, Reply::Timeout).kind, EventType::Fail);
    }
    assert_eq!(&dests[..2], ["n1", "n2"]);
    let r = d.next_request().unwrap();
    assert_eq!(r.value["offsets"], json!({"b": 0}));
    // A node that answers records below the offset asked for makes no progress.
    let mut stuck = Drain::new(&nodes(1), vec!["a".into()]);
    let mut n = 0;
    while let Some(r) = stuck.next_request() {
        n += 1;
        let from = r.value["offsets"]["a"].as_i64().unwrap();
        // Whatever it asks for, the node answers offset 0 again.
        assert!(from <= 1);
        let pairs = json!([[0, 1]]);
        stuck.complete(
            &r,
            Reply::Body(&reply("poll_ok", json!({"msgs": {"a": pairs}}))),
        );
        assert!(n < 50);
    }
    assert_eq!(n, 1 + DRAIN_ATTEMPTS as usize);
}
