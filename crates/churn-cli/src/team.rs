//! `churn team …`: the operator managing a project's members and invitations with its owner's
//! rights, through the same services as the HTTP API.

use std::io::Write;

use churn_core::api::team::CreateInvitation;
use churn_core::services::operator::AsOwner;
use churn_core::time;
use clap::Subcommand;

use crate::{table, write_json};

#[derive(Debug, Subcommand)]
pub enum TeamCommand {
    /// The members of a project, the owner included.
    List {
        /// Project slug or id.
        #[arg(long)]
        project: String,
    },
    /// Invite an address (emailed by a running server); prints the link that accepts it.
    Invite {
        /// The invitee's email.
        email: String,
        /// Project slug or id.
        #[arg(long)]
        project: String,
        /// admin, member or viewer.
        #[arg(long, default_value = "member")]
        role: String,
    },
    /// Remove a member (never the owner).
    Remove {
        /// The member's email.
        email: String,
        /// Project slug or id.
        #[arg(long)]
        project: String,
    },
}

pub async fn team(
    command: TeamCommand,
    as_owner: impl AsyncFnOnce(&str) -> anyhow::Result<AsOwner>,
    json: bool,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    match command {
        TeamCommand::List { project } => {
            let view = as_owner(&project).await?;
            let members = view.team.members(&view.access).await?;
            if json {
                write_json(out, &members)?;
            } else {
                let mut t = table(&["id", "email", "name", "role", "joined"]);
                for m in &members {
                    t.add_row(vec![
                        m.id.clone(),
                        m.email.clone(),
                        m.name.clone(),
                        m.role.as_str().to_owned(),
                        time::format(&m.joined_at),
                    ]);
                }
                writeln!(out, "{t}")?;
                writeln!(
                    out,
                    "{} members of {}",
                    members.len(),
                    view.access.project.slug
                )?;
            }
        }
        TeamCommand::Invite {
            email,
            project,
            role,
        } => {
            let view = as_owner(&project).await?;
            let request = CreateInvitation {
                email,
                role: Some(role),
            };
            let invitation = view.team.invite(&view.access, &view.owner, request).await?;
            if json {
                write_json(out, &invitation)?;
            } else {
                writeln!(
                    out,
                    "Invited {} to {} as {} until {}:",
                    invitation.email,
                    view.access.project.slug,
                    invitation.role.as_str(),
                    time::format(&invitation.expires_at)
                )?;
                writeln!(out, "  {}", invitation.accept_url.unwrap_or_default())?;
            }
        }
        TeamCommand::Remove { email, project } => {
            let view = as_owner(&project).await?;
            let email = email.trim().to_lowercase();
            let members = view.team.members(&view.access).await?;
            let member = members
                .iter()
                .find(|m| m.email == email)
                .ok_or_else(|| anyhow::anyhow!("{email} is not a member of {project}"))?;
            view.team
                .remove(&view.access, &view.owner, &member.id)
                .await?;
            if json {
                writeln!(
                    out,
                    "{}",
                    serde_json::json!({"removed": member.id, "email": email})
                )?;
            } else {
                writeln!(out, "removed {email} from {}", view.access.project.slug)?;
            }
        }
    }
    Ok(())
}
