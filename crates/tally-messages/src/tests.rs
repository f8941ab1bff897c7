use serde::Serialize;
use serde::de::DeserializeOwned;

use super::*;

fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(value: &T) {
    let text = serde_json::to_string(value).unwrap();
    let back: T = serde_json::from_str(&text).unwrap();
    assert_eq!(&back, value, "{text}");
}

fn triehh_plus_spec() -> TaskSpec {
    TaskSpec {
        version: PROTOCOL_VERSION,
        population: "shakespeare".into(),
        expected_population: 835_229,
        privacy: PrivacyTarget {
            epsilon: 1.0,
            delta: 1e-8,
            neighbours: Neighbours::AddRemove,
            analysis: Analysis::Tight,
        },
        kind: TaskKind::HeavyHitters {
            algorithm: HeavyHittersAlgorithm::TrieHhPlus,
            levels: 10,
            segment: 1,
            restricted: true,
            composition: Some(Composition::Advanced),
            sampling_rate: None,
            threshold: Some(28),
        },
        rounds: RoundPolicy::default(),
        sampling: Sampling::Aggregator,
    }
}

#[test]
fn every_message_round_trips() {
    let spec = triehh_plus_spec();
    round_trip(&spec);
    round_trip(&TaskSpec {
        kind: TaskKind::Histogram {
            mechanism: HistogramMechanism::SampleThreshold,
            // Not a short decimal: the exact bits must survive.
            sampling_rate: Some(0.045_607_666_486_629_03),
            threshold: None,
        },
        ..spec.clone()
    });
    round_trip(&TaskSpec {
        kind: TaskKind::Quantiles {
            method: QuantileMethod::Hierarchical,
            quantiles: vec![0.1, 0.5, 0.9],
            branching: Some(4),
            levels: 8,
            consistent: true,
            composition: Some(Composition::Optimal),
            range: Some([0.0, 86_400.0]),
            sampling_rate: None,
            threshold: Some(20),
        },
        ..spec.clone()
    });
    round_trip(&TaskSpec {
        kind: TaskKind::Quantiles {
            method: QuantileMethod::BinarySearch,
            quantiles: vec![0.5],
            branching: None,
            levels: 12,
            consistent: false,
            composition: Some(Composition::Basic),
            range: None,
            sampling_rate: Some(0.3),
            threshold: None,
        },
        sampling: Sampling::Device,
        ..spec.clone()
    });
    round_trip(&TaskSpec {
        kind: TaskKind::SingleRound {
            sampling_rate: None,
            threshold: Some(12),
        },
        ..spec.clone()
    });
    round_trip(&TaskSpec {
        kind: TaskKind::Range {
            lo: 3_600.0,
            hi: 7_200.5,
            branching: Some(8),
            levels: 5,
            consistent: true,
            composition: None,
            range: Some([0.0, 86_400.0]),
            sampling_rate: Some(0.25),
            threshold: None,
        },
        ..spec.clone()
    });
    let guarantee = GuaranteeBody {
        epsilon: 0.999_999_999_999_999_9,
        delta: 9.999_999_999_999_898e-9,
        neighbours: "add-remove".into(),
        model: "central".into(),
        method: "tight".into(),
        trust_model: TrustModel::Split,
        collusion: None,
    };
    round_trip(&TaskInfo {
        id: "t1".into(),
        spec,
        guarantee: guarantee.clone(),
        state: TaskState::Running,
        rounds_released: 2,
        open_round: Some("r3".into()),
        error: None,
        created_at: 1_700_000_000,
    });
    let query = RoundQuery {
        version: PROTOCOL_VERSION,
        round_id: "r3".into(),
        task_id: "t1".into(),
        population: "shakespeare".into(),
        round: 3,
        attempt: 1,
        deadline: 1_700_000_600,
        max_report_bytes: 256,
        min_cohort: 1,
        cohort_target: 100,
        ask: Ask::Prefix {
            level: 3,
            segment: 1,
            live_parents: Some(vec!["th".into(), "an".into()]),
            sampling_rate: 0.1,
        },
        sampling: Sampling::Aggregator,
    };
    round_trip(&query);
    round_trip(&RoundQuery {
        ask: Ask::Bucket {
            level: 2,
            levels: 8,
            branching: 4,
            range: Some([-20.5, 130.25]),
            sampling_rate: 0.1,
        },
        ..query.clone()
    });
    round_trip(&RoundQuery {
        ask: Ask::Split {
            threshold: 0.375,
            range: None,
            sampling_rate: 0.3,
        },
        sampling: Sampling::Device,
        ..query.clone()
    });
    round_trip(&CheckIn {
        version: PROTOCOL_VERSION,
        devices: 7,
    });
    round_trip(&CheckInGrant {
        query,
        tokens: vec!["a".into(), "b".into()],
    });
    round_trip(&UploadBatch {
        version: PROTOCOL_VERSION,
        uploads: vec![
            Upload {
                token: "a".into(),
                report: Some("the".into()),
            },
            Upload {
                token: "b".into(),
                report: None,
            },
        ],
    });
    round_trip(&UploadReceipt {
        accepted: 1,
        rejected: vec![Rejection {
            index: 1,
            code: ErrorCode::ReusedToken,
        }],
    });
    let budget = Budget {
        epsilon: 1.0,
        delta: 1e-8,
    };
    let declared = TaskBoundInfo {
        sampling_rate: 0.36,
        threshold: 18,
        share: budget,
        rounds: 11,
    };
    round_trip(&LedgerBalance {
        population: "shakespeare".into(),
        budget,
        allow_device_sampling: true,
        neighbours: Neighbours::ReplaceOne,
        spent: budget,
        reserved: budget,
        remaining: budget,
        colluding_fraction: 0.0,
        task_bound: Some(TaskBoundUse {
            bound: declared,
            rounds_used: 3,
        }),
        entries: vec![LedgerEntry {
            task_id: "t1".into(),
            amount: budget,
            at: 1,
        }],
    });
    let credential = CredentialInfo {
        id: "0123456789abcdef".into(),
        name: "alice".into(),
        role: Role::Analyst,
        populations: vec!["shakespeare".into()],
        created_at: 1,
        revoked: false,
    };
    round_trip(&CredentialSpec {
        version: PROTOCOL_VERSION,
        role: Role::Analyst,
        name: "alice".into(),
        populations: vec!["shakespeare".into()],
    });
    round_trip(&IssuedCredential {
        credential: credential.clone(),
        token: "tally_0123456789abcdef_00".into(),
    });
    round_trip(&credential);
    round_trip(&PopulationSpec {
        version: PROTOCOL_VERSION,
        name: "shakespeare".into(),
        budget,
        min_cohort: 100,
        max_task_epsilon: Some(1.0),
        trust: TrustModel::Split,
        allow_device_sampling: true,
        colluding_fraction: 0.1,
        task_bound: Some(TaskBound {
            sampling_rate: 0.36,
            threshold: 18,
            share: Some(budget),
        }),
        neighbours: Neighbours::AddRemove,
    });
    round_trip(&PopulationInfo {
        name: "shakespeare".into(),
        budget,
        min_cohort: 100,
        max_task_epsilon: None,
        trust: TrustModel::SingleParty,
        allow_device_sampling: false,
        colluding_fraction: 0.0,
        task_bound: Some(declared),
        neighbours: Neighbours::ReplaceOne,
        created_at: 1,
    });
    for role in [Role::Operator, Role::Analyst, Role::Device, Role::Relay] {
        round_trip(&role);
        assert_eq!(Role::from_name(role.name()), Some(role));
        assert_eq!(serde_json::to_value(role).unwrap(), role.name());
    }
    for code in ErrorCode::ALL {
        round_trip(&ErrorBody {
            code,
            message: "m".into(),
        });
        assert_eq!(serde_json::to_value(code).unwrap(), code.name());
    }
    let items = vec![ReleasedItem {
        item: "the".into(),
        count: Some(1250),
        estimate: Some(27_407.672_794_802_32),
    }];
    round_trip(&TaskResult::HeavyHitters(HeavyHittersRelease {
        mechanism: "triehh++".into(),
        parameters: serde_json::json!({"levels": 10}),
        guarantee: guarantee.clone(),
        input: "federated".into(),
        found_items: 1,
        items: items.clone(),
        trie: Some(vec![TrieNodeBody {
            prefix: "t".into(),
            level: 1,
            count: Some(3000),
            estimate: Some(65_000.5),
        }]),
        truth: None,
        seed: None,
        diagnosis: None,
    }));
    round_trip(&TaskResult::Histogram(HistogramRelease {
        mechanism: "sample-and-threshold".into(),
        parameters: serde_json::json!({"threshold": 28}),
        guarantee: guarantee.clone(),
        target_delta: 1e-8,
        input: "federated".into(),
        execution: "federated".into(),
        released_items: 1,
        items,
        seed: Some(1),
        diagnosis: Some(ReleaseDiagnosis {
            clients: 1419,
            release_point: Some(78),
            release_point_exact: true,
            largest_released_count: Some(1250.0),
            thin: true,
            explanation: vec!["Only 1 item was released from 1419 clients.".into()],
            warnings: Vec::new(),
        }),
    }));
    round_trip(&TaskResult::Quantiles(QuantilesRelease {
        mechanism: "hierarchical histogram".into(),
        parameters: serde_json::json!({"levels": 8}),
        guarantee,
        target_delta: 1e-8,
        input: "federated".into(),
        quantiles: vec![
            QuantileRow {
                quantile: 0.5,
                value: 41_234.062_5,
                interval: None,
                true_value: None,
                rank_error: None,
            },
            QuantileRow {
                quantile: 0.9,
                value: 0.812_5,
                interval: Some([0.8, 0.825]),
                true_value: Some(0.81),
                rank_error: Some(-0.001_2),
            },
        ],
        seed: None,
    }));
    // A range count is none of the documents above: it parses as itself.
    round_trip(&TaskResult::Range(RangeRelease {
        mechanism: "hierarchical histogram".into(),
        parameters: serde_json::json!({"levels": 3}),
        guarantee: GuaranteeBody {
            epsilon: 2.0,
            delta: 1e-6,
            neighbours: "add-remove".into(),
            model: "central".into(),
            method: "tight".into(),
            trust_model: TrustModel::SingleParty,
            collusion: None,
        },
        target_delta: 1e-6,
        input: "federated".into(),
        range: RangeBody {
            lo: 10.0,
            hi: 60.0,
            grid_lo: 9.375,
            grid_hi: 59.375,
        },
        estimate: 7_431.25,
        fraction: 0.474_1,
        estimated_total: 15_674.5,
        seed: Some(5),
    }));
    for state in [
        TaskState::Running,
        TaskState::Finished,
        TaskState::Cancelled,
        TaskState::Failed,
    ] {
        round_trip(&state);
        assert_eq!(TaskState::from_name(state.name()), Some(state));
    }
}

