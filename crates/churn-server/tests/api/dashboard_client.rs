//! The dashboard as a browser drives it, for every dashboard test: a session cookie, the
//! CSRF token of its pages, forms posted as a browser posts them (redirects not followed),
//! each answer checked against the status the test expects.
//!
//! `Browser::sign_in(&app, email)` signs in with the test password; `browser.get(path, 200)`
//! answers the page; `browser.post(path, form, 303)` adds the session's CSRF token and
//! answers the `Location`, body and cookies set; `post_with_csrf` sends another token, or
//! none; `get_with` sends one more cookie (a value shown once) and answers the cookies set.

use reqwest::Response;
use reqwest::header::SET_COOKIE;

use crate::helpers::TestApp;

/// The password every test account has.
pub const PASSWORD: &str = "correct horse";

/// A browser with a session: its cookie and the CSRF token of its pages.
pub struct Browser<'a> {
    pub app: &'a TestApp,
    /// `churn_session=<token>`, as sent back in `Cookie`.
    pub cookie: String,
    pub csrf: String,
}

/// What a form post answered.
pub struct Posted {
    pub location: String,
    pub body: String,
    /// Each `Set-Cookie` of the answer, whole.
    pub cookies: Vec<String>,
}

impl<'a> Browser<'a> {
    /// Signs in through the sign-in page.
    pub async fn sign_in(app: &'a TestApp, email: &str) -> Browser<'a> {
        let r = app
            .post_form(
                url(app, "/app/sign-in"),
                &[("email", email), ("password", PASSWORD)],
            )
            .await;
        assert_eq!(r.status(), 303, "sign in as {email}");
        Browser::with_cookie(app, session_cookie(&r)).await
    }

    /// `owner@acme.io` with the project `acme` (`helpers::acme_owner`), signed in: the API
    /// session token and the browser.
    pub async fn acme_owner(app: &'a TestApp) -> (String, Browser<'a>) {
        let token = crate::helpers::acme_owner(app).await;
        (token, Browser::sign_in(app, "owner@acme.io").await)
    }

    /// Mallory, signed in to a project of her own named `project`: another tenant.
    pub async fn another_tenant(app: &'a TestApp, project: &str) -> Browser<'a> {
        let mallory = app.register("mallory@evil.io").await;
        app.create_project(&mallory.token, project).await;
        Browser::sign_in(app, "mallory@evil.io").await
    }

    /// The browser that holds `cookie`, with the CSRF token its pages carry.
    pub async fn with_cookie(app: &'a TestApp, cookie: String) -> Browser<'a> {
        let mut browser = Browser {
            app,
            cookie,
            csrf: String::new(),
        };
        browser.csrf = csrf_of(&browser.get("/app/account", 200).await);
        browser
    }

    /// The answer to a GET with the cookie, unread.
    pub async fn open(&self, path: &str) -> Response {
        self.app
            .client
            .get(url(self.app, path))
            .header("cookie", &self.cookie)
            .send()
            .await
            .unwrap()
    }

    /// The page at `path`, which must answer `status`.
    pub async fn get(&self, path: &str, status: u16) -> String {
        let r = self.open(path).await;
        let got = r.status().as_u16();
        let text = r.text().await.unwrap();
        assert_eq!(got, status, "GET {path}: {text}");
        text
    }

    /// The page at `path` sent with `cookie` (`name=value`) beside the session's, which must
    /// answer `status`; its body and each `Set-Cookie`, whole.
    pub async fn get_with(&self, path: &str, cookie: &str, status: u16) -> (String, Vec<String>) {
        let r = self
            .app
            .client
            .get(url(self.app, path))
            .header("cookie", format!("{}; {cookie}", self.cookie))
            .send()
            .await
            .unwrap();
        let got = r.status().as_u16();
        let cookies = set_cookies(&r);
        let text = r.text().await.unwrap();
        assert_eq!(got, status, "GET {path}: {text}");
        (text, cookies)
    }

    /// The page a write redirected to, opened as the browser opens it: with the cookies the
    /// write set. It must answer 200.
    pub async fn follow(&self, posted: &Posted) -> String {
        let cookies: Vec<&str> = posted.cookies.iter().map(|c| cookie_pair(c)).collect();
        self.get_with(&posted.location, &cookies.join("; "), 200)
            .await
            .0
    }

    /// Posts a form with the session's CSRF token; it must answer `status`.
    pub async fn post(&self, path: &str, form: &[(&str, &str)], status: u16) -> Posted {
        self.post_with_csrf(path, form, &self.csrf, status).await
    }

    /// Posts a form with `csrf` as its token (none when empty); it must answer `status`.
    pub async fn post_with_csrf(
        &self,
        path: &str,
        form: &[(&str, &str)],
        csrf: &str,
        status: u16,
    ) -> Posted {
        let r = self.send_form(path, form, csrf).await;
        let got = r.status().as_u16();
        let location = location(&r).to_owned();
        let cookies = set_cookies(&r);
        let body = r.text().await.unwrap();
        assert_eq!(got, status, "POST {path}: {location} {body}");
        Posted {
            location,
            body,
            cookies,
        }
    }

    /// Posts a form with `csrf` as its token (none when empty); the answer, unchecked.
    pub async fn send_form(&self, path: &str, form: &[(&str, &str)], csrf: &str) -> Response {
        let mut fields = form.to_vec();
        if !csrf.is_empty() {
            fields.push(("csrf_token", csrf));
        }
        self.app
            .client
            .post(url(self.app, path))
            .header("cookie", &self.cookie)
            .form(&fields)
            .send()
            .await
            .unwrap()
    }
}

pub fn url(app: &TestApp, path: &str) -> String {
    format!("{}{path}", app.address)
}

pub fn location(r: &Response) -> &str {
    r.headers()
        .get("location")
        .map(|v| v.to_str().unwrap())
        .unwrap_or_default()
}

/// Each `Set-Cookie` of an answer, whole.
pub fn set_cookies(r: &Response) -> Vec<String> {
    r.headers()
        .get_all(SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect()
}

/// The `name=value` of a whole `Set-Cookie`.
pub fn cookie_pair(set_cookie: &str) -> &str {
    set_cookie.split(';').next().unwrap_or_default()
}

/// The whole `Set-Cookie` header that sets the session cookie.
pub fn set_session_cookie(r: &Response) -> String {
    set_cookies(r)
        .into_iter()
        .find(|v| v.starts_with("churn_session="))
        .expect("a session cookie is set")
}

/// The `churn_session=<value>` pair of a `Set-Cookie` answer.
pub fn session_cookie(r: &Response) -> String {
    cookie_pair(&set_session_cookie(r)).to_owned()
}

pub fn csrf_of(html: &str) -> String {
    html.split("name=\"csrf_token\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the page has a form with a CSRF token")
        .to_owned()
}

/// The content of a page inside a project, without the frame around it.
pub fn main_of(html: &str) -> String {
    let start = html.find("<main").expect("the page has a <main>");
    let end = html.rfind("</main>").expect("the page closes its <main>") + "</main>".len();
    html[start..end].to_owned()
}

/// Snapshots of pages: what differs between runs and backends becomes a placeholder.
pub fn snapshot_filters() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    for (pattern, placeholder) in [
        (
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "[id]",
        ),
        (
            r#"name="csrf_token" value="[^"]*""#,
            r#"name="csrf_token" value="[csrf]""#,
        ),
        (r"\.[0-9a-f]{12}\.(css|js)\b", ".[hash].$1"),
        (r"(127\.0\.0\.1|localhost):\d+", "$1:[port]"),
        (r"/invitations/[A-Za-z0-9_-]{16,}", "/invitations/[token]"),
        (r"(/pay/[^./\s]+)\.[A-Za-z0-9_-]{22}\b", "$1.[signature]"),
        (
            r"\b(pub|sec|sk|idsec|whsec)_[A-Za-z0-9_/+=-]{16,}",
            "${1}_[key]",
        ),
        (
            r"(ends in|ending in) <code>[^<]{4}</code>",
            "$1 <code>[last 4]</code>",
        ),
        (r"\b[0-9a-f]{64}\b", "[hmac]"),
        (r"\b([A-Z]+\d+)-[0-9A-F]{6}\b", "${1}-[code]"),
        // Made before the test set the service clock: the time the test ran.
        (
            r"\b20[2-9]\d-\d\d-\d\d[T ][0-9:.]+(Z| UTC)?",
            "[time of the run]",
        ),
    ] {
        settings.add_filter(pattern, placeholder);
    }
    settings
}

/// What a browser would post from the form with `id` on the page, its CSRF token left out:
/// each input's value (a checkbox's when checked), each textarea's text, each select's selected option (else its
/// first), in the page's order. Reads the dashboard's own markup, one tag per element.
pub fn form_fields(html: &str, id: &str) -> Vec<(String, String)> {
    let start = html
        .find(&format!(r#"<form id="{id}""#))
        .expect("the page has the form");
    let form = &html[start..start + html[start..].find("</form>").expect("the form ends")];
    let attr = |tag: &str, name: &str| {
        tag.split(&format!(r#" {name}=""#))
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .map(unescape)
    };
    let mut fields = Vec::new();
    let mut rest = form;
    while let Some(at) = rest.find(['<']) {
        rest = &rest[at..];
        let tag = &rest[..rest.find('>').map_or(rest.len(), |e| e + 1)];
        if tag.starts_with("<input ") {
            let checkable = attr(tag, "type").as_deref() == Some("checkbox");
            if let Some(name) = attr(tag, "name")
                && name != "csrf_token"
                && (!checkable || tag.contains(" checked"))
            {
                fields.push((name, attr(tag, "value").unwrap_or_default()));
            }
        } else if tag.starts_with("<textarea ") {
            let end = rest.find("</textarea>").expect("the textarea ends");
            fields.push((
                attr(tag, "name").expect("a textarea has a name"),
                unescape(&rest[tag.len()..end]),
            ));
        } else if tag.starts_with("<select ") {
            let end = rest.find("</select>").expect("the select ends");
            let options: Vec<&str> = rest[..end].split("<option ").skip(1).collect();
            let chosen = options
                .iter()
                .find(|o| {
                    o.split('>')
                        .next()
                        .unwrap_or_default()
                        .contains(" selected")
                })
                .or(options.first());
            let value = chosen.and_then(|o| attr(&format!(" {o}"), "value"));
            fields.push((
                attr(tag, "name").expect("a select has a name"),
                value.unwrap_or_default(),
            ));
        }
        rest = &rest[1..];
    }
    fields
}

fn unescape(text: &str) -> String {
    text.replace("&#34;", "\"")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
        .replace("&#38;", "&")
}
