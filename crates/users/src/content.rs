//! Dashboards and saved searches: stored per owner, shared with groups or
//! everyone (`docs/specs/ui-api.md` §9–10).
//!
//! Both live in the `objects` table (kind `dashboard` / `saved_search`) with
//! their body as JSON and a version for optimistic concurrency: an update
//! names the version it started from and fails with `Conflict` when someone
//! saved in between. Visibility: the owner, members of a group it is shared
//! with, everyone when shared with everyone, and admins; only the owner and
//! admins may change or delete it. A dashboard stores queries, never results:
//! panels always run as the viewing user's principal (the HTTP layer runs
//! them), so sharing a dashboard never shares data.

use std::collections::BTreeMap;

use rusqlite::{params, Connection, OptionalExtension as _};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sluice_query::Aggregation;

use crate::accounts::{group_id, user_group_ids};
use crate::audit::{self, Actor, Outcome};
use crate::clock::rfc3339;
use crate::error::UsersError;
use crate::login::Caller;
use crate::model::{Sharing, UserType};
use crate::Users;

/// Most panels on a dashboard.
pub const MAX_PANELS: usize = 50;
/// Largest stored body (bytes of JSON).
pub const MAX_DOC_BYTES: usize = 256 * 1024;

/// Chart types.
pub const CHARTS: &[&str] = &["timeseries", "bar", "pie", "table", "number"];

/// A dashboard's time range.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TimeSpec {
    /// Start (search time syntax), e.g. `now-24h`.
    #[serde(default)]
    pub from: Option<String>,
    /// End; `null` is now.
    #[serde(default)]
    pub to: Option<String>,
}

/// One panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Panel {
    /// Unique within the dashboard.
    pub id: String,
    /// Heading.
    #[serde(default)]
    pub title: String,
    /// `timeseries`, `bar`, `pie`, `table`, `number`.
    pub chart: String,
    /// Query string.
    #[serde(default)]
    pub query: String,
    /// Aggregations: with them the panel runs `/aggregate`, without `/search`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggs: Option<BTreeMap<String, Aggregation>>,
    /// Search panels: fields to return.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<String>>,
    /// Search panels: hits (1–1000, default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<usize>,
    /// The UI's own options.
    #[serde(default = "empty_object")]
    pub options: Value,
    /// The UI's own layout.
    #[serde(default = "empty_object")]
    pub layout: Value,
}

fn empty_object() -> Value {
    json!({})
}

/// `POST`/`PUT /api/v1/dashboards` bodies.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DashboardInput {
    /// Title.
    pub title: String,
    /// Description.
    #[serde(default)]
    pub description: String,
    /// Sharing.
    #[serde(default)]
    pub sharing: Sharing,
    /// Time range.
    #[serde(default)]
    pub time: TimeSpec,
    /// Auto-refresh interval (`"30s"`) or none.
    #[serde(default)]
    pub refresh: Option<String>,
    /// Panels.
    #[serde(default)]
    pub panels: Vec<Panel>,
    /// `PUT`: the version this edit started from.
    #[serde(default)]
    pub version: Option<i64>,
}

/// A dashboard as returned.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Dashboard {
    /// Id.
    pub id: i64,
    /// Title.
    pub title: String,
    /// Description.
    pub description: String,
    /// Owner user name.
    pub owner: String,
    /// Sharing.
    pub sharing: Sharing,
    /// Time range.
    pub time: TimeSpec,
    /// Auto-refresh.
    #[schema(required = true)]
    pub refresh: Option<String>,
    /// Panels.
    pub panels: Vec<Panel>,
    /// Version (1 when created).
    pub version: i64,
    /// Created.
    pub created_at: String,
    /// Last saved.
    pub updated_at: String,
    /// Whether the caller may change it.
    pub can_edit: bool,
}

/// `POST`/`PUT /api/v1/saved-searches` bodies.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SavedSearchInput {
    /// Name.
    pub name: String,
    /// Description.
    #[serde(default)]
    pub description: String,
    /// Query string.
    #[serde(default)]
    pub query: String,
    /// Time range start.
    #[serde(default)]
    pub from: Option<String>,
    /// Time range end.
    #[serde(default)]
    pub to: Option<String>,
    /// Result columns.
    #[serde(default)]
    pub columns: Vec<String>,
    /// Sharing.
    #[serde(default)]
    pub sharing: Sharing,
    /// `PUT`: the version this edit started from.
    #[serde(default)]
    pub version: Option<i64>,
}

