//! Bad input never panics: random and mutated lines through the parser, and
//! replies of random shapes through every workload's client and final phase.

use checker::history::EventType;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use crate::message::{Body, parse_line};
use crate::workload::{Reply, Workload};

/// A JSON value of random shape, up to `depth` deep.
fn random_value(rng: &mut ChaCha8Rng, depth: u32) -> Value {
    match rng.random_range(0..if depth == 0 { 5 } else { 7 }) {
        0 => Value::Null,
        1 => json!(rng.random_bool(0.5)),
        2 => json!(rng.random_range(-3i64..40)),
        3 => json!(rng.random_range(-1.0..1.0)),
        4 => json!(["k1", "x", "", "k0"][rng.random_range(0..4)]),
        5 => Value::Array(
            (0..rng.random_range(0..4))
                .map(|_| random_value(rng, depth - 1))
                .collect(),
        ),
        _ => {
            let keys = [
                "k0", "k1", "value", "messages", "id", "echo", "offset", "msgs", "offsets", "code",
            ];
            let mut m = serde_json::Map::new();
            for _ in 0..rng.random_range(0..4) {
                let k = keys[rng.random_range(0..keys.len())];
                m.insert(k.to_string(), random_value(rng, depth - 1));
            }
            Value::Object(m)
        }
    }
}

#[test]
fn no_reply_makes_a_client_panic() {
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    let kinds = [
        "error",
        "read_ok",
        "write_ok",
        "cas_ok",
        "echo_ok",
        "generate_ok",
        "broadcast_ok",
        "add_ok",
        "send_ok",
        "poll_ok",
        "commit_offsets_ok",
        "list_committed_offsets_ok",
    ];
    let ids = crate::init::node_ids(3);
    for w in Workload::ALL {
        let mut c = w.client(3, &ids, 0, 2);
        let mut f = w.final_phase(&ids);
        for _ in 0..400 {
            let req = c.next_request();
            let mut body = Body::new(kinds[rng.random_range(0..kinds.len())]);
            for field in [
                "value", "messages", "id", "echo", "offset", "msgs", "offsets", "code", "text",
            ] {
                if rng.random_bool(0.3) {
                    body.fields
                        .insert(field.to_string(), random_value(&mut rng, 3));
                }
            }
            let done = c.complete(&req, Reply::Body(&body));
            assert!(done.kind != EventType::Invoke);
            if let Some(f) = f.as_mut() {
                if let Some(r) = f.next_request() {
                    f.complete(&r, Reply::Body(&body));
                }
            }
        }
    }
}

/// Bytes that matter to JSON and to lines.
const SPECIAL: &[u8] = b"{}[]\":,\\\xff\n0";

#[test]
fn no_line_makes_the_parser_panic() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let valid = b"{\"src\":\"n1\",\"dest\":\"c1\",\"body\":{\"type\":\"read_ok\",\"in_reply_to\":1,\"value\":[1,{\"a\":null}]}}";
    for _ in 0..5000 {
        let mut line = valid.to_vec();
        for _ in 0..rng.random_range(1..6) {
            let at = rng.random_range(0..line.len());
            match rng.random_range(0..3) {
                0 => line[at] = rng.random(),
                1 => {
                    line.remove(at);
                }
                _ => line.insert(at, SPECIAL[rng.random_range(0..SPECIAL.len())]),
            }
        }
        let _ = parse_line(&line);
    }
    for len in 0..64 {
        let noise: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        let _ = parse_line(&noise);
    }
}
