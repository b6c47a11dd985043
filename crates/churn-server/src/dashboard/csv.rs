//! CSV exports of lists (`?format=csv` on a list's own URL): RFC 4180 quoting, and cells a
//! spreadsheet would run as a formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage
//! return) prefixed with `'` so they stay text.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use churn_core::services::ProjectAccess;

/// Every item a paginated list service answers for the same filters, page after page: an
/// export holds what the filters select, not the page on screen.
async fn all_pages<T, Fut>(mut fetch: impl FnMut(i64) -> Fut) -> churn_core::Result<Vec<T>>
where
    Fut: std::future::Future<Output = churn_core::Result<(Vec<T>, churn_core::api::Meta)>>,
{
    let mut items = Vec::new();
    let mut page = 1;
    loop {
        let (mut batch, meta) = fetch(page).await?;
        items.append(&mut batch);
        if page as u64 >= meta.total_pages {
            return Ok(items);
        }
        page += 1;
    }
}

/// One CSV cell.
pub fn cell(value: &str) -> String {
    let guarded = if value.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{value}")
    } else {
        value.to_owned()
    };
    if guarded.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", guarded.replace('"', "\"\""))
    } else {
        guarded
    }
}

/// Rows of cells as CSV text, CRLF line ends.
pub fn table<'a>(header: &[&str], rows: impl IntoIterator<Item = Vec<String>> + 'a) -> String {
    let mut out = header.iter().map(|h| cell(h)).collect::<Vec<_>>().join(",");
    out.push_str("\r\n");
    for row in rows {
        out.push_str(&row.iter().map(|c| cell(c)).collect::<Vec<_>>().join(","));
        out.push_str("\r\n");
    }
    out
}

/// The project's list `what` as a CSV download, `<slug>-<what>.csv`.
pub fn download(
    access: &ProjectAccess,
    what: &str,
    header: &[&str],
    rows: impl IntoIterator<Item = Vec<String>>,
) -> Response {
    let filename = format!("{}-{what}.csv", access.project.slug);
    let mut response = table(header, rows).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/csv; charset=utf-8"),
    );
    if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{filename}\"")) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    response
}

/// The project's list `what` as a CSV download of every item `fetch` answers, page after
/// page ([`all_pages`]), a `row` each.
pub async fn export<T, Fut>(
    access: &ProjectAccess,
    what: &str,
    header: &[&str],
    fetch: impl FnMut(i64) -> Fut,
    row: impl Fn(&T) -> Vec<String>,
) -> churn_core::Result<Response>
where
    Fut: std::future::Future<Output = churn_core::Result<(Vec<T>, churn_core::api::Meta)>>,
{
    let items = all_pages(fetch).await?;
    Ok(download(access, what, header, items.iter().map(row)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_quoted_when_they_must_be() {
        assert_eq!(cell("plain"), "plain");
        assert_eq!(cell("a,b"), "\"a,b\"");
        assert_eq!(cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(cell("two\nlines"), "\"two\nlines\"");
    }

    #[test]
    fn formulas_stay_text() {
        assert_eq!(cell("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(cell("+1"), "'+1");
        assert_eq!(cell("-2"), "'-2");
        assert_eq!(cell("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(cell("a=b"), "a=b");
    }

    #[test]
    fn a_table_has_a_header_and_crlf_rows() {
        let csv = table(&["id", "email"], vec![vec!["1".into(), "a@b.c".into()]]);
        assert_eq!(csv, "id,email\r\n1,a@b.c\r\n");
    }
}
