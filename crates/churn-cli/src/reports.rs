//! `churn report cohorts|forecast|uplift`: a project's reports, read with its owner's rights
//! through the same services as the HTTP API.

use std::io::Write;

use churn_core::api::analytics::{CohortsQuery, ForecastQuery, UpliftQuery};
use churn_core::services::operator::AsOwner;

use crate::{money, table, write_json};

/// `churn report cohorts`.
pub async fn cohorts(
    view: AsOwner,
    months: i64,
    json: bool,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let rows = view
        .core
        .cohorts(
            &view.access,
            CohortsQuery {
                months: Some(months),
            },
        )
        .await?;
    if json {
        return write_json(out, &rows);
    }
    let mut t = table(&[
        "cohort",
        "events",
        "recovered",
        "lost",
        "open",
        "rate",
        "MRR",
        "recovered MRR",
        "top strategy",
    ]);
    for r in &rows {
        let top = r
            .by_strategy
            .iter()
            .filter(|(_, n)| **n > 0)
            .max_by_key(|(_, n)| **n)
            .map_or_else(|| "-".to_owned(), |(s, n)| format!("{s} ({n})"));
        t.add_row(vec![
            r.cohort.clone(),
            r.total_events.to_string(),
            r.recovered.to_string(),
            r.lost.to_string(),
            r.processing.to_string(),
            format!("{:.2}%", r.recovery_rate),
            money(r.total_mrr_cents),
            money(r.recovered_mrr_cents),
            top,
        ]);
    }
    writeln!(out, "{t}")?;
    Ok(())
}

/// `churn report forecast`.
pub async fn forecast(
    view: AsOwner,
    horizon: i64,
    json: bool,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let f = view
        .core
        .forecasting(
            &view.access,
            ForecastQuery {
                horizon: Some(horizon),
            },
        )
        .await?;
    if json {
        return write_json(out, &f);
    }
    let mut t = table(&[
        "month",
        "",
        "churned MRR",
        "80% interval",
        "recovered MRR",
        "80% interval",
    ]);
    for h in &f.history {
        t.add_row(vec![
            h.month.clone(),
            "actual".into(),
            money(h.churned_mrr_cents),
            String::new(),
            money(h.recovered_mrr_cents),
            String::new(),
        ]);
    }
    for p in &f.forecast {
        t.add_row(vec![
            p.month.clone(),
            "forecast".into(),
            money(p.churned_mrr_cents),
            format!("{} – {}", money(p.churned_lower), money(p.churned_upper)),
            money(p.recovered_mrr_cents),
            format!(
                "{} – {}",
                money(p.recovered_lower),
                money(p.recovered_upper)
            ),
        ]);
    }
    writeln!(out, "{t}")?;
    writeln!(
        out,
        "{} ({}), method: {}",
        view.access.project.slug,
        f.currency.to_uppercase(),
        f.method
    )?;
    Ok(())
}

/// `churn report uplift`.
pub async fn uplift(
    view: AsOwner,
    days: i64,
    json: bool,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let u = view
        .core
        .uplift(&view.access, UpliftQuery { days: Some(days) })
        .await?;
    if json {
        return write_json(out, &u);
    }
    let mut t = table(&["group", "events", "recovered", "lost", "rate"]);
    for (name, g) in [("treatment", &u.treatment), ("control", &u.control)] {
        t.add_row(vec![
            name.to_owned(),
            g.events.to_string(),
            g.recovered.to_string(),
            g.lost.to_string(),
            format!("{:.2}%", g.recovery_rate),
        ]);
    }
    writeln!(out, "{t}")?;
    writeln!(
        out,
        "uplift {:+.2} points, 95% CI [{:.2}, {:.2}]{}",
        u.uplift_points,
        u.ci95[0],
        u.ci95[1],
        if u.significant {
            ", significant"
        } else {
            ", not significant"
        }
    )?;
    Ok(())
}
