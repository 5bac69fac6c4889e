//! Glob pattern lists of the file-reading sources (`file`, `evtx`): checked
//! when the source is built, an invalid pattern named by its place in the list.

use sluice_core::component::BuildContext;
use sluice_core::config::ConfigError;

/// Compiles the patterns of list `key`; an invalid one is an error at
/// `key[i]`.
pub fn compile(cx: &BuildContext, key: &str, patterns: &[String]) -> Result<Vec<glob::Pattern>, ConfigError> {
    patterns
        .iter()
        .enumerate()
        .map(|(i, p)| {
            glob::Pattern::new(p).map_err(|e| cx.error(&format!("{key}[{i}]"), format!("invalid glob {p:?}: {e}")))
        })
        .collect()
}

/// [`compile`] for a list that needs at least one pattern (`include`).
pub fn compile_required(cx: &BuildContext, key: &str, patterns: &[String]) -> Result<Vec<glob::Pattern>, ConfigError> {
    if patterns.is_empty() {
        return Err(cx.error(key, "at least one glob pattern is needed"));
    }
    compile(cx, key, patterns)
}

#[cfg(test)]
mod tests {
    use crate::sources::{evtx, file};
    use crate::testkit::{build_source, check_errors};

    /// Both file-reading sources refuse an empty `include` and name the
    /// invalid pattern's place in `include` / `exclude`.
    #[test]
    fn the_file_sources_name_the_bad_pattern() {
        for spec in [&evtx::SPEC, &file::SPEC] {
            let empty = format!("test.{}.include: at least one glob pattern is needed", spec.name);
            let bad = format!("test.{}.include[1]: invalid glob \"/a/[\"", spec.name);
            check_errors(
                spec,
                build_source,
                &[("include = []", &empty), ("include = [\"/var/log/*.log\", \"/a/[\"]", &bad)],
            );
        }
        check_errors(
            &file::SPEC,
            build_source,
            &[(
                "include = [\"/var/log/*\"]\nexclude = [\"*.gz\", \"[x\"]",
                "test.file.exclude[1]: invalid glob \"[x\"",
            )],
        );
        assert!(build_source(&file::SPEC, "include = [\"/var/log/*\"]\nexclude = [\"*.gz\"]").is_ok());
    }
}
