//! `churn`: the admin CLI.

use clap::Parser;

#[tokio::main]
async fn main() {
    let cli = churn_cli::Cli::parse();
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = churn_cli::run(cli, &mut stdout).await {
        eprintln!("error: {e:#}");
        let refused = e.downcast_ref::<churn_cli::Refused>().is_some();
        std::process::exit(if refused { 2 } else { 1 });
    }
}
