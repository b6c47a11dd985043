//! `churn`: the operator CLI.

use clap::Parser;

#[tokio::main]
async fn main() {
    let cli = churn_cli::Cli::parse();
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = churn_cli::run(cli, &mut stdout).await {
        eprintln!("error: {e:#}");
        std::process::exit(churn_cli::exit_code(&e));
    }
}
