//! The frame every page inside the dashboard shares: the rail (project switcher, the pages
//! that exist, the account), the top bar (search, period picker), and helpers templates use
//! to show money, rates and times.

use askama::Template;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use churn_core::api::projects::Project;
use churn_core::domain::role::Permission;
use churn_core::services::ProjectAccess;
use churn_core::time::Timestamp;

use super::assets;
use super::session::Signed;

/// The pages of a project, in rail order: (key, label, path below `/app/p/<slug>`). A new
/// page family adds its entry here.
pub const NAV: &[(&str, &str, &str)] = &[
    ("overview", "Overview", ""),
    ("events", "Churn events", "/events"),
    ("customers", "Customers", "/customers"),
    ("risk", "Churn risk", "/risk"),
    ("payments", "Payments", "/payments"),
    ("cancel-flow", "Cancel flow", "/cancel-flow"),
    ("analytics", "Analytics", "/analytics"),
    ("settings", "Settings", "/settings"),
    ("team", "Team", "/team"),
];

pub struct NavItem {
    pub label: &'static str,
    pub href: String,
    pub current: bool,
}

pub struct PeriodLink {
    pub days: i64,
    pub current: bool,
}

pub struct ProjectLink {
    pub name: String,
    pub slug: String,
    pub role: String,
}

/// What the layout template needs of every page inside a project.
pub struct Frame {
    pub user_name: String,
    pub user_email: String,
    pub csrf: String,
    /// Whether the member may change the project (`Permission::Administer`): the page shows
    /// its write controls.
    pub can_admin: bool,
    pub project: ProjectLink,
    pub projects: Vec<ProjectLink>,
    pub nav: Vec<NavItem>,
    /// The period picker, where the page has a period.
    pub periods: Vec<PeriodLink>,
    pub search: String,
    pub css: String,
    pub htmx: String,
}

impl Frame {
    pub fn new(
        signed: &Signed,
        access: &ProjectAccess,
        projects: &[Project],
        current: &str,
        period: Option<i64>,
    ) -> Self {
        let slug = access.project.slug.clone();
        let role = match access.actor {
            churn_core::domain::role::Actor::User(role) => role.as_str().to_owned(),
            _ => "key".to_owned(),
        };
        Frame {
            user_name: signed.user.name.clone(),
            user_email: signed.user.email.clone(),
            csrf: signed.csrf.clone(),
            can_admin: access.authorize(Permission::Administer).is_ok(),
            nav: NAV
                .iter()
                .map(|(key, label, path)| NavItem {
                    label,
                    href: format!("/app/p/{slug}{path}"),
                    current: *key == current,
                })
                .collect(),
            projects: projects
                .iter()
                .filter(|p| p.id != access.project.id)
                .map(|p| ProjectLink {
                    name: p.name.clone(),
                    slug: p.slug.clone(),
                    role: p.role.map(|r| r.as_str().to_owned()).unwrap_or_default(),
                })
                .collect(),
            project: ProjectLink {
                name: access.project.name.clone(),
                slug,
                role,
            },
            periods: period
                .map(|period| {
                    churn_core::services::overview::PERIODS
                        .iter()
                        .map(|&days| PeriodLink {
                            days,
                            current: days == period,
                        })
                        .collect()
                })
                .unwrap_or_default(),
            search: String::new(),
            css: assets::url("dashboard.css"),
            htmx: assets::url("htmx.min.js"),
        }
    }

    /// The base of this project's pages.
    pub fn base(&self) -> String {
        format!("/app/p/{}", self.project.slug)
    }
}

/// A list page's URL: `path` with the filters given (blank ones left out), `page` and `format`.
pub fn list_href(
    path: &str,
    filters: &[(&str, &Option<String>)],
    page: Option<i64>,
    format: Option<&str>,
) -> String {
    let mut pairs = Vec::new();
    for (name, value) in filters {
        if let Some(v) = value.as_deref().filter(|v| !v.trim().is_empty()) {
            pairs.push((*name, v.to_owned()));
        }
    }
    if let Some(page) = page {
        pairs.push(("page", page.to_string()));
    }
    if let Some(format) = format {
        pairs.push(("format", format.to_owned()));
    }
    match serde_urlencoded::to_string(&pairs).unwrap_or_default() {
        query if query.is_empty() => path.to_owned(),
        query => format!("{path}?{query}"),
    }
}

/// The head of pages outside a project (sign-in, errors).
pub struct Lone {
    pub css: String,
}

impl Default for Lone {
    fn default() -> Self {
        Lone {
            css: assets::url("dashboard.css"),
        }
    }
}

