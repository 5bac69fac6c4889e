//! `sluice user|group|assign|unassign|token`: scripting the node's users on
//! its metadata database (the `[auth]` section of the config names it, as
//! `sluice run CONFIG` would open it), and the first-admin bootstrap of
//! `sluice run`.
//!
//! Every change is audited with the actor `cli:<unix user>`. Passwords are
//! read from the first line of standard input with `--password-stdin`, else
//! generated and printed once. Login lockouts live in the running node's
//! memory: unlock through the API (`POST /api/v1/users/{name}/unlock`).

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context as _};
use clap::{Args, Subcommand, ValueEnum};
use sluice_query::SourcePattern;
use sluice_users::accounts::{NewGroup, NewUser};
use sluice_users::{Actor, AuthConfig, Subject, SubjectKind, TokenScope, UserType, Users};

/// Prints an error and maps to an exit code.
pub fn exit(r: anyhow::Result<()>) -> ExitCode {
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The config file holding `[auth]`.
#[derive(Args, Debug, Clone)]
pub struct ConfigArg {
    /// The node's config file (its `[auth]` section names the database).
    #[arg(short, long, global = true)]
    config: Option<PathBuf>,
}

fn open(c: &ConfigArg) -> anyhow::Result<Users> {
    let Some(path) = &c.config else { bail!("--config CONFIG is required (the node's config file)") };
    let cfg = sluice_runtime::config::load_config(path).map_err(|errs| {
        anyhow::anyhow!(
            "{}: invalid config:\n{}",
            path.display(),
            errs.iter().map(|e| format!("  {e}")).collect::<Vec<_>>().join("\n")
        )
    })?;
    let Some(auth) = cfg.auth else { bail!("{} has no [auth] section: user accounts are off", path.display()) };
    Users::open(&auth, &cfg.node.data_dir).context("open the metadata database")
}

/// Opens the users database for `sluice run`; on an empty one creates the
/// first admin and prints a generated password once.
pub fn open_for_run(auth: &AuthConfig, data_dir: &Path, password_file: Option<&Path>) -> anyhow::Result<Arc<Users>> {
    let users = Users::open(auth, data_dir).context("open the metadata database")?;
    let given = match password_file {
        Some(f) => Some(
            std::fs::read_to_string(f)
                .with_context(|| format!("--admin-password-file {}", f.display()))?
                .trim_end_matches(['\r', '\n'])
                .to_string(),
        ),
        None => std::env::var("SLUICE_ADMIN_PASSWORD").ok().filter(|s| !s.is_empty()),
    };
    if let Some(b) = users.bootstrap_admin(given).context("create the first administrator")? {
        tracing::info!(user = %b.username, database = %auth.db_path(data_dir).display(), "created the first administrator (assigned every source)");
        if let Some(pw) = b.generated_password {
            eprintln!(
                "\n  sluice: first administrator created\n    user:     {}\n    password: {pw}\n  (shown once; change it with `sluice user passwd {} --config CONFIG`)\n",
                b.username, b.username
            );
        }
    }
    Ok(Arc::new(users))
}

fn read_password(stdin: bool) -> anyhow::Result<(String, bool)> {
    if stdin {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).context("read the password from stdin")?;
        let pw = line.trim_end_matches(['\r', '\n']).to_string();
        if pw.is_empty() {
            bail!("--password-stdin: empty password");
        }
        Ok((pw, false))
    } else {
        Ok((sluice_users::secret::random_password(20)?, true))
    }
}

/// User types on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TypeArg {
    /// Manages users and settings.
    Admin,
    /// Sees node operations.
    Operator,
    /// Reads assigned logs.
    Viewer,
}

impl From<TypeArg> for UserType {
    fn from(t: TypeArg) -> Self {
        match t {
            TypeArg::Admin => Self::Admin,
            TypeArg::Operator => Self::Operator,
            TypeArg::Viewer => Self::Viewer,
        }
    }
}

/// `sluice user …`.
#[derive(Args, Debug)]
pub struct UserArgs {
    #[command(flatten)]
    config: ConfigArg,
    #[command(subcommand)]
    cmd: UserCmd,
}

#[derive(Subcommand, Debug)]
enum UserCmd {
    /// Add a local user (password from stdin, or generated and printed).
    Add {
        /// Login name.
        name: String,
        /// admin, operator or viewer.
        #[arg(long = "type", value_enum)]
        user_type: TypeArg,
        /// Display name.
        #[arg(long)]
        display_name: Option<String>,
        /// Read the password from the first line of stdin.
        #[arg(long)]
        password_stdin: bool,
    },
    /// Set a local user's password (ends their sessions).
    Passwd {
        /// Login name.
        name: String,
        /// Read the password from the first line of stdin.
        #[arg(long)]
        password_stdin: bool,
    },
    /// List users.
    List,
    /// Delete a user.
    Del {
        /// Login name.
        name: String,
    },
    /// Clear a user's login lockout on every address. A running node
    /// honours it at the user's next login (it reads the `user.unlock`
    /// audit record this writes).
    Unlock {
        /// Login name.
        name: String,
    },
    /// Two-factor authentication.
    Totp {
        #[command(subcommand)]
        cmd: TotpCmd,
    },
}

