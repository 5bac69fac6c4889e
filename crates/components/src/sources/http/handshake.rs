//! The Elasticsearch handshake documents Beats and Logstash ask for before
//! sending (`/`, `_license`, `_xpack`, `_cluster/health`, `_nodes`).

use super::*;

pub(super) fn info(s: &Shared) -> Doc {
    sonic_rs::json!({
        "name": format!("sluice-{}", s.cx.id),
        "cluster_name": "sluice",
        "cluster_uuid": "c2x1aWNlLWNsdXN0ZXI",
        "version": {
            "number": ES_VERSION,
            "build_flavor": "default",
            "build_type": "sluice",
            "build_hash": "0000000000000000000000000000000000000000",
            "build_date": "2023-11-04T10:04:57.184859352Z",
            "build_snapshot": false,
            "lucene_version": "9.8.0",
            "minimum_wire_compatibility_version": "7.17.0",
            "minimum_index_compatibility_version": "7.0.0"
        },
        "tagline": "You Know, for Search"
    })
}

pub(super) fn license() -> Doc {
    sonic_rs::json!({"license": {
        "status": "active", "uid": "00000000-0000-0000-0000-000000000000", "type": "basic",
        "issue_date": "2023-01-01T00:00:00.000Z", "issue_date_in_millis": 1672531200000_i64,
        "max_nodes": 1000, "max_resource_units": null, "issued_to": "sluice", "issuer": "sluice",
        "start_date_in_millis": -1
    }})
}

pub(super) fn xpack() -> Doc {
    sonic_rs::json!({
        "build": {"hash": "0000000000000000000000000000000000000000", "date": "2023-11-04T10:04:57.184859352Z"},
        "license": {"uid": "00000000-0000-0000-0000-000000000000", "type": "basic", "mode": "basic", "status": "active"},
        "features": {
            "ilm": {"available": true, "enabled": true},
            "security": {"available": true, "enabled": false},
            "monitoring": {"available": true, "enabled": false}
        },
        "tagline": "You know, for X"
    })
}

pub(super) fn health() -> Doc {
    sonic_rs::json!({
        "cluster_name": "sluice", "status": "green", "timed_out": false,
        "number_of_nodes": 1, "number_of_data_nodes": 1,
        "active_primary_shards": 0, "active_shards": 0, "relocating_shards": 0,
        "initializing_shards": 0, "unassigned_shards": 0, "delayed_unassigned_shards": 0,
        "number_of_pending_tasks": 0, "number_of_in_flight_fetch": 0,
        "task_max_waiting_in_queue_millis": 0, "active_shards_percent_as_number": 100.0
    })
}

pub(super) fn nodes(s: &Shared) -> Doc {
    let addr = s.local.to_string();
    let mut nodes = sonic_rs::Object::new();
    nodes.insert(
        "sluice",
        sonic_rs::json!({
            "name": format!("sluice-{}", s.cx.id), "version": ES_VERSION,
            "roles": ["master", "data", "ingest"],
            "http": {"bound_address": [addr.clone()], "publish_address": addr}
        }),
    );
    sonic_rs::json!({
        "_nodes": {"total": 1, "successful": 1, "failed": 0},
        "cluster_name": "sluice",
        "nodes": nodes
    })
}
