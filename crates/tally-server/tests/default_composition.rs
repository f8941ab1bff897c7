//! A multi-round task spec that leaves out its composition gets the command line's default:
//! tight (the composed S&T loss pair) for add/remove neighbours, basic for replace-one.

mod common;

use common::*;
use tally_messages::{HeavyHittersAlgorithm, RoundPolicy, TaskInfo, TaskKind};

common::postgres_half!();

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_left_out_composition_follows_the_neighbour_relation() {
    for db in databases().await {
        let (server, router, _) = start(&db.url, (10.0, 1e-5)).await;
        let kind = TaskKind::HeavyHitters {
            algorithm: HeavyHittersAlgorithm::TrieHhPlus,
            levels: 4,
            segment: 1,
            restricted: true,
            composition: None,
            // Within replace-one's limit of 1 − e^(−ε/L)/2 per level.
            sampling_rate: Some(0.1),
            threshold: None,
        };
        let tight: TaskInfo = post(
            &router,
            "/v1/tasks",
            &spec(kind.clone(), 1.0, RoundPolicy::default()),
        )
        .await;
        assert!(
            tight.guarantee.method.contains("tight composition"),
            "{}: {:?}",
            db.name,
            tight.guarantee
        );
        let analyst = swapped(&db.url, (10.0, 1e-5)).await;
        let basic: TaskInfo = post_as(
            &router,
            &analyst,
            "/v1/tasks",
            &replace_one(spec(kind, 1.0, RoundPolicy::default())),
        )
        .await;
        assert!(
            basic.guarantee.method.contains("basic composition"),
            "{}: {:?}",
            db.name,
            basic.guarantee
        );
        server.shutdown().await;
    }
}