/// A rendered page as an answer.
pub fn html(status: StatusCode, page: impl Template) -> Response {
    match page.render() {
        Ok(body) => {
            let mut response = (status, body).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            );
            response
        }
        Err(e) => crate::error::ApiError::from(churn_core::Error::internal(e)).into_response(),
    }
}

/// `response` as a preview the dashboard shows in a frame: under the preview's own policy
/// `csp`, and framed by the dashboard only.
pub fn framed_preview(mut response: Response, csp: &'static str) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(csp),
    );
    headers.insert(
        header::X_FRAME_OPTIONS,
        HeaderValue::from_static("SAMEORIGIN"),
    );
    response
}

/// Text escaped for HTML, for the markup built outside templates (the charts' SVG, a
/// preview's title).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Cents as money: `$1,234.50`, `€12.00`, `1,234.50 SEK`.
pub fn money(cents: i64, currency: &str) -> String {
    let negative = cents < 0;
    let cents = cents.unsigned_abs();
    let units = grouped(cents / 100);
    let amount = format!("{units}.{:02}", cents % 100);
    let sign = if negative { "-" } else { "" };
    match currency.to_ascii_lowercase().as_str() {
        "usd" => format!("{sign}${amount}"),
        "eur" => format!("{sign}€{amount}"),
        "gbp" => format!("{sign}£{amount}"),
        "inr" => format!("{sign}₹{amount}"),
        other => format!("{sign}{amount} {}", other.to_ascii_uppercase()),
    }
}

fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A time as shown in tables: `2026-11-21 10:00 UTC`.
pub fn when(t: &Timestamp) -> String {
    t.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// The exact time, for `<time datetime>`.
pub fn exact(t: &Timestamp) -> String {
    churn_core::time::format(t)
}

/// How long ago, relative to `now`: `just now`, `5 min ago`, `3 h ago`, `12 days ago`.
pub fn ago(t: &Timestamp, now: &Timestamp) -> String {
    let secs = (*now - *t).num_seconds().max(0);
    match secs {
        0..60 => "just now".into(),
        60..3600 => format!("{} min ago", secs / 60),
        3600..86_400 => format!("{} h ago", secs / 3600),
        _ => match secs / 86_400 {
            1 => "1 day ago".into(),
            days => format!("{days} days ago"),
        },
    }
}

/// A change against the previous period: text, and `up`/`down`/`flat` for its class. The
/// arrow and sign carry the meaning, the colour only repeats it; `good_when_up` says which
/// way is good.
pub struct Change {
    pub text: String,
    pub class: &'static str,
}

pub fn change(current: f64, previous: f64, unit: &str, good_when_up: bool) -> Change {
    let delta = current - previous;
    if delta.abs() < 0.005 {
        return Change {
            text: "no change".into(),
            class: "flat",
        };
    }
    let arrow = if delta > 0.0 { "▲" } else { "▼" };
    let good = (delta > 0.0) == good_when_up;
    Change {
        text: format!("{arrow} {}{unit}", trim_number(delta.abs())),
        class: if good { "up" } else { "down" },
    }
}

/// An option of a select: its value, which is also its text, and whether it is the one shown.
pub struct Choice {
    pub value: &'static str,
    pub selected: bool,
}

/// The options of a select over `values`, the one equal to `current` selected.
pub fn choices(values: impl IntoIterator<Item = &'static str>, current: &str) -> Vec<Choice> {
    values
        .into_iter()
        .map(|value| Choice {
            value,
            selected: value == current,
        })
        .collect()
}

/// A number with at most two decimals and no trailing zeros: `12`, `12.5`, `12.25`.
pub fn trim_number(n: f64) -> String {
    let s = format!("{n:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_markup_and_quotes() {
        assert_eq!(
            escape(r#"<a href="x" onclick='y'>&</a>"#),
            "&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;"
        );
    }

    #[test]
    fn money_groups_and_names_the_currency() {
        assert_eq!(money(123_456_789, "usd"), "$1,234,567.89");
        assert_eq!(money(5, "eur"), "€0.05");
        assert_eq!(money(-100_000, "sek"), "-1,000.00 SEK");
    }

    #[test]
    fn changes_say_direction_without_colour() {
        let up = change(12.0, 10.0, " pts", true);
        assert_eq!((up.text.as_str(), up.class), ("▲ 2 pts", "up"));
        let worse = change(12.0, 10.0, "", false);
        assert_eq!((worse.text.as_str(), worse.class), ("▲ 2", "down"));
        assert_eq!(change(1.0, 1.0, "", true).class, "flat");
    }
}