#[test]
fn unknown_fields_and_names_are_refused() {
    let mut value = serde_json::to_value(triehh_plus_spec()).unwrap();
    value["privacy"]["neighbours"] = "everyone".into();
    let error = serde_json::from_value::<TaskSpec>(value).unwrap_err();
    assert!(
        error.to_string().contains("add-remove or replace-one"),
        "{error}"
    );
    let mut value = serde_json::to_value(triehh_plus_spec()).unwrap();
    value["colour"] = "blue".into();
    assert!(serde_json::from_value::<TaskSpec>(value).is_err());
    assert!(
        serde_json::from_str::<UploadBatch>(r#"{"version":1,"uploads":[{"token":"a"}]}"#).is_err()
    );
}

#[test]
fn defaults_fill_in_the_optional_fields() {
    let spec: TaskSpec = serde_json::from_str(
        r#"{"version":1,"population":"p","expected_population":10,
            "privacy":{"epsilon":1,"delta":1e-8},
            "kind":{"type":"heavy-hitters","algorithm":"triehh++","levels":4,"segment":1,"restricted":true},
            "rounds":{"min_cohort":5,"deadline_secs":60,"max_attempts":2,"max_report_bytes":64}}"#,
    )
    .unwrap();
    assert_eq!(spec.privacy.neighbours, Neighbours::AddRemove);
    assert_eq!(spec.privacy.analysis, Analysis::Tight);
    // The aggregator samples unless a task asks its devices to.
    assert_eq!(spec.sampling, Sampling::Aggregator);
    // A left-out composition is the command line's default for the neighbour relation: tight
    // for add/remove (the S&T loss pair's relation), basic for replace-one.
    let TaskKind::HeavyHitters { composition, .. } = spec.kind else {
        panic!("a heavy-hitters task: {:?}", spec.kind);
    };
    assert_eq!(composition, None);
    assert_eq!(
        round_composition(composition, spec.privacy.neighbours),
        Composition::Tight
    );
    assert_eq!(
        round_composition(composition, Neighbours::ReplaceOne),
        Composition::Basic
    );
    assert_eq!(
        round_composition(Some(Composition::Advanced), Neighbours::AddRemove),
        Composition::Advanced
    );
    let kind: TaskKind = serde_json::from_str(
        r#"{"type":"quantiles","method":"hierarchical","quantiles":[0.5],"levels":6}"#,
    )
    .unwrap();
    assert!(matches!(
        kind,
        TaskKind::Quantiles {
            branching: None,
            consistent: false,
            composition: None,
            range: None,
            sampling_rate: None,
            threshold: None,
            ..
        }
    ));
    let check_in: CheckIn = serde_json::from_str(r#"{"version":1}"#).unwrap();
    assert_eq!(check_in.devices, 1);
}

/// Every `json` example in the protocol document parses as the type its fence names.
#[test]
fn the_documented_examples_parse() {
    let doc = include_str!("../../../docs/federated/protocol.md");
    let mut checked = 0;
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line.strip_prefix("```json ") else {
            continue;
        };
        let body: String = lines
            .by_ref()
            .take_while(|l| !l.starts_with("```"))
            .collect::<Vec<_>>()
            .join("\n");
        let parsed = match name.trim() {
            "TaskSpec" => serde_json::from_str::<TaskSpec>(&body).map(drop),
            "TaskInfo" => serde_json::from_str::<TaskInfo>(&body).map(drop),
            "RoundQuery" => serde_json::from_str::<RoundQuery>(&body).map(drop),
            "CheckIn" => serde_json::from_str::<CheckIn>(&body).map(drop),
            "CheckInGrant" => serde_json::from_str::<CheckInGrant>(&body).map(drop),
            "UploadBatch" => serde_json::from_str::<UploadBatch>(&body).map(drop),
            "UploadReceipt" => serde_json::from_str::<UploadReceipt>(&body).map(drop),
            "LedgerBalance" => serde_json::from_str::<LedgerBalance>(&body).map(drop),
            "ErrorBody" => serde_json::from_str::<ErrorBody>(&body).map(drop),
            "PopulationSpec" => serde_json::from_str::<PopulationSpec>(&body).map(drop),
            "PopulationInfo" => serde_json::from_str::<PopulationInfo>(&body).map(drop),
            "CredentialSpec" => serde_json::from_str::<CredentialSpec>(&body).map(drop),
            "IssuedCredential" => serde_json::from_str::<IssuedCredential>(&body).map(drop),
            "DeviceEnrollment" => serde_json::from_str::<DeviceEnrollment>(&body).map(drop),
            "EnrolledDevices" => serde_json::from_str::<EnrolledDevices>(&body).map(drop),
            "TaskResult" => serde_json::from_str::<TaskResult>(&body).map(drop),
            "RelayedBatch" => serde_json::from_str::<RelayedBatch>(&body).map(drop),
            "RelayReceipt" => serde_json::from_str::<RelayReceipt>(&body).map(drop),
            other => panic!("unknown example type {other}"),
        };
        if let Err(error) = parsed {
            panic!("the {name} example does not parse: {error}\n{body}");
        }
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} examples");
}

