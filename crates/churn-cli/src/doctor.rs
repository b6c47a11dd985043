//! `churn doctor`: compares every count the database keeps by trigger with a recount from
//! its base tables (`churn_core::store::kept_counts`), prints each figure that drifted and
//! fails; with `--repair` rebuilds the counts that drifted and checks again.

use std::collections::BTreeSet;
use std::io::Write;

use churn_core::services::operator::Operator;
use churn_core::store::kept_counts::{Drift, KeptCount};
use serde_json::json;

use crate::{table, write_json};

/// Kept figures still differing from their recount (`churn doctor` exits 1).
#[derive(Debug)]
pub struct Drifted(pub usize);

impl std::fmt::Display for Drifted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} kept figure(s) differ from their recount; `churn doctor --repair` rebuilds them",
            self.0
        )
    }
}

impl std::error::Error for Drifted {}

pub async fn doctor(
    operator: Operator,
    repair: bool,
    json: bool,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let found = operator.kept_count_drift().await?;
    let drifted: BTreeSet<KeptCount> = found.iter().map(|(d, _)| d.count).collect();
    let drifted: Vec<KeptCount> = drifted.into_iter().collect();
    let left = if repair && !found.is_empty() {
        operator.rebuild_kept_counts(&drifted).await?;
        operator.kept_count_drift().await?
    } else {
        found.clone()
    };
    let rebuilt: Vec<&str> = if repair {
        drifted.iter().map(|c| c.name()).collect()
    } else {
        Vec::new()
    };
    if json {
        let rows: Vec<_> = found
            .iter()
            .map(|(d, slug)| {
                json!({"count": d.count.name(), "table": d.count.table(), "project": slug,
                    "project_id": d.project_id, "key": d.key, "figure": d.figure,
                    "kept": d.kept, "recounted": d.recounted})
            })
            .collect();
        write_json(out, &json!({"drift": rows, "rebuilt": rebuilt}))?;
    } else if found.is_empty() {
        writeln!(
            out,
            "Every kept count matches its recount ({}).",
            KeptCount::ALL.map(KeptCount::name).join(", ")
        )?;
    } else {
        writeln!(out, "{}", drift_table(&found))?;
        if !rebuilt.is_empty() && left.is_empty() {
            writeln!(
                out,
                "Rebuilt from the base tables: {}. Every kept count matches its recount now.",
                rebuilt.join(", ")
            )?;
        }
    }
    if left.is_empty() {
        Ok(())
    } else {
        Err(Drifted(left.len()).into())
    }
}

fn drift_table(found: &[(Drift, String)]) -> comfy_table::Table {
    let mut table = table(&["count", "project", "key", "kept", "recounted"]);
    for (d, slug) in found {
        table.add_row(vec![
            format!("{} ({})", d.count.name(), d.figure),
            slug.clone(),
            d.key.clone(),
            d.kept.to_string(),
            d.recounted.to_string(),
        ]);
    }
    table
}