#[derive(Subcommand, Debug)]
enum TotpCmd {
    /// Disable a user's TOTP and delete their recovery codes.
    Reset {
        /// Login name.
        name: String,
    },
}

/// Runs `sluice user …`.
pub fn user(a: UserArgs) -> anyhow::Result<()> {
    let users = open(&a.config)?;
    let actor = Actor::cli();
    match a.cmd {
        UserCmd::Add { name, user_type, display_name, password_stdin } => {
            let (pw, generated) = read_password(password_stdin)?;
            let u = users.create_user(
                &actor,
                NewUser {
                    username: name,
                    display_name,
                    user_type: user_type.into(),
                    password: Some(pw.clone()),
                    groups: vec![],
                },
            )?;
            println!("added {} ({})", u.username, u.user_type.as_str());
            if generated {
                println!("password: {pw}");
            }
        }
        UserCmd::Passwd { name, password_stdin } => {
            let (pw, generated) = read_password(password_stdin)?;
            users.set_password(&actor, &name, &pw)?;
            println!("password of {name} changed");
            if generated {
                println!("password: {pw}");
            }
        }
        UserCmd::List => {
            println!("{:<24} {:<9} {:<6} {:<8} {:<5} groups", "user", "type", "source", "disabled", "totp");
            for u in users.list_users()? {
                println!(
                    "{:<24} {:<9} {:<6} {:<8} {:<5} {}",
                    u.username,
                    u.user_type.as_str(),
                    match u.source {
                        sluice_users::model::UserSource::Local => "local",
                        sluice_users::model::UserSource::Ldap => "ldap",
                    },
                    u.disabled,
                    u.totp.enabled,
                    u.groups.join(",")
                );
            }
        }
        UserCmd::Del { name } => {
            users.delete_user(&actor, &name)?;
            println!("deleted {name}");
        }
        UserCmd::Unlock { name } => {
            users.unlock(&actor, &name)?;
            println!("unlocked {name}");
        }
        UserCmd::Totp { cmd: TotpCmd::Reset { name } } => {
            users.reset_totp(&actor, &name)?;
            println!("TOTP of {name} reset");
        }
    }
    Ok(())
}

/// `sluice group …`.
#[derive(Args, Debug)]
pub struct GroupArgs {
    #[command(flatten)]
    config: ConfigArg,
    #[command(subcommand)]
    cmd: GroupCmd,
}

#[derive(Subcommand, Debug)]
enum GroupCmd {
    /// Add a group.
    Add {
        /// Group name.
        name: String,
        /// Description.
        #[arg(long, default_value = "")]
        description: String,
        /// Members must use TOTP.
        #[arg(long)]
        require_totp: bool,
    },
    /// List groups with their members.
    List,
    /// Delete a group (its memberships and assignments go with it).
    Del {
        /// Group name.
        name: String,
    },
    /// Group membership.
    Member {
        #[command(subcommand)]
        cmd: MemberCmd,
    },
}

#[derive(Subcommand, Debug)]
enum MemberCmd {
    /// Add a user to a group.
    Add {
        /// Group.
        group: String,
        /// User.
        user: String,
    },
    /// Remove a user from a group.
    Remove {
        /// Group.
        group: String,
        /// User.
        user: String,
    },
}

/// Runs `sluice group …`.
pub fn group(a: GroupArgs) -> anyhow::Result<()> {
    let users = open(&a.config)?;
    let actor = Actor::cli();
    match a.cmd {
        GroupCmd::Add { name, description, require_totp } => {
            let g = users.create_group(&actor, NewGroup { name, description, require_totp })?;
            println!("added group {}", g.name);
        }
        GroupCmd::List => {
            for g in users.list_groups()? {
                let mut members = g.members.clone();
                members.extend(g.ldap_members.iter().map(|m| format!("{m} (ldap)")));
                println!("{:<24} totp={:<5} {}", g.name, g.require_totp, members.join(","));
            }
        }
        GroupCmd::Del { name } => {
            users.delete_group(&actor, &name)?;
            println!("deleted group {name}");
        }
        GroupCmd::Member { cmd: MemberCmd::Add { group, user } } => {
            users.add_member(&actor, &group, &user)?;
            println!("{user} is a member of {group}");
        }
        GroupCmd::Member { cmd: MemberCmd::Remove { group, user } } => {
            users.remove_member(&actor, &group, &user)?;
            println!("{user} is no longer a member of {group}");
        }
    }
    Ok(())
}

