//! What is added to a recovery email at send time: its call-to-action button when an edit
//! removed it, links rewritten to signed click URLs, an open pixel, and the footer with the
//! unsubscribe link (after tracking: the unsubscribe link is never a redirect).

use crate::domain::cta::CallToAction;
use crate::domain::tracking::TrackingKeys;
use crate::generation::html;

/// The parts of an email only known when it is sent.
pub struct SendParts<'a> {
    pub cta: &'a CallToAction,
    pub keys: &'a TrackingKeys,
    pub public_url: &'a str,
    pub variant_id: &'a str,
    /// The product named in the footer.
    pub product: &'a str,
    pub unsubscribe_url: &'a str,
}

/// The HTML part as sent.
pub fn html_part(body: &str, parts: &SendParts<'_>) -> String {
    let button_href = format!("href=\"{}\"", html::escape(&parts.cta.href));
    let body = if body.contains(&button_href) {
        body.to_owned()
    } else {
        before_body_end(body, &html::button(parts.cta))
    };
    let tracked = with_tracking(&body, parts.keys, parts.public_url, parts.variant_id);
    let footer = format!(
        "<p style=\"margin-top: 32px; font-size: 12px; color: #6b7280;\">You are receiving this \
         email because you were a customer of {}. <a href=\"{}\" style=\"color: #6b7280;\">Unsubscribe</a></p>",
        html::escape(parts.product),
        html::escape(parts.unsubscribe_url)
    );
    before_body_end(&tracked, &footer)
}

/// The plain-text part as sent.
pub fn text_part(body: &str, parts: &SendParts<'_>) -> String {
    let mut out = body.trim_end().to_owned();
    let target = parts
        .cta
        .href
        .strip_prefix("mailto:")
        .unwrap_or(&parts.cta.href);
    if !out.contains(target) {
        out.push_str("\n\n");
        out.push_str(&parts.cta.text_line());
    }
    out.push_str(&format!(
        "\n\n--\nYou are receiving this email because you were a customer of {}.\nUnsubscribe: {}\n",
        parts.product, parts.unsubscribe_url
    ));
    out
}

fn before_body_end(html: &str, insert: &str) -> String {
    let mut out = html.to_owned();
    match out.rfind("</body>") {
        Some(i) => out.insert_str(i, insert),
        None => out.push_str(insert),
    }
    out
}

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
    before_body_end(&out, &pixel)
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

    #[test]
    fn the_button_is_restored_and_the_footer_is_not_tracked() {
        let keys = TrackingKeys::new(b"secret");
        let cta = CallToAction {
            label: "Come back".into(),
            href: "https://acme.io/back".into(),
        };
        let parts = SendParts {
            cta: &cta,
            keys: &keys,
            public_url: "https://churn.example",
            variant_id: "v1",
            product: "Acme",
            unsubscribe_url: "https://churn.example/u/tok",
        };
        // An edit that dropped the button gets it back, tracked like any link.
        let sent = html_part("<html><body><p>Hi</p></body></html>", &parts);
        assert_eq!(sent.matches(">Come back</a>").count(), 1, "{sent}");
        assert!(sent.contains("/t/v1."), "{sent}");
        assert!(
            sent.contains("<a href=\"https://churn.example/u/tok\""),
            "{sent}"
        );
        assert!(
            sent.ends_with("Unsubscribe</a></p></body></html>"),
            "{sent}"
        );
        // A draft that has it keeps exactly one.
        let draft = format!("<html><body><p>Hi</p>{}</body></html>", html::button(&cta));
        assert_eq!(
            html_part(&draft, &parts).matches(">Come back</a>").count(),
            1
        );

        let text = text_part("Hi\n\nCome back: https://acme.io/back\n\nAda", &parts);
        assert_eq!(text.matches("https://acme.io/back").count(), 1);
        assert!(
            text.ends_with("Unsubscribe: https://churn.example/u/tok\n"),
            "{text}"
        );
        assert!(text_part("Hi", &parts).contains("Hi\n\nCome back: https://acme.io/back"));
    }
}