/// A partition-selection histogram and its ask are spelt as the protocol document says, the
/// ask with no sampling rate (a relay forwards every report), and each mechanism names its
/// method by the method's own name.
#[test]
fn a_partition_selection_task_and_its_ask_have_their_documented_spelling() {
    let kind: TaskKind =
        serde_json::from_str(r#"{"type": "histogram", "mechanism": "gaussian-threshold"}"#)
            .unwrap();
    assert_eq!(
        kind,
        TaskKind::Histogram {
            mechanism: HistogramMechanism::GaussianThreshold,
            sampling_rate: None,
            threshold: None,
        }
    );
    let ask: Ask = serde_json::from_str(r#"{"type": "item-report"}"#).unwrap();
    assert_eq!(ask, Ask::ItemReport {});
    assert_eq!(ask.sampling_rate(), None);
    assert_eq!(HistogramMechanism::SampleThreshold.selection(), None);
    for method in partition_selection::Method::ALL {
        let mechanism = HistogramMechanism::of_selection(method);
        assert_eq!(mechanism.selection(), Some(method));
        assert_eq!(
            serde_json::to_value(mechanism).unwrap(),
            serde_json::json!(method.name())
        );
    }
}

/// A shuffle guarantee carries what holds against colluding devices at full precision, an
/// infinite `ε` or floor as `null`; a guarantee without one leaves the field out.
#[test]
fn a_collusion_guarantee_round_trips_and_infinity_is_null() {
    let guarantee = tally_accounting::Guarantee {
        epsilon: 1.0,
        delta: 1e-6,
        neighbours: tally_accounting::Neighbours::ReplaceOne,
        model: tally_accounting::TrustModel::Shuffle,
        analysis: "exact".into(),
    };
    let collusion = tally_accounting::Collusion {
        colluding_fraction: 0.1,
        epsilon: 1.234_567_890_123_456_7,
        delta: 1.000_000_000_000_1e-6,
        floor: f64::INFINITY,
    };
    let body = GuaranteeBody::with_collusion(&guarantee, Some(&collusion));
    round_trip(&body);
    let json = serde_json::to_value(&body).unwrap();
    assert_eq!(json["collusion"]["floor"], serde_json::Value::Null);
    assert_eq!(json["collusion"]["epsilon"], 1.234_567_890_123_456_7);
    let plain = serde_json::to_value(GuaranteeBody::from(&guarantee)).unwrap();
    assert!(plain.get("collusion").is_none(), "{plain}");
}