/// `sluice assign|unassign user|group NAME PATTERN`.
#[derive(Args, Debug)]
pub struct AssignArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// `user` or `group`.
    #[arg(value_enum)]
    kind: KindArg,
    /// User or group name.
    name: String,
    /// `GROUP[/SUBGROUP[/HOST]]` globs (`*`, `?`); missing parts are `*`.
    pattern: String,
}

/// Assignment subject kinds.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum KindArg {
    /// A user.
    User,
    /// A group.
    Group,
}

/// Parses `GROUP[/SUBGROUP[/HOST]]`.
pub fn parse_pattern(s: &str) -> anyhow::Result<SourcePattern> {
    let parts: Vec<&str> = s.split('/').collect();
    if parts.len() > 3 || parts.iter().any(|p| p.is_empty()) {
        bail!("pattern {s:?}: expected GROUP[/SUBGROUP[/HOST]] with non-empty parts");
    }
    Ok(SourcePattern::new(parts[0], parts.get(1).copied().unwrap_or("*"), parts.get(2).copied().unwrap_or("*")))
}

/// Runs `sluice assign` (`add`) or `sluice unassign`.
pub fn assign(a: AssignArgs, add: bool) -> anyhow::Result<()> {
    let users = open(&a.config)?;
    let actor = Actor::cli();
    let subject = Subject {
        kind: match a.kind {
            KindArg::User => SubjectKind::User,
            KindArg::Group => SubjectKind::Group,
        },
        name: a.name,
    };
    let pattern = parse_pattern(&a.pattern)?;
    let shown = format!("{}/{}/{}", pattern.group.0, pattern.subgroup.0, pattern.host.0);
    if add {
        let created = users.assign(&actor, &subject, pattern)?;
        println!("assigned {shown} to {subject} (id {})", created.id);
    } else {
        users.unassign_pattern(&actor, &subject, &pattern)?;
        println!("unassigned {shown} from {subject}");
    }
    Ok(())
}

/// `sluice token …`.
#[derive(Args, Debug)]
pub struct TokenArgs {
    #[command(flatten)]
    config: ConfigArg,
    #[command(subcommand)]
    cmd: TokenCmd,
}

/// Token scopes on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ScopeArg {
    /// Read-only.
    Search,
    /// Everything the owner may do.
    Admin,
}

#[derive(Subcommand, Debug)]
enum TokenCmd {
    /// Create a token for a user; prints the secret once.
    Create {
        /// A label.
        name: String,
        /// The owner.
        #[arg(long)]
        user: String,
        /// search (read-only) or admin.
        #[arg(long, value_enum, default_value = "search")]
        scope: ScopeArg,
        /// Lifetime, e.g. `30d` (default: no expiry).
        #[arg(long)]
        expires_in: Option<String>,
    },
    /// List tokens (of one user with --user).
    List {
        /// Owner.
        #[arg(long)]
        user: Option<String>,
    },
    /// Revoke a token by id.
    Revoke {
        /// Token id.
        id: i64,
    },
}

/// Runs `sluice token …`.
pub fn token(a: TokenArgs) -> anyhow::Result<()> {
    let users = open(&a.config)?;
    let actor = Actor::cli();
    match a.cmd {
        TokenCmd::Create { name, user, scope, expires_in } => {
            let expires: Option<Duration> = match expires_in {
                Some(s) => Some(sluice_core::config::HumanDuration::parse(&s).map_err(anyhow::Error::msg)?.0),
                None => None,
            };
            let scope = match scope {
                ScopeArg::Search => TokenScope::Search,
                ScopeArg::Admin => TokenScope::Admin,
            };
            let (t, secret) = users.create_token(&actor, &user, &name, scope, expires)?;
            println!("token {} ({}) for {}: {secret}", t.id, t.scope.as_str(), t.owner);
        }
        TokenCmd::List { user } => {
            for t in users.list_tokens(user.as_deref())? {
                println!(
                    "{:<5} {:<20} {:<16} {:<7} expires={}",
                    t.id,
                    t.name,
                    t.owner,
                    t.scope.as_str(),
                    t.expires_at.as_deref().unwrap_or("never")
                );
            }
        }
        TokenCmd::Revoke { id } => {
            users.revoke_token(&actor, id, None)?;
            println!("revoked token {id}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        assert_eq!(parse_pattern("acme").unwrap(), SourcePattern::new("acme", "*", "*"));
        assert_eq!(parse_pattern("acme/web/h-*").unwrap(), SourcePattern::new("acme", "web", "h-*"));
        assert!(parse_pattern("a//b").is_err());
        assert!(parse_pattern("a/b/c/d").is_err());
    }
}
