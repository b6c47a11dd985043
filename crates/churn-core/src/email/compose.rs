//! Tracking added to an email at send time: links rewritten to signed click URLs and an open
//! pixel appended.

use crate::domain::tracking::TrackingKeys;

/// Rewrites every http(s) `href` of `html` through the click route and appends the pixel.
pub fn with_tracking(
    html: &str,
    keys: &TrackingKeys,
    public_url: &str,
    variant_id: &str,
) -> String {
    let token = keys.token(variant_id);
    let mut out = String::with_capacity(html.len() + 256);
    let mut rest = html;
    while let Some(at) = rest.find("href=\"") {
        let (before, after) = rest.split_at(at + "href=\"".len());
        out.push_str(before);
        let end = after.find('"').unwrap_or(after.len());
        let target = unescape(&after[..end]);
        if target.starts_with("http://") || target.starts_with("https://") {
            out.push_str(
                &keys
                    .click_url(public_url, &token, variant_id, &target)
                    .replace('&', "&amp;"),
            );
        } else {
            out.push_str(&after[..end]);
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    let pixel = format!(
        "<img src=\"{public_url}/t/{token}.gif\" width=\"1\" height=\"1\" alt=\"\" style=\"display:block;border:0\">"
    );
    match out.rfind("</body>") {
        Some(i) => out.insert_str(i, &pixel),
        None => out.push_str(&pixel),
    }
    out
}

fn unescape(s: &str) -> String {
    s.replace("&amp;", "&").replace("&quot;", "\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_signed_and_a_pixel_is_added() {
        let keys = TrackingKeys::new(b"secret");
        let html = r#"<html><body><p><a href="https://acme.io/billing?a=1&amp;b=2">pay</a> <a href="mailto:x@y.z">mail</a></p></body></html>"#;
        let tracked = with_tracking(html, &keys, "https://churn.example", "v1");
        let token = keys.token("v1");
        assert!(tracked.contains(&format!("href=\"https://churn.example/t/{token}/c?u=https%3A%2F%2Facme.io%2Fbilling%3Fa%3D1%26b%3D2&amp;s=")), "{tracked}");
        assert!(tracked.contains("href=\"mailto:x@y.z\""));
        assert!(tracked.contains(&format!("<img src=\"https://churn.example/t/{token}.gif\"")));
        assert!(tracked.ends_with("</body></html>"));
    }
}
