//! Plain text to email HTML with its call-to-action button, and sanitising HTML that users
//! edit.

use crate::domain::cta::CallToAction;

/// Plain text as bare paragraphs, escaped: blank lines part them, single newlines break lines.
pub fn paragraphs(text: &str) -> String {
    format!(
        "<p>{}</p>",
        escape(text)
            .replace("\n\n", "</p><p>")
            .replace('\n', "<br>")
    )
}

/// Renders plain text as simple, email-client-safe HTML: paragraphs, line breaks, bullet
/// lists and clickable links, everything else escaped.
pub fn from_text(text: &str) -> String {
    let mut out = String::from(HEAD);
    for block in text.split("\n\n").map(str::trim).filter(|b| !b.is_empty()) {
        push_block(&mut out, block);
    }
    out.push_str(TAIL);
    out
}

const HEAD: &str = "<!DOCTYPE html><html><body style=\"font-family: -apple-system, Segoe UI, Helvetica, Arial, sans-serif; \
     font-size: 15px; line-height: 1.5; color: #1f2933; max-width: 600px; margin: 0 auto; padding: 24px;\">";
const TAIL: &str = "</body></html>";

fn push_block(out: &mut String, block: &str) {
    let lines: Vec<&str> = block.lines().collect();
    if lines.iter().all(|l| l.trim_start().starts_with("- ")) {
        out.push_str("<ul>");
        for line in lines {
            out.push_str("<li>");
            out.push_str(&linkify(line.trim_start().trim_start_matches("- ")));
            out.push_str("</li>");
        }
        out.push_str("</ul>");
    } else {
        out.push_str("<p>");
        out.push_str(
            &lines
                .iter()
                .map(|l| linkify(l))
                .collect::<Vec<_>>()
                .join("<br>"),
        );
        out.push_str("</p>");
    }
}

/// The primary button of an email.
pub fn button(cta: &CallToAction) -> String {
    format!(
        "<p style=\"margin: 28px 0;\"><a href=\"{}\" style=\"display: inline-block; background: #2563eb; \
         color: #ffffff; text-decoration: none; font-weight: 600; padding: 12px 22px; border-radius: 6px;\">{}</a></p>",
        escape(&cta.href),
        escape(&cta.label)
    )
}

/// Places the call to action before the closing paragraph (the signature) of a plain-text
/// body and renders both parts: the text with the button's line, the HTML with the button.
pub fn with_call_to_action(text: &str, cta: &CallToAction) -> (String, String) {
    let blocks: Vec<&str> = text
        .split("\n\n")
        .map(str::trim)
        .filter(|b| !b.is_empty())
        .collect();
    // A one-paragraph body has no signature to stand before: the button goes last.
    let at = if blocks.len() >= 2 {
        blocks.len() - 1
    } else {
        blocks.len()
    };
    let line = cta.text_line();
    let mut text_blocks: Vec<&str> = blocks.clone();
    text_blocks.insert(at, &line);
    let mut html = String::from(HEAD);
    for (i, block) in blocks.iter().enumerate() {
        if i == at {
            html.push_str(&button(cta));
        }
        push_block(&mut html, block);
    }
    if at == blocks.len() {
        html.push_str(&button(cta));
    }
    html.push_str(TAIL);
    (text_blocks.join("\n\n"), html)
}

pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Escapes a line and turns bare http(s) URLs into links.
fn linkify(line: &str) -> String {
    line.split(' ')
        .map(|word| {
            let trimmed = word.trim_end_matches(['.', ',', ')', ';']);
            if trimmed.starts_with("https://") || trimmed.starts_with("http://") {
                let rest = &word[trimmed.len()..];
                format!("<a href=\"{0}\">{0}</a>{1}", escape(trimmed), escape(rest))
            } else {
                escape(word)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Strips scripts, event handlers and other active content from HTML a user edited, and
/// `style` attributes that could load something (an image, a tracker) when the email is read.
pub fn sanitize(html: &str) -> String {
    ammonia::Builder::default()
        .add_tags(["html", "body", "head", "style"])
        .rm_tags(["style"])
        .add_generic_attributes(["style"])
        .attribute_filter(|_, attribute, value| {
            if attribute == "style" && loads_something(value) {
                None
            } else {
                Some(value.into())
            }
        })
        .clean(html)
        .to_string()
}

/// CSS that may fetch: `url(` and the image functions, and any escape (`u\72l(` is `url(`).
fn loads_something(css: &str) -> bool {
    let css = css.to_ascii_lowercase();
    ["url(", "image(", "image-set(", "expression(", "\\"]
        .iter()
        .any(|needle| css.contains(needle))
}

/// A readable plain-text version of HTML, for the text part of an edited email.
pub fn to_text(html: &str) -> String {
    let mut text = String::with_capacity(html.len());
    let mut in_tag = false;
    let mut tag = String::new();
    for c in html.chars() {
        match c {
            '<' => {
                in_tag = true;
                tag.clear();
            }
            '>' if in_tag => {
                in_tag = false;
                let name = tag
                    .trim_start_matches('/')
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .to_ascii_lowercase();
                match name.as_str() {
                    "p" | "div" | "ul" | "ol" | "h1" | "h2" | "h3" if tag.starts_with('/') => {
                        text.push_str("\n\n")
                    }
                    "br" => text.push('\n'),
                    "li" if !tag.starts_with('/') => text.push_str("- "),
                    "li" => text.push('\n'),
                    _ => {}
                }
            }
            _ if in_tag => tag.push(c),
            _ => text.push(c),
        }
    }
    let decoded = text
        .replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    decoded
        .split("\n\n")
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_becomes_escaped_html_with_links_and_lists() {
        let html = from_text("Hi <Ada> & co,\n\n- one\n- two\n\nSee https://acme.io/billing.\nBye");
        assert!(html.contains("<p>Hi &lt;Ada&gt; &amp; co,</p>"));
        assert!(html.contains("<ul><li>one</li><li>two</li></ul>"));
        assert!(
            html.contains(
                "<a href=\"https://acme.io/billing\">https://acme.io/billing</a>.<br>Bye"
            )
        );
    }

    #[test]
    fn sanitising_removes_active_content_and_keeps_the_rest() {
        let dirty = r#"<p onclick="x()">Hello <b>there</b></p><script>alert(1)</script><a href="javascript:alert(1)">x</a><a href="https://ok.io">ok</a>"#;
        let clean = sanitize(dirty);
        assert!(
            !clean.contains("script")
                && !clean.contains("onclick")
                && !clean.contains("javascript:"),
            "{clean}"
        );
        assert!(
            clean.contains("<b>there</b>") && clean.contains("https://ok.io"),
            "{clean}"
        );
    }

    #[test]
    fn styles_that_load_something_are_stripped() {
        for style in [
            "background: url(https://t.example/p.gif)",
            "background-image: URL( 'https://t.example/p.gif' )",
            "background: u\\72l(https://t.example/p.gif)",
            "background: image-set('https://t.example/p.gif' 1x)",
            "background: &#117;rl(https://t.example/p.gif)",
        ] {
            let clean = sanitize(&format!("<p style=\"{style}\">Hi</p>"));
            assert_eq!(clean, "<p>Hi</p>", "{style}");
        }
        assert_eq!(
            sanitize("<p style=\"color: red\">Hi</p>"),
            "<p style=\"color: red\">Hi</p>"
        );
    }

    #[test]
    fn the_call_to_action_goes_before_the_signature() {
        let cta = CallToAction {
            label: "Come back".into(),
            href: "https://acme.io/?a=1&b=2".into(),
        };
        let (text, html) = with_call_to_action("Hi Dana,\n\nWe miss you.\n\nBest,\nAda", &cta);
        assert_eq!(
            text,
            "Hi Dana,\n\nWe miss you.\n\nCome back: https://acme.io/?a=1&b=2\n\nBest,\nAda"
        );
        assert!(
            html.contains("We miss you.</p><p style=\"margin: 28px 0;\"><a href=\"https://acme.io/?a=1&amp;b=2\"")
                && html.contains(">Come back</a></p><p>Best,<br>Ada</p></body>"),
            "{html}"
        );
        let (text, _) = with_call_to_action("Hi", &cta);
        assert_eq!(text, "Hi\n\nCome back: https://acme.io/?a=1&b=2");
    }

    #[test]
    fn html_reads_back_as_text() {
        assert_eq!(
            to_text("<p>Hi &amp; hello</p><ul><li>a</li><li>b</li></ul><p>x<br>y</p>"),
            "Hi & hello\n\n- a\n- b\n\nx\ny"
        );
    }
}