/// A saved search as returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct SavedSearch {
    /// Id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Owner.
    pub owner: String,
    /// Query string.
    pub query: String,
    /// Start.
    #[schema(required = true)]
    pub from: Option<String>,
    /// End.
    #[schema(required = true)]
    pub to: Option<String>,
    /// Columns.
    pub columns: Vec<String>,
    /// Sharing.
    pub sharing: Sharing,
    /// Version.
    pub version: i64,
    /// Created.
    pub created_at: String,
    /// Last saved.
    pub updated_at: String,
    /// Whether the caller may change it.
    pub can_edit: bool,
}

/// `dashboard` or `saved_search`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dashboard,
    SavedSearch,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Dashboard => "dashboard",
            Self::SavedSearch => "saved_search",
        }
    }
    fn noun(self) -> &'static str {
        match self {
            Self::Dashboard => "dashboard",
            Self::SavedSearch => "saved search",
        }
    }
}

/// A stored object row.
struct Row {
    id: i64,
    owner_id: i64,
    owner: String,
    title: String,
    description: String,
    everyone: bool,
    doc: Value,
    version: i64,
    created_at: i64,
    updated_at: i64,
    groups: Vec<String>,
    group_ids: Vec<i64>,
}

fn check_query(field: &str, q: &str) -> Result<(), UsersError> {
    sluice_query::parse(q).map(|_| ()).map_err(|e| UsersError::Query {
        field: field.to_string(),
        message: e.message,
        position: e.position,
    })
}

fn check_time(field: &str, t: Option<&str>) -> Result<(), UsersError> {
    if let Some(t) = t {
        sluice_query::parse_time(t, 0).map_err(|e| UsersError::field(field, e.0))?;
    }
    Ok(())
}

fn validate_dashboard(d: &DashboardInput) -> Result<Value, UsersError> {
    if d.title.trim().is_empty() || d.title.len() > 200 {
        return Err(UsersError::field("title", "title must be 1-200 characters"));
    }
    if d.panels.len() > MAX_PANELS {
        return Err(UsersError::field("panels", format!("at most {MAX_PANELS} panels")));
    }
    check_time("time.from", d.time.from.as_deref())?;
    check_time("time.to", d.time.to.as_deref())?;
    if let Some(r) = &d.refresh {
        sluice_core::config::HumanDuration::parse(r).map_err(|e| UsersError::field("refresh", e))?;
    }
    let mut ids = std::collections::HashSet::new();
    for (i, p) in d.panels.iter().enumerate() {
        let f = |k: &str| format!("panels[{i}].{k}");
        if p.id.is_empty() || p.id.len() > 64 || !ids.insert(p.id.as_str()) {
            return Err(UsersError::field(&f("id"), "panel ids must be 1-64 characters and unique"));
        }
        if !CHARTS.contains(&p.chart.as_str()) {
            return Err(UsersError::field(&f("chart"), format!("chart must be one of {}", CHARTS.join(", "))));
        }
        check_query(&f("query"), &p.query)?;
        if let Some(a) = &p.aggs {
            if a.is_empty() || a.len() > 10 {
                return Err(UsersError::field(&f("aggs"), "1-10 aggregations"));
            }
        }
        if let Some(s) = p.size {
            if !(1..=1000).contains(&s) {
                return Err(UsersError::field(&f("size"), "size must be between 1 and 1000"));
            }
        }
        if !p.options.is_object() || !p.layout.is_object() {
            return Err(UsersError::field(&f("options"), "options and layout must be objects"));
        }
    }
    let doc = json!({"time": d.time, "refresh": d.refresh, "panels": d.panels});
    if doc.to_string().len() > MAX_DOC_BYTES {
        return Err(UsersError::invalid(format!("dashboard larger than {MAX_DOC_BYTES} bytes")));
    }
    Ok(doc)
}

