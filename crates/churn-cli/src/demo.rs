//! `churn demo seed|clear`: a year of made-up but realistic data in a project, to see a living
//! dashboard in a minute or to benchmark one, and taking exactly that data back out. The work
//! is `churn_core::services::demo`.

use std::io::Write;
use std::time::Instant;

use churn_core::services::demo::{MAX_ROWS, SeedOptions};
use churn_core::services::operator::Operator;
use clap::Subcommand;
use serde_json::json;

use crate::{table, write_json};

#[derive(Debug, Subcommand)]
pub enum DemoCommand {
    /// Fill a project with demo data: churn events over the past year with variants, sends
    /// and recoveries, customers with behaviour and risk scores, payment failures, risk
    /// alerts and a cancel flow. Refused while the project holds demo data already.
    Seed {
        /// Project slug or id.
        #[arg(long)]
        project: String,
        /// Churn events to make.
        #[arg(long, default_value_t = 2_000, value_parser = clap::value_parser!(u64).range(0..=MAX_ROWS))]
        events: u64,
        /// Customers to make (the events' customers among them).
        #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=MAX_ROWS))]
        customers: u64,
        /// The same seed makes the same data (dated back from now).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Currency of every amount (ISO 4217).
        #[arg(long, default_value = "usd")]
        currency: String,
    },
    /// Remove a project's demo data, and nothing else.
    Clear {
        /// Project slug or id.
        #[arg(long)]
        project: String,
    },
}

pub async fn demo(
    command: DemoCommand,
    operator: Operator,
    json: bool,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let started = Instant::now();
    match command {
        DemoCommand::Seed {
            project,
            events,
            customers,
            seed,
            currency,
        } => {
            let project = operator.project(&project).await?;
            let options = SeedOptions {
                events,
                customers,
                seed,
                currency: currency.to_lowercase(),
            };
            let made = operator.demo().seed(&project, &options).await?;
            let seconds = started.elapsed().as_secs_f64();
            if json {
                let report = json!({"project": project.slug, "seed": seed, "seconds": seconds, "made": made});
                return write_json(out, &report);
            }
            let mut t = table(&["made", "rows"]);
            for (label, n) in [
                ("churn events", made.events),
                ("  recovered", made.recovered),
                ("  lost", made.lost),
                ("variants", made.variants),
                ("  sent", made.sent),
                ("customers", made.customers),
                ("risk scores", made.risk_scores),
                ("daily behaviour rollups", made.behavior_rollups),
                ("payment failures", made.payment_failures),
                ("payment attempts", made.payment_attempts),
                ("risk alerts", made.alerts),
                ("cancel-flow opens", made.cancel_flow_opens),
            ] {
                t.add_row(vec![label.to_owned(), n.to_string()]);
            }
            writeln!(out, "{t}")?;
            if made.cancel_flow {
                writeln!(
                    out,
                    "A default cancel flow was stored (the project had none)."
                )?;
            }
            writeln!(
                out,
                "Demo data (seed {seed}) in {} in {seconds:.1} s; `churn demo clear --project {}` removes it.",
                project.slug, project.slug
            )?;
        }
        DemoCommand::Clear { project } => {
            let project = operator.project(&project).await?;
            let cleared = operator.demo().clear(&project).await?;
            if json {
                let report = json!({"project": project.slug, "removed": cleared});
                return write_json(out, &report);
            }
            writeln!(
                out,
                "Removed the demo data of {}: {} churn events, {} customers, {} payment failures, {} risk alerts{}.",
                project.slug,
                cleared.events,
                cleared.customers,
                cleared.payment_failures,
                cleared.alerts,
                if cleared.cancel_flow {
                    ", the cancel flow"
                } else {
                    ""
                }
            )?;
        }
    }
    Ok(())
}