fn validate_search(s: &SavedSearchInput) -> Result<Value, UsersError> {
    if s.name.trim().is_empty() || s.name.len() > 200 {
        return Err(UsersError::field("name", "name must be 1-200 characters"));
    }
    check_query("query", &s.query)?;
    check_time("from", s.from.as_deref())?;
    check_time("to", s.to.as_deref())?;
    if s.columns.len() > 100 {
        return Err(UsersError::field("columns", "at most 100 columns"));
    }
    Ok(json!({"query": s.query, "from": s.from, "to": s.to, "columns": s.columns}))
}

impl Users {
    fn load(conn: &Connection, kind: Kind, id: i64) -> Result<Option<Row>, UsersError> {
        let row = conn
            .query_row(
                "SELECT o.id, o.owner_id, u.username, o.title, o.description, o.share_everyone, o.doc, o.version, o.created_at, o.updated_at
                 FROM objects o JOIN users u ON u.id = o.owner_id WHERE o.id = ?1 AND o.kind = ?2",
                params![id, kind.as_str()],
                |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, bool>(5)?,
                        r.get::<_, String>(6)?,
                        r.get::<_, i64>(7)?,
                        r.get::<_, i64>(8)?,
                        r.get::<_, i64>(9)?,
                    ))
                },
            )
            .optional()?;
        let Some((id, owner_id, owner, title, description, everyone, doc, version, created_at, updated_at)) = row
        else {
            return Ok(None);
        };
        let mut st = conn.prepare_cached(
            "SELECT g.id, g.name FROM object_shares s JOIN groups g ON g.id = s.group_id WHERE s.object_id = ?1 ORDER BY g.name",
        )?;
        let shares = st
            .query_map([id], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(Row {
            id,
            owner_id,
            owner,
            title,
            description,
            everyone,
            doc: serde_json::from_str(&doc).unwrap_or(Value::Null),
            version,
            created_at,
            updated_at,
            group_ids: shares.iter().map(|s| s.0).collect(),
            groups: shares.into_iter().map(|s| s.1).collect(),
        }))
    }

    fn visible(conn: &Connection, caller: &Caller, row: &Row) -> Result<bool, UsersError> {
        if row.owner_id == caller.user_id || row.everyone || caller.user_type == UserType::Admin {
            return Ok(true);
        }
        let mine = user_group_ids(conn, caller.user_id)?;
        Ok(row.group_ids.iter().any(|g| mine.contains(g)))
    }

    fn editable(caller: &Caller, row: &Row) -> bool {
        row.owner_id == caller.user_id || caller.user_type == UserType::Admin
    }

    fn visible_row(conn: &Connection, caller: &Caller, kind: Kind, id: i64) -> Result<Row, UsersError> {
        match Self::load(conn, kind, id)? {
            Some(r) if Self::visible(conn, caller, &r)? => Ok(r),
            _ => Err(UsersError::NotFound(format!("no {} {id}", kind.noun()))),
        }
    }

    fn share_ids(conn: &Connection, sharing: &Sharing) -> Result<Vec<i64>, UsersError> {
        let mut ids = Vec::new();
        for g in &sharing.groups {
            ids.push(group_id(conn, g)?.ok_or_else(|| UsersError::field("sharing.groups", format!("no group {g:?}")))?);
        }
        Ok(ids)
    }

    #[allow(clippy::too_many_arguments)]
    fn insert(
        &self,
        caller: &Caller,
        actor: &Actor,
        kind: Kind,
        title: &str,
        description: &str,
        sharing: &Sharing,
        doc: &Value,
    ) -> Result<i64, UsersError> {
        let now = self.clock.now_ms();
        self.tx(|tx| {
            let shares = Self::share_ids(tx, sharing)?;
            tx.execute(
                "INSERT INTO objects(kind, owner_id, title, description, share_everyone, doc, version, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, ?7)",
                params![kind.as_str(), caller.user_id, title, description, sharing.everyone, doc.to_string(), now],
            )?;
            let id = tx.last_insert_rowid();
            for g in shares {
                tx.execute("INSERT INTO object_shares(object_id, group_id) VALUES (?1, ?2)", [id, g])?;
            }
            audit::write(tx, now, actor, &format!("{}.create", kind.as_str()), &format!("{}:{id}", kind.as_str()), json!({"title": title, "sharing": sharing}), Outcome::Success)?;
            Ok(id)
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn update(
        &self,
        caller: &Caller,
        actor: &Actor,
        kind: Kind,
        id: i64,
        version: Option<i64>,
        title: &str,
        description: &str,
        sharing: &Sharing,
        doc: &Value,
    ) -> Result<(), UsersError> {
        let now = self.clock.now_ms();
        let version = version
            .ok_or_else(|| UsersError::field("version", "version (the one this edit started from) is required"))?;
        self.tx(|tx| {
            let row = Self::visible_row(tx, caller, kind, id)?;
            if !Self::editable(caller, &row) {
                return Err(UsersError::Forbidden(format!("only the owner or an administrator may change this {}", kind.noun())));
            }
            if row.version != version {
                return Err(UsersError::Conflict(format!(
                    "this {} was saved by someone else (version {} is current, the edit started from {version}); reload it",
                    kind.noun(),
                    row.version
                )));
            }
            let shares = Self::share_ids(tx, sharing)?;
            tx.execute(
                "UPDATE objects SET title = ?1, description = ?2, share_everyone = ?3, doc = ?4, version = version + 1, updated_at = ?5 WHERE id = ?6",
                params![title, description, sharing.everyone, doc.to_string(), now, id],
            )?;
            tx.execute("DELETE FROM object_shares WHERE object_id = ?1", [id])?;
            for g in shares {
                tx.execute("INSERT INTO object_shares(object_id, group_id) VALUES (?1, ?2)", [id, g])?;
            }
            let old_sharing = Sharing { everyone: row.everyone, groups: row.groups.clone() };
            let mut detail = json!({"title": title, "version": row.version + 1});
            if &old_sharing != sharing {
                detail["sharing"] = json!({"from": old_sharing, "to": sharing});
            }
            audit::write(tx, now, actor, &format!("{}.update", kind.as_str()), &format!("{}:{id}", kind.as_str()), detail, Outcome::Success)
        })
    }

    fn remove(&self, caller: &Caller, actor: &Actor, kind: Kind, id: i64) -> Result<(), UsersError> {
        let now = self.clock.now_ms();
        self.tx(|tx| {
            let row = Self::visible_row(tx, caller, kind, id)?;
            if !Self::editable(caller, &row) {
                return Err(UsersError::Forbidden(format!(
                    "only the owner or an administrator may delete this {}",
                    kind.noun()
                )));
            }
            tx.execute("DELETE FROM objects WHERE id = ?1", [id])?;
            audit::write(
                tx,
                now,
                actor,
                &format!("{}.delete", kind.as_str()),
                &format!("{}:{id}", kind.as_str()),
                json!({"title": row.title, "owner": row.owner}),
                Outcome::Success,
            )
        })
    }

    fn visible_ids(&self, caller: &Caller, kind: Kind) -> Result<Vec<Row>, UsersError> {
        let conn = self.conn();
        let ids = conn
            .prepare("SELECT id FROM objects WHERE kind = ?1 ORDER BY title, id")?
            .query_map([kind.as_str()], |r| r.get::<_, i64>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        let mut out = Vec::new();
        for id in ids {
            if let Some(r) = Self::load(&conn, kind, id)? {
                if Self::visible(&conn, caller, &r)? {
                    out.push(r);
                }
            }
        }
        Ok(out)
    }

    fn dashboard_dto(caller: &Caller, r: Row) -> Dashboard {
        let can_edit = Self::editable(caller, &r);
        Dashboard {
            id: r.id,
            title: r.title,
            description: r.description,
            owner: r.owner,
            sharing: Sharing { everyone: r.everyone, groups: r.groups },
            time: serde_json::from_value(r.doc["time"].clone()).unwrap_or_default(),
            refresh: r.doc["refresh"].as_str().map(String::from),
            panels: serde_json::from_value(r.doc["panels"].clone()).unwrap_or_default(),
            version: r.version,
            created_at: rfc3339(r.created_at),
            updated_at: rfc3339(r.updated_at),
            can_edit,
        }
    }

    fn search_dto(caller: &Caller, r: Row) -> SavedSearch {
        let can_edit = Self::editable(caller, &r);
        SavedSearch {
            id: r.id,
            name: r.title,
            description: r.description,
            owner: r.owner,
            query: r.doc["query"].as_str().unwrap_or_default().to_string(),
            from: r.doc["from"].as_str().map(String::from),
            to: r.doc["to"].as_str().map(String::from),
            columns: serde_json::from_value(r.doc["columns"].clone()).unwrap_or_default(),
            sharing: Sharing { everyone: r.everyone, groups: r.groups },
            version: r.version,
            created_at: rfc3339(r.created_at),
            updated_at: rfc3339(r.updated_at),
            can_edit,
        }
    }

    /// Dashboards the caller may see, by title.
    pub fn list_dashboards(&self, caller: &Caller) -> Result<Vec<Dashboard>, UsersError> {
        Ok(self.visible_ids(caller, Kind::Dashboard)?.into_iter().map(|r| Self::dashboard_dto(caller, r)).collect())
    }

    /// One dashboard (`NotFound` when not visible).
    pub fn get_dashboard(&self, caller: &Caller, id: i64) -> Result<Dashboard, UsersError> {
        let r = Self::visible_row(&self.conn(), caller, Kind::Dashboard, id)?;
        Ok(Self::dashboard_dto(caller, r))
    }

    /// Creates a dashboard owned by the caller.
    pub fn create_dashboard(&self, caller: &Caller, actor: &Actor, d: DashboardInput) -> Result<Dashboard, UsersError> {
        let doc = validate_dashboard(&d)?;
        let id = self.insert(caller, actor, Kind::Dashboard, &d.title, &d.description, &d.sharing, &doc)?;
        self.get_dashboard(caller, id)
    }

    /// Replaces a dashboard (owner or admin; `version` must be current).
    pub fn update_dashboard(
        &self,
        caller: &Caller,
        actor: &Actor,
        id: i64,
        d: DashboardInput,
    ) -> Result<Dashboard, UsersError> {
        let doc = validate_dashboard(&d)?;
        self.update(caller, actor, Kind::Dashboard, id, d.version, &d.title, &d.description, &d.sharing, &doc)?;
        self.get_dashboard(caller, id)
    }

    /// Deletes a dashboard (owner or admin).
    pub fn delete_dashboard(&self, caller: &Caller, actor: &Actor, id: i64) -> Result<(), UsersError> {
        self.remove(caller, actor, Kind::Dashboard, id)
    }

    /// Saved searches the caller may see, by name.
    pub fn list_saved_searches(&self, caller: &Caller) -> Result<Vec<SavedSearch>, UsersError> {
        Ok(self.visible_ids(caller, Kind::SavedSearch)?.into_iter().map(|r| Self::search_dto(caller, r)).collect())
    }

    /// One saved search.
    pub fn get_saved_search(&self, caller: &Caller, id: i64) -> Result<SavedSearch, UsersError> {
        let r = Self::visible_row(&self.conn(), caller, Kind::SavedSearch, id)?;
        Ok(Self::search_dto(caller, r))
    }

    /// Creates a saved search owned by the caller.
    pub fn create_saved_search(
        &self,
        caller: &Caller,
        actor: &Actor,
        s: SavedSearchInput,
    ) -> Result<SavedSearch, UsersError> {
        let doc = validate_search(&s)?;
        let id = self.insert(caller, actor, Kind::SavedSearch, &s.name, &s.description, &s.sharing, &doc)?;
        self.get_saved_search(caller, id)
    }

    /// Replaces a saved search.
    pub fn update_saved_search(
        &self,
        caller: &Caller,
        actor: &Actor,
        id: i64,
        s: SavedSearchInput,
    ) -> Result<SavedSearch, UsersError> {
        let doc = validate_search(&s)?;
        self.update(caller, actor, Kind::SavedSearch, id, s.version, &s.name, &s.description, &s.sharing, &doc)?;
        self.get_saved_search(caller, id)
    }

    /// Deletes a saved search.
    pub fn delete_saved_search(&self, caller: &Caller, actor: &Actor, id: i64) -> Result<(), UsersError> {
        self.remove(caller, actor, Kind::SavedSearch, id)
    }
}
